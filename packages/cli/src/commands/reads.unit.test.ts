import { describe, expect, it } from 'vitest';
import { ToolplaneError } from '@toolplane/contracts';
import type { CliContext } from '../context.js';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { effectiveResourcesText, readsCommands } from './reads.js';

// What `resources bind` sends, from its arguments and flags, to a recording stand-in for the registry.

const serverId = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0d';

function harness() {
  const sent: { operation: string; body: unknown }[] = [];
  let err = '';
  const io: CliIo = { stdout: () => undefined, stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: 'header.payload.signature' } };
  const context: CliContext = {
    io,
    json: false,
    scope: () => ({ tenant: 'acme', workspace: 'main' }),
    messaging: () => Promise.reject(new Error('no NATS in unit tests')),
    close: () => Promise.resolve(),
    print: (_data, human) => io.stdout(human()),
    call: (_service, operation, schemas, body) => {
      const parsed = schemas.request.safeParse(body);
      if (!parsed.success) return Promise.reject(new ToolplaneError('INVALID_ARGUMENT', `the request does not match its contract: ${parsed.error.issues[0]?.message ?? ''}`));
      sent.push({ operation, body });
      return Promise.reject(new ToolplaneError('NOT_FOUND', 'not answered in unit tests'));
    },
  };
  return { run: (argv: string[]) => runCli(argv, io, [(program) => readsCommands(program, () => context)]), sent, err: () => err };
}

const governance = ['--knowledge-source', 'docs', '--classification', 'internal'];

describe('toolplane resources bind', () => {
  it('binds a resource by its URI, or a resource template with --template', async () => {
    const cli = harness();
    await cli.run(['resources', 'bind', serverId, 'test://static-text', ...governance]);
    await cli.run(['resources', 'bind', serverId, '--template', 'test://template/{id}/data', '--resource-id', 'fixture.template', ...governance]);
    const common = { serverId, knowledgeSource: 'docs', classification: 'INTERNAL', permissions: [], roles: [], secretDependencies: [] };
    expect(cli.sent).toEqual([
      { operation: 'bindResource', body: { ...common, uri: 'test://static-text' } },
      { operation: 'bindResource', body: { ...common, uriTemplate: 'test://template/{id}/data', resourceId: 'fixture.template' } },
    ]);
  });

  it('needs exactly one of a URI and --template', async () => {
    const neither = harness();
    expect(await neither.run(['resources', 'bind', serverId, ...governance])).toBe(1);
    expect(neither.err()).toMatch(/^INVALID_ARGUMENT: give the resource URI, or --template/);
    const both = harness();
    expect(await both.run(['resources', 'bind', serverId, 'test://static-text', '--template', 'test://template/{id}/data', ...governance])).toBe(1);
    expect(both.err()).toMatch(/^INVALID_ARGUMENT: give a resource URI or --template <uriTemplate>, not both/);
    expect([...neither.sent, ...both.sent]).toEqual([]);
  });
});

describe('the effective resources table', () => {
  it('lists templates by their uriTemplate after the resources', () => {
    const governance = { toolVersion: '1', name: 'n', description: '', knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL' } as const;
    const text = effectiveResourcesText({
      tools: [],
      resources: [{ ...governance, resourceId: 'fixture.static', uri: 'test://static-text' }],
      resourceTemplates: [{ ...governance, resourceId: 'fixture.template', uriTemplate: 'test://template/{id}/data' }],
    });
    expect(text.indexOf('test://static-text')).toBeGreaterThan(0);
    expect(text.indexOf('test://template/{id}/data')).toBeGreaterThan(text.indexOf('test://static-text'));
  });
});
