import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '@toolplane/cli';
import { realServerPath } from '@toolplane/mcp/testing';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { freshScope, operatorToken, startRegistry, type OperatorTokenOptions } from './harness.js';

// The operator CLI, run in-process against a running registry: the whole flow, text and --json output, and errors.

const scope = testScope('registry_cli');
const tenantScope = freshScope('cli');
let registry: RunningService;

beforeAll(async () => {
  registry = await startRegistry(scope, { REGISTRY_WATCH: 'off' });
});

afterAll(async () => {
  await registry?.stop();
});

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs the CLI as `user:cli-test` with the policy-admin role, or as the operator `as` describes. */
async function toolplaneAs(as: OperatorTokenOptions, ...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    env: { TOOLPLANE_TOKEN: await operatorToken(tenantScope, { principal: 'user:cli-test', roles: ['policy-admin'], ...as }) },
  };
  const code = await runCli(['--nats', scope.natsUrl, '--tenant', tenantScope.tenant, '--workspace', tenantScope.workspace, '--timeout', '30000', ...argv], io);
  return { code, out, err };
}

function toolplane(...argv: string[]): Promise<Run> {
  return toolplaneAs({}, ...argv);
}

async function json<T>(...argv: string[]): Promise<T> {
  const run = await toolplane('--json', ...argv);
  expect(run.err).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.out) as T;
}

/** The row of an aligned table whose first cells are `first`, split on runs of spaces. */
function row(table: string, ...first: string[]): string[] | undefined {
  return table
    .split('\n')
    .map((line) => line.split(/\s{2,}/))
    .find((cells) => first.every((cell, i) => cells[i] === cell));
}

describe('toolplane servers and tools', () => {
  it('registers, discovers, binds, unbinds and retires a server end to end', async () => {
    const command = `"${process.execPath}" "${realServerPath('everything')}" stdio`;
    const registered = await json<{ created: boolean; server: { serverId: string; state: string } }>('servers', 'register', '--name', 'everything', '--stdio', command);
    expect(registered).toMatchObject({ created: true, server: { state: 'Registered' } });
    const id = registered.server.serverId;

    const listed = await toolplane('servers', 'list');
    expect(listed.code).toBe(0);
    expect(listed.out.split('\n')[0]).toMatch(/^ID\s+NAME\s+STATE\s+TRANSPORT\s+AUTH\s+TOOLS\s+RESOURCES\s+PROMPTS\s+TARGET$/);
    expect(row(listed.out, id, 'everything', 'Registered', 'Stdio', 'None', '0')).toBeDefined();

    const discovered = await json<{ server: { state: string; capabilities: { tools: { name: string }[] } }; changes: unknown[] }>('servers', 'discover', id);
    expect(discovered.server.state).toBe('Verified');
    expect(discovered.server.capabilities.tools.map((tool) => tool.name)).toContain('echo');

    const unbound = await toolplane('tools', 'list', '--server', id);
    expect(unbound.out.split('\n')[0]).toMatch(/^SERVER\s+TOOL\s+BINDING\s+INVOCABLE\s+TOOL ID\s+VERSION\s+EFFECT\s+RISK$/);
    expect(row(unbound.out, 'everything', 'echo')?.slice(2, 4)).toEqual(['Unbound', 'no']);

    const bound = await json<{ created: boolean; serverState: string; descriptor: { toolId: string; toolVersion: string; active: boolean } }>(
      'tools',
      'bind',
      id,
      'echo',
      '--effect',
      'read',
      '--risk',
      'low',
      '--permission',
      'echo:use',
      '--idempotency',
      'natural',
    );
    expect(bound).toMatchObject({ created: true, serverState: 'Active', descriptor: { toolId: 'everything.echo', toolVersion: '1', active: true } });

    const tools = await json<{ tools: { toolName: string; binding: string; invocable: boolean }[] }>('tools', 'list');
    expect(tools.tools.find((tool) => tool.toolName === 'echo')).toMatchObject({ binding: 'Bound', invocable: true });
    expect(tools.tools.filter((tool) => tool.toolName !== 'echo').every((tool) => tool.binding === 'Unbound' && !tool.invocable)).toBe(true);

    const shown = await toolplane('servers', 'show', id);
    expect(shown.out).toMatch(/^state:\s+Active$/m);
    expect(shown.out).toMatch(/^registered:\s+\S+ by user:cli-test$/m);
    const descriptor = await toolplane('tools', 'show', 'everything.echo');
    expect(descriptor.out).toMatch(/^tool:\s+everything\.echo@1$/m);
    expect(descriptor.out).toMatch(/^state:\s+active$/m);

    const unboundAgain = await json<{ active: boolean; inactiveReason: string }>('tools', 'unbind', id, 'echo');
    expect(unboundAgain).toMatchObject({ active: false, inactiveReason: 'Unbound' });

    const retired = await toolplane('servers', 'retire', id, '--reason', 'done');
    expect(retired.code).toBe(0);
    expect(retired.out).toMatch(/^state:\s+Retired$/m);

    const again = await toolplane('servers', 'discover', id);
    expect(again).toMatchObject({ code: 1, out: '' });
    expect(again.err).toBe(`CONFLICT: cannot discover a server in state Retired\n`);
  });

  it('prints errors as CODE: reason (or one JSON document) and exits 1', async () => {
    const missing = await toolplane('servers', 'show', '5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^NOT_FOUND: no MCP server 5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a in \S+\n$/);

    const asJson = await toolplane('--json', 'servers', 'register', '--name', 'ghost', '--stdio', '/nonexistent/mcp-ghost');
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.out)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });

    const registered = await json<{ server: { serverId: string } }>('servers', 'register', '--name', 'never-discovered', '--stdio', `"${process.execPath}" "${realServerPath('everything')}" stdio`);
    const notDiscovered = await toolplane('tools', 'bind', registered.server.serverId, 'echo', '--effect', 'read', '--risk', 'low');
    expect(notDiscovered.code).toBe(1);
    expect(notDiscovered.err).toMatch(/^NOT_FOUND: the tool "echo" was not discovered/);
    // Retiring is allowed in any state; a retired server cannot be discovered any more.
    expect(await toolplane('servers', 'retire', registered.server.serverId)).toMatchObject({ code: 0, err: '' });
    const illegal = await toolplane('servers', 'discover', registered.server.serverId);
    expect(illegal.code).toBe(1);
    expect(illegal.err).toMatch(/^CONFLICT: cannot discover a server in state Retired/);
  });

  it('sends the operator token: a reader lists but cannot register; granting an exception needs platform-admin', async () => {
    const reader = { principal: 'user:reader', roles: [] };
    expect(await toolplaneAs(reader, 'servers', 'list')).toMatchObject({ code: 0, err: '' });
    const register = await toolplaneAs(reader, 'servers', 'register', '--name', 'refused', '--stdio', `"${process.execPath}" "${realServerPath('everything')}" stdio`);
    expect(register).toMatchObject({ code: 1, out: '' });
    expect(register.err).toBe('AUTHORIZATION_DENIED: operator user:reader lacks the role policy-admin this operation needs\n');
    const listed = await toolplane('--json', 'servers', 'list');
    expect((JSON.parse(listed.out) as { items: { name: string }[] }).items.map((server) => server.name)).not.toContain('refused');

    const grant = await toolplane('servers', 'grant-exception', '5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a', '--expires-at', new Date(Date.now() + 86_400_000).toISOString(), '--reason', 'pilot');
    expect(grant.err).toBe('AUTHORIZATION_DENIED: operator user:cli-test lacks the role platform-admin this operation needs\n');
  });
});
