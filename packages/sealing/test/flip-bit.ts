// Shared by the unit tests of this package: flips one bit of a base64url field, to tamper with a ciphertext.
export function flipBit(encoded: string, byteIndex = 0): string {
  const bytes = Buffer.from(encoded, 'base64url');
  const index = Math.min(byteIndex, bytes.length - 1);
  bytes[index] = (bytes[index] ?? 0) ^ 0x01;
  return bytes.toString('base64url');
}
