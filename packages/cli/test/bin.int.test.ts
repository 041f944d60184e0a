// The `toolplane` command as a user runs it: from the repository root, through the link npm makes in
// node_modules/.bin at install time. It must work with a current build and without one (run from source).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const cliRoot = path.dirname(import.meta.dirname);
const repoRoot = path.resolve(cliRoot, '..', '..');
const bin = path.join(repoRoot, 'node_modules', '.bin', 'toolplane');
const { version } = JSON.parse(readFileSync(path.join(cliRoot, 'package.json'), 'utf8')) as { version: string };

/** Runs the linked bin from the repository root; resolves with its exit code and output, never rejects. */
async function toolplane(args: readonly string[], from?: 'source' | 'dist'): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, TOOLPLANE_CLI_FROM: from ?? '' };
  try {
    const { stdout, stderr } = await run(bin, [...args], { cwd: repoRoot, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('the toolplane bin', () => {
  it('is linked by npm into node_modules/.bin to a committed script, not to a build output', () => {
    const manifest = JSON.parse(readFileSync(path.join(cliRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(manifest.bin['toolplane']).toBe('./bin/toolplane.mjs');
    expect(existsSync(bin)).toBe(true);
  });

  for (const from of [undefined, 'source'] as const) {
    const how = from === undefined ? 'by itself (build if current, else source)' : 'from source, as before any build';
    it(`prints --help and --version ${how}`, async () => {
      const help = await toolplane(['--help'], from);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(/^Usage: toolplane \[options\] \[command\]/);
      expect(help.stdout).toContain('--version');
      expect(await toolplane(['--version'], from)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    });
  }

  it('runs the build when forced to (even a stale one), or says there is none', async () => {
    const result = await toolplane(['--help'], 'dist');
    if (existsSync(path.join(cliRoot, 'dist', 'main.js'))) expect(result).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: toolplane /) as unknown });
    else expect(result).toMatchObject({ code: 1, stderr: expect.stringMatching(/^INVALID_ARGUMENT: the CLI is not built/) as unknown });
  });

  it('passes a failing command’s exit code on from the source run', async () => {
    const result = await toolplane(['frobnicate'], 'source');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown command 'frobnicate'/);
  });
});
