import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/core';
import { ToolplaneError } from '@toolplane/contracts';
import { spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { LineSplitter, LineTooLongError } from './line-splitter.js';
import { isProcessAlive, signalProcessGroup, waitForExit } from './process-group.js';
import { bubblewrapArgs, defaultSandboxUser, encodeArgs, findBwrap, limitExplanation, planSandbox, sandboxPids, signalOfExitCode, type SandboxLayout, type StdioSandboxOptions } from './sandbox.js';
import type { McpStdioTarget } from './target.js';
import { NOT_DELIVERED } from './translate-error.js';

/** Limits and environment of a spawned server. */
export interface StdioTransportOptions {
  /** The largest JSON-RPC message (one stdout line, or one request we send), in bytes. */
  readonly maxMessageBytes: number;
  /** How much of the server's stderr is kept (the most recent bytes). */
  readonly maxStderrBytes: number;
  /** How long a server gets to exit after SIGTERM before its group is killed. */
  readonly killGraceMs: number;
  /** The PATH the child gets (besides the env its binding declares). */
  readonly path: string;
  /** Receives the server's stderr as it arrives (for a service to log); never called with more than 64 KiB at once. */
  readonly onStderr?: ((text: string) => void) | undefined;
  /** How the server is sandboxed (default: under bubblewrap with the target's profile). */
  readonly sandbox?: StdioSandboxOptions | undefined;
}

// How long start() looks for the sandboxed server's host pid (bwrap sets the sandbox up in a few milliseconds).
const FIND_SANDBOXED_PID_MS = 5_000;

/**
 * An MCP client transport over a child process that the SDK's StdioClientTransport cannot provide: the child
 * gets only its declared environment and a minimal PATH, its own working directory (a private temporary one by
 * default), bounded stdout messages and stderr capture, and runs in its own process group, which close() kills
 * whole (SIGTERM, then SIGKILL), so servers that fork helpers leave nothing behind.
 */
export class ChildProcessTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  private readonly target: McpStdioTarget;
  private readonly options: StdioTransportOptions;
  private readonly splitter: LineSplitter;
  private child: ChildProcess | undefined;
  private ownTempDir: string | undefined;
  private failure: ToolplaneError | undefined;
  private closing: Promise<void> | undefined;
  private exited = false;
  private stderrChunks: Buffer[] = [];
  private stderrBytes = 0;
  private sandbox: SandboxLayout | undefined;
  private serverPid: number | undefined;
  private sandboxInit: number | undefined;

  constructor(target: McpStdioTarget, options: StdioTransportOptions) {
    this.target = target;
    this.options = options;
    this.splitter = new LineSplitter(options.maxMessageBytes);
  }

  /**
   * The host process id of the server (also its process group id), once started: inside a sandbox, the server's
   * own (not bubblewrap's) once it was found.
   */
  get pid(): number | undefined {
    return this.serverPid ?? this.child?.pid;
  }

  /** The sandbox the server runs in (undefined when the sandbox is off). */
  get sandboxLayout(): SandboxLayout | undefined {
    return this.sandbox;
  }

  /** Why the transport closed, if it closed on its own (process exit, oversized or malformed output). */
  get failureReason(): ToolplaneError | undefined {
    return this.failure;
  }

  /** Whether close() ran or the process ended. */
  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** The most recent stderr output of the server, bounded by `maxStderrBytes`. */
  stderrTail(): string {
    return Buffer.concat(this.stderrChunks).toString('utf8');
  }

  async start(): Promise<void> {
    if (this.child !== undefined || this.closing !== undefined) throw new Error('ChildProcessTransport already started');
    const cwd = await this.workingDirectory();
    if (this.closing !== undefined) {
      // Closed (a handshake deadline) while the working directory was being made: start nothing.
      await this.removeTempDir();
      throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the transport was closed before the server started', {
        details: { providerErrorType: 'ClosedBeforeStart', [NOT_DELIVERED]: true },
      });
    }
    let child: ChildProcess;
    if ((this.options.sandbox?.mode ?? 'bubblewrap') === 'bubblewrap') {
      let bwrap: string;
      try {
        bwrap = await findBwrap(this.options.sandbox?.bwrapPath);
        this.sandbox = await planSandbox({
          command: this.target.command,
          args: this.target.args ?? [],
          env: this.target.env ?? {},
          path: this.options.path,
          cwd,
          ownCwd: this.ownTempDir !== undefined,
          profile: this.target.sandbox,
        });
      } catch (error) {
        this.closing ??= Promise.resolve();
        await this.removeTempDir();
        throw error;
      }
      const user = this.options.sandbox?.user ?? defaultSandboxUser();
      // The session's own working directory is the sandbox user's to write in.
      if (user !== undefined && this.ownTempDir !== undefined) await chown(this.ownTempDir, user.uid, user.gid);
      const { options, command } = bubblewrapArgs(this.sandbox);
      child = spawn(bwrap, ['--args', '3', '--', ...command], {
        cwd: '/',
        env: {},
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
      });
      const argsPipe = child.stdio[3] as Writable | null;
      argsPipe?.on('error', () => undefined);
      argsPipe?.end(encodeArgs(options));
    } else {
      child = spawn(this.target.command, [...(this.target.args ?? [])], {
        cwd,
        env: { PATH: this.options.path, ...this.target.env },
        // A new process group (and session), so close() can signal the server and everything it started.
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
      });
    }
    this.child = child;
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (error) {
      this.child = undefined;
      this.closing ??= Promise.resolve();
      await this.removeTempDir();
      throw spawnFailure(this.target.command, error);
    }
    child.on('error', (error) => this.fail(new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server process failed: ${error.message}`, { details: { providerErrorType: 'ProcessError' } })));
    child.stdin?.on('error', () => {
      // EPIPE after the server died: the exit handling reports it; an unhandled 'error' would crash us.
    });
    child.stdout?.on('data', (chunk: Buffer) => this.onStdout(chunk));
    child.stdout?.on('error', () => undefined);
    child.stderr?.on('data', (chunk: Buffer) => this.onStderr(chunk));
    child.stderr?.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      this.exited = true;
      if (this.closing === undefined) this.failure ??= this.exitFailure(code, signal);
      // Let the last stdout lines arrive ('close' comes after the pipes drain), but a helper that inherited the
      // pipes must not keep the transport open: after the grace period the group is killed anyway.
      const sweep = setTimeout(() => void this.close(), this.options.killGraceMs);
      child.once('close', () => {
        clearTimeout(sweep);
        void this.close();
      });
    });
    await this.findServerPid(child);
  }

  /** Why the server's exit ended the session; inside a sandbox, bwrap exits 128+N when the server died of signal N. */
  private exitFailure(code: number | null, signal: NodeJS.Signals | null): ToolplaneError {
    const sandbox = this.sandbox;
    const sandboxSignal = sandbox === undefined ? undefined : signalOfExitCode(code);
    if (sandbox !== undefined && sandboxSignal !== undefined) {
      const why = limitExplanation(sandboxSignal, sandbox.profile);
      return new ToolplaneError('TEMPORARY_UNAVAILABLE', `the sandboxed server process died of ${sandboxSignal}${why === undefined ? '' : `: ${why}`}`, {
        details: { providerErrorType: 'ProcessExited', exitCode: code, exitSignal: sandboxSignal, sandboxProfile: sandbox.profile.name },
      });
    }
    return new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server process exited (${signal === null ? `code ${code}` : `signal ${signal}`})`, {
      details: { providerErrorType: 'ProcessExited', exitCode: code, exitSignal: signal },
    });
  }

  /** Waits (bounded) until the sandboxed server's host pid is known, or bwrap is gone. */
  private async findServerPid(child: ChildProcess): Promise<void> {
    const pid = child.pid;
    if (this.sandbox === undefined || pid === undefined) return;
    const until = Date.now() + FIND_SANDBOXED_PID_MS;
    while (!this.exited && this.closing === undefined && Date.now() < until) {
      const found = await sandboxPids(pid);
      if (found.server !== undefined) {
        this.serverPid = found.server;
        this.sandboxInit = found.init;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.child;
    const stdin = child?.stdin;
    if (child === undefined || stdin === null || stdin === undefined || this.closing !== undefined || this.exited || !stdin.writable) {
      return Promise.reject(
        this.failure ?? new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the server process is not running', { details: { providerErrorType: 'NotConnected', [NOT_DELIVERED]: true } }),
      );
    }
    const line = `${JSON.stringify(message)}\n`;
    if (Buffer.byteLength(line) > this.options.maxMessageBytes) {
      return Promise.reject(
        new ToolplaneError('INVALID_ARGUMENT', `the request is larger than ${this.options.maxMessageBytes} bytes`, {
          details: { providerErrorType: 'RequestTooLarge', [NOT_DELIVERED]: true },
        }),
      );
    }
    return new Promise((resolve, reject) => {
      stdin.write(line, (error) => {
        if (error) reject(this.failure ?? new ToolplaneError('TEMPORARY_UNAVAILABLE', `writing to the server failed: ${error.message}`, { details: { providerErrorType: 'WriteFailed' } }));
        else resolve();
      });
    });
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const child = this.child;
    const pid = child?.pid;
    if (child !== undefined && pid !== undefined) {
      try {
        child.stdin?.end();
      } catch {
        // Already closed.
      }
      // Inside a sandbox the sandbox's init leads the session and group the server and its helpers are in (bwrap's
      // --new-session): that group gets the SIGTERM (the init itself ignores it: it has no handler). Killing the init
      // ends everything in the sandbox.
      const sandboxInit = this.sandbox === undefined ? undefined : (this.sandboxInit ?? (this.exited ? undefined : (await sandboxPids(pid)).init));
      const serverGroup = sandboxInit ?? pid;
      if (!this.exited) {
        signalProcessGroup(serverGroup, 'SIGTERM');
        await waitForExit(child, this.options.killGraceMs);
      }
      // Always: the leader may be gone while helpers it started still run in its group.
      signalProcessGroup(serverGroup, 'SIGKILL');
      signalProcessGroup(pid, 'SIGKILL');
      await waitForExit(child, this.options.killGraceMs);
      // bwrap is gone; the kernel ends the sandbox's processes with its init a moment later: closed means gone.
      await waitUntilGone([this.serverPid, sandboxInit], this.options.killGraceMs);
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.stdin?.destroy();
    }
    this.splitter.clear();
    await this.removeTempDir();
    this.onclose?.();
  }

  private fail(failure: ToolplaneError): void {
    if (this.closing !== undefined) return;
    this.failure ??= failure;
    this.onerror?.(failure);
    void this.close();
  }

  private onStdout(chunk: Buffer): void {
    if (this.closing !== undefined || this.failure !== undefined) return;
    let lines: string[];
    try {
      lines = this.splitter.push(chunk);
    } catch (error) {
      if (!(error instanceof LineTooLongError)) throw error;
      this.fail(
        new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server sent a message larger than ${error.maxBytes} bytes; it was refused and the session closed`, {
          details: { providerErrorType: 'MessageTooLarge', maxMessageBytes: error.maxBytes },
        }),
      );
      return;
    }
    for (const line of lines) {
      if (this.failure !== undefined) return;
      if (line.trim() === '') continue;
      const message = parseMessage(line);
      if (message === undefined) {
        this.fail(
          new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server wrote something that is not a JSON-RPC message to stdout (${preview(line)}); the session closed`, {
            details: { providerErrorType: 'ProtocolViolation' },
          }),
        );
        return;
      }
      this.onmessage?.(message);
    }
  }

  private onStderr(chunk: Buffer): void {
    this.stderrChunks.push(chunk);
    this.stderrBytes += chunk.length;
    while (this.stderrBytes > this.options.maxStderrBytes && this.stderrChunks.length > 0) {
      const first = this.stderrChunks[0]!;
      const excess = this.stderrBytes - this.options.maxStderrBytes;
      if (first.length <= excess) {
        this.stderrChunks.shift();
        this.stderrBytes -= first.length;
      } else {
        this.stderrChunks[0] = first.subarray(excess);
        this.stderrBytes -= excess;
      }
    }
    this.options.onStderr?.(chunk.subarray(0, 65_536).toString('utf8'));
  }

  private async workingDirectory(): Promise<string> {
    if (this.target.cwd !== undefined) {
      const info = await stat(this.target.cwd).catch(() => undefined);
      if (info?.isDirectory() !== true) {
        throw new ToolplaneError('INVALID_ARGUMENT', `the working directory ${JSON.stringify(this.target.cwd)} does not exist or is not a directory`, {
          details: { providerErrorType: 'InvalidWorkingDirectory', [NOT_DELIVERED]: true },
        });
      }
      return this.target.cwd;
    }
    this.ownTempDir = await mkdtemp(path.join(tmpdir(), 'toolplane-mcp-'));
    return this.ownTempDir;
  }

  private async removeTempDir(): Promise<void> {
    const dir = this.ownTempDir;
    this.ownTempDir = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function waitUntilGone(pids: readonly (number | undefined)[], ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (pids.some((pid) => pid !== undefined && isProcessAlive(pid)) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
}

function parseMessage(line: string): JSONRPCMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = JSONRPCMessageSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

function preview(line: string): string {
  const printable = line.slice(0, 40).replace(/[^\x20-\x7e]/g, '?');
  return `starts with ${JSON.stringify(printable)}${line.length > 40 ? '…' : ''}`;
}

function spawnFailure(command: string, error: unknown): ToolplaneError {
  const code = (error as { code?: unknown }).code;
  const details = { providerErrorType: `SpawnError(${typeof code === 'string' ? code : 'unknown'})`, [NOT_DELIVERED]: true };
  if (code === 'ENOENT') return new ToolplaneError('NOT_FOUND', `the stdio command ${JSON.stringify(command)} was not found`, { cause: error, details });
  if (code === 'EACCES' || code === 'EISDIR' || code === 'ENOEXEC' || code === 'ENOTDIR') {
    return new ToolplaneError('INVALID_ARGUMENT', `the stdio command ${JSON.stringify(command)} cannot be executed (${code})`, { cause: error, details });
  }
  return new ToolplaneError('TEMPORARY_UNAVAILABLE', `the stdio command ${JSON.stringify(command)} could not be started (${error instanceof Error ? error.message : String(error)})`, {
    cause: error,
    details,
  });
}
