// Test support for every workspace (`@toolplane/mcp/testing`): the fixture MCP servers of this package and the
// real servers from npm, as stdio targets or as Streamable HTTP processes on free ports. Not for production code.
import { DEFAULT_SANDBOX_PROFILE, type SandboxProfile } from '@toolplane/contracts';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, readlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signalProcessGroup, waitForExit } from './process-group.js';
import type { McpStdioTarget } from './target.js';

export { isProcessAlive } from './process-group.js';

/** The fixture servers in packages/mcp/test/fixtures (see each file's header for its tools); all but modern-echo on the 1.x SDK. */
export const FixtureServer = {
  /** echo, count_calls ($COUNT_FILE), inspect_process, spawn_helper, fail_rpc; paginated lists. */
  countingEcho: 'counting-echo',
  /** target_tool changes (description, schema) after `mutate` or a write to $STATE_FILE; sends list_changed. */
  mutable: 'mutable',
  /** big_result (10 MB), slow, fails (isError), deep_schema, garbage on stdout, exit. */
  hostile: 'hostile',
  /** reveal_env, reveal_header: a credential it was given, verbatim and encoded, with its length and hash ($COUNT_FILE). */
  secretEcho: 'secret-echo',
  /** echo_meta: the `_meta` of the tools/call it received (a trace context, for one), as structuredContent `{ meta }`. */
  metaEcho: 'meta-echo',
  /** read_file, connect, fork_bomb, allocate, write_file, burn_cpu: tries to get out of its sandbox and reports how it went. */
  escapist: 'escapist',
  /** echo: a server on the v2 SDK that also serves protocol revision 2026-07-28 (to a client that asks for it). */
  modernEcho: 'modern-echo',
} as const;
/** The name of a fixture server. */
export type FixtureServer = (typeof FixtureServer)[keyof typeof FixtureServer];

/** The absolute path of a fixture server's program (plain .mjs, run with node). */
export function fixtureServerPath(name: FixtureServer): string {
  // src/ and dist/ both sit one level below the package root, next to test/.
  return fileURLToPath(new URL(`../test/fixtures/${name}.mjs`, import.meta.url));
}

// The test servers' env variables that name a file they write (or watch): the fixtures' COUNT_FILE and STATE_FILE,
// server-memory's MEMORY_FILE_PATH. The directory of each is a writable path of the server's sandbox.
const SERVER_DATA_FILE_VARIABLES = ['COUNT_FILE', 'STATE_FILE', 'MEMORY_FILE_PATH'];

/** The files a test server run with `env` writes: what its COUNT_FILE, STATE_FILE and MEMORY_FILE_PATH name. */
export function serverDataFiles(env: Readonly<Record<string, string>>): string[] {
  return SERVER_DATA_FILE_VARIABLES.flatMap((variable) => (env[variable] === undefined ? [] : [env[variable]]));
}

/**
 * The sandbox profile of a test server: the default one, with the directories of `dataFiles` writable (each must be
 * writable by the sandbox's user: make them with {@link sandboxScratchDir}) and `readOnly` paths mounted.
 */
export function testSandboxProfile(dataFiles: readonly string[], readOnly: readonly string[] = [], overrides: Partial<SandboxProfile> = {}): SandboxProfile {
  return {
    ...DEFAULT_SANDBOX_PROFILE,
    writablePaths: [...new Set(dataFiles.map((file) => path.dirname(file)))],
    readOnlyMounts: [...readOnly],
    ...overrides,
  };
}

/**
 * A fresh scratch directory that a sandboxed server may write in: the sandbox runs as an unprivileged host user when
 * the tests run as root (see StdioSandboxOptions.user), so the directory is open to every user.
 */
export async function sandboxScratchDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await chmod(dir, 0o777);
  return dir;
}

/**
 * A stdio target that runs a fixture server with exactly `env` (plus the minimal PATH the transport adds), in the
 * sandbox {@link fixtureSandboxProfile} gives it.
 */
export function fixtureStdioTarget(name: FixtureServer, env: Record<string, string> = {}, cwd?: string): McpStdioTarget {
  return {
    transport: 'stdio',
    command: process.execPath,
    args: [fixtureServerPath(name)],
    env,
    ...(cwd === undefined ? {} : { cwd }),
    sandbox: fixtureSandboxProfile(name, env),
  };
}

/**
 * The sandbox profile a fixture server needs with `env`: the directories of its COUNT_FILE and STATE_FILE writable
 * (make them with {@link sandboxScratchDir}) and `sleep` runnable for counting-echo's spawn_helper.
 */
export function fixtureSandboxProfile(name: FixtureServer, env: Readonly<Record<string, string>>): SandboxProfile {
  return testSandboxProfile(serverDataFiles(env), name === 'counting-echo' ? ['/usr/bin/sleep'] : []);
}

/**
 * The host pid of the process that has pid `innerPid` inside the sandbox (PID namespace) of the process
 * `sandboxedPid`, or undefined when there is none: a server reports the pids of its own namespace.
 */
export async function hostPidInSandbox(sandboxedPid: number, innerPid: number): Promise<number | undefined> {
  const namespace = await readlink(`/proc/${sandboxedPid}/ns/pid`).catch(() => undefined);
  if (namespace === undefined) return undefined;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if ((await readlink(`/proc/${entry}/ns/pid`).catch(() => undefined)) !== namespace) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const nspid = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    if (nspid !== undefined && Number(nspid[nspid.length - 1]) === innerPid) return Number(entry);
  }
  return undefined;
}

/** A real MCP server installed from npm. */
export type RealServer = 'everything' | 'memory';

/** The entry script of a real server (`@modelcontextprotocol/server-everything` or `server-memory`). */
export function realServerPath(server: RealServer): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`@modelcontextprotocol/server-${server}/package.json`);
  return path.join(path.dirname(manifest), 'dist', 'index.js');
}

/** A stdio target running `@modelcontextprotocol/server-everything`. */
export function everythingStdioTarget(): McpStdioTarget {
  return { transport: 'stdio', command: process.execPath, args: [realServerPath('everything'), 'stdio'], env: {} };
}

/** A stdio target running `@modelcontextprotocol/server-memory`, keeping its graph in `memoryFile` (absolute path). */
export function memoryStdioTarget(memoryFile: string): McpStdioTarget {
  return { transport: 'stdio', command: process.execPath, args: [realServerPath('memory')], env: { MEMORY_FILE_PATH: memoryFile }, sandbox: testSandboxProfile([memoryFile]) };
}

/** A server process listening over Streamable HTTP. */
export interface HttpServerProcess {
  /** The MCP endpoint. */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Kills the server's process group and waits for it to exit. */
  stop(): Promise<void>;
}

/** Options of the HTTP server starters. */
export interface StartHttpOptions {
  /** Environment of the server (besides PATH). */
  readonly env?: Record<string, string> | undefined;
  /** The port to listen on (to restart a server where it was); a free one by default. */
  readonly port?: number | undefined;
  /** How long to wait for the server to listen (default 20 s). */
  readonly timeoutMs?: number | undefined;
}

/** Starts a fixture server over Streamable HTTP on 127.0.0.1 and waits until it listens. */
export async function startHttpFixture(name: FixtureServer, options: StartHttpOptions = {}): Promise<HttpServerProcess> {
  const child = spawnServer(process.execPath, [fixtureServerPath(name), '--http'], { ...options.env, PORT: String(options.port ?? 0) });
  const port = await waitForOutput(child, 'stdout', /LISTENING (\d+)/, options.timeoutMs ?? 20_000);
  return running(child, port);
}

/** Starts `mcp-server-everything streamableHttp` (it takes its port from $PORT and serves /mcp) and waits until it listens. */
export async function startEverythingHttp(options: StartHttpOptions = {}): Promise<HttpServerProcess> {
  const port = options.port ?? (await freePort());
  const child = spawnServer(process.execPath, [realServerPath('everything'), 'streamableHttp'], { ...options.env, PORT: String(port) });
  await waitForOutput(child, 'stderr', /listening on port (\d+)/, options.timeoutMs ?? 20_000);
  return running(child, port);
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function spawnServer(command: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn(command, args, { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
}

function running(child: ChildProcess, port: number): HttpServerProcess {
  const pid = child.pid;
  if (pid === undefined) throw new Error('server process has no pid');
  // Keep draining the pipes so a chatty server never blocks on a full pipe.
  child.stdout?.resume();
  child.stderr?.resume();
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    pid,
    stop() {
      stopping ??= (async () => {
        signalProcessGroup(pid, 'SIGTERM');
        if (!(await waitForExit(child, 2_000))) signalProcessGroup(pid, 'SIGKILL');
        signalProcessGroup(pid, 'SIGKILL');
        await waitForExit(child, 2_000);
      })();
      return stopping;
    },
  };
}

function waitForOutput(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs: number): Promise<number> {
  const source = child[stream];
  return new Promise((resolve, reject) => {
    let seen = '';
    const cleanup = () => {
      clearTimeout(timer);
      source?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const fail = (message: string) => {
      cleanup();
      if (child.pid !== undefined) signalProcessGroup(child.pid, 'SIGKILL');
      reject(new Error(`${message}; output so far: ${seen.slice(-500)}`));
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = pattern.exec(seen);
      if (match !== null) {
        cleanup();
        resolve(Number(match[1]));
      }
    };
    const onExit = (code: number | null) => fail(`server exited (code ${code}) before listening`);
    const onError = (error: Error) => fail(`server failed to start: ${error.message}`);
    const timer = setTimeout(() => fail(`server did not listen within ${timeoutMs} ms`), timeoutMs);
    source?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}
