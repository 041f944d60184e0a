// Runs the secret broker's composition root (src/main.ts) as a real child process, from source, with its
// standard output and error captured: the log lines of the leak test and the start-up refusals.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const serviceRoot = path.resolve(import.meta.dirname, '..');
const repoRoot = path.resolve(serviceRoot, '../..');

/** A running process with its collected output. */
export interface ChildRun {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
}

function run(script: string, args: readonly string[], env: Record<string, string>, stdin?: string): ChildRun {
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  if (stdin !== undefined) child.stdin?.end(stdin);
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts the broker's main with exactly the given environment (plus PATH). */
export function spawnBroker(env: Record<string, string>): ChildRun {
  return run(path.join(serviceRoot, 'src/main.ts'), [], env);
}

/** Runs the `toolplane` CLI from source with arguments, environment and standard input; resolves when it exits. */
export async function runToolplane(args: readonly string[], env: Record<string, string>, stdin = ''): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const cli = run(path.join(repoRoot, 'packages/cli/src/main.ts'), args, env, stdin);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Resolves once `text()` contains `needle`, or rejects after the deadline (or when the process exits first). */
export async function waitForOutput(process: ChildRun, text: () => string, needle: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void process.exited.then(() => (exited = true));
  while (!text().includes(needle)) {
    if (exited) throw new Error(`the process exited before printing ${needle}:\n${process.stderr()}${process.stdout().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`no ${needle} within ${timeoutMs} ms:\n${process.stderr()}${process.stdout().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
