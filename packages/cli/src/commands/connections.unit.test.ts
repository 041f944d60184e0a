import { describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ToolplaneError, type ConnectionView } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { runCli } from '../program.js';
import type { CliIo } from '../output.js';
import { connectionsCommands } from './connections.js';

// The commands run against a recording stand-in for the broker: these tests are about what the CLI sends and
// prints, never about NATS (the secret broker's leak test runs the real binary against the real service).

const secret = 'tp-canary-cli-0123456789';
const view: ConnectionView = {
  connectionId: '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11',
  name: 'github',
  kind: 'bearer',
  state: 'Active',
  allowedTools: ['github.create_issue'],
  secretGeneration: 1,
  kekId: 'k1',
  createdAt: '2026-11-29T17:00:00.000Z',
  updatedAt: '2026-11-29T17:00:00.000Z',
  version: 1,
};

interface Sent {
  readonly operation: string;
  readonly body: unknown;
}

const token = 'header.payload.signature';

function harness(options: { stdin?: string; current?: ConnectionView; fail?: ToolplaneError; token?: string | null } = {}) {
  const sent: Sent[] = [];
  const headers: (Readonly<Record<string, string>> | undefined)[] = [];
  let stdinRead = false;
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => {
      stdinRead = true;
      return Promise.resolve(options.stdin ?? '');
    },
    env: { TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'main', ...(options.token === null ? {} : { TOOLPLANE_TOKEN: options.token ?? token }) },
  };
  const context: CliContext = {
    io,
    json: false,
    scope: () => ({ tenant: 'acme', workspace: 'main' }),
    messaging: () => Promise.reject(new Error('no NATS in unit tests')),
    close: () => Promise.resolve(),
    print: (_data, human) => io.stdout(human()),
    call: (_service, operation, schemas, body, callOptions) => {
      // The real call validates the body against the request contract before sending; so does this one.
      if (!schemas.request.safeParse(body).success) return Promise.reject(new ToolplaneError('INVALID_ARGUMENT', 'the request does not match its contract'));
      sent.push({ operation, body });
      headers.push(callOptions?.headers);
      if (options.fail) return Promise.reject(options.fail);
      return Promise.resolve((operation === 'listConnections' ? { items: [options.current ?? view], next: null } : (options.current ?? view)) as never);
    },
  };
  const group: CommandGroup = (program) => connectionsCommands(program, () => context);
  return { run: (argv: string[]) => runCli(argv, io, [group]), sent, headers, stdinRead: () => stdinRead, out: () => out, err: () => err };
}

describe('toolplane connections create', () => {
  it('reads the secret from standard input (dropping one trailing newline) and sends it in the credential', async () => {
    const cli = harness({ stdin: `${secret}\n` });
    expect(await cli.run(['connections', 'create', '--name', 'github', '--kind', 'bearer', '--allow', 'github.create_issue', 'github.list_issues'])).toBe(0);
    expect(cli.sent).toEqual([{ operation: 'createConnection', body: { name: 'github', allowedTools: ['github.create_issue', 'github.list_issues'], credential: { kind: 'bearer', token: secret } } }]);
    expect(cli.out()).toContain('github');
    expect(cli.out() + cli.err()).not.toContain(secret);
  });

  it('reads the secret from --secret-file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tp-cli-'));
    const file = path.join(dir, 'secret');
    await writeFile(file, `${secret}\r\n`);
    const cli = harness();
    expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'api-key', '--allow', 'a.b', '--secret-file', file])).toBe(0);
    expect(cli.sent[0]?.body).toMatchObject({ credential: { kind: 'api-key', apiKey: secret } });
  });

  it('refuses a secret given as a flag without repeating it, and sends nothing', async () => {
    for (const argv of [['--secret', secret], [`--secret=${secret}`]]) {
      const cli = harness();
      expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'api-key', '--allow', 'a.b', ...argv])).toBe(1);
      expect(cli.err()).toMatch(/^INVALID_ARGUMENT: secrets are never taken from flags/);
      expect(cli.out() + cli.err()).not.toContain(secret);
      expect(cli.sent).toEqual([]);
    }
  });

  it('refuses an empty standard input', async () => {
    const cli = harness({ stdin: '' });
    expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'bearer', '--allow', 'a.b'])).toBe(1);
    expect(cli.err()).toMatch(/^INVALID_ARGUMENT: no secret on standard input/);
  });

  it('refuses a malformed secret before sending it, naming the field but not the value', async () => {
    const bad = `${secret} with spaces`;
    const cli = harness({ stdin: bad });
    expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'bearer', '--allow', 'a.b'])).toBe(1);
    expect(cli.err()).toBe("INVALID_ARGUMENT: the secret is not a valid bearer credential: credential.token: must be printable ASCII without spaces\n");
    expect(cli.err()).not.toContain(secret);
    expect(cli.sent).toEqual([]);
  });

  it('splits a basic credential at the first colon', async () => {
    const cli = harness({ stdin: `alice:${secret}:x` });
    expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'basic', '--allow', 'a.b'])).toBe(0);
    expect(cli.sent[0]?.body).toMatchObject({ credential: { kind: 'basic', username: 'alice', password: `${secret}:x` } });
    const noColon = harness({ stdin: secret });
    expect(await noColon.run(['connections', 'create', '--name', 'k', '--kind', 'basic', '--allow', 'a.b'])).toBe(1);
    expect(noColon.err()).toBe('INVALID_ARGUMENT: a basic credential is given as username:password\n');
  });

  it('builds an oauth2 client credential from the flags and the client secret on standard input', async () => {
    const cli = harness({ stdin: secret });
    const argv = ['connections', 'create', '--name', 'crm', '--kind', 'oauth2-client-credentials', '--allow', 'crm.read'];
    expect(await cli.run([...argv, '--token-url', 'https://auth.example.com/token', '--client-id', 'tp', '--scope', 'read write', 'admin'])).toBe(0);
    expect(cli.sent[0]?.body).toMatchObject({
      credential: { kind: 'oauth2-client-credentials', tokenEndpoint: 'https://auth.example.com/token', clientId: 'tp', clientSecret: secret, scopes: ['read', 'write', 'admin'] },
    });
    const missing = harness({ stdin: secret });
    expect(await missing.run([...argv, '--client-id', 'tp'])).toBe(1);
    expect(missing.err()).toBe('INVALID_ARGUMENT: an oauth2-client-credentials connection needs --token-url\n');
  });

  it('refuses oauth2 flags on other kinds and an unknown kind', async () => {
    const cli = harness({ stdin: secret });
    expect(await cli.run(['connections', 'create', '--name', 'k', '--kind', 'bearer', '--allow', 'a.b', '--client-id', 'x'])).toBe(1);
    expect(cli.err()).toMatch(/apply to oauth2-client-credentials connections only/);
    const unknown = harness({ stdin: secret });
    expect(await unknown.run(['connections', 'create', '--name', 'k', '--kind', 'password', '--allow', 'a.b'])).toBe(1);
    expect(unknown.err()).toMatch(/--kind must be one of api-key, bearer, basic, oauth2-client-credentials/);
  });

  it('prints a refusal of the broker as CODE: reason', async () => {
    const cli = harness({ stdin: secret, fail: new ToolplaneError('CONFLICT', 'a connection named github already exists in this workspace') });
    expect(await cli.run(['connections', 'create', '--name', 'github', '--kind', 'bearer', '--allow', 'a.b'])).toBe(1);
    expect(cli.err()).toBe('CONFLICT: a connection named github already exists in this workspace\n');
  });
});

describe('toolplane connections rotate', () => {
  it('looks the connection up for its kind and sends the new secret from standard input', async () => {
    const cli = harness({ stdin: secret });
    expect(await cli.run(['connections', 'rotate', 'github'])).toBe(0);
    expect(cli.sent).toEqual([
      { operation: 'showConnection', body: { connectionRef: 'github' } },
      { operation: 'rotateConnection', body: { connectionRef: view.connectionId, credential: { kind: 'bearer', token: secret } } },
    ]);
    expect(cli.out()).not.toContain(secret);
  });

  it('keeps the oauth2 settings of the connection unless flags replace them', async () => {
    const current: ConnectionView = { ...view, kind: 'oauth2-client-credentials', oauth2: { tokenEndpoint: 'https://auth.example.com/token', clientId: 'tp', scopes: ['read'] } };
    const cli = harness({ stdin: secret, current });
    expect(await cli.run(['connections', 'rotate', 'github', '--client-id', 'tp2'])).toBe(0);
    expect(cli.sent[1]?.body).toMatchObject({ credential: { tokenEndpoint: 'https://auth.example.com/token', clientId: 'tp2', clientSecret: secret, scopes: ['read'] } });
  });

  it('refuses a secret flag', async () => {
    const cli = harness({ stdin: secret });
    expect(await cli.run(['connections', 'rotate', 'github', `--secret=${secret}`])).toBe(1);
    expect(cli.err()).not.toContain(secret);
    expect(cli.sent).toEqual([]);
  });
});

describe('toolplane connections list, show and revoke', () => {
  it('list prints one row per connection', async () => {
    const cli = harness();
    expect(await cli.run(['connections', 'list', '--state', 'active', '--limit', '10'])).toBe(0);
    expect(cli.sent).toEqual([{ operation: 'listConnections', body: { state: 'Active', limit: 10 } }]);
    expect(cli.out()).toMatch(/^NAME\s+KIND\s+STATE/);
    expect(cli.out()).toContain('github');
  });

  it('show and revoke name the connection by ref', async () => {
    const show = harness();
    expect(await show.run(['connections', 'show', 'github'])).toBe(0);
    expect(show.out()).toMatch(/key \(KEK\) id:\s+k1/);
    const revoke = harness();
    expect(await revoke.run(['connections', 'revoke', 'github', '--reason', 'leaked'])).toBe(0);
    expect(revoke.sent).toEqual([{ operation: 'revokeConnection', body: { connectionRef: 'github', reason: 'leaked' } }]);
  });
});

describe('the operator token of connections commands', () => {
  const commands = [
    ['connections', 'create', '--name', 'github', '--kind', 'bearer', '--allow', 'github.create_issue'],
    ['connections', 'list'],
    ['connections', 'show', 'github'],
    ['connections', 'rotate', 'github'],
    ['connections', 'revoke', 'github'],
  ];

  it.each(commands)('%s %s is refused without one, before a secret is read or anything sent', async (...argv) => {
    const cli = harness({ stdin: secret, token: null });
    expect(await cli.run(argv)).toBe(1);
    expect(cli.err()).toBe('AUTHENTICATION_FAILED: no operator token: set TOOLPLANE_TOKEN or pass --token-file\n');
    expect(cli.stdinRead()).toBe(false);
    expect(cli.sent).toEqual([]);
  });

  it.each(commands)('%s %s sends it as a bearer header on every request, never in a body or the output', async (...argv) => {
    const cli = harness({ stdin: secret });
    expect(await cli.run(argv)).toBe(0);
    expect(cli.headers.length).toBeGreaterThan(0);
    for (const sent of cli.headers) expect(sent).toEqual({ Authorization: `Bearer ${token}` });
    expect(JSON.stringify(cli.sent) + cli.out() + cli.err()).not.toContain(token);
  });

  it('reads the token from --token-file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tp-cli-'));
    const file = path.join(dir, 'token');
    await writeFile(file, 'from.the.file\n');
    const cli = harness({ token: null });
    expect(await cli.run(['connections', 'list', '--token-file', file])).toBe(0);
    expect(cli.headers).toEqual([{ Authorization: 'Bearer from.the.file' }]);
  });
});
