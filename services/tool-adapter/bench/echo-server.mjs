// The benchmark's trivial MCP tool: a stdio MCP server speaking newline-delimited JSON-RPC by hand (no SDK, so
// the tool side costs next to nothing and both the governed and the direct path pay the same for it). One tool,
// `echo`, returns its `text` and appends that text, one line per execution, to $COUNT_FILE: the harness sends a
// unique key as the text, so the file says how many times each key really ran.
import { appendFileSync } from 'node:fs';
import process from 'node:process';
import { createInterface } from 'node:readline';

const countFile = process.env.COUNT_FILE;
const tool = {
  name: 'echo',
  description: 'Echoes the text back (and counts the execution).',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  annotations: { readOnlyHint: true },
};

function answer(id, result) {
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`);
}

function fail(id, code, message) {
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
}

function handle(message) {
  const { id, method, params } = message;
  if (id === undefined || id === null) return; // a notification (initialized, cancelled): nothing to answer
  switch (method) {
    case 'initialize':
      answer(id, { protocolVersion: params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bench-echo', version: '1.0.0' } });
      return;
    case 'ping':
      answer(id, {});
      return;
    case 'tools/list':
      answer(id, { tools: [tool] });
      return;
    case 'tools/call': {
      const text = params?.arguments?.text;
      if (params?.name !== 'echo') return fail(id, -32602, `unknown tool ${params?.name}`);
      if (typeof text !== 'string') return fail(id, -32602, 'text must be a string');
      // Synchronous append: the execution is on disk before the answer leaves, so a count is never lost.
      if (countFile) appendFileSync(countFile, `${text}\n`);
      answer(id, { content: [{ type: 'text', text }], structuredContent: { text } });
      return;
    }
    default:
      fail(id, -32601, `method not found: ${method}`);
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    fail(null, -32700, 'parse error');
    return;
  }
  handle(message);
});
lines.on('close', () => process.exit(0));
