#!/usr/bin/env node
// `npm start`: brings the whole platform up on this machine and keeps it in the foreground.
// Without NATS_URL/MONGODB_URL it installs (once) and starts the local nats-server and FerretDB (each in a process
// group of its own, so a terminal's Ctrl-C reaches only this supervisor); then it builds the workspaces, starts the
// six services, the MCP endpoint and the approval console, each with only its own development keys, waits until each
// reports ready on /readyz, makes sure the development agent profile exists, and prints the first-call path and how to
// sign in to the console.
// Supervision: a service that exits after it was ready is restarted, after 1 s, then 2, 4 … up to 30 s while it
// keeps failing (back to 1 s once a run lasted a minute), with one line saying why. One that exits before it was
// first ready stops `npm start` (a bad setting does not mend itself).
// On Ctrl-C (SIGINT) or SIGTERM it stops the services (each drains and exits), then the infrastructure it started.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const root = path.resolve(import.meta.dirname, '../..');
const localDir = process.env.TOOLPLANE_LOCAL_DIR ?? path.join(root, '.local');
const logDir = path.join(localDir, 'logs');
const basePort = Number(process.env.TOOLPLANE_BASE_PORT ?? 7101);

/**
 * The six services, the MCP endpoint and the console, each on its own port (base + index: the endpoint on 7107, the
 * console on 7108 by default).
 */
const services = ['registry', 'tool-adapter', 'approval', 'secret-broker', 'audit-projector', 'flow-runner', 'mcp-endpoint', 'console'];
const endpointIndex = services.indexOf('mcp-endpoint');
/** Where a browser reaches the console; the approval service's webhooks link to it too. */
const consoleUrl = process.env.CONSOLE_PUBLIC_URL ?? `http://127.0.0.1:${basePort + services.indexOf('console')}`;
/** Whom `npm start` suggests signing in to the console as: an approver other than the development agent's principal. */
const consoleApprover = 'user:approver@localhost';
/** Settings beyond keys, per service. */
const settingsByService = { console: { CONSOLE_PUBLIC_URL: consoleUrl }, approval: { CONSOLE_PUBLIC_URL: consoleUrl } };

/** Restart backoff: the first delay, its cap, and how long a run must last for the delay to start over. */
const restartBackoff = { firstMs: 1_000, maxMs: 30_000, stableAfterMs: 60_000 };
/** How long a stopping service may drain before it is killed. */
const stopGraceMs = 20_000;

const say = (line) => process.stdout.write(`toolplane: ${line}\n`);
const fail = (line) => {
  process.stderr.write(`toolplane: ${line}\n`);
  process.exit(1);
};

function runStep(label, command, args, env = process.env) {
  say(label);
  const result = spawnSync(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) {
    process.stderr.write(result.stdout ?? '');
    process.stderr.write(result.stderr ?? '');
    fail(`${label} failed (exit ${result.status})`);
  }
  return result.stdout;
}

let natsUrl = process.env.NATS_URL;
let mongoUrl = process.env.MONGODB_URL;
let startedInfra = false;
const localInfra = !natsUrl && !mongoUrl;
if (!localInfra && (!natsUrl || !mongoUrl)) fail('set both NATS_URL and MONGODB_URL, or neither (to use the local nats-server and FerretDB)');
if (localInfra) runStep('installing local nats-server and FerretDB (the first run builds them with Go: about 9 minutes on 2 cores)', 'bash', ['infra/local/install.sh']);
// The sandbox of stdio MCP servers (the registry's and the adapter's default): bubblewrap, installed once when missing.
if (process.env.MCP_STDIO_SANDBOX !== 'off') runStep('checking bubblewrap, the sandbox of stdio MCP servers', 'bash', ['infra/local/install-sandbox.sh']);
// Built before anything is started: a build that fails leaves no server running behind it.
runStep('building', 'npx', ['turbo', 'run', 'build', '--output-logs=errors-only']);
if (localInfra) {
  const out = runStep('starting local nats-server and FerretDB', 'bash', ['infra/local/start.sh']);
  natsUrl = /NATS_URL=(\S+)/.exec(out)?.[1];
  mongoUrl = /MONGODB_URL=(\S+)/.exec(out)?.[1];
  startedInfra = !/already running/.test(out);
}

// Development keys (kept in .local across runs); a key the environment sets wins over the file's. dev-keys.mjs needs
// the build, hence imported only now.
const devKeysScript = path.join(root, 'infra/local/dev-keys.mjs');
const { devAgentId, devKeysByService, devPrincipal, devTenant } = await import(devKeysScript);
// The endpoint verifies agent tokens and holds no other key.
const keysByService = { ...devKeysByService, 'mcp-endpoint': ['TOOLPLANE_TRUSTED_KEYS'] };
const devKeysFile = path.join(localDir, 'dev-keys.env');
runStep('preparing development keys', process.execPath, [devKeysScript, '--file', devKeysFile]);
const fileKeys = Object.fromEntries(
  readFileSync(devKeysFile, 'utf8')
    .split('\n')
    .map((line) => /^([A-Z0-9_]+)='(.*)'$/.exec(line))
    .filter(Boolean)
    .map(([, key, value]) => [key, value]),
);
const keyNames = new Set(Object.values(keysByService).flat());
// What every service inherits: this environment without any key, so a key set here reaches only its service.
const sharedEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !keyNames.has(key)));

/** The environment of one service: the shared one, its own keys and settings, where NATS and MongoDB are, its port. */
function serviceEnv(name, port) {
  const own = keysByService[name].flatMap((key) => {
    const value = process.env[key] ?? fileKeys[key];
    return value === undefined ? [] : [[key, value]];
  });
  return { ...sharedEnv, ...Object.fromEntries(own), ...settingsByService[name], NATS_URL: natsUrl, MONGODB_URL: mongoUrl, HTTP_PORT: String(port) };
}

mkdirSync(logDir, { recursive: true });
/** Per service: its current process (if any), when it started, whether it was ever ready, its next restart delay. */
const supervised = new Map();
let stopping = false;

/** The last line a service wrote (stdout or stderr), shortened: the likeliest reason it exited. */
function lastLine(state) {
  const line = state.tail.trimEnd().split('\n').at(-1) ?? '';
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}

function launch(name) {
  const state = supervised.get(name);
  const child = spawn(process.execPath, [path.join(root, 'services', name, 'dist/main.js')], {
    cwd: root,
    env: serviceEnv(name, state.port),
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a terminal's Ctrl-C reaches only this supervisor, which then stops each
    // service once with SIGTERM (a service takes a second signal as "exit now").
    detached: true,
  });
  state.child = child;
  state.startedAt = Date.now();
  state.tail = '';
  const remember = (chunk) => {
    state.tail = (state.tail + chunk.toString()).slice(-4096);
  };
  child.stdout.on('data', (chunk) => {
    state.log.write(chunk);
    remember(chunk);
  });
  child.stderr.on('data', (chunk) => {
    state.log.write(chunk);
    remember(chunk);
    process.stderr.write(`[${name}] ${chunk}`);
  });
  child.on('exit', (code, signal) => onExit(name, code, signal));
}

function onExit(name, code, signal) {
  const state = supervised.get(name);
  state.child = undefined;
  if (stopping) {
    if (running().length === 0) finish();
    return;
  }
  const why = signal === null ? `exit ${code}` : `signal ${signal}`;
  const ranMs = Date.now() - state.startedAt;
  const last = lastLine(state);
  if (!state.everReady) {
    say(`${name} exited before it was ready (${why}); see ${path.join(logDir, `${name}.log`)}${last === '' ? '' : `; last log line: ${last}`}`);
    void stop(1);
    return;
  }
  if (ranMs >= restartBackoff.stableAfterMs) state.delayMs = restartBackoff.firstMs;
  const delayMs = state.delayMs;
  state.delayMs = Math.min(delayMs * 2, restartBackoff.maxMs);
  say(`${name} exited (${why}) after ${Math.round(ranMs / 1000)} s; restarting in ${Math.round(delayMs / 1000)} s${last === '' ? '' : `; last log line: ${last}`}`);
  state.restartTimer = setTimeout(() => {
    state.restartTimer = undefined;
    if (stopping) return;
    launch(name);
    void waitReady(name, Date.now() + 120_000).then((ready) => {
      if (ready) say(`${name} ready again (pid ${state.child?.pid})`);
    });
  }, delayMs);
}

const running = () => [...supervised.values()].filter((state) => state.child !== undefined);

/** Polls the service's /readyz until it answers 200 while the same process runs, or the deadline passes. */
async function waitReady(name, deadline) {
  const state = supervised.get(name);
  const child = state.child;
  while (Date.now() < deadline && !stopping) {
    if (state.child !== child) return false;
    try {
      const res = await fetch(`http://127.0.0.1:${state.port}/readyz`);
      if (res.status === 200) {
        state.everReady = true;
        return true;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

let exitCode = 0;
function finish() {
  if (startedInfra) runStep('stopping local nats-server and FerretDB', 'bash', ['infra/local/stop.sh']);
  say('stopped');
  process.exit(exitCode);
}

async function stop(code) {
  if (stopping) return;
  stopping = true;
  exitCode = code;
  say('stopping services');
  for (const state of supervised.values()) clearTimeout(state.restartTimer);
  for (const { child } of running()) child.kill('SIGTERM');
  if (running().length === 0) finish();
  setTimeout(() => {
    for (const { child } of running()) child.kill('SIGKILL');
  }, stopGraceMs).unref();
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

for (const [index, name] of services.entries()) {
  const log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  supervised.set(name, { port: basePort + index, log, child: undefined, startedAt: 0, everReady: false, delayMs: restartBackoff.firstMs, tail: '', restartTimer: undefined });
  launch(name);
}

const deadline = Date.now() + 60_000;
const ready = await Promise.all(services.map((name) => waitReady(name, deadline)));
if (stopping) {
  // A service exited before it was ready: stop() is under way.
} else if (!ready.every(Boolean)) {
  for (const name of services.filter((_, index) => !ready[index])) {
    const lines = readFileSync(path.join(logDir, `${name}.log`), 'utf8').trim().split('\n').slice(-3);
    process.stderr.write(`[${name}] not ready; last log lines:\n${lines.join('\n')}\n`);
  }
  await stop(1);
} else {
  say(`up: NATS ${natsUrl}, MongoDB ${mongoUrl}`);
  for (const [index, name] of services.entries()) say(`  ${name.padEnd(16)} http://127.0.0.1:${basePort + index}/readyz`);
  say(await ensureDevAgentProfile());
  say(`MCP endpoint of ${devTenant}/main: http://127.0.0.1:${basePort + endpointIndex}/mcp/${devTenant}/main (bearer token: node infra/local/dev-keys.mjs agent-token)`);
  say('the first call, from the repository root in another terminal (README.md, "Quick start"):');
  // Unprefixed, so the block can be copied as it is.
  process.stdout.write(`\n${firstCallPath().join('\n')}\n\n`);
  say(`approval console: ${consoleUrl}/`);
  // The development agent acts for the development operator's principal, and nobody approves their own request.
  say(`  sign in with the operator token of: node infra/local/dev-keys.mjs token --principal ${consoleApprover}`);
  say(`  (paste it, or write it to a file and choose that; ${devAgentId}'s calls are requested by ${devPrincipal}, who may not approve them)`);
  say(`logs in ${logDir}; Ctrl-C stops everything`);
}

/**
 * Writes the development agent profile (infra/local/dev-agent-profile.json) for dev-agent in dev/main through the
 * CLI, as an operator would, unless a profile exists already (create-only: an edited profile is kept). Says what
 * happened; a failure is reported, not fatal (e.g. TOOLPLANE_TRUSTED_KEYS from the environment does not trust the
 * development key).
 */
async function ensureDevAgentProfile() {
  const run = promisify(execFile);
  const what = `development agent profile ${devAgentId} (tenant ${devTenant}, workspace main)`;
  try {
    const { stdout: token } = await run(process.execPath, [devKeysScript, 'token'], { cwd: root });
    const cli = path.join(root, 'packages/cli/bin/toolplane.mjs');
    const args = ['policies', 'agent', 'put', '--file', path.join(root, 'infra/local/dev-agent-profile.json'), '--expected-version', '0'];
    await run(process.execPath, [cli, ...args, '--nats', natsUrl, '--tenant', devTenant, '--workspace', 'main'], {
      cwd: root,
      env: { ...sharedEnv, TOOLPLANE_TOKEN: token.trim() },
    });
    return `${what}: written (infra/local/dev-agent-profile.json)`;
  } catch (error) {
    const reason = String(error.stderr ?? error.message).trim();
    if (reason.startsWith('CONFLICT:')) return `${what}: exists, kept as it is`;
    return `${what}: not written (${reason.split('\n')[0]})`;
  }
}

/** The README's first-call path ("Quick start") as commands to paste, for this platform's NATS. */
function firstCallPath() {
  return [
    ...(natsUrl === 'nats://127.0.0.1:4222' ? [] : [`export TOOLPLANE_NATS_URL=${natsUrl}`]),
    'export TOOLPLANE_TOKEN=$(node infra/local/dev-keys.mjs token)              # an operator of tenant dev, workspace main',
    'SERVER=$(npx toolplane servers register --name everything --json \\',
    '  --stdio "node $(npm root)/@modelcontextprotocol/server-everything/dist/index.js stdio" \\',
    "  | node -p 'JSON.parse(require(\"fs\").readFileSync(0)).server.serverId')",
    'npx toolplane servers discover $SERVER',
    'npx toolplane tools bind $SERVER echo --effect READ --risk LOW',
    'export TOOLPLANE_AGENT_TOKEN=$(node infra/local/dev-keys.mjs agent-token)  # agent dev-agent of dev/main',
    'RECEIPT=$(mktemp)',
    'npx toolplane invoke everything.echo --args \'{"message":"hello"}\' --key first-1 --json > $RECEIPT',
    'npx toolplane receipts verify $RECEIPT',
  ];
}
