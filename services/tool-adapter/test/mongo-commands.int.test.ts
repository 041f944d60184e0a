// No MongoDB command on the hot path: the adapter process is given a MongoDB URL that points at a TCP proxy in front
// of the test's FerretDB, which reads the wire protocol and counts every command the adapter sends, by name. During
// governed calls (READ, WRITE, a denial, a repeated key, a lookup) the count of commands other than the driver's own
// connection monitoring (hello, ping) must stay 0.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandSubject, LookupInvocationReply, LookupInvocationRequest, adapterOperations } from '@toolplane/contracts';
import { request } from '@toolplane/messaging';
import { freePort, testScope } from '@toolplane/testing';
import { AdapterHarness, startNatsServer, type NatsServer } from './adapter-harness.js';

// The driver's connection monitoring and the readiness probe: not the governed path.
const monitoring = new Set(['hello', 'ismaster', 'isMaster', 'ping', 'endSessions']);

/** A TCP proxy that counts the commands (OP_MSG, first key of the body section) clients send through it. */
async function countingProxy(target: { host: string; port: number }): Promise<{ url: string; commands: Map<string, number>; close: () => Promise<void> }> {
  const commands = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 16 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        const opCode = message.readInt32LE(12);
        // OP_MSG: header, flagBits, then a kind-0 section holding the command document; its first key names it.
        if (opCode === 2013 && message[20] === 0) {
          const nameStart = 21 + 4 + 1;
          const name = message.subarray(nameStart, message.indexOf(0, nameStart)).toString('utf8');
          commands.set(name, (commands.get(name) ?? 0) + 1);
        } else commands.set(`opCode ${opCode}`, (commands.get(`opCode ${opCode}`) ?? 0) + 1);
      }
    });
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `mongodb://127.0.0.1:${port}`,
    commands,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let nats: NatsServer;
let harness: AdapterHarness;
let proxy: Awaited<ReturnType<typeof countingProxy>>;

beforeAll(async () => {
  nats = await startNatsServer();
  const infra = testScope('adapter_mongo_commands');
  const mongo = new URL(infra.mongoUrl);
  proxy = await countingProxy({ host: mongo.hostname, port: Number(mongo.port) });
  harness = await AdapterHarness.start({ natsUrl: nats.url, mongoUrl: infra.mongoUrl, dbName: infra.dbName });
}, 60_000);

afterAll(async () => {
  await harness?.close();
  await proxy?.close();
  await nats?.stop();
});

function governed(commands: ReadonlyMap<string, number>): Record<string, number> {
  return Object.fromEntries([...commands].filter(([name]) => !monitoring.has(name)));
}

describe('the adapter on the governed path', () => {
  it('sends MongoDB no command while it governs calls', { timeout: 120_000 }, async () => {
    const scope = await harness.freshScope();
    await harness.bindTool(scope, 'fixture.read', 'count_calls', 'counting', { sideEffectClass: 'READ', riskClass: 'LOW', idempotency: 'NATURAL' });
    await harness.bindTool(scope, 'fixture.write', 'count_calls', 'counting', { sideEffectClass: 'WRITE', riskClass: 'MEDIUM', idempotency: 'NONE' });
    const adapter = await harness.startAdapter({ MONGODB_URL: proxy.url });
    // Whatever the start sent (indexes, its first connections) is not the governed path.
    const atStart = governed(proxy.commands);
    proxy.commands.clear();

    const calls = [];
    for (let n = 0; n < 20; n += 1) calls.push(await harness.send(scope, { toolId: 'fixture.read', arguments: {}, idempotencyKey: `read-${n}` }));
    calls.push(await harness.send(scope, { toolId: 'fixture.write', arguments: {}, idempotencyKey: 'write-1' }));
    calls.push(await harness.send(scope, { toolId: 'fixture.unknown', arguments: {}, idempotencyKey: 'denied-1' }));
    const replies = await Promise.all(calls.map((call) => call.reply(60_000)));
    expect(replies.filter((reply) => reply.ok && reply.data.status === 'SUCCESS')).toHaveLength(21);
    // A repeated key (replayed from the call's record) and a lookup by key.
    const again = await (await harness.send(scope, { toolId: 'fixture.read', arguments: {}, idempotencyKey: 'read-0' }, 'another-copy')).reply(30_000);
    expect(again).toEqual(replies[0]);
    const lookup = await request(harness.messaging, {
      subject: commandSubject(scope, 'adapter', adapterOperations.lookupInvocation),
      requestSchema: LookupInvocationRequest,
      replySchema: LookupInvocationReply,
      body: { contextToken: await harness.contextToken(scope), idempotencyKey: 'write-1' },
      timeoutMs: 10_000,
    });
    expect(lookup.state).toBe('Observed');
    expect(await harness.executions(scope)).toBe(21);

    console.log(`MongoDB commands: at start ${JSON.stringify(atStart)}; during 23 calls and a lookup ${JSON.stringify(Object.fromEntries(proxy.commands))}`);
    expect(governed(proxy.commands)).toEqual({});
    expect(await adapter.stop()).toBe(0);
  });
});
