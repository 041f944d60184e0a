import { DEFAULT_SANDBOX_PROFILE } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { bubblewrapArgs, coalesceBinds, encodeArgs, limitExplanation, signalOfExitCode, type SandboxLayout } from './sandbox.js';

const layout = (overrides: Partial<SandboxLayout> = {}): SandboxLayout => ({
  profile: DEFAULT_SANDBOX_PROFILE,
  command: '/opt/node/bin/node',
  args: ['/srv/pkg/index.js'],
  env: { TOKEN: 'secret-value' },
  path: '/usr/bin:/bin',
  cwd: '/tmp/toolplane-mcp-x',
  symlinks: [{ target: 'usr/lib', link: '/lib' }],
  binds: [
    { source: '/srv/pkg', dest: '/srv/pkg', writable: false },
    { source: '/tmp/toolplane-mcp-x', dest: '/tmp/toolplane-mcp-x', writable: true },
    { source: '/srv', dest: '/srv', writable: false },
  ],
  prlimit: '/usr/bin/prlimit',
  ...overrides,
});

describe('bubblewrapArgs', () => {
  it('unshares every namespace, drops capabilities and keeps the env out of the command line', () => {
    const { options, command } = bubblewrapArgs(layout());
    for (const flag of ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-cgroup-try', '--die-with-parent', '--new-session', '--clearenv']) {
      expect(options).toContain(flag);
    }
    expect(options.join(' ')).toContain('--cap-drop ALL');
    expect(options.join(' ')).toContain('--setenv TOKEN secret-value');
    expect(command.join(' ')).not.toContain('secret-value');
    expect(command).toEqual([
      '/usr/bin/prlimit',
      '--cpu=3600:3605',
      `--as=${4 * 1024 ** 3}`,
      '--nofile=1024',
      '--nproc=128',
      `--fsize=${256 * 1024 ** 2}`,
      '--',
      '/opt/node/bin/node',
      '/srv/pkg/index.js',
    ]);
  });

  it('keeps the host network only for network host', () => {
    const host = { ...DEFAULT_SANDBOX_PROFILE, network: 'host' as const, networkHostApprovedBy: 'op:a', networkHostApprovedAt: '2026-01-01T00:00:00.000Z' };
    expect(bubblewrapArgs(layout({ profile: host })).options).not.toContain('--unshare-net');
  });

  it('mounts the bounded /tmp before binds, and parents before children', () => {
    const { options } = bubblewrapArgs(layout());
    const at = (value: string) => options.indexOf(value);
    expect(options.slice(at('--size'), at('--size') + 4)).toEqual(['--size', String(64 * 1024 ** 2), '--tmpfs', '/tmp']);
    expect(at('/tmp')).toBeLessThan(at('/tmp/toolplane-mcp-x'));
    expect(at('/srv')).toBeLessThan(at('/srv/pkg'));
    expect(options[at('/tmp/toolplane-mcp-x') - 1]).toBe('--bind');
  });

  it('encodes the options NUL-terminated for --args', () => {
    expect(encodeArgs(['--a', 'b c']).toString('utf8')).toBe('--a\0b c\0');
  });
});

describe('coalesceBinds', () => {
  it('drops a read-only bind inside another, keeps a writable one inside a read-only one', () => {
    const binds = coalesceBinds([
      { source: '/srv', dest: '/srv', writable: false },
      { source: '/srv/pkg', dest: '/srv/pkg', writable: false },
      { source: '/srv/data', dest: '/srv/data', writable: true },
      { source: '/srv/data', dest: '/srv/data', writable: false },
    ]);
    expect(binds).toEqual([
      { source: '/srv', dest: '/srv', writable: false },
      { source: '/srv/data', dest: '/srv/data', writable: true },
    ]);
  });
});

describe('exit codes', () => {
  it('reads the signal bwrap reports as 128+N and explains the limits', () => {
    expect(signalOfExitCode(152)).toBe('SIGXCPU');
    expect(signalOfExitCode(137)).toBe('SIGKILL');
    expect(signalOfExitCode(3)).toBeUndefined();
    expect(limitExplanation('SIGXCPU', DEFAULT_SANDBOX_PROFILE)).toContain('CPU time limit (3600 s)');
    expect(limitExplanation('SIGTERM', DEFAULT_SANDBOX_PROFILE)).toBeUndefined();
  });
});
