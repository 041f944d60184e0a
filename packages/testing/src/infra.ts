import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '../../..');

/** Where the test servers came from. */
export type InfraKind = 'environment' | 'containers' | 'local';

/** Running NATS and MongoDB-protocol endpoints for a test run. */
export interface Infra {
  readonly kind: InfraKind;
  readonly natsUrl: string;
  readonly mongoUrl: string;
  /** Stops what was started (nothing, for endpoints from the environment). */
  readonly stop: () => Promise<void>;
}

/** Resolves the endpoints for a test run: the environment, then containers, then the local binaries. */
export async function startInfra(env: NodeJS.ProcessEnv): Promise<Infra> {
  const natsUrl = env['NATS_URL'];
  const mongoUrl = env['MONGODB_URL'];
  if (natsUrl && mongoUrl) return { kind: 'environment', natsUrl, mongoUrl, stop: async () => {} };
  if (natsUrl || mongoUrl) throw new Error('set both NATS_URL and MONGODB_URL, or neither');
  if (await dockerReachable(env)) return startContainers();
  return startLocal();
}

/** Reserves a free TCP port on loopback (released before the server binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Fresh local servers from infra/local: their URLs, ports and data folder (pid files under `run/`). */
export interface LocalServers {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  readonly natsMonitorPort: number;
  readonly ferretDebugPort: number;
  /** TOOLPLANE_LOCAL_DIR of the run: data, logs and pid files. */
  readonly dir: string;
  readonly stop: () => Promise<void>;
}

/**
 * Starts nats-server and FerretDB with infra/local's scripts on free ports, in a fresh folder named `<prefix>…`. A
 * free port can be taken by another process between being found and being bound: a start that fails on a port in
 * use is tried again on fresh ports (three times in all).
 */
export async function startLocalServers(prefix: string, baseEnv: NodeJS.ProcessEnv = process.env): Promise<LocalServers> {
  const bin = path.join(repoRoot, '.local/bin');
  for (const name of ['nats-server', 'ferretdb']) {
    if (!existsSync(path.join(bin, name))) {
      throw new Error(`${path.join(bin, name)} is missing: run \`npm run infra:install\` (or set NATS_URL and MONGODB_URL)`);
    }
  }
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startLocalServersOnce(prefix, baseEnv);
    } catch (error) {
      if (attempt >= 3 || !/address already in use/.test(String((error as { stderr?: unknown }).stderr ?? error))) throw error;
    }
  }
}

async function startLocalServersOnce(prefix: string, baseEnv: NodeJS.ProcessEnv): Promise<LocalServers> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const [natsPort, monitorPort, mongoPort, debugPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = {
    ...baseEnv,
    TOOLPLANE_LOCAL_DIR: dir,
    NATS_PORT: String(natsPort),
    NATS_MONITOR_PORT: String(monitorPort),
    MONGO_PORT: String(mongoPort),
    FERRETDB_DEBUG_PORT: String(debugPort),
  };
  const script = (name: string) => path.join(repoRoot, 'infra/local', name);
  const stop = async () => {
    await run('bash', [script('stop.sh')], { env });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run('bash', [script('start.sh')], { env });
  } catch (error) {
    await stop();
    throw error;
  }
  return { natsUrl: `nats://127.0.0.1:${natsPort}`, mongoUrl: `mongodb://127.0.0.1:${mongoPort}`, natsMonitorPort: monitorPort, ferretDebugPort: debugPort, dir, stop };
}

async function startLocal(): Promise<Infra> {
  const { natsUrl, mongoUrl, stop } = await startLocalServers('toolplane-test-');
  return { kind: 'local', natsUrl, mongoUrl, stop };
}

async function dockerReachable(env: NodeJS.ProcessEnv): Promise<boolean> {
  if (!env['DOCKER_HOST'] && !existsSync('/var/run/docker.sock')) return false;
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

async function startContainers(): Promise<Infra> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const nats = await new GenericContainer('nats:2.12-alpine')
    .withCommand(['--jetstream', '--store_dir', '/data', '--http_port', '8222'])
    .withExposedPorts(4222, 8222)
    .withWaitStrategy(Wait.forHttp('/healthz?js-enabled-only=true', 8222))
    .start();
  const mongo = await new GenericContainer('mongo:8.0').withExposedPorts(27017).withWaitStrategy(Wait.forListeningPorts()).start();
  return {
    kind: 'containers',
    natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
    mongoUrl: `mongodb://${mongo.getHost()}:${mongo.getMappedPort(27017)}`,
    stop: async () => {
      await Promise.all([nats.stop(), mongo.stop()]);
    },
  };
}
