// The database side of the benchmark in isolation: the server CPU (and wall time) of each command a governed call
// sends, on a collection of BENCH_DOCS (300, then 2000) documents of ~2 KB. On FerretDB 1.x the figures explain the
// benchmark; on MongoDB they are all sub-millisecond. Fresh local servers unless --use-running (NATS_URL and
// MONGODB_URL; the CPU column then needs BENCH_SERVER_PID). Run: npx tsx --conditions=@toolplane/source bench/ferretdb-commands.ts
import { randomBytes } from 'node:crypto';
import { connectStore, defineCollection } from '@toolplane/store';
import { benchInfra, processCpuMs } from '@toolplane/testing/bench';

const env = process.env;
const useRunning = process.argv.includes('--use-running');
const sizes = (env['BENCH_DOCS'] ?? '300,2000').split(',').map(Number);
const repetitions = 50;

interface ProbeDocument {
  _id: string;
  tenant: string;
  workspace: string;
  key: string;
  invocationId: string;
  state: string;
  version: number;
  note?: string;
  payload: string;
}

const infra = await benchInfra(env, useRunning);
const store = await connectStore({ url: infra.mongoUrl, dbName: `bench_commands_${randomBytes(4).toString('hex')}`, appName: 'bench-commands' });
try {
  const serverPid = env['BENCH_SERVER_PID'] ? Number(env['BENCH_SERVER_PID']) : (await infra.serverPids())['ferretdb'];
  const lines: string[] = [];
  for (const size of sizes) {
    const name = `docs_${size}`;
    const docs = store.collection(defineCollection<ProbeDocument>({ name, indexes: [] })).raw;
    await docs.createIndex({ tenant: 1, workspace: 1, key: 1 }, { unique: true });
    await docs.createIndex({ invocationId: 1 }, { unique: true });
    const document = (id: string): ProbeDocument => ({ _id: id, tenant: 't', workspace: 'w', key: `k${id}`, invocationId: `i${id}`, state: 'Received', version: 1, payload: 'x'.repeat(2000) });
    for (let i = 0; i < size; i += 1) await docs.insertOne(document(`d${i}`));
    const measure = async (label: string, command: (i: number) => Promise<unknown>) => {
      const cpuBefore = serverPid === undefined ? undefined : await processCpuMs(serverPid);
      const started = performance.now();
      for (let i = 0; i < repetitions; i += 1) await command(i);
      const wall = (performance.now() - started) / repetitions;
      const cpuAfter = serverPid === undefined ? undefined : await processCpuMs(serverPid);
      const cpu = cpuBefore === undefined || cpuAfter === undefined ? 'n/a' : `${((cpuAfter - cpuBefore) / repetitions).toFixed(1)} ms`;
      lines.push(`${String(size).padStart(5)} docs  ${label.padEnd(42)} server CPU ${cpu.padStart(8)}   wall ${wall.toFixed(1).padStart(6)} ms`);
    };
    await measure('insertOne', (i) => docs.insertOne(document(`x${i}`)));
    await measure('findOne {_id}', (i) => docs.findOne({ _id: `d${i}` }));
    await measure('findOne {_id, version, state}', (i) => docs.findOne({ _id: `d${i}`, version: 1, state: 'Received' }));
    await measure('updateOne {_id}', (i) => docs.updateOne({ _id: `d${i}` }, { $set: { note: 'a' } }));
    await measure('findOneAndUpdate {_id}', (i) => docs.findOneAndUpdate({ _id: `d${i + repetitions}` }, { $set: { note: 'b' } }, { returnDocument: 'after' }));
    await measure('findOneAndUpdate {_id, version, state}', (i) =>
      docs.findOneAndUpdate({ _id: `d${i + 2 * repetitions}`, version: 1, state: 'Received' }, { $set: { state: 'Executing', version: 2 } }, { returnDocument: 'after' }),
    );
    await measure('deleteOne {_id}', (i) => docs.deleteOne({ _id: `x${i}` }));
  }
  for (const line of lines) process.stdout.write(`${line}\n`);
} finally {
  await store.db.dropDatabase().catch(() => undefined);
  await store.close();
  await infra.stop();
}
