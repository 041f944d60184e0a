import { z } from 'zod';
import { SealingKeyId, TrustedKeysSetting } from '@toolplane/contracts';
import { baseServiceConfig, millisecondsSetting } from '@toolplane/service-kit';
import { importPublicKey, Keyring } from '@toolplane/sealing';
import type { KeyObject } from 'node:crypto';

// Key settings are parsed into key objects here, once; their messages name the problem, never the key text.

const kekExample = '{"current":"k1","keys":{"k1":"<base64url of 32 random bytes>"}}';
const recipientsExample = '{"tool-adapter":"<base64url X25519 public key>"}';

const keyringSetting = z
  .string({ error: (issue) => (issue.input === undefined ? `is missing (e.g. ${kekExample})` : 'must be a string') })
  .transform((text, ctx) => {
    try {
      return Keyring.fromJson(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `${error instanceof Error ? error.message : 'is malformed'} (e.g. ${kekExample})` });
      return z.NEVER;
    }
  });

/** The recipients the broker seals leases to: key id → X25519 public key. */
export type RecipientKeys = ReadonlyMap<string, KeyObject>;

const recipientsSetting = z
  .string({ error: (issue) => (issue.input === undefined ? `is missing (e.g. ${recipientsExample})` : 'must be a string') })
  .transform((text, ctx): RecipientKeys => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message: `${message} (e.g. ${recipientsExample})` });
      return z.NEVER;
    };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return fail('is not JSON');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('must be a JSON object of recipient key id to public key');
    const keys = new Map<string, KeyObject>();
    for (const [id, encoded] of Object.entries(value as Record<string, unknown>)) {
      if (!SealingKeyId.safeParse(id).success) return fail(`has a key id that is not [A-Za-z0-9_-]{1,64}`);
      if (typeof encoded !== 'string') return fail(`key ${id} must be a base64url string`);
      try {
        keys.set(id, importPublicKey(encoded, `key ${id}`));
      } catch (error) {
        return fail(error instanceof Error ? error.message : `key ${id} is malformed`);
      }
    }
    if (keys.size === 0) return fail('names no recipient');
    return keys;
  });

const booleanSetting = (defaultValue: boolean) =>
  z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default(defaultValue ? 'true' : 'false')
    .transform((value) => value === 'true');

/** The secret-broker service's settings: the base settings plus its keys and lease/token timings. */
export const secretBrokerConfig = baseServiceConfig({ httpPort: 7104 }).extend({
  /** The key-encryption keys: `{"current":"k1","keys":{"k1":"<base64url 32 bytes>"}}`. Required. */
  SECRET_BROKER_KEKS: keyringSetting,
  /** Who leases may be sealed to: `{"tool-adapter":"<base64url X25519 public key>"}`. Required. */
  SECRET_BROKER_RECIPIENTS: recipientsSetting,
  /** The longest lease; a request may ask for less. */
  SECRET_BROKER_LEASE_TTL_MS: millisecondsSetting(300_000),
  /** How often each replica expires leases and rewraps secrets under the current KEK. */
  SECRET_BROKER_SWEEP_INTERVAL_MS: millisecondsSetting(30_000),
  /** A cached access token is refreshed once less than this much of its lifetime is left. */
  SECRET_BROKER_TOKEN_REFRESH_MARGIN_MS: millisecondsSetting(60_000),
  /** Deadline of one token endpoint request. */
  SECRET_BROKER_TOKEN_TIMEOUT_MS: millisecondsSetting(10_000),
  /** Allow http:// token endpoints (local development and tests only). */
  SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS: booleanSetting(false),
  /**
   * Per tenant, the public keys operator tokens are verified with: `{"<tenant>": [<public JWK with kid>, …]}`.
   * Unset means no tenant is trusted (every connection command is refused, and a warning says so); a malformed
   * value stops the start. Leases need no operator token.
   */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting.optional(),
});

/** The parsed settings of the secret broker. */
export type SecretBrokerConfig = z.infer<typeof secretBrokerConfig>;
