// Runs a service's composition root as a real child process, from source, the way an operator runs it.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The six services of the platform, by workspace folder name. */
export const serviceNames = ['registry', 'tool-adapter', 'approval', 'secret-broker', 'audit-projector', 'flow-runner'] as const;
export type ServiceName = (typeof serviceNames)[number];

/** A running service process with its collected output. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
}

/** Starts `services/<name>/src/main.ts` with exactly the given environment (plus PATH). */
export function spawnService(name: ServiceName, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', path.join(repoRoot, 'services', name, 'src/main.ts')], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Polls a URL until it answers 200, the process exits, or the deadline passes. */
export async function waitForStatus(url: string, service: ServiceProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void service.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`service exited before ${url} answered 200:\n${service.stderr()}${service.stdout().slice(-2000)}`);
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${service.stderr()}${service.stdout().slice(-2000)}`);
}
