#!/usr/bin/env node
// `npm start`: brings the whole platform up on this machine and keeps it in the foreground.
// Without NATS_URL/MONGODB_URL it installs (once) and starts the local nats-server and FerretDB; then it
// builds the workspaces, starts the six services, waits until each reports ready on /readyz, and on
// Ctrl-C (SIGINT) or SIGTERM stops the services (each drains and exits) and the infrastructure it started.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const localDir = process.env.TOOLPLANE_LOCAL_DIR ?? path.join(root, '.local');
const logDir = path.join(localDir, 'logs');
const basePort = Number(process.env.TOOLPLANE_BASE_PORT ?? 7101);

/** The six services, each on its own port (base + index). */
const services = ['registry', 'tool-adapter', 'approval', 'secret-broker', 'audit-projector', 'flow-runner'];

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
if (!natsUrl && !mongoUrl) {
  runStep('installing local nats-server and FerretDB (first run builds them with Go)', 'bash', ['infra/local/install.sh']);
  const out = runStep('starting local nats-server and FerretDB', 'bash', ['infra/local/start.sh']);
  natsUrl = /NATS_URL=(\S+)/.exec(out)?.[1];
  mongoUrl = /MONGODB_URL=(\S+)/.exec(out)?.[1];
  startedInfra = !/already running/.test(out);
} else if (!natsUrl || !mongoUrl) {
  fail('set both NATS_URL and MONGODB_URL, or neither (to use the local nats-server and FerretDB)');
}
runStep('building', 'npx', ['turbo', 'run', 'build', '--output-logs=errors-only']);

// Development keys for the services that need them (kept in .local across runs), unless the environment
// already provides them.
const devKeysFile = path.join(localDir, 'dev-keys.env');
runStep('preparing development keys', process.execPath, [path.join(root, 'infra/local/dev-keys.mjs'), '--file', devKeysFile]);
const devKeys = Object.fromEntries(
  readFileSync(devKeysFile, 'utf8')
    .split('\n')
    .map((line) => /^([A-Z0-9_]+)='(.*)'$/.exec(line))
    .filter(Boolean)
    .filter(([, key]) => process.env[key] === undefined)
    .map(([, key, value]) => [key, value]),
);

mkdirSync(logDir, { recursive: true });
const children = new Map();
let stopping = false;

for (const [index, name] of services.entries()) {
  const port = basePort + index;
  const log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  const child = spawn(process.execPath, [path.join(root, 'services', name, 'dist/main.js')], {
    cwd: root,
    env: { ...devKeys, ...process.env, NATS_URL: natsUrl, MONGODB_URL: mongoUrl, HTTP_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a terminal's Ctrl-C reaches only this supervisor, which then stops each
    // service once with SIGTERM (a service takes a second signal as "exit now").
    detached: true,
  });
  child.stdout.pipe(log);
  child.stderr.on('data', (chunk) => {
    log.write(chunk);
    process.stderr.write(`[${name}] ${chunk}`);
  });
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      say(`${name} exited unexpectedly (${signal ?? `exit ${code}`}); see ${path.join(logDir, `${name}.log`)}`);
      void stop(1);
    } else if (children.size === 0) {
      finish();
    }
  });
  children.set(name, { child, port });
}

async function waitReady(name, port, deadline) {
  while (Date.now() < deadline) {
    if (!children.has(name)) return false;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
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
  for (const { child } of children.values()) child.kill('SIGTERM');
  if (children.size === 0) finish();
  setTimeout(() => {
    for (const { child } of children.values()) child.kill('SIGKILL');
  }, 20_000).unref();
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

const deadline = Date.now() + 60_000;
const ready = await Promise.all(services.map((name, index) => waitReady(name, basePort + index, deadline)));
if (ready.every(Boolean)) {
  say(`up: NATS ${natsUrl}, MongoDB ${mongoUrl}`);
  for (const [index, name] of services.entries()) say(`  ${name.padEnd(16)} http://127.0.0.1:${basePort + index}/readyz`);
  say('operator token (tenant dev, workspace main): export TOOLPLANE_TOKEN=$(node infra/local/dev-keys.mjs token)');
  say(`logs in ${logDir}; Ctrl-C stops everything`);
} else if (!stopping) {
  const late = services.filter((_, index) => !ready[index]);
  for (const name of late) {
    const lines = readFileSync(path.join(logDir, `${name}.log`), 'utf8').trim().split('\n').slice(-3);
    process.stderr.write(`[${name}] not ready; last log lines:\n${lines.join('\n')}\n`);
  }
  await stop(1);
}
