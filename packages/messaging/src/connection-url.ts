import { ToolplaneError } from '@toolplane/contracts';

/** A NATS server list parsed from a URL setting, with credentials separated from the addresses. */
export interface NatsEndpoint {
  /** `host:port` of each server, as the NATS client wants them. */
  readonly servers: readonly string[];
  /** Whether any server was given as `tls://`: the client then requires TLS. */
  readonly tls: boolean;
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** The URL list without credentials, safe to log and to put in error messages. */
  readonly display: string;
}

const defaultPort = 4222;

/**
 * Parses `nats://[user:pass@]host[:port]` (or `tls://`, or a bare `host:port`), comma-separated for a
 * cluster. A user without a password is a token. Throws INVALID_ARGUMENT, naming the redacted URL.
 */
export function parseNatsUrl(url: string): NatsEndpoint {
  const parts = url
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw invalid(url, 'no server given');
  const servers: string[] = [];
  const shown: string[] = [];
  let tls = false;
  let credentials: { user?: string; pass?: string; token?: string } = {};
  for (const part of parts) {
    const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(part) ? part : `nats://${part}`;
    let parsed: URL;
    try {
      parsed = new URL(withScheme);
    } catch {
      throw invalid(url, `"${redactUrl(part)}" is not a valid URL`);
    }
    if (parsed.protocol !== 'nats:' && parsed.protocol !== 'tls:') throw invalid(url, `unsupported scheme "${parsed.protocol.slice(0, -1)}" (use nats:// or tls://)`);
    if (parsed.hostname === '') throw invalid(url, 'missing host');
    if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') throw invalid(url, 'a NATS URL has no path, query or fragment');
    tls ||= parsed.protocol === 'tls:';
    const port = parsed.port === '' ? defaultPort : Number(parsed.port);
    servers.push(`${parsed.hostname}:${port}`);
    shown.push(`${parsed.protocol}//${parsed.hostname}:${port}`);
    if (parsed.username !== '' && credentials.user === undefined && credentials.token === undefined) {
      const user = decodeURIComponent(parsed.username);
      credentials = parsed.password === '' ? { token: user } : { user, pass: decodeURIComponent(parsed.password) };
    }
  }
  return { servers, tls, ...credentials, display: shown.join(',') };
}

/** Removes any `user:password@` from a URL (list), even one that does not parse. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^/@,]*@/g, '//');
}

function invalid(url: string, why: string): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', `invalid NATS URL "${redactUrl(url)}": ${why}`);
}
