import { SealingError } from './sealing-error.js';

const alphabet = /^[A-Za-z0-9_-]*$/;

/** Unpadded base64url of bytes. */
export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

/**
 * Decodes base64url (or standard base64, padded or not: operators paste either) strictly: any other character,
 * or a length other than `length` bytes when given, is a `malformed` SealingError naming `what`, never the text.
 */
export function fromBase64(text: string, what: string, length?: number): Buffer {
  const unpadded = text.replace(/={1,2}$/, '').replace(/\+/g, '-').replace(/\//g, '_');
  // A length of 1 mod 4 cannot come from whole bytes; Buffer would silently drop it.
  if (!alphabet.test(unpadded) || unpadded.length % 4 === 1) throw new SealingError('malformed', `${what} is not base64url`);
  const bytes = Buffer.from(unpadded, 'base64url');
  if (bytes.toString('base64url') !== unpadded) throw new SealingError('malformed', `${what} is not canonical base64url`);
  if (length !== undefined && bytes.length !== length) throw new SealingError('malformed', `${what} must be ${length} bytes, not ${bytes.length}`);
  return bytes;
}
