import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolplaneError, flowOperations, type FlowVersion, type ToolDefinition } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { definitionsCommands } from './definitions.js';
import { flowsCommands } from './flows.js';

// What the flows and definitions commands send, from their flags and files, to a recording stand-in for FlowRunner,
// and what they print of its answers; FlowRunner's own tests serve the same operations on a real NATS server.

interface Sent {
  readonly service: string;
  readonly operation: string;
  readonly body: unknown;
}

const token = 'header.payload.signature';
const at = '2026-03-01T10:00:00.000Z';
const inputSchema = { type: 'object', properties: { orderId: { type: 'string' } } };
const outputSchema = { type: 'object', properties: { refunded: { type: 'number' } } };
const body = {
  inputSchema,
  outputSchema,
  steps: [{ id: 'lookup', kind: 'call', tool: 'shop.get_order', arguments: '{"id": input.orderId}' }],
  output: '{"refunded": steps.lookup.total}',
};
const spec = {
  name: 'orders.refund',
  mcpName: 'refund_order',
  description: 'Refunds an order.',
  sideEffectClass: 'WRITE',
  riskClass: 'MEDIUM',
  inputSchema,
  outputSchema,
  flow: { flowId: 'refund', follow: 'active' },
};

const flowVersion: FlowVersion = {
  tenant: 'acme',
  workspace: 'main',
  flowId: 'refund',
  version: 2,
  status: 'Published',
  active: true,
  body: { ...body, steps: [{ id: 'lookup', kind: 'call', tool: 'shop.get_order', arguments: '{}' }] },
  bodyHash: 'a'.repeat(64),
  createdBy: 'user:author',
  createdAt: at,
  updatedBy: 'user:author',
  updatedAt: at,
  publishedBy: 'user:author',
  publishedAt: at,
};

const definition: ToolDefinition = {
  ...spec,
  sideEffectClass: 'WRITE',
  riskClass: 'MEDIUM',
  flow: { flowId: 'refund', follow: 'active' },
  enabled: true,
  approval: 'Policy',
  timeoutMs: 30_000,
  tenant: 'acme',
  workspace: 'main',
  version: 3,
  etag: '"3"',
  createdBy: 'user:author',
  createdAt: at,
  updatedBy: 'user:author',
  updatedAt: at,
};

let dir: string;
let bodyFile: string;
let specFile: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'toolplane-cli-flows-'));
  bodyFile = path.join(dir, 'body.json');
  specFile = path.join(dir, 'definition.json');
  await writeFile(bodyFile, JSON.stringify(body));
  await writeFile(specFile, JSON.stringify(spec));
});

afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(dir, { recursive: true, force: true });
});

function harness(answers: Readonly<Record<string, unknown>> = {}, env: Record<string, string> = { TOOLPLANE_TOKEN: token }, stdin = '') {
  const sent: Sent[] = [];
  const headers: (Readonly<Record<string, string>> | undefined)[] = [];
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(stdin), env };
  const context: CliContext = {
    io,
    json: false,
    scope: () => ({ tenant: 'acme', workspace: 'main' }),
    messaging: () => Promise.reject(new Error('no NATS in unit tests')),
    close: () => Promise.resolve(),
    print: (data, human) => io.stdout(env['JSON'] === '1' ? JSON.stringify(data) : human()),
    call: (service, operation, schemas, sentBody, options) => {
      const parsed = schemas.request.safeParse(sentBody);
      if (!parsed.success) return Promise.reject(new ToolplaneError('INVALID_ARGUMENT', `the request does not match its contract: ${parsed.error.issues[0]?.message ?? ''}`));
      sent.push({ service, operation, body: sentBody });
      headers.push(options?.headers);
      if (Object.hasOwn(answers, operation)) return Promise.resolve(schemas.reply.parse(answers[operation]));
      return Promise.reject(new ToolplaneError('NOT_FOUND', 'not answered in unit tests'));
    },
  };
  const groups: CommandGroup[] = [(program) => flowsCommands(program, () => context), (program) => definitionsCommands(program, () => context)];
  return { run: (argv: string[]) => runCli(argv, io, groups), sent, headers, out: () => out, err: () => err };
}

describe('toolplane flows', () => {
  it('draft sends the body read from the file (or standard input), with the operator token in a header', async () => {
    const cli = harness({ [flowOperations.saveFlowDraft]: { flow: { ...flowVersion, version: 1, status: 'Draft', active: false }, saved: true } });
    expect(await cli.run(['flows', 'draft', 'refund', '--file', bodyFile])).toBe(0);
    expect(cli.sent).toEqual([{ service: 'flows', operation: 'saveFlowDraft', body: { flowId: 'refund', body } }]);
    expect(cli.headers).toEqual([{ Authorization: `Bearer ${token}` }]);
    expect(cli.out()).toMatch(/^saved\nflow: +refund\n/);
    const piped = harness({ [flowOperations.saveFlowDraft]: { flow: flowVersion, saved: false } }, { TOOLPLANE_TOKEN: token }, JSON.stringify(body));
    expect(await piped.run(['flows', 'draft', 'refund', '--file', '-', '--flow-version', '2'])).toBe(0);
    expect(piped.sent[0]?.body).toEqual({ flowId: 'refund', body, version: 2 });
  });

  it('draft refuses a body that is not JSON or breaks the contract, naming where, and sends nothing', async () => {
    const broken = harness({}, { TOOLPLANE_TOKEN: token }, '{"steps": [');
    expect(await broken.run(['flows', 'draft', 'refund', '--file', '-'])).toBe(1);
    expect(broken.err()).toMatch(/^INVALID_ARGUMENT: standard input is not JSON/);
    const invalid = harness({}, { TOOLPLANE_TOKEN: token }, JSON.stringify({ ...body, steps: [] }));
    expect(await invalid.run(['flows', 'draft', 'refund', '--file', '-'])).toBe(1);
    expect(invalid.err()).toMatch(/^INVALID_ARGUMENT: the flow body is invalid at steps/);
    expect([...broken.sent, ...invalid.sent]).toEqual([]);
  });

  it('publish, activate and get send the version named', async () => {
    const cli = harness({
      [flowOperations.publishFlow]: { flow: flowVersion, published: true },
      [flowOperations.activateFlow]: { flow: flowVersion, previousVersion: 1, activated: true },
      [flowOperations.getFlow]: { flow: flowVersion, versions: [{ version: 2, status: 'Published', active: true, bodyHash: 'a'.repeat(64), createdAt: at, updatedAt: at, publishedAt: at }] },
    });
    await cli.run(['flows', 'publish', 'refund']);
    await cli.run(['flows', 'activate', 'refund', '--flow-version', '2']);
    await cli.run(['flows', 'get', 'refund', '--flow-version', '2']);
    expect(cli.sent.map((s) => [s.operation, s.body])).toEqual([
      ['publishFlow', { flowId: 'refund' }],
      ['activateFlow', { flowId: 'refund', version: 2 }],
      ['getFlow', { flowId: 'refund', version: 2 }],
    ]);
    expect(cli.out()).toContain('activated (was version 1)');
    expect(cli.out()).toMatch(/VERSION +STATUS +ACTIVE/);
  });

  it('activate needs --flow-version, and versions are whole numbers', async () => {
    const missing = harness();
    expect(await missing.run(['flows', 'activate', 'refund'])).not.toBe(0);
    expect(missing.err()).toMatch(/--flow-version/);
    const bad = harness();
    expect(await bad.run(['flows', 'publish', 'refund', '--flow-version', '1.5'])).toBe(1);
    expect(bad.err()).toBe('INVALID_ARGUMENT: --flow-version must be a whole number from 1\n');
    expect([...missing.sent, ...bad.sent]).toEqual([]);
  });

  it('list prints a page as items and next with --json, like every other list', async () => {
    const summary = { flowId: 'refund', latestVersion: 2, activeVersion: 2, publishedVersions: 2, updatedAt: at };
    const cli = harness({ [flowOperations.listFlows]: { flows: [summary], next: 'refund' } }, { TOOLPLANE_TOKEN: token, JSON: '1' });
    expect(await cli.run(['flows', 'list', '--limit', '1'])).toBe(0);
    expect(cli.sent[0]?.body).toEqual({ limit: 1 });
    expect(JSON.parse(cli.out())).toEqual({ items: [summary], next: 'refund' });
  });
});

describe('toolplane definitions', () => {
  it('create sends the definition read from the file and prints its etag', async () => {
    const cli = harness({ [flowOperations.createDefinition]: { definition: { ...definition, version: 1, etag: '"1"' }, etag: '"1"', created: true, tool: { toolId: 'flows.orders.refund', toolVersion: '1', active: true } } });
    expect(await cli.run(['definitions', 'create', '--file', specFile])).toBe(0);
    expect(cli.sent).toEqual([{ service: 'flows', operation: 'createDefinition', body: { definition: { ...spec, enabled: true, approval: 'Policy', timeoutMs: 30_000 } } }]);
    expect(cli.out()).toMatch(/^created\n/);
    expect(cli.out()).toMatch(/etag: +"1"/);
    expect(cli.out()).toMatch(/tool: +flows\.orders\.refund@1 active/);
  });

  it('get prints the etag', async () => {
    const cli = harness({ [flowOperations.getDefinition]: { definition, etag: '"3"' } });
    expect(await cli.run(['definitions', 'get', 'orders.refund'])).toBe(0);
    expect(cli.sent[0]?.body).toEqual({ name: 'orders.refund' });
    expect(cli.out()).toMatch(/etag: +"3"/);
    expect(cli.out()).toMatch(/flow: +refund@active/);
  });

  it('update and delete send the etag given as If-Match (quotes optional)', async () => {
    const cli = harness({ [flowOperations.updateDefinition]: { definition, etag: '"3"' }, [flowOperations.deleteDefinition]: { definition: { ...definition, deleted: true }, etag: '"4"' } });
    expect(await cli.run(['definitions', 'update', 'orders.refund', '--file', specFile, '--if-match', '"2"'])).toBe(0);
    expect(await cli.run(['definitions', 'delete', 'orders.refund', '--if-match', '3'])).toBe(0);
    expect(cli.sent.map((s) => [s.operation, s.body])).toEqual([
      ['updateDefinition', { name: 'orders.refund', ifMatch: '"2"', definition: { ...spec, enabled: true, approval: 'Policy', timeoutMs: 30_000 } }],
      ['deleteDefinition', { name: 'orders.refund', ifMatch: '3' }],
    ]);
    expect(cli.out()).toContain('deleted');
  });

  it('update, delete, enable and disable need --if-match, and refuse what is not an etag', async () => {
    for (const argv of [
      ['definitions', 'update', 'orders.refund', '--file', specFile],
      ['definitions', 'delete', 'orders.refund'],
      ['definitions', 'enable', 'orders.refund'],
      ['definitions', 'disable', 'orders.refund'],
    ]) {
      const cli = harness();
      expect(await cli.run(argv)).not.toBe(0);
      expect(cli.err()).toMatch(/--if-match/);
      expect(cli.sent).toEqual([]);
    }
    const bad = harness();
    expect(await bad.run(['definitions', 'delete', 'orders.refund', '--if-match', 'W/"3"'])).toBe(1);
    expect(bad.err()).toMatch(/^INVALID_ARGUMENT: --if-match/);
  });

  it('enable and disable send the current definition back with enabled changed, at the etag given', async () => {
    const cli = harness({ [flowOperations.getDefinition]: { definition: { ...definition, enabled: false }, etag: '"3"' }, [flowOperations.updateDefinition]: { definition, etag: '"4"' } });
    expect(await cli.run(['definitions', 'enable', 'orders.refund', '--if-match', '"3"'])).toBe(0);
    expect(cli.sent.map((s) => s.operation)).toEqual(['getDefinition', 'updateDefinition']);
    const update = cli.sent[1]?.body as { ifMatch: string; definition: Record<string, unknown> };
    expect(update.ifMatch).toBe('"3"');
    expect(update.definition).toEqual({ ...spec, enabled: true, approval: 'Policy', timeoutMs: 30_000 });
    const off = harness({ [flowOperations.getDefinition]: { definition, etag: '"3"' }, [flowOperations.updateDefinition]: { definition: { ...definition, enabled: false }, etag: '"4"' } });
    expect(await off.run(['definitions', 'disable', 'orders.refund', '--if-match', '"3"'])).toBe(0);
    expect((off.sent[1]?.body as { definition: { enabled: boolean } }).definition.enabled).toBe(false);
  });

  it('list sends its filters and prints a page as items and next with --json', async () => {
    const cli = harness({ [flowOperations.listDefinitions]: { definitions: [definition], next: null } });
    expect(await cli.run(['definitions', 'list', '--flow', 'refund', '--disabled'])).toBe(0);
    expect(cli.sent[0]?.body).toEqual({ flowId: 'refund', enabled: false });
    expect(cli.out()).toMatch(/^NAME +MCP NAME +ENABLED/);
    expect(cli.out()).toMatch(/orders\.refund +refund_order +yes +refund@active/);
    const json = harness({ [flowOperations.listDefinitions]: { definitions: [definition], next: 'orders.refund' } }, { TOOLPLANE_TOKEN: token, JSON: '1' });
    await json.run(['definitions', 'list']);
    expect(JSON.parse(json.out())).toEqual({ items: [definition], next: 'orders.refund' });
    const both = harness();
    expect(await both.run(['definitions', 'list', '--enabled', '--disabled'])).toBe(1);
    expect(both.sent).toEqual([]);
  });

  it('needs an operator token for every command', async () => {
    for (const argv of [
      ['definitions', 'get', 'orders.refund'],
      ['definitions', 'list'],
      ['flows', 'list'],
      ['flows', 'publish', 'refund'],
    ]) {
      const cli = harness({}, {});
      expect(await cli.run(argv)).toBe(1);
      expect(cli.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
      expect(cli.sent).toEqual([]);
    }
  });
});
