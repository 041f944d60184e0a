import { z } from 'zod';
import { TrustedKeysSetting } from '@toolplane/contracts';
import { millisecondsSetting, storelessServiceConfig } from '@toolplane/service-kit';

/** The port `npm start` gives the console (the services take 7101-7106, the MCP endpoint 7107). */
export const CONSOLE_PORT = 7108;

/** How many bytes CONSOLE_SESSION_KEY must decode to (an AES-256 key, also the HMAC key of the CSRF tokens). */
export const SESSION_KEY_BYTES = 32;

const sessionKey = z
  .string({ error: (issue) => (issue.input === undefined ? 'is missing (base64url of 32 random bytes, e.g. `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'base64url\'))"`)' : 'must be a string') })
  .trim()
  .transform((text, ctx) => {
    const bytes = /^[A-Za-z0-9_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64url') : Buffer.alloc(0);
    if (bytes.length !== SESSION_KEY_BYTES) {
      // Never echo the value: it is a secret.
      ctx.addIssue({ code: 'custom', message: `must be base64url of exactly ${SESSION_KEY_BYTES} bytes` });
      return z.NEVER;
    }
    return bytes;
  });

const count = (what: string, min: number, max: number, fallback: number) =>
  z.coerce
    .number({ error: `must be a number of ${what}` })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(fallback);

// The console keeps nothing and reads no database: the kit's settings without MongoDB's.
const base = storelessServiceConfig({ httpPort: CONSOLE_PORT });

/** The console's settings, parsed once at start; a bad one stops it with one line naming it. */
export const consoleConfig = base.extend({
  /** The public keys operator tokens are verified with, per tenant (issuer entries for OIDC where auth supports them). */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting,
  /** Seals the session cookie (AES-256-GCM) and keys the CSRF tokens; rotating it signs everyone out. */
  CONSOLE_SESSION_KEY: sessionKey,
  /** Where operators reach the console (behind a proxy: the proxy's URL); https makes cookies `Secure`. */
  CONSOLE_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL (e.g. https://console.example.com)' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  /** How long a read or decision waits for the owning service. */
  CONSOLE_REQUEST_TIMEOUT_MS: millisecondsSetting(10_000),
  /** How long the audit page waits for the chain walk (it reads the whole tenant's chain). */
  CONSOLE_AUDIT_TIMEOUT_MS: millisecondsSetting(60_000),
  /** Live approval streams (SSE) one replica keeps open at most; past it a new one is answered 503. */
  CONSOLE_MAX_STREAMS: count('streams', 1, 100_000, 500),
  /** The largest form body accepted; a larger one is answered 413. */
  CONSOLE_MAX_BODY_BYTES: count('bytes', 1_024, 1_048_576, 32_768),
});
export type ConsoleConfig = z.infer<typeof consoleConfig>;
