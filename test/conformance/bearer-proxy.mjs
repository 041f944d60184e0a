// A loopback reverse proxy that adds `Authorization: Bearer <token>` to every request it forwards. The conformance
// suite's MCP client has no way to send a header (`conformance server` takes only --url), and a token in the URL
// would be a credential in logs and history: the proxy is how the suite reaches an endpoint that requires a token.
//
// Everything else passes through as sent, Host and Origin included (the DNS-rebinding scenario sends a foreign Host
// and Origin and expects the endpoint, not the proxy, to refuse them), and bodies stream both ways (SSE responses
// are relayed as they arrive; a client that goes away aborts the upstream request).
import http from 'node:http';
import { URL } from 'node:url';

/** Headers that describe one hop, not the request (RFC 9110 §7.6.1), and the caller's own credential. */
const hopHeaders = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'authorization']);

/** The request headers to forward: the client's, less hop-by-hop ones and any Authorization, plus the bearer token. */
export function forwardedHeaders(incoming, token) {
  const headers = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value !== undefined && !hopHeaders.has(name.toLowerCase())) headers[name] = value;
  }
  headers.authorization = `Bearer ${token}`;
  return headers;
}

/**
 * Starts the proxy on 127.0.0.1 (a free port) in front of `target` (the endpoint's origin, e.g. http://127.0.0.1:7107);
 * paths are kept, so `url(path)` is the proxied form of the endpoint's `path`.
 */
export async function startBearerProxy({ target, token }) {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const forward = http.request(
      { protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: forwardedHeaders(req.headers, token) },
      (answer) => {
        const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !hopHeaders.has(name)));
        res.writeHead(answer.statusCode ?? 502, headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    forward.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`bearer proxy: ${error.message}`);
    });
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    url: (path) => new URL(path, `http://127.0.0.1:${port}`).toString(),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
