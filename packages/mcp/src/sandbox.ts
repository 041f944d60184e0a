import { DEFAULT_SANDBOX_PROFILE, ToolplaneError, type SandboxProfile } from '@toolplane/contracts';
import { constants as osConstants } from 'node:os';
import { access, constants, lstat, open, readFile, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { NOT_DELIVERED } from './translate-error.js';

// bubblewrap around a stdio MCP server: new user, PID, IPC, UTS, cgroup and (unless the profile says host) network
// namespaces; no capabilities; a fresh /proc, /dev and a size-bounded private /tmp; read-only binds of only the
// runtime (the system libraries, the command and the packages its absolute-path arguments live in) and the declared
// mounts; read-write binds of the declared data paths and the session's working directory. The limits are rlimits
// set by util-linux's `prlimit` inside the sandbox just before the server runs, so they bind the server and what it
// starts, not bubblewrap. The arguments reach bwrap through a pipe (`--args`), so the server's environment (which may
// hold leased credentials) never shows in the host's process table.

/** Whether stdio servers run under bubblewrap (`bubblewrap`, the default) or as plain child processes (`off`). */
export type StdioSandboxMode = 'bubblewrap' | 'off';

/** How stdio servers are sandboxed. */
export interface StdioSandboxOptions {
  /** Default `bubblewrap`. */
  readonly mode?: StdioSandboxMode | undefined;
  /** The bwrap executable (default: `bwrap` on the host's system directories). */
  readonly bwrapPath?: string | undefined;
  /**
   * The host user the sandbox runs as. Default: the current user, except root, for whom it is nobody (65534): the
   * kernel never applies RLIMIT_NPROC to processes of host uid 0, whatever user namespace they are in, so a fork bomb
   * would not be bounded. Declared writable paths must be writable by this user.
   */
  readonly user?: { readonly uid: number; readonly gid: number } | undefined;
}

/** The host user sandboxes run as by default (see StdioSandboxOptions.user). */
export function defaultSandboxUser(): { uid: number; gid: number } | undefined {
  const uid = process.getuid?.();
  if (uid === 0) return { uid: 65_534, gid: 65_534 };
  return undefined;
}

const SYSTEM_BIN_DIRS = new Set(['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin', '/usr/local/sbin']);
// What a dynamically linked runtime needs to load and verify TLS peers; each only if the host has it.
const RUNTIME_DIRS = ['/usr/lib', '/usr/lib64', '/usr/lib32', '/usr/libx32', '/lib', '/lib64', '/lib32', '/libx32'];
const RUNTIME_FILES = ['/etc/ld.so.cache', '/etc/ssl', '/etc/ca-certificates', '/usr/share/ca-certificates', '/etc/localtime', '/usr/share/zoneinfo'];
const SANDBOX_HOSTNAME = 'sandbox';

/** One bind of the sandbox's file system. */
export interface SandboxBind {
  readonly source: string;
  readonly dest: string;
  readonly writable: boolean;
}

/** Everything bwrap is told, as data (pure: built by {@link bubblewrapArgs}). */
export interface SandboxLayout {
  readonly profile: SandboxProfile;
  /** The command as the server's argv[0] (looked up on `path` inside the sandbox when it is a bare name). */
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly path: string;
  readonly cwd: string;
  /** Host directories that are symlinks (merged /usr: /lib -> usr/lib), recreated as symlinks. */
  readonly symlinks: readonly { readonly target: string; readonly link: string }[];
  readonly binds: readonly SandboxBind[];
  /** The prlimit executable bound into the sandbox. */
  readonly prlimit: string;
}

/**
 * What bwrap is given for a layout: its options (namespaces, file system, environment), passed through `--args FD`
 * because they include the environment, and the command line it runs (`prlimit` with the profile's limits running
 * the command), which bwrap only takes from its own argv. The CPU limit's hard value is a few seconds above the soft
 * one so the server first gets SIGXCPU, which names the cause in its exit.
 */
export function bubblewrapArgs(layout: SandboxLayout): { readonly options: string[]; readonly command: string[] } {
  const { profile } = layout;
  const { limits } = profile;
  const args = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (profile.network !== 'host') args.push('--unshare-net');
  args.push('--hostname', SANDBOX_HOSTNAME, '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--clearenv');
  args.push('--setenv', 'PATH', layout.path);
  for (const [name, value] of Object.entries(layout.env)) if (name !== 'PATH') args.push('--setenv', name, value);
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(limits.tmpBytes), '--tmpfs', '/tmp');
  for (const { target, link } of layout.symlinks) args.push('--symlink', target, link);
  // Parents before children, so a writable path inside a read-only mount is bound over it.
  const binds = [...layout.binds].sort((a, b) => depth(a.dest) - depth(b.dest) || a.dest.localeCompare(b.dest));
  for (const bind of binds) args.push(bind.writable ? '--bind' : '--ro-bind', bind.source, bind.dest);
  args.push('--chdir', layout.cwd);
  const command = [
    layout.prlimit,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 5}`,
    `--as=${limits.addressSpaceBytes}`,
    `--nofile=${limits.openFiles}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.fileSizeBytes}`,
    '--',
    layout.command,
    ...layout.args,
  ];
  return { options: args, command };
}

function depth(p: string): number {
  return p.split('/').length;
}

/** The bwrap arguments serialised for `--args FD`: NUL-terminated. */
export function encodeArgs(args: readonly string[]): Buffer {
  return Buffer.from(args.map((arg) => `${arg}\0`).join(''), 'utf8');
}

/** Removes binds covered by an ancestor bind of the same kind (and duplicates); writable wins over read-only for the same path. */
export function coalesceBinds(binds: readonly SandboxBind[]): SandboxBind[] {
  const byDest = new Map<string, SandboxBind>();
  for (const bind of binds) {
    const existing = byDest.get(bind.dest);
    if (existing === undefined || (bind.writable && !existing.writable)) byDest.set(bind.dest, bind);
  }
  const all = [...byDest.values()];
  return all.filter((bind) => !all.some((other) => other !== bind && other.writable === bind.writable && other.source === other.dest && bind.source === bind.dest && isInside(bind.dest, other.dest)));
}

function isInside(child: string, parent: string): boolean {
  return child.startsWith(`${parent}/`);
}

/** A signal's name from bwrap's exit code (it exits 128+N when the server died of signal N). */
export function signalOfExitCode(code: number | null): NodeJS.Signals | undefined {
  if (code === null || code <= 128 || code > 128 + 64) return undefined;
  const number = code - 128;
  const entry = Object.entries(osConstants.signals).find(([, value]) => value === number);
  return entry?.[0] as NodeJS.Signals | undefined;
}

/** Why a sandboxed server's death by `signal` happened, in words, when a limit explains it. */
export function limitExplanation(signal: NodeJS.Signals | undefined, profile: SandboxProfile): string | undefined {
  switch (signal) {
    case 'SIGXCPU':
      return `its sandbox's CPU time limit (${profile.limits.cpuSeconds} s) was reached`;
    case 'SIGXFSZ':
      return `it wrote past its sandbox's file size limit (${profile.limits.fileSizeBytes} bytes)`;
    case 'SIGKILL':
      return 'it was killed (a hard limit of its sandbox, or the kernel out of memory)';
    case 'SIGABRT':
    case 'SIGTRAP':
    case 'SIGSEGV':
      return `it crashed (running out of memory within its sandbox's address space limit of ${profile.limits.addressSpaceBytes} bytes does this)`;
    default:
      return undefined;
  }
}

function sandboxError(message: string, providerErrorType: string): ToolplaneError {
  // Not retryable: the host or the registration must change first; retrying the same spawn fails the same way.
  return new ToolplaneError('INTERNAL', message, { retryable: false, details: { providerErrorType, [NOT_DELIVERED]: true } });
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** Looks a bare command name up on `searchPath`; an absolute path is taken as it is. */
export async function resolveCommand(command: string, searchPath: string): Promise<string | undefined> {
  if (command.includes('/')) return path.isAbsolute(command) && (await isExecutableFile(command)) ? command : undefined;
  for (const dir of searchPath.split(':')) {
    if (dir === '' || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, command);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** The bwrap executable, or the one clear line that says the sandbox cannot run. */
export async function findBwrap(bwrapPath: string | undefined): Promise<string> {
  const found = await resolveCommand(bwrapPath ?? 'bwrap', '/usr/bin:/bin:/usr/local/bin');
  if (found === undefined) {
    throw sandboxError(
      `stdio MCP servers run sandboxed under bubblewrap, but ${JSON.stringify(bwrapPath ?? 'bwrap')} was not found: install Debian's bubblewrap (infra/local/install-sandbox.sh), or set MCP_STDIO_SANDBOX=off`,
      'SandboxUnavailable',
    );
  }
  return found;
}

/** The interpreter of a script (its `#!` line), with `/usr/bin/env NAME` followed to NAME. */
async function interpreterOf(file: string): Promise<string[]> {
  let head: string;
  try {
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(256);
      const { bytesRead } = await handle.read(buffer, 0, 256, 0);
      head = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return [];
  }
  if (!head.startsWith('#!')) return [];
  const words = (head.slice(2).split('\n')[0] ?? '').trim().split(/\s+/);
  const interpreter = words[0];
  if (interpreter === undefined || !path.isAbsolute(interpreter)) return [];
  if (path.basename(interpreter) === 'env') {
    const name = words.slice(1).find((word) => !word.startsWith('-'));
    return name === undefined ? [interpreter] : [interpreter, name];
  }
  return [interpreter];
}

/** The nearest directory at or above `file` with a package.json (a package root), if any below `/`. */
async function packageRoot(file: string): Promise<string | undefined> {
  for (let dir = path.dirname(file); dir !== '/'; dir = path.dirname(dir)) {
    if (await exists(path.join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

/** Every node_modules directory Node's resolver would look in for a module at `file`. */
async function nodeModulesChain(file: string): Promise<string[]> {
  const found: string[] = [];
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (path.basename(dir) === 'node_modules') found.push(dir);
    else if (await exists(path.join(dir, 'node_modules'))) found.push(path.join(dir, 'node_modules'));
    if (dir === '/') break;
  }
  return found;
}

/** The binds that make an executable (and its interpreter) runnable: the file at its looked-up path, and its package or directory. */
async function executableBinds(resolved: string, searchPath: string): Promise<SandboxBind[]> {
  const real = await realpath(resolved);
  const binds: SandboxBind[] = [{ source: real, dest: resolved, writable: false }];
  if (real !== resolved) binds.push({ source: real, dest: real, writable: false });
  const dir = path.dirname(real);
  // A binary in a system directory brings only itself; one elsewhere (node from node_modules) its directory too.
  if (!SYSTEM_BIN_DIRS.has(dir)) binds.push(...(await packageBinds(real)));
  for (const word of await interpreterOf(real)) {
    const interpreter = await resolveCommand(word, searchPath);
    if (interpreter === undefined) continue;
    const interpreterReal = await realpath(interpreter);
    binds.push({ source: interpreterReal, dest: interpreter, writable: false });
    if (!SYSTEM_BIN_DIRS.has(path.dirname(interpreterReal))) binds.push({ source: path.dirname(interpreterReal), dest: path.dirname(interpreterReal), writable: false });
  }
  return binds;
}

/** The package a file belongs to (or its directory when it is in none) and the node_modules trees it resolves from. */
async function packageBinds(real: string): Promise<SandboxBind[]> {
  const root = (await packageRoot(real)) ?? path.dirname(real);
  const binds: SandboxBind[] = [{ source: root, dest: root, writable: false }];
  for (const modules of await nodeModulesChain(real)) binds.push({ source: modules, dest: modules, writable: false });
  return binds;
}

/** What {@link planSandbox} needs. */
export interface SandboxPlanInput {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly path: string;
  readonly cwd: string;
  /** Whether the working directory is the session's own (bound writable) or given (bound read-only). */
  readonly ownCwd: boolean;
  readonly profile: SandboxProfile | undefined;
}

/**
 * The layout of a server's sandbox: its runtime, command, packages, declared mounts and working directory. A command
 * that cannot be found is NOT_FOUND, a declared path that does not exist or a network mode that cannot be given is
 * INVALID_ARGUMENT (nothing is started).
 */
export async function planSandbox(input: SandboxPlanInput): Promise<SandboxLayout> {
  const profile = input.profile ?? DEFAULT_SANDBOX_PROFILE;
  const notDelivered = { [NOT_DELIVERED]: true };
  if (profile.network === 'egress') {
    throw new ToolplaneError('INVALID_ARGUMENT', 'sandbox network egress (an allow-list of host:port) is not supported yet: use network none, or host', {
      details: { providerErrorType: 'SandboxEgressUnsupported', ...notDelivered },
    });
  }
  const resolved = await resolveCommand(input.command, input.path);
  if (resolved === undefined && path.isAbsolute(input.command) && (await exists(input.command))) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the stdio command ${JSON.stringify(input.command)} cannot be executed (EACCES)`, {
      details: { providerErrorType: 'SpawnError(EACCES)', ...notDelivered },
    });
  }
  if (resolved === undefined) {
    throw new ToolplaneError('NOT_FOUND', `the stdio command ${JSON.stringify(input.command)} was not found`, { details: { providerErrorType: 'SpawnError(ENOENT)', ...notDelivered } });
  }
  const prlimit = await resolveCommand('prlimit', '/usr/bin:/bin');
  if (prlimit === undefined) throw sandboxError('the stdio sandbox applies its limits with prlimit (util-linux), which was not found in /usr/bin or /bin', 'SandboxUnavailable');

  const binds: SandboxBind[] = [];
  const symlinks: { target: string; link: string }[] = [];
  for (const dir of RUNTIME_DIRS) {
    const info = await lstat(dir).catch(() => undefined);
    if (info === undefined) continue;
    if (info.isSymbolicLink()) symlinks.push({ target: await readlink(dir), link: dir });
    else binds.push({ source: dir, dest: dir, writable: false });
  }
  for (const file of RUNTIME_FILES) if (await exists(file)) binds.push({ source: await realpath(file), dest: file, writable: false });
  binds.push({ source: prlimit, dest: prlimit, writable: false });
  binds.push(...(await executableBinds(resolved, input.path)));
  for (const arg of input.args) {
    if (!path.isAbsolute(arg) || !(await exists(arg))) continue;
    const real = await realpath(arg);
    const info = await stat(real);
    binds.push(...(info.isDirectory() ? [{ source: real, dest: real, writable: false }] : await packageBinds(real)));
  }
  for (const mount of profile.readOnlyMounts) {
    if (!(await exists(mount))) throw declaredMissing('read-only mount', mount);
    binds.push({ source: await realpath(mount), dest: mount, writable: false });
  }
  for (const data of profile.writablePaths) {
    if (!(await exists(data))) throw declaredMissing('writable path', data);
    binds.push({ source: await realpath(data), dest: data, writable: true });
  }
  binds.push({ source: input.cwd, dest: input.cwd, writable: input.ownCwd });
  return { profile, command: input.command, args: input.args, env: input.env, path: input.path, cwd: input.cwd, symlinks, binds: coalesceBinds(binds), prlimit };
}

function declaredMissing(what: string, where: string): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', `the sandbox's declared ${what} ${JSON.stringify(where)} does not exist on this host`, {
    details: { providerErrorType: 'SandboxMountMissing', [NOT_DELIVERED]: true },
  });
}

/**
 * The host pids of a sandbox's processes: bwrap's child is the namespace's init (pid 1), whose child is the server
 * (prlimit exec'd into it). Each undefined while it is not started yet (or when /proc does not list children).
 */
export async function sandboxPids(bwrapPid: number): Promise<{ init: number | undefined; server: number | undefined }> {
  const childrenOf = async (pid: number): Promise<number[]> => {
    try {
      const text = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim();
      return text === '' ? [] : text.split(/\s+/).map(Number);
    } catch {
      return [];
    }
  };
  const [init] = await childrenOf(bwrapPid);
  if (init === undefined) return { init: undefined, server: undefined };
  const [server] = await childrenOf(init);
  return { init, server };
}
