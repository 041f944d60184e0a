import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { ToolplaneError, type Scope } from '@toolplane/contracts';
import type { CommandGroup } from './command-group.js';
import { agentToken } from './commands/invoke.js';
import type { CliContext } from './context.js';
import { operatorToken, withToken, type TokenOptions } from './operator-token.js';
import { runCli } from './program.js';
import type { CliIo } from './output.js';

function capture(env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: () => Promise.resolve(''),
    env,
    out: () => out,
    err: () => err,
  };
}

describe('runCli', () => {
  it('prints usage with the global flags for --help and exits 0', async () => {
    const io = capture();
    expect(await runCli(['--help'], io)).toBe(0);
    for (const flag of ['--nats', '--tenant', '--workspace', '--json']) expect(io.out()).toContain(flag);
  });

  it('prints the CLI package’s version for --version and -V and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const io = capture();
      expect(await runCli([flag], io)).toBe(0);
      expect(io.out()).toBe(`${version}\n`);
    }
  });

  it('lists the global flags in every subcommand’s help', async () => {
    for (const argv of [['tools', 'list', '--help'], ['invoke', '--help'], ['help', 'servers', 'register']]) {
      const io = capture();
      expect(await runCli(argv, io)).toBe(0);
      const globals = io.out().split('Global Options:')[1];
      expect(globals, argv.join(' ')).toBeDefined();
      for (const flag of ['--nats <url>', '--tenant <id>', '--workspace <id>', '--json', '--timeout <ms>', '--inbox-prefix <prefix>']) expect(globals).toContain(flag);
    }
  });

  const failing: CommandGroup = (program, context) => {
    program.command('fail').action(() => {
      context().scope();
      throw new ToolplaneError('CONFLICT', 'server is retired');
    });
  };

  it('refuses an unknown command with a non-zero exit and a message on stderr', async () => {
    const io = capture();
    expect(await runCli(['frobnicate'], io, [failing])).not.toBe(0);
    expect(io.err()).toMatch(/unknown command 'frobnicate'/);
  });

  it('prints a failing command as CODE: reason on one line and exits 1', async () => {
    const io = capture();
    expect(await runCli(['--tenant', 'acme', '--workspace', 'dev', 'fail'], io, [failing])).toBe(1);
    expect(io.err()).toBe('CONFLICT: server is retired\n');
    expect(io.out()).toBe('');
  });

  it('prints a failing command as one JSON document with --json', async () => {
    const io = capture();
    expect(await runCli(['--json', '--tenant', 'acme', '--workspace', 'dev', 'fail'], io, [failing])).toBe(1);
    expect(JSON.parse(io.out())).toEqual({ error: { code: 'CONFLICT', message: 'server is retired' } });
  });

  it('asks for a tenant when none is given by flag or environment', async () => {
    const io = capture();
    expect(await runCli(['fail'], io, [failing])).toBe(1);
    expect(io.err()).toBe('INVALID_ARGUMENT: no tenant: pass --tenant, set TOOLPLANE_TENANT, or use a token that names one\n');
    const fromEnv = capture({ TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'dev' });
    expect(await runCli(['fail'], fromEnv, [failing])).toBe(1);
    expect(fromEnv.err()).toBe('CONFLICT: server is retired\n');
  });

  // What an operator command and an agent command (the token reading of `invoke` and `tools effective`) send on.
  const scoped: CommandGroup = (program, context) => {
    const report = (ctx: CliContext) => ctx.io.stdout(`${JSON.stringify(ctx.scope())}\n`);
    withToken(program.command('as-operator')).action(async (options: TokenOptions) => {
      const ctx = context();
      await operatorToken(ctx, options);
      report(ctx);
    });
    program
      .command('as-agent')
      .option('--token-file <path>')
      .action(async (options: { tokenFile?: string }) => {
        const ctx = context();
        await agentToken(ctx, options);
        report(ctx);
      });
  };

  it('takes the tenant and workspace from the token the command sends when no flag or variable names them', async () => {
    const key = await generateSigningKeyPair('k1');
    const operator = await issueToken({ kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:ada@acme.example', roles: [] }, key.privateKey, { kid: 'k1', expiresIn: 60 });
    const agent = await issueToken({ kind: 'agent', tenant: 'globex', workspace: 'prod', principal: 'user:bob@globex.example', agentId: 'support', agentRevision: '1' }, key.privateKey, { kid: 'k1', expiresIn: 60 });
    const dir = await mkdtemp(path.join(tmpdir(), 'cli-scope-'));
    try {
      const agentFile = path.join(dir, 'agent.jwt');
      await writeFile(agentFile, `${agent}\n`);
      const cases: [readonly string[], Record<string, string>, Scope][] = [
        [['as-operator'], { TOOLPLANE_TOKEN: operator }, { tenant: 'acme', workspace: 'main' }],
        [['as-agent'], { TOOLPLANE_AGENT_TOKEN: agent, TOOLPLANE_TOKEN: operator }, { tenant: 'globex', workspace: 'prod' }],
        [['as-agent', '--token-file', agentFile], {}, { tenant: 'globex', workspace: 'prod' }],
        [['--tenant', 'initech', 'as-agent', '--token-file', agentFile], { TOOLPLANE_WORKSPACE: 'qa' }, { tenant: 'initech', workspace: 'qa' }],
      ];
      for (const [argv, env, scope] of cases) {
        const io = capture(env);
        expect(await runCli(argv, io, [scoped]), `${argv.join(' ')}: ${io.err()}`).toBe(0);
        expect(JSON.parse(io.out())).toEqual(scope);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

