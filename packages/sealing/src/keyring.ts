import { SealingKeyId } from '@toolplane/contracts';
import { fromBase64, toBase64Url } from './base64url.js';
import { KEY_BYTES } from './keys.js';
import { SealingError } from './sealing-error.js';

// The key bytes live outside the instances, reachable only from this package's envelope code: no property,
// serializer or debugger view of a Keyring can show them.
const keyMaterial = new WeakMap<Keyring, ReadonlyMap<string, Buffer>>();

/** The key-encryption key `id` of a keyring; an `unknown-key` SealingError if it holds none. Package-internal. */
export function kekOf(keyring: Keyring, id: string): Buffer {
  const key = keyMaterial.get(keyring)?.get(id);
  if (key === undefined) throw new SealingError('unknown-key', `no key-encryption key with id ${JSON.stringify(id)} is configured`);
  return key;
}

/**
 * Key-encryption keys by id, one of them current: new secrets are wrapped with the current one, older ones
 * open with whichever key they name. Rotating a KEK = adding a key and making it current; the old one stays
 * until every envelope has been rewrapped. Logging or serializing a Keyring shows only its ids.
 */
export class Keyring {
  readonly #ids: readonly string[];
  readonly currentId: string;

  /** Builds a keyring from base64url (or base64) encoded 32-byte keys; `current` must be one of them. */
  constructor(config: { readonly current: string; readonly keys: Readonly<Record<string, string>> }) {
    const keys = new Map<string, Buffer>();
    for (const [id, encoded] of Object.entries(config.keys)) {
      if (!SealingKeyId.safeParse(id).success) throw new SealingError('malformed', `key id ${JSON.stringify(id.slice(0, 64))} must match [A-Za-z0-9_-]{1,64}`);
      if (typeof encoded !== 'string') throw new SealingError('malformed', `key ${id} must be a base64url string`);
      keys.set(id, fromBase64(encoded, `key ${id}`, KEY_BYTES));
    }
    if (keys.size === 0) throw new SealingError('malformed', 'the keyring has no keys');
    if (typeof config.current !== 'string' || !keys.has(config.current)) {
      throw new SealingError('malformed', `"current" must name one of the keys (${[...keys.keys()].join(', ')})`);
    }
    keyMaterial.set(this, keys);
    this.#ids = [...keys.keys()];
    this.currentId = config.current;
  }

  /**
   * Parses the configuration form `{"current":"k1","keys":{"k1":"<base64url of 32 random bytes>"}}`. Errors are
   * `malformed` SealingErrors that say what is wrong without repeating any of the text.
   */
  static fromJson(text: string): Keyring {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new SealingError('malformed', 'is not JSON (expected {"current":"k1","keys":{"k1":"<base64url of 32 bytes>"}})');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SealingError('malformed', 'must be a JSON object with "current" and "keys"');
    const { current, keys, ...rest } = value as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) throw new SealingError('malformed', `has unexpected fields (${extra.map((key) => JSON.stringify(key.slice(0, 32))).join(', ')})`);
    if (typeof current !== 'string') throw new SealingError('malformed', '"current" must be a key id');
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) throw new SealingError('malformed', '"keys" must be an object of key id to base64url key');
    return new Keyring({ current, keys: keys as Record<string, string> });
  }

  /** The ids of every key, the current one included. */
  ids(): string[] {
    return [...this.#ids];
  }

  /** Whether the keyring holds a key with this id. */
  has(id: string): boolean {
    return this.#ids.includes(id);
  }

  /** The ids only: what JSON.stringify and loggers see. */
  toJSON(): { current: string; ids: string[] } {
    return { current: this.currentId, ids: this.ids() };
  }
}

/** Encodes a keyring configuration from raw keys (for tests and tooling); the inverse of Keyring.fromJson. */
export function encodeKeyringConfig(current: string, keys: Readonly<Record<string, Uint8Array>>): string {
  return JSON.stringify({ current, keys: Object.fromEntries(Object.entries(keys).map(([id, key]) => [id, toBase64Url(key)])) });
}
