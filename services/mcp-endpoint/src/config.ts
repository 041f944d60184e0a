import { z } from 'zod';
import { MAX_INVOCATION_TIMEOUT_MS, MAX_REQUEST_BYTES, TrustedKeysSetting } from '@toolplane/contracts';
import { millisecondsSetting, storelessServiceConfig } from '@toolplane/service-kit';

/** The port `npm start` gives the endpoint (the six services take 7101-7106). */
export const MCP_ENDPOINT_PORT = 7107;

/** A comma-separated list of origins (`scheme://host[:port]`), each normalized as browsers send it. */
const originList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const origins = new Set<string>();
    for (const part of text.split(',').map((item) => item.trim()).filter(Boolean)) {
      try {
        const url = new URL(part);
        if (url.origin === 'null' || url.pathname !== '/' || url.search !== '' || url.hash !== '') throw new Error('not an origin');
        origins.add(url.origin);
      } catch {
        ctx.addIssue({ code: 'custom', message: `has ${JSON.stringify(part.slice(0, 100))}, which is not an origin (e.g. http://localhost:6274)` });
        return z.NEVER;
      }
    }
    return origins;
  });

const urlList = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const urls: string[] = [];
    for (const part of text.split(',').map((item) => item.trim()).filter(Boolean)) {
      if (!URL.canParse(part) || !/^https?:$/.test(new URL(part).protocol)) {
        ctx.addIssue({ code: 'custom', message: `has ${JSON.stringify(part.slice(0, 100))}, which is not an http(s) URL` });
        return z.NEVER;
      }
      urls.push(part);
    }
    return urls;
  });

// The endpoint keeps no state and reads no database: the kit's settings without MongoDB's.
const base = storelessServiceConfig({ httpPort: MCP_ENDPOINT_PORT });

/** The endpoint's settings, parsed once at start; a bad one stops it with one line naming it. */
export const mcpEndpointConfig = base.extend({
  /** The public keys agent context tokens are verified with, per tenant. */
  TOOLPLANE_TRUSTED_KEYS: TrustedKeysSetting,
  /**
   * The URL clients reach the endpoint at (behind a proxy: the proxy's), without a trailing slash: the resource
   * identifiers and metadata URLs are built from it, never from a request's Host header. Default http://HTTP_HOST:HTTP_PORT.
   */
  MCP_ENDPOINT_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL (e.g. https://tools.example.com)' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  /** Browser origins allowed to call (DNS-rebinding protection); requests without an Origin header are not browsers'. */
  MCP_ENDPOINT_ALLOWED_ORIGINS: originList,
  /** The authorization servers the protected-resource metadata names (RFC 9728 `authorization_servers`). */
  MCP_ENDPOINT_AUTHORIZATION_SERVERS: urlList,
  /** The largest request body accepted; a larger one is answered 413. Default: the largest invocation request. */
  MCP_ENDPOINT_MAX_BODY_BYTES: z.coerce.number({ error: 'must be a number of bytes' }).int('must be whole bytes').positive('must be positive').max(16 * 1_048_576, 'must be at most 16 MiB').default(MAX_REQUEST_BYTES),
  /** How long a tools/call may take when the request names no deadline. */
  MCP_ENDPOINT_CALL_TIMEOUT_MS: millisecondsSetting(60_000).refine((ms) => ms <= MAX_INVOCATION_TIMEOUT_MS, `must be at most ${MAX_INVOCATION_TIMEOUT_MS} ms`),
  /** Requests one bearer token may make per window on one replica (0: no limit); past it, 429 with Retry-After. */
  MCP_ENDPOINT_TOKEN_RATE_LIMIT: z.coerce.number({ error: 'must be a number of requests' }).int('must be a whole number').min(0, 'must be 0 (off) or more').max(1_000_000, 'must be at most 1000000').default(1_200),
  /** The window MCP_ENDPOINT_TOKEN_RATE_LIMIT counts in. */
  MCP_ENDPOINT_TOKEN_RATE_WINDOW_MS: millisecondsSetting(10_000),
  /** Notification streams (MCP's GET stream) one replica keeps open at most; past it a GET is answered 503. */
  MCP_ENDPOINT_MAX_STREAMS: z.coerce.number({ error: 'must be a number of streams' }).int('must be a whole number').min(0, 'must be 0 or more').max(100_000, 'must be at most 100000').default(1_000),
  /** How long a call runs before the endpoint asks whether it waits for a human approval (then it answers at once). */
  MCP_ENDPOINT_APPROVAL_PROBE_MS: millisecondsSetting(500),
});
export type McpEndpointConfig = z.infer<typeof mcpEndpointConfig>;
