// A loopback reverse proxy for what the conformance suite's MCP client cannot do itself (`conformance server` takes
// only --url), and nothing else:
// - it adds `Authorization: Bearer <token>` to every request: the endpoint requires an agent token, and a token in
//   the URL would be a credential in logs and history;
// - the scenarios know the fixture's tools and prompts by their bare names, while the endpoint names them per workspace
//   so that names of two servers never collide: a tool by its model-safe name (`conformance__test_simple_text`), a
//   prompt by its governed id (`conformance.test_simple_prompt`). So the proxy qualifies the name of a `tools/call` or
//   `prompts/get` request (and its `Mcp-Name` header, which at 2026-07-28 must repeat it) and the prompt a
//   `completion/complete` refers to, and takes the
//   `conformance__` prefix off the tool names of a tools/list answer, so a scenario that looks a tool up by its bare
//   name finds it. (Resources need nothing: the endpoint reads a bound resource by the server's own URI too.)
// Everything else passes through as sent, Host and Origin included (the DNS-rebinding scenario sends a foreign Host
// and Origin and expects the endpoint, not the proxy, to refuse them), and so do `Mcp-Param-*` headers (they mirror
// arguments, which the proxy never changes, and the custom-header scenario expects the endpoint to judge them as
// sent); answers are relayed untouched, streamed as they arrive; a client that goes away aborts the upstream request.
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

/** How the endpoint names a server's tool (its model-safe name) and prompt (its governed id). */
const qualifiers = { 'tools/call': (server, name) => `${server}__${name}`, 'prompts/get': (server, name) => `${server}.${name}` };

/** Whether a name is already one the endpoint gave (a listed tool name or a governed id). */
const qualified = (server, name) => name.includes('.') || name.startsWith(`${server}__`);

/**
 * A JSON-RPC body (one message or a batch) with each tools/call's or prompts/get's bare name (and each completion's
 * prompt reference) qualified as the endpoint names it, and the names it changed for the Mcp-Name header (bare →
 * qualified); the body unchanged when there was nothing to qualify.
 */
export function qualifyNames(body, server) {
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { body, renamed: new Map() };
  }
  const renamed = new Map();
  let refQualified = false;
  const qualify = (message) => {
    if (message?.method === 'completion/complete') {
      const qualifiedRef = qualifyCompletionRef(message, server);
      refQualified ||= qualifiedRef !== message;
      return qualifiedRef;
    }
    const qualifier = qualifiers[message?.method];
    const name = qualifier === undefined ? undefined : message.params?.name;
    if (typeof name !== 'string' || qualified(server, name)) return message;
    renamed.set(name, qualifier(server, name));
    return { ...message, params: { ...message.params, name: qualifier(server, name) } };
  };
  const messages = Array.isArray(parsed) ? parsed.map(qualify) : qualify(parsed);
  return { body: renamed.size === 0 && !refQualified ? body : JSON.stringify(messages), renamed };
}

/**
 * A completion/complete with its prompt reference named as the endpoint lists the prompt (its governed id), like a
 * prompts/get's name; a resource template reference, or a name already qualified, unchanged. (No Mcp-Name header
 * repeats a completion's reference.)
 */
function qualifyCompletionRef(message, server) {
  const ref = message.params?.ref;
  if (ref?.type !== 'ref/prompt' || typeof ref.name !== 'string' || qualified(server, ref.name)) return message;
  return { ...message, params: { ...message.params, ref: { ...ref, name: qualifiers['prompts/get'](server, ref.name) } } };
}

/** A JSON answer with the `<server>__` prefix taken off each tool name of a tools/list result; unchanged otherwise. */
export function unqualifyToolNames(body, server) {
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  let changed = false;
  const strip = (message) => {
    const tools = message?.result?.tools;
    if (!Array.isArray(tools)) return message;
    changed = true;
    const prefix = `${server}__`;
    return { ...message, result: { ...message.result, tools: tools.map((tool) => (typeof tool?.name === 'string' && tool.name.startsWith(prefix) ? { ...tool, name: tool.name.slice(prefix.length) } : tool)) } };
  };
  const messages = Array.isArray(parsed) ? parsed.map(strip) : strip(parsed);
  return changed ? JSON.stringify(messages) : body;
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
      let body;
      if (req.method === 'POST') {
        const { body: text, renamed } = qualifyNames((await readBody(req)).toString('utf8'), server);
        body = Buffer.from(text, 'utf8');
        headers['content-length'] = String(body.length);
        // The 2026-07-28 Mcp-Name header repeats the name: it must name what the body now names.
        const named = typeof headers['mcp-name'] === 'string' ? renamed.get(headers['mcp-name'].trim()) : undefined;
        if (named !== undefined) headers['mcp-name'] = named;
      }
      const forward = http.request({ protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
        const answerHeaders = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !hopHeaders.has(name)));
        if (!(answer.headers['content-type'] ?? '').includes('application/json')) {
          res.writeHead(answer.statusCode ?? 502, answerHeaders);
          res.flushHeaders();
          answer.pipe(res);
          return;
        }
        // A JSON answer is read whole, so a tools/list result's names can be given back as the scenarios know them.
        void readBody(answer).then((raw) => {
          const text = Buffer.from(unqualifyToolNames(raw.toString('utf8'), server), 'utf8');
          delete answerHeaders['content-length'];
          res.writeHead(answer.statusCode ?? 502, { ...answerHeaders, 'content-length': String(text.length) });
          res.end(text);
        });
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
