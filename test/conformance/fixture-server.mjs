// The fixture MCP server of the conformance suite (`@modelcontextprotocol/conformance` server scenarios): the tools,
// resources and prompts those scenarios ask for by name, with the behaviour each checks (see the suite's scenario
// descriptions, `conformance list --server`). Over stdio by default, as Toolplane runs it behind the governed
// pipeline; with `--http` it serves Streamable HTTP on $PORT (0 picks a free port) and prints `LISTENING <port>`,
// which is how the suite runs against the fixture directly, to tell the fixture's failures from Toolplane's.
//
// It imports the MCP SDK's server side, which no Toolplane package wraps (packages/mcp holds the client side only):
// a fixture is an MCP server, not Toolplane code.
/* eslint-disable no-restricted-imports -- a fixture MCP server is built on the SDK's server side */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
/* eslint-enable no-restricted-imports */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import process from 'node:process';
import { setTimeout } from 'node:timers';
import { URL } from 'node:url';

/** A 1×1 PNG and a WAV holding one silent sample: the smallest valid image and audio payloads. */
const pngBase64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const wavBase64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

const noArguments = { type: 'object', properties: {} };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ type: 'text', text: value });

/** The form of `test_elicitation_sep1034_defaults`: one field of every primitive type, each with a default (SEP-1034). */
const defaultsForm = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  },
  required: [],
};

/** The form of `test_elicitation_sep1330_enums`: the five enum shapes of SEP-1330. */
const enumsForm = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      description: 'Select one option with titles',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
    untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      description: 'Select multiple options with titles',
      minItems: 1,
      maxItems: 3,
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
  required: [],
};

/** Asks the client for input (elicitation/create) on the call's own stream and says what came back. */
async function elicit(extra, message, requestedSchema) {
  const result = await extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema } }, ElicitResultSchema);
  return { content: [text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`)] };
}

/** Each tool: its definition as tools/list shows it, and what a call does (`extra` is the SDK's request context). */
const tools = {
  test_simple_text: {
    description: 'Returns one text content item.',
    inputSchema: noArguments,
    call: () => ({ content: [text('This is a simple text response for testing.')] }),
  },
  test_image_content: {
    description: 'Returns one image content item (a PNG).',
    inputSchema: noArguments,
    call: () => ({ content: [{ type: 'image', data: pngBase64, mimeType: 'image/png' }] }),
  },
  test_audio_content: {
    description: 'Returns one audio content item (a WAV).',
    inputSchema: noArguments,
    call: () => ({ content: [{ type: 'audio', data: wavBase64, mimeType: 'audio/wav' }] }),
  },
  test_embedded_resource: {
    description: 'Returns one embedded resource.',
    inputSchema: noArguments,
    call: () => ({ content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }),
  },
  test_multiple_content_types: {
    description: 'Returns text, an image and an embedded resource together.',
    inputSchema: noArguments,
    call: () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: pngBase64, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
      ],
    }),
  },
  test_tool_with_logging: {
    description: 'Sends three log messages while it runs.',
    inputSchema: noArguments,
    call: async (_args, extra) => {
      for (const [index, message] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (index > 0) await sleep(50);
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'conformance-fixture', data: message } });
      }
      return { content: [text('Tool with logging executed successfully')] };
    },
  },
  test_tool_with_progress: {
    description: 'Reports progress 0, 50 and 100 of 100 when the call carries a progress token.',
    inputSchema: noArguments,
    call: async (_args, extra, request) => {
      const progressToken = request.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        if (progressToken !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` } });
        }
      }
      return { content: [text(String(progressToken ?? 'no progress token'))] };
    },
  },
  test_error_handling: {
    description: 'Always fails with a tool error (isError).',
    inputSchema: noArguments,
    call: () => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] }),
  },
  test_reconnection: {
    description: 'Closes the call’s SSE stream before it answers, so the client has to reconnect for the result (SEP-1699).',
    inputSchema: noArguments,
    call: async (_args, extra) => {
      extra.closeSSEStream?.();
      await sleep(100);
      return { content: [text('Reconnection test completed successfully.')] };
    },
  },
  test_sampling: {
    description: 'Asks the client for an LLM completion (sampling/createMessage) of the prompt.',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] },
    call: async (args, extra) => {
      const result = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: text(String(args.prompt)) }], maxTokens: 100 } },
        CreateMessageResultSchema,
      );
      const answer = result.content.type === 'text' ? result.content.text : `(${result.content.type})`;
      return { content: [text(`LLM response: ${answer}`)] };
    },
  },
  test_elicitation: {
    description: 'Asks the user for input (elicitation/create).',
    inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The message to show the user' } }, required: ['message'] },
    call: (args, extra) =>
      elicit(extra, String(args.message), {
        type: 'object',
        properties: { response: { type: 'string', description: "User's response" } },
        required: ['response'],
      }),
  },
  test_elicitation_sep1034_defaults: {
    description: 'Asks for a form whose fields all have defaults (SEP-1034).',
    inputSchema: noArguments,
    call: (_args, extra) => elicit(extra, 'Please review and update the form fields with defaults', defaultsForm),
  },
  test_elicitation_sep1330_enums: {
    description: 'Asks for a form with every enum shape (SEP-1330).',
    inputSchema: noArguments,
    call: (_args, extra) => elicit(extra, 'Please select options from the enum fields', enumsForm),
  },
  test_custom_header: {
    description:
      'Echoes its region, which its schema marks x-mcp-header: a 2026-07-28 client mirrors it into the Mcp-Param-Region header, and the server refuses a call whose header disagrees with it (SEP-2243).',
    inputSchema: { type: 'object', properties: { region: { type: 'string', description: 'The region to echo', 'x-mcp-header': 'Region' } }, required: ['region'] },
    call: (args) => ({ content: [text(`Region: ${args.region}`)] }),
  },
  json_schema_2020_12_tool: {
    description:
      'Its input schema uses JSON Schema 2020-12 ($schema, $defs with an $anchor, additionalProperties, allOf/anyOf, if/then/else), which must reach the client as written (SEP-1613, SEP-2106).',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { $anchor: 'address', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
      allOf: [{ anyOf: [{ required: ['name'] }, { required: ['address'] }] }],
      if: { properties: { name: { const: 'with-address' } }, required: ['name'] },
      then: { required: ['address'] },
      else: {},
    },
    call: (args) => ({ content: [text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)] }),
  },
};

/** The fixed resources (the template `test://template/{id}/data` is answered by readResource). */
const resources = {
  'test://static-text': { name: 'static-text', title: 'Static Text Resource', description: 'A static text resource', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
  'test://static-binary': { name: 'static-binary', title: 'Static Binary Resource', description: 'A static binary resource (a PNG)', mimeType: 'image/png', blob: pngBase64 },
  'test://watched-resource': { name: 'watched-resource', title: 'Watched Resource', description: 'A resource clients may subscribe to', mimeType: 'text/plain', text: 'Watched resource content' },
};
const templatePattern = /^test:\/\/template\/([^/]+)\/data$/;

/** Reads a resource or an instance of the template; unknown URIs are the spec's "resource not found" (-32002). */
function readResource(uri) {
  const fixed = resources[uri];
  if (fixed !== undefined) {
    const body = fixed.blob === undefined ? { text: fixed.text } : { blob: fixed.blob };
    return { contents: [{ uri, mimeType: fixed.mimeType, ...body }] };
  }
  const match = templatePattern.exec(uri);
  if (match !== null) {
    const id = decodeURIComponent(match[1]);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
  }
  throw new McpError(-32002, `resource not found: ${uri}`, { uri });
}

/** Each prompt: its definition as prompts/list shows it, and the messages it yields for `args`. */
const prompts = {
  test_simple_prompt: {
    description: 'A prompt without arguments.',
    arguments: [],
    messages: () => [{ role: 'user', content: text('This is a simple prompt for testing.') }],
  },
  test_prompt_with_arguments: {
    description: 'A prompt with two required arguments, substituted into its text.',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    messages: (args) => [{ role: 'user', content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) }],
  },
  test_prompt_with_embedded_resource: {
    description: 'A prompt that embeds the resource it is given.',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    messages: (args) => [
      { role: 'user', content: { type: 'resource', resource: { uri: args.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: text('Please process the embedded resource above.') },
    ],
  },
  test_prompt_with_image: {
    description: 'A prompt that includes an image.',
    arguments: [],
    messages: () => [
      { role: 'user', content: { type: 'image', data: pngBase64, mimeType: 'image/png' } },
      { role: 'user', content: text('Please analyze the image above.') },
    ],
  },
};

/** The values each prompt argument is completed from (completion/complete). */
const completions = {
  test_prompt_with_arguments: { arg1: ['test-value-1', 'test-value-2', 'other-value'], arg2: ['second-value'] },
};

function createServer() {
  const server = new Server(
    { name: 'conformance-fixture', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, logging: {}, completions: {} } },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: Object.entries(tools).map(([name, { description, inputSchema }]) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools[request.params.name];
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    try {
      return await tool.call(request.params.arguments ?? {}, extra, request);
    } catch (error) {
      // A server→client request the client cannot serve (no sampling or elicitation) is the tool's failure, not the protocol's.
      return { isError: true, content: [text(`${request.params.name} failed: ${error instanceof Error ? error.message : String(error)}`)] };
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: Object.entries(resources).map(([uri, { name, title, description, mimeType }]) => ({ uri, name, title, description, mimeType })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template', title: 'Resource Template', description: 'A template whose {id} is substituted', mimeType: 'application/json' }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => readResource(request.params.uri));
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: Object.entries(prompts).map(([name, { description, arguments: args }]) => ({ name, description, arguments: args })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const prompt = prompts[request.params.name];
    if (prompt === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${request.params.name}`);
    const args = request.params.arguments ?? {};
    const missing = prompt.arguments.filter((argument) => argument.required && args[argument.name] === undefined).map((argument) => argument.name);
    if (missing.length > 0) throw new McpError(ErrorCode.InvalidParams, `missing arguments: ${missing.join(', ')}`);
    return { description: prompt.description, messages: prompt.messages(args) };
  });

  // The values of a prompt argument that start with what was typed (the suite checks only their shape).
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const { ref, argument } = request.params;
    const known = ref.type === 'ref/prompt' ? (completions[ref.name]?.[argument.name] ?? []) : [];
    const values = known.filter((value) => value.startsWith(argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

/** Whether a Host or Origin header names this machine (localhost, 127.0.0.1, [::1], any port): DNS-rebinding protection. */
function isLocalName(value) {
  if (value === undefined) return true;
  try {
    const { hostname } = new URL(value.includes('://') ? value : `http://${value}`);
    return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]';
  } catch {
    return false;
  }
}

/** An event store in memory, so a client whose SSE stream was closed can resume it with Last-Event-ID (SEP-1699). */
function memoryEventStore() {
  const events = [];
  return {
    storeEvent(streamId, message) {
      const eventId = `${streamId}::${String(events.length).padStart(8, '0')}`;
      events.push({ eventId, streamId, message });
      return Promise.resolve(eventId);
    },
    async replayEventsAfter(lastEventId, { send }) {
      const after = events.findIndex((event) => event.eventId === lastEventId);
      const streamId = lastEventId.split('::')[0];
      if (after === -1) return streamId;
      for (const event of events.slice(after + 1)) if (event.streamId === streamId) await send(event.eventId, event.message);
      return streamId;
    },
  };
}

function serveHttp() {
  const sessions = new Map();
  const reply = (res, status, message) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  async function handle(req, res) {
    if (!isLocalName(req.headers.host) || !isLocalName(req.headers.origin)) return reply(res, 403, 'Host or Origin is not this machine');
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (transport === undefined) {
      if (sessionId !== undefined) return reply(res, 404, 'Session not found');
      if (req.method !== 'POST') return reply(res, 400, 'No session');
      const server = createServer();
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, created),
        eventStore: memoryEventStore(),
        retryInterval: 1000,
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await server.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  }
  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  httpServer.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`LISTENING ${httpServer.address().port}\n`));
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv.includes('--http')) serveHttp();
else await createServer().connect(new StdioServerTransport());
