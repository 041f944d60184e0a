// DNS-rebinding protection (MCP transport security notes): a browser page may not call the endpoint unless its
// origin is allowed, and on a loopback bind the Host must name the loopback. Clients that are not browsers send no
// Origin header and pass.

/** Whether a request with this Origin header may be served. */
export function originAllowed(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined) return true;
  if (!URL.canParse(origin)) return false;
  const normalized = new URL(origin).origin;
  return normalized !== 'null' && allowed.has(normalized);
}

const loopbackNames = ['127.0.0.1', 'localhost', '[::1]'];

/** Whether the address the server listens on is a loopback one. */
export function isLoopbackBind(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/**
 * The Host headers a loopback-bound endpoint answers: the loopback names on its port and the public URL's host. A
 * rebinding attack reaches the port under the attacker's host name, which is none of these.
 */
export function allowedHosts(port: number, publicUrl: string): ReadonlySet<string> {
  return new Set([...loopbackNames.map((name) => `${name}:${port}`), new URL(publicUrl).host]);
}
