// `npm start` as a user runs it: the whole platform in the foreground, supervised. Over a nats-server of this file's
// own (the services' stream and consumer names are fixed; see platform-harness.ts) and a database of its own.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, testScope } from '@toolplane/testing';
import { startPrivateNats, type PrivateNats } from './platform-harness.js';
import { environmentNames, freeBasePort, platformProcessNames, processGroupOf, startLocalPlatform, type LocalPlatform, type PlatformProcessName } from './service-process.js';

const scope = testScope('platform');
const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The development keys, and which services may hold each: a service is given only what its configuration reads. */
const keyHolders: Record<string, readonly PlatformProcessName[]> = {
  TOOLPLANE_TRUSTED_KEYS: ['registry', 'tool-adapter', 'approval', 'secret-broker', 'audit-projector', 'flow-runner', 'mcp-endpoint', 'console'],
  CONSOLE_SESSION_KEY: ['console'],
  FLOW_RUNNER_SIGNING_KEY: ['flow-runner'],
  SECRET_BROKER_KEKS: ['secret-broker'],
  SECRET_BROKER_RECIPIENTS: ['secret-broker'],
  TOOL_ADAPTER_SECRET_KEY: ['tool-adapter'],
  ADAPTER_SIGNING_KEY: ['tool-adapter'],
};

async function isReady(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200;
  } catch {
    return false;
  }
}

let dir: string;
let nats: PrivateNats;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'toolplane-up-'));
  nats = await startPrivateNats(dir);
});

afterAll(async () => {
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('npm start (infra/local/up.mjs)', () => {
  it('brings the six services, the MCP endpoint and the console to ready, restarts one that is killed while the others stay up, gives each only its own keys, and stops cleanly on SIGTERM', { timeout: 300_000 }, async () => {
    const platform: LocalPlatform = await startLocalPlatform({
      natsUrl: nats.url,
      mongoUrl: scope.mongoUrl,
      database: scope.dbName,
      localDir: path.join(dir, 'local'),
      basePort: await freeBasePort(),
    });
    try {
      const pids = new Map<PlatformProcessName, number>();
      for (const name of platformProcessNames) {
        const res = await fetch(platform.readyz(name));
        expect(res.status, name).toBe(200);
        expect(((await res.json()) as { service: string }).service).toBe(name);
        const pid = await platform.servicePid(name);
        expect(pid, `${name}'s process`).toBeDefined();
        pids.set(name, pid as number);
      }

      for (const name of platformProcessNames) {
        const names = await environmentNames(pids.get(name) as number);
        const expected = Object.keys(keyHolders).filter((key) => keyHolders[key]?.includes(name));
        expect(names.filter((key) => key in keyHolders).sort(), `${name}'s development keys`).toEqual(expected.sort());
      }

      const victim: PlatformProcessName = 'registry';
      const victimPid = pids.get(victim) as number;
      process.kill(victimPid, 'SIGKILL');
      const restartedPid = await eventually(
        'a new registry process',
        async () => {
          const pid = await platform.servicePid(victim);
          return pid !== undefined && pid !== victimPid ? pid : undefined;
        },
        60_000,
      );
      await eventually('the restarted registry ready on /readyz', async () => ((await isReady(platform.readyz(victim))) ? true : undefined), 60_000);
      expect(platform.stdout()).toMatch(/toolplane: registry exited \(signal SIGKILL\) after \d+ s; restarting in \d+ s/);
      expect((await environmentNames(restartedPid)).filter((key) => key in keyHolders)).toEqual(['TOOLPLANE_TRUSTED_KEYS']);
      for (const name of platformProcessNames.filter((other) => other !== victim)) {
        expect(await platform.servicePid(name), `${name} kept its process`).toBe(pids.get(name));
        expect(await isReady(platform.readyz(name)), `${name} ready`).toBe(true);
      }
    } finally {
      platform.child.kill('SIGTERM');
    }
    expect(await platform.exited).toBe(0);
    expect(platform.stdout()).toContain('toolplane: stopped');
    expect(platform.stderr()).toBe('');
  });
});

describe('infra/local/start.sh', () => {
  it('runs nats-server and FerretDB in process groups of their own, so a Ctrl-C meant for npm start does not reach them', { timeout: 60_000 }, async () => {
    const localDir = path.join(dir, 'infra');
    const env = {
      ...process.env,
      TOOLPLANE_LOCAL_DIR: localDir,
      NATS_PORT: String(await freePort()),
      NATS_MONITOR_PORT: String(await freePort()),
      MONGO_PORT: String(await freePort()),
      FERRETDB_DEBUG_PORT: String(await freePort()),
    };
    const started = spawnSync('bash', [path.join(repoRoot, 'infra/local/start.sh')], { env, encoding: 'utf8' });
    try {
      expect(started.status, started.stderr).toBe(0);
      const ownGroup = await processGroupOf(process.pid);
      for (const name of ['nats-server', 'ferretdb']) {
        const pid = Number(await readFile(path.join(localDir, 'run', `${name}.pid`), 'utf8'));
        const group = await processGroupOf(pid);
        expect(group, `${name} runs`).toBeDefined();
        expect(group, `${name}'s process group`).not.toBe(ownGroup);
      }
    } finally {
      spawnSync('bash', [path.join(repoRoot, 'infra/local/stop.sh')], { env, encoding: 'utf8' });
    }
  });
});
