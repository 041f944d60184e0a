import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ToolplaneError } from '@toolplane/contracts';
import type { CommandGroup } from './command-group.js';
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
    expect(io.err()).toBe('INVALID_ARGUMENT: no tenant: pass --tenant or set TOOLPLANE_TENANT\n');
    const fromEnv = capture({ TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'dev' });
    expect(await runCli(['fail'], fromEnv, [failing])).toBe(1);
    expect(fromEnv.err()).toBe('CONFLICT: server is retired\n');
  });
});
