// Runs a service's composition root as a real child process, from source, the way an operator runs it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The six services of the platform, by workspace folder name. */
export const serviceNames = ['registry', 'tool-adapter', 'approval', 'secret-broker', 'audit-projector', 'flow-runner'] as const;
export type ServiceName = (typeof serviceNames)[number];

/** What `npm start` runs, in the order of their ports (base + index): the six services, the MCP endpoint, the console. */
export const platformProcessNames = [...serviceNames, 'mcp-endpoint', 'console'] as const;
export type PlatformProcessName = (typeof platformProcessNames)[number];

/** A running service process with its collected output. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
}

/** Starts `services/<name>/src/main.ts` with exactly the given environment (plus PATH). */
export function spawnService(name: PlatformProcessName, env: Record<string, string>): ServiceProcess {
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

/** The processes whose parent is `parentPid`, with their command lines (NUL-separated arguments joined by spaces). */
export async function childProcesses(parentPid: number): Promise<{ readonly pid: number; readonly commandLine: string }[]> {
  const children: { pid: number; commandLine: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // /proc/PID/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses, so read after the last ')'.
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== parentPid) continue;
    const commandLine = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ').trim();
    children.push({ pid: Number(entry), commandLine });
  }
  return children;
}

/** The process group of a live process (from /proc/PID/stat); undefined when it is gone. */
export async function processGroupOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** The names of the environment variables a live process started with (/proc/PID/environ). */
export async function environmentNames(pid: number): Promise<string[]> {
  const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
  return environ
    .split('\0')
    .filter(Boolean)
    .map((entry) => entry.slice(0, entry.indexOf('=')));
}

/** `npm start` (infra/local/up.mjs) running in the foreground against given NATS and MongoDB, and what it printed. */
export interface LocalPlatform {
  readonly child: ChildProcess;
  /** The registry's HTTP port; process i of `platformProcessNames` listens on basePort + i. */
  readonly basePort: number;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name) when up.mjs ends. */
  readonly exited: Promise<number | string>;
  /** The /readyz URL of a service. */
  readonly readyz: (name: PlatformProcessName) => string;
  /** The process id of the service's current process (a child of up.mjs), if one runs. */
  readonly servicePid: (name: PlatformProcessName) => Promise<number | undefined>;
}

/** Where `npm start` runs the platform and keeps its files. */
export interface LocalPlatformOptions {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  readonly database: string;
  /** TOOLPLANE_LOCAL_DIR: development keys, logs. */
  readonly localDir: string;
  readonly basePort: number;
}

/** Whether nothing listens on a local port right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A first port of `count` consecutive free ones for `npm start`'s services, below Linux's ephemeral range (from 32768),
 * where the local ports of other tests' outgoing connections would take one between this check and the listen.
 */
export async function freeBasePort(count = platformProcessNames.length): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * (12_700 - count));
    let free = true;
    for (let port = base; port < base + count && free; port += 1) free = await portFree(port);
    if (free) return base;
  }
  throw new Error('no run of free ports below 32768');
}

/** Runs `infra/local/up.mjs` and resolves once it says the platform is up (rejects if it exits first). */
export async function startLocalPlatform(options: LocalPlatformOptions): Promise<LocalPlatform> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'infra/local/up.mjs')], {
    cwd: repoRoot,
    env: {
      ...process.env,
      NATS_URL: options.natsUrl,
      MONGODB_URL: options.mongoUrl,
      MONGODB_DATABASE: options.database,
      TOOLPLANE_LOCAL_DIR: options.localDir,
      TOOLPLANE_BASE_PORT: String(options.basePort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ctrl-C stops everything')) resolve();
    });
    void exited.then(() => reject(new Error(`up.mjs exited before the platform was up:\n${out}\n${err}`)));
  });
  return {
    child,
    basePort: options.basePort,
    stdout: () => out,
    stderr: () => err,
    exited,
    readyz: (name) => `http://127.0.0.1:${options.basePort + platformProcessNames.indexOf(name)}/readyz`,
    servicePid: async (name) => {
      if (child.pid === undefined) return undefined;
      const entry = `${path.sep}services${path.sep}${name}${path.sep}`;
      return (await childProcesses(child.pid)).find((process) => process.commandLine.includes(entry))?.pid;
    },
  };
}
