// The benchmarks' trivial MCP tool, speaking JSON-RPC by hand (no SDK, so the tool side costs next to nothing and
// every path measured pays the same for it). One tool, `echo`, returns its `text` and appends that text, one line
// per execution, to $COUNT_FILE: the harness sends a unique key as the text, so the file says how many times each
// key really ran. Over stdio (newline-delimited) by default; with `--http` it serves MCP Streamable HTTP on
// 127.0.0.1:$PORT (0 picks a free port) at any path, statelessly (no session id, every answer a JSON body, GET and
// DELETE 405, as the transport allows a server without streams), and prints `LISTENING <port>` once it listens.
import { Buffer } from 'node:buffer';
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import process from 'node:process';
import { createInterface } from 'node:readline';

const countFile = process.env.COUNT_FILE;
const tool = {
  name: 'echo',
  description: 'Echoes the text back (and counts the execution).',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  annotations: { readOnlyHint: true },
};

const answerOf = (id, result) => ({ jsonrpc: '2.0', id, result });
const failureOf = (id, code, message) => ({ jsonrpc: '2.0', id, error: { code, message } });

/** The answer to one JSON-RPC message; undefined for a notification (initialized, cancelled: nothing to answer). */
function handle(message) {
  const { id, method, params } = message ?? {};
  if (id === undefined || id === null) return undefined;
  switch (method) {
    case 'initialize':
      return answerOf(id, { protocolVersion: params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-echo', version: '1.0.0' } });
    case 'ping':
      return answerOf(id, {});
    case 'tools/list':
      return answerOf(id, { tools: [tool] });
    case 'tools/call': {
      const text = params?.arguments?.text;
      if (params?.name !== 'echo') return failureOf(id, -32602, `unknown tool ${params?.name}`);
      if (typeof text !== 'string') return failureOf(id, -32602, 'text must be a string');
      // Synchronous append: the execution is on disk before the answer leaves, so a count is never lost.
      if (countFile) appendFileSync(countFile, `${text}\n`);
      return answerOf(id, { content: [{ type: 'text', text }], structuredContent: { text } });
    }
    default:
      return failureOf(id, -32601, `method not found: ${method}`);
  }
}

function parsed(text) {
  try {
    return { message: JSON.parse(text) };
  } catch {
    return { failure: failureOf(null, -32700, 'parse error') };
  }
}

function serveStdio() {
  const write = (answer) => answer !== undefined && process.stdout.write(`${JSON.stringify(answer)}\n`);
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const { message, failure } = parsed(line);
    write(failure ?? handle(message));
  });
  lines.on('close', () => process.exit(0));
}

function serveHttp() {
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const { message, failure } = parsed(Buffer.concat(chunks).toString('utf8'));
      const answers = failure === undefined ? (Array.isArray(message) ? message : [message]).map(handle).filter((answer) => answer !== undefined) : [failure];
      // Only notifications (or responses): accepted, no body.
      if (answers.length === 0) {
        res.writeHead(202).end();
        return;
      }
      const body = JSON.stringify(Array.isArray(message) ? answers : answers[0]);
      res.writeHead(failure === undefined ? 200 : 400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
  // Every execution is on disk already (the append is synchronous): nothing to finish.
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv.includes('--http')) serveHttp();
else serveStdio();
