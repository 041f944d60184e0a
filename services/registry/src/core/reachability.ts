import type { McpServer } from '@toolplane/contracts';

// Which servers are "reachable beyond the local process", and when such a server may be Active.

const authenticatingKinds: ReadonlySet<McpServer['authentication']> = new Set(['OAuth2ProtectedResource', 'WorkloadIdentity']);

/** Whether a host name or address literal (as URL.hostname gives it) is the loopback interface. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (/^127(?:\.\d{1,3}){3}$/.test(host)) return true;
  if (host === '::1' || host === '0:0:0:0:0:0:0:1') return true;
  // IPv4-mapped loopback (`::ffff:127.0.0.1`, which URL normalises to `::ffff:7f00:1`).
  return /^::ffff:(?:127(?:\.\d{1,3}){3}|7f[0-9a-f]{2}:[0-9a-f]{1,4})$/.test(host);
}

/**
 * Whether other machines are involved in reaching the server. A stdio server is a child of the registry's own
 * process and a Streamable HTTP endpoint on the loopback interface stays on this host; anything else is remote.
 */
export function isBeyondLocalProcess(server: Pick<McpServer, 'transport' | 'endpointUrl'>): boolean {
  if (server.transport !== 'StreamableHttp' || server.endpointUrl === undefined) return false;
  try {
    return !isLoopbackHost(new URL(server.endpointUrl).hostname);
  } catch {
    // An unparsable endpoint cannot be shown to be local.
    return true;
  }
}

/** Why a server may not be Active at `at`, or undefined when its authentication is acceptable. */
export function authenticationProblem(server: Pick<McpServer, 'transport' | 'endpointUrl' | 'authentication' | 'authenticationException'>, at: string): string | undefined {
  if (!isBeyondLocalProcess(server) || authenticatingKinds.has(server.authentication)) return undefined;
  const exception = server.authenticationException;
  if (exception === undefined) {
    return `a server reachable beyond the local process needs OAuth2ProtectedResource or WorkloadIdentity authentication, or a platform admin's exception with an expiry (it has ${server.authentication})`;
  }
  if (Date.parse(exception.expiresAt) <= Date.parse(at)) {
    return `the platform admin's authentication exception expired at ${exception.expiresAt}`;
  }
  return undefined;
}
