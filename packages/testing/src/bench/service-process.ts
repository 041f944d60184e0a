// A built Toolplane service started by a benchmark as a child process: a real process hop for the latency, a CPU
// time of its own, and a CPU profile of it alone when asked.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../infra.js';

/** A service running in a child process. */
export interface ServiceProcess {
  readonly pid: number;
  /** The HTTP port it was given (its /healthz, /readyz and whatever else it serves). */
  readonly port: number;
  /** SIGTERM, then waits for the exit (a CPU profile is written then). */
  stop(): Promise<void>;
}

/** How to start one. */
export interface ServiceProcessOptions {
  /** What to call it in errors. */
  readonly name: string;
  /** Its `dist/main.js` (build it first). */
  readonly entry: string;
  /** Its whole environment besides PATH, HTTP_HOST and HTTP_PORT. */
  readonly env: Readonly<Record<string, string>>;
  /** Where `--cpu-prof` writes its profile; no profile when absent. */
  readonly cpuProfileDir?: string | undefined;
}

/**
 * Starts the service on a free loopback port and waits until it answers 200 on /readyz (60 s at most). Its log lines
 * go to this process's stderr: a harness's stdout carries only its result line.
 */
export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const port = await freePort();
  const flags = options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`];
  const child = spawn(process.execPath, [...flags, options.entry], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...options.env, HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port) },
    stdio: ['ignore', 2, 2],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`the ${options.name} process did not start`);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the ${options.name} exited with code ${child.exitCode} before it was ready`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status === 200, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the ${options.name} was not ready within 60 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { pid, port, stop: () => stopChild(child, exited) };
}

/** SIGTERM, SIGKILL after 20 s, and the exit awaited. */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
