import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testScope } from '@toolplane/testing';
import { serviceNames } from './service-process.js';

const scope = testScope('platform');
const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('npm start (infra/local/up.mjs)', () => {
  it('builds, brings all six services to ready, and stops them cleanly on SIGTERM', { timeout: 240_000 }, async () => {
    const basePort = 20_000 + Math.floor(Math.random() * 30_000);
    const child = spawn(process.execPath, [path.join(repoRoot, 'infra/local/up.mjs')], {
      cwd: repoRoot,
      env: { ...process.env, NATS_URL: scope.natsUrl, MONGODB_URL: scope.mongoUrl, MONGODB_DATABASE: scope.dbName, TOOLPLANE_BASE_PORT: String(basePort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const up = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ctrl-C stops everything')) resolve();
      });
      void exited.then(() => reject(new Error(`up.mjs exited before the platform was up:\n${out}\n${err}`)));
    });
    await up;

    for (const [index, name] of serviceNames.entries()) {
      const res = await fetch(`http://127.0.0.1:${basePort + index}/readyz`);
      expect(res.status, name).toBe(200);
      expect(((await res.json()) as { service: string }).service).toBe(name);
    }

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('toolplane: stopped');
    expect(err).toBe('');
  });
});
