import { describe, expect, it } from 'vitest';
import { ToolplaneError, registryOperations } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { registerRequest, serversCommands, splitCommandLine } from './servers.js';
import { toolsCommands } from './tools.js';

// What the servers and tools commands send, from their flags, to a recording stand-in for the registry; the
// registry's own tests run the same commands against the real service.

interface Sent {
  readonly operation: string;
  readonly body: unknown;
}

const token = 'header.payload.signature';
const serverId = '5d7b0a2e-6c1f-4c3b-9a8e-0f1e2d3c4b5a';

function harness(env: Record<string, string> = { TOOLPLANE_TOKEN: token }, answers: Readonly<Record<string, unknown>> = {}) {
  const headers: (Readonly<Record<string, string>> | undefined)[] = [];
  const sent: Sent[] = [];
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    env,
  };
  const context: CliContext = {
    io,
    json: false,
    scope: () => ({ tenant: 'acme', workspace: 'main' }),
    messaging: () => Promise.reject(new Error('no NATS in unit tests')),
    close: () => Promise.resolve(),
    print: (data, human) => io.stdout(env['JSON'] === '1' ? JSON.stringify(data) : human()),
    call: (_service, operation, schemas, body, options) => {
      const parsed = schemas.request.safeParse(body);
      if (!parsed.success) return Promise.reject(new ToolplaneError('INVALID_ARGUMENT', `the request does not match its contract: ${parsed.error.issues[0]?.message ?? ''}`));
      sent.push({ operation, body });
      headers.push(options?.headers);
      // Mostly what is sent matters here: the stand-in answers with an error unless a test gave it an answer.
      if (Object.hasOwn(answers, operation)) return Promise.resolve(schemas.reply.parse(answers[operation]));
      return Promise.reject(new ToolplaneError('NOT_FOUND', 'not answered in unit tests'));
    },
  };
  const groups: CommandGroup[] = [(program) => serversCommands(program, () => context), (program) => toolsCommands(program, () => context)];
  return { run: (argv: string[]) => runCli(argv, io, groups), sent, headers, out: () => out, err: () => err };
}

describe('splitCommandLine', () => {
  it.each([
    ['node server.js stdio', ['node', 'server.js', 'stdio']],
    ['  /usr/bin/node   "/a path/with spaces.js"  --flag=1 ', ['/usr/bin/node', '/a path/with spaces.js', '--flag=1']],
    [`python -c 'print("hi")'`, ['python', '-c', 'print("hi")']],
    ['a\\ b "c\\"d" \'\'', ['a b', 'c"d', '']],
  ])('splits %s', (line, words) => expect(splitCommandLine(line)).toEqual(words));

  it('refuses an unterminated quote', () => {
    expect(() => splitCommandLine('node "oops')).toThrow(/unterminated double quote/);
  });
});

describe('registerRequest --sandbox-*', () => {
  const base = { name: 'memory', stdio: 'node server.js', env: [], envConnection: [], header: [], headerConnection: [] };

  it('turns the flags into the sandbox profile of a stdio server', () => {
    expect(registerRequest({ ...base, sandboxNetwork: 'host', sandboxMount: ['/srv/ro'], sandboxWritable: ['/var/lib/memory'], sandboxLimit: ['processes=16', 'cpuSeconds=60'] }).sandbox).toEqual({
      network: 'host',
      readOnlyMounts: ['/srv/ro'],
      writablePaths: ['/var/lib/memory'],
      limits: { processes: 16, cpuSeconds: 60 },
    });
    expect(registerRequest(base).sandbox).toBeUndefined();
  });

  it('refuses an unknown limit and sandbox flags on an HTTP server', () => {
    expect(() => registerRequest({ ...base, sandboxLimit: ['memory=1'] })).toThrow(/NAME one of cpuSeconds/);
    expect(() => registerRequest({ ...base, stdio: undefined, url: 'https://mcp.example.com/mcp', sandboxWritable: ['/x'] })).toThrow(/apply to --stdio servers/);
  });
});

describe('toolplane servers list', () => {
  it('prints a page as items and next with --json, like every other list', async () => {
    const summary = {
      serverId,
      name: 'memory',
      direction: 'Consumed',
      transport: 'Stdio',
      target: 'node memory.js',
      state: 'Registered',
      authentication: 'None',
      toolCount: 0,
      resourceCount: 0,
      promptCount: 0,
      consecutiveFailures: 0,
      version: 1,
    };
    const cli = harness({ TOOLPLANE_TOKEN: token, JSON: '1' }, { [registryOperations.listServers]: { servers: [summary], next: 'cursor-1' } });
    expect(await cli.run(['servers', 'list'])).toBe(0);
    expect(JSON.parse(cli.out())).toEqual({ items: [summary], next: 'cursor-1' });
  });
});

describe('toolplane servers register', () => {
  it('sends a stdio registration with its words and environment, and the operator token in a header (never an actor in the body)', async () => {
    const cli = harness();
    await cli.run(['servers', 'register', '--name', 'memory', '--stdio', '/usr/bin/node "/opt/memory server/index.js"', '--env', 'MEMORY_FILE_PATH=/tmp/m.json', '--env-connection', 'API_KEY=memory-key']);
    expect(cli.sent).toEqual([
      {
        operation: 'register',
        body: {
          name: 'memory',
          stdio: { executable: '/usr/bin/node', args: ['/opt/memory server/index.js'], env: [{ name: 'MEMORY_FILE_PATH', value: '/tmp/m.json' }, { name: 'API_KEY', connectionRef: 'memory-key' }] },
        },
      },
    ]);
    expect(cli.headers).toEqual([{ Authorization: `Bearer ${token}` }]);
  });

  it('sends an HTTP registration with its authentication', async () => {
    const cli = harness();
    await cli.run(['servers', 'register', '--name', 'gh', '--url', 'https://mcp.example.com/mcp', '--auth', 'oauth2', '--connection', 'github-oauth', '--header-connection', 'Authorization=github-oauth']);
    expect(cli.sent[0]?.body).toMatchObject({ endpointUrl: 'https://mcp.example.com/mcp', authentication: 'OAuth2ProtectedResource', connectionRef: 'github-oauth', headers: [{ name: 'Authorization', connectionRef: 'github-oauth' }] });
  });

  it.each([
    [['--name', 'x'], /exactly one of --stdio/],
    [['--name', 'x', '--stdio', 'a', '--url', 'http://127.0.0.1/mcp'], /exactly one of --stdio/],
    [['--name', 'x', '--url', 'http://127.0.0.1/mcp', '--env', 'A=1'], /--env applies to --stdio/],
    [['--name', 'x', '--stdio', 'a', '--env', 'novalue'], /NAME=VALUE/],
    [['--name', 'x', '--stdio', 'a', '--auth', 'basic'], /--auth must be one of none, oauth2, workload/],
  ])('refuses %j with INVALID_ARGUMENT and sends nothing', async (flags, message) => {
    const cli = harness();
    expect(await cli.run(['servers', 'register', ...flags])).toBe(1);
    expect(cli.err()).toMatch(/^INVALID_ARGUMENT: /);
    expect(cli.err()).toMatch(message);
    expect(cli.sent).toEqual([]);
  });
});

describe('toolplane tools bind', () => {
  const serverId = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0d';

  it('maps its flags onto the bind request', async () => {
    const cli = harness();
    await cli.run([
      'tools',
      'bind',
      serverId,
      'create_issue',
      '--effect',
      'external',
      '--risk',
      'high',
      '--permission',
      'github:write',
      '--permission',
      'github:read',
      '--secret',
      'github-token',
      '--timeout-ms',
      '5000',
      '--idempotency',
      'key',
      '--sandbox',
      'none',
      '--max-attempts',
      '2',
    ]);
    expect(cli.sent).toEqual([
      {
        operation: 'bind',
        body: {
          serverId,
          toolName: 'create_issue',
          sideEffectClass: 'EXTERNAL_COMMUNICATION',
          riskClass: 'HIGH',
          permissions: ['github:write', 'github:read'],
          roles: [],
          secretDependencies: ['github-token'],
          timeoutMs: 5000,
          idempotency: 'SUPPORTED_WITH_KEY',
          sandboxKind: 'None',
          retryPolicy: { maxAttempts: 2, initialBackoffMs: 200, maxBackoffMs: 5000 },
        },
      },
    ]);
    expect(cli.headers).toEqual([{ Authorization: `Bearer ${token}` }]);
  });

  it('needs --effect and --risk, and refuses unknown classes', async () => {
    const missing = harness();
    expect(await missing.run(['tools', 'bind', serverId, 'echo', '--risk', 'low'])).not.toBe(0);
    expect(missing.err()).toMatch(/--effect/);
    const unknown = harness();
    expect(await unknown.run(['tools', 'bind', serverId, 'echo', '--effect', 'harmless', '--risk', 'low'])).toBe(1);
    expect(unknown.err()).toMatch(/^INVALID_ARGUMENT: --effect must be one of read, write/);
    expect([...missing.sent, ...unknown.sent]).toEqual([]);
  });
});

describe('the operator token of servers and tools commands', () => {
  const serverId = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c0d';
  const commands = [
    ['servers', 'register', '--name', 'x', '--stdio', 'node server.js'],
    ['servers', 'list'],
    ['servers', 'show', serverId],
    ['servers', 'discover', serverId],
    ['servers', 'retire', serverId],
    ['servers', 'grant-exception', serverId, '--expires-at', '2026-12-31T00:00:00Z', '--reason', 'pilot'],
    ['tools', 'list'],
    ['tools', 'bind', serverId, 'echo', '--effect', 'read', '--risk', 'low'],
    ['tools', 'unbind', serverId, 'echo'],
    ['tools', 'show', 'everything.echo'],
  ];

  it.each(commands)('%s %s is refused without one, before anything is sent', async (...argv) => {
    const cli = harness({});
    expect(await cli.run(argv)).toBe(1);
    expect(cli.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
    expect(cli.sent).toEqual([]);
  });

  it.each(commands)('%s %s sends it as a bearer header', async (...argv) => {
    const cli = harness();
    await cli.run(argv);
    expect(cli.headers).toEqual([{ Authorization: `Bearer ${token}` }]);
  });

  it('grant-exception names no grantor: the registry records the token\'s principal', async () => {
    const cli = harness();
    await cli.run(['servers', 'grant-exception', serverId, '--expires-at', '2026-12-31T00:00:00Z', '--reason', 'pilot']);
    expect(cli.sent).toEqual([{ operation: 'grantException', body: { serverId, reason: 'pilot', expiresAt: '2026-12-31T00:00:00.000Z' } }]);
  });

  it('tools show --tool-version asks for that exact version (the program keeps --version for itself)', async () => {
    const cli = harness();
    await cli.run(['tools', 'show', 'everything.echo', '--tool-version', '2']);
    expect(cli.sent).toEqual([{ operation: 'getDescriptor', body: { toolId: 'everything.echo', toolVersion: '2' } }]);
  });
});
