// A loopback reverse proxy for what the conformance suite's MCP client cannot do itself (`conformance server` takes
// only --url), and nothing else:
// - it adds `Authorization: Bearer <token>` to every request: the endpoint requires an agent token, and a token in
//   the URL would be a credential in logs and history;
// - it qualifies the name of a `tools/call` or `prompts/get` request with the fixture server's name (`test_simple_text`
//   becomes `conformance.test_simple_text`): the scenarios ask for the fixture's tools and prompts by their bare names,
//   while the endpoint names each by its governed id, `server.name`, so that names from two servers never collide. A
//   client that read tools/list or prompts/list sends the qualified name itself. (Resources need nothing: the
//   endpoint reads a bound resource by the server's own URI too.)
// Everything else passes through as sent, Host and Origin included (the DNS-rebinding scenario sends a foreign Host
// and Origin and expects the endpoint, not the proxy, to refuse them); answers are relayed untouched, streamed as
// they arrive; a client that goes away aborts the upstream request.
import { Buffer } from 'node:buffer';
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

/** The requests whose `params.name` is a governed id, `server.name`. */
const namedMethods = new Set(['tools/call', 'prompts/get']);

/** A JSON-RPC body (one message or a batch) with each tools/call's or prompts/get's bare name qualified as `<server>.<name>`; unchanged otherwise. */
export function qualifyNames(body, server) {
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  let changed = false;
  const qualify = (message) => {
    const name = namedMethods.has(message?.method) ? message.params?.name : undefined;
    if (typeof name !== 'string' || name.includes('.')) return message;
    changed = true;
    return { ...message, params: { ...message.params, name: `${server}.${name}` } };
  };
  const qualified = Array.isArray(parsed) ? parsed.map(qualify) : qualify(parsed);
  return changed ? JSON.stringify(qualified) : body;
}

/** The whole request body (the suite's requests are small JSON-RPC messages). */
async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * Starts the proxy on 127.0.0.1 (`port`, or a free one) in front of `target` (the endpoint's origin, e.g.
 * http://127.0.0.1:7107), qualifying tool and prompt names with `server`; paths are kept, so `url(path)` is the proxied form of
 * the endpoint's `path`.
 */
export async function startSuiteProxy({ target, token, server, port = 0 }) {
  const upstream = new URL(target);
  const proxy = http.createServer((req, res) => {
    void (async () => {
      const headers = forwardedHeaders(req.headers, token);
      const body = req.method === 'POST' ? Buffer.from(qualifyNames((await readBody(req)).toString('utf8'), server), 'utf8') : undefined;
      if (body !== undefined) headers['content-length'] = String(body.length);
      const forward = http.request({ protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !hopHeaders.has(name))));
        res.flushHeaders();
        answer.pipe(res);
      });
      forward.on('error', (error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`suite proxy: ${error.message}`);
      });
      res.on('close', () => forward.destroy());
      forward.end(body);
    })();
  });
  await new Promise((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(port, '127.0.0.1', resolve);
  });
  const origin = `http://127.0.0.1:${proxy.address().port}`;
  return {
    origin,
    url: (path) => new URL(path, origin).toString(),
    close: () =>
      new Promise((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
