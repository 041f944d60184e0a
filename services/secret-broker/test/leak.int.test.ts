import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { secretBrokerStream, secretBrokerTokenBucket, streams, type Scope } from '@toolplane/contracts';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { connectStore, type Store } from '@toolplane/store';
import { freePort, testScope } from '@toolplane/testing';
import { brokerEnv, brokerKeys, call, callRaw, leaseRequest, openLease, operatorToken, rejection } from './harness.js';
import { findLeaks } from './leak-search.js';
import { runToolplane, spawnBroker, waitForOutput, type ChildRun } from './service-process.js';
import { startTokenEndpoint, type TokenEndpoint } from './token-endpoint.js';

// THE LEAK TEST. The whole lease path runs with recognisable secrets: two broker processes at LOG_LEVEL=trace,
// the real `toolplane` CLI for every operator step (with an operator token, itself a credential searched for), the
// tool adapter's side of leases over NATS, and a real token endpoint. Afterwards every log line, every event on the events stream, every document of every collection,
// every message of the broker's private stream and token bucket, and all CLI output is searched for every secret, in every encoding it could take. There must
// be no hit. The public side (logs, events, read models, CLI output) is also searched for every ciphertext and wrapped key the private side holds.

const scope = testScope('secretbrokerleak');
const keys = brokerKeys();
const main: Scope = { tenant: scope.prefix, workspace: 'main' };
const stranger: Scope = { tenant: `${scope.prefix}_other`, workspace: 'main' };
const canary = (extra = '') => `tp-canary-${randomBytes(10).toString('hex')}${extra}`;

// Reserved URL characters make the URL-encoded forms differ from the plain ones.
const secrets = {
  bearer: canary(),
  rotatedBearer: canary('~!*'),
  basicPassword: canary('/+= &%'),
  clientSecret: canary('/+=&%'),
  rotatedClientSecret: canary(':@?'),
  refusedDuplicate: canary(),
  refusedByCli: canary(' with a space'),
  refusedByBroker: canary('\u0007bell'),
  refusedAsFlag: canary(),
};

const brokers: ChildRun[] = [];
let tokens: TokenEndpoint;
let m: Messaging;
let store: Store;
let tempDir: string;
let token: string;
const cliOutput: string[] = [];
const cliEnv = () => ({ TOOLPLANE_NATS_URL: scope.natsUrl, TOOLPLANE_TENANT: main.tenant, TOOLPLANE_WORKSPACE: main.workspace, TOOLPLANE_TOKEN: token });

/** Every message of a stream, as `subject payload` lines. */
async function messagesOf(stream: string): Promise<string[]> {
  const info = await m.manager.streams.info(stream);
  const messages: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
    const message = await m.manager.streams.getMessage(stream, { seq }).catch(() => null);
    if (message !== null) messages.push(`${message.subject} ${new TextDecoder().decode(message.data)}`);
  }
  return messages;
}

async function toolplane(args: string[], stdin = '', expectCode = 0): Promise<string> {
  const result = await runToolplane(args, cliEnv(), stdin);
  cliOutput.push(result.stdout, result.stderr);
  expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ code: expectCode });
  return result.stdout + result.stderr;
}

beforeAll(async () => {
  tempDir = await mkdtemp(path.join(tmpdir(), 'tp-leak-'));
  token = await operatorToken(main);
  tokens = await startTokenEndpoint({ 'leak-client': { secret: secrets.clientSecret, expiresIn: 3600 } }, canary('-access-token'));
  for (const instance of ['a', 'b']) {
    const broker = spawnBroker(brokerEnv(scope, keys, { LOG_LEVEL: 'trace', HTTP_PORT: String(await freePort()), INSTANCE_ID: instance, SECRET_BROKER_SWEEP_INTERVAL_MS: '200' }));
    brokers.push(broker);
  }
  await Promise.all(brokers.map((broker) => waitForOutput(broker, broker.stdout, '"msg":"secret-broker ready"', 60_000)));
  m = await connectMessaging({ url: scope.natsUrl, name: 'secret-broker-leak-test' });
  store = await connectStore({ url: scope.mongoUrl, dbName: scope.dbName, appName: 'secret-broker-leak-test' });
}, 120_000);

afterAll(async () => {
  for (const broker of brokers) if (broker.child.exitCode === null) broker.child.kill('SIGKILL');
  await m.drain();
  await store.close();
  await tokens.close();
  await rm(tempDir, { recursive: true, force: true });
});

describe('the secret-leak search', () => {
  it('runs the whole lease path; no secret appears in any log line, event, stored document or CLI output', { timeout: 300_000 }, async () => {
    // Operator: create three connections through the CLI, secrets on standard input or in a file.
    await toolplane(['connections', 'create', '--name', 'leak-bearer', '--kind', 'bearer', '--allow', 'leak.call', 'leak.other'], `${secrets.bearer}\n`);
    await toolplane(['connections', 'create', '--name', 'leak-basic', '--kind', 'basic', '--allow', 'leak.call'], `svc-user:${secrets.basicPassword}`);
    const secretFile = path.join(tempDir, 'client-secret');
    await writeFile(secretFile, `${secrets.clientSecret}\n`, { mode: 0o600 });
    const oauthCreated = await toolplane(['--json', 'connections', 'create', '--name', 'leak-oauth', '--kind', 'oauth2-client-credentials', '--allow', 'leak.call', '--token-url', tokens.url, '--client-id', 'leak-client', '--scope', 'read', '--secret-file', secretFile]);
    expect(JSON.parse(oauthCreated)).toMatchObject({ name: 'leak-oauth', kind: 'oauth2-client-credentials', oauth2: { clientId: 'leak-client', scopes: ['read'] } });
    expect(await toolplane(['connections', 'list'])).toMatch(/leak-basic\s+basic\s+Active/);
    await toolplane(['connections', 'show', 'leak-bearer']);
    await toolplane(['--json', 'connections', 'show', 'leak-oauth']);

    // Tool adapter: lease each connection and open the sealed box as the adapter would.
    // Rotations and revocations purge older ciphertexts from the private stream, so its envelopes are gathered as they
    // come (after the creates, after each rotation, at the end) for the search of the public side.
    const envelopeParts = new Set<string>();
    const gatherEnvelopes = async () => {
      for (const message of [...(await messagesOf(secretBrokerStream.name)), ...(await messagesOf(`KV_${secretBrokerTokenBucket.name}`))]) {
        // Each part's first 16 characters (96 bits) are searched for, so a part copied in pieces is found too.
        for (const match of message.matchAll(/"(?:ciphertext|wrappedKey)":"([A-Za-z0-9_-]{16})/g)) envelopeParts.add(match[1] ?? '');
      }
    };
    await gatherEnvelopes();

    const lease = async (ref: string) => {
      const request = leaseRequest(ref, 'leak.call');
      return openLease(keys, await call(m, main, 'leaseSecret', request), request.invocationId);
    };
    expect(await lease('leak-bearer')).toEqual({ kind: 'bearer', token: secrets.bearer });
    expect(await lease('leak-basic')).toEqual({ kind: 'basic', username: 'svc-user', password: secrets.basicPassword });
    const accessToken = await lease('leak-oauth');
    expect(accessToken).toMatchObject({ kind: 'oauth2-client-credentials', accessToken: tokens.issued[0] });
    expect(await lease('leak-oauth')).toEqual(accessToken);
    await call(m, main, 'leaseSecret', leaseRequest('leak-bearer', 'leak.call', { ttlMs: 100 }));

    // Operator: rotate both kinds through the CLI; the adapter gets the new values.
    await gatherEnvelopes();
    await toolplane(['connections', 'rotate', 'leak-bearer'], secrets.rotatedBearer);
    expect(await lease('leak-bearer')).toEqual({ kind: 'bearer', token: secrets.rotatedBearer });
    tokens.setClient('leak-client', { secret: secrets.rotatedClientSecret, expiresIn: 3600 });
    await writeFile(secretFile, secrets.rotatedClientSecret);
    await gatherEnvelopes();
    await toolplane(['connections', 'rotate', 'leak-oauth', '--secret-file', secretFile]);
    expect(await lease('leak-oauth')).toMatchObject({ accessToken: tokens.issued[1] });

    // Refusals: none of them may echo what they refuse.
    expect(await toolplane(['connections', 'create', '--name', 'leak-bearer', '--kind', 'bearer', '--allow', 'leak.call'], secrets.refusedDuplicate, 1)).toMatch(/^CONFLICT: /);
    expect(await toolplane(['connections', 'create', '--name', 'leak-bad', '--kind', 'bearer', '--allow', 'leak.call'], secrets.refusedByCli, 1)).toMatch(/^INVALID_ARGUMENT: /);
    expect(await toolplane(['connections', 'create', '--name', 'leak-flag', '--kind', 'api-key', '--allow', 'leak.call', `--secret=${secrets.refusedAsFlag}`], '', 1)).toMatch(/^INVALID_ARGUMENT: secrets are never taken from flags/);
    expect(await toolplane(['connections', 'rotate', 'leak-basic', '--secret', secrets.refusedAsFlag], '', 1)).toMatch(/^INVALID_ARGUMENT: /);
    expect(await toolplane(['connections', 'show', 'no-such-connection'], '', 1)).toMatch(/^NOT_FOUND: /);
    const malformed = await rejection(callRaw(m, main, 'createConnection', { name: 'leak-raw', allowedTools: ['leak.call'], credential: { kind: 'api-key', apiKey: secrets.refusedByBroker } }));
    expect(malformed.code).toBe('INVALID_ARGUMENT');
    expect((await rejection(call(m, main, 'leaseSecret', leaseRequest('leak-bearer', 'not.allowed')))).code).toBe('AUTHORIZATION_DENIED');
    expect((await rejection(call(m, stranger, 'leaseSecret', leaseRequest('leak-bearer', 'leak.call')))).code).toBe('NOT_FOUND');
    expect((await rejection(call(m, main, 'leaseSecret', leaseRequest('leak-bearer', 'leak.call', { recipientKeyId: 'eavesdropper' })))).code).toBe('AUTHORIZATION_DENIED');

    // Operator: revoke; the adapter is refused from then on.
    await gatherEnvelopes();
    await toolplane(['connections', 'revoke', 'leak-bearer', '--reason', 'leak test']);
    expect((await rejection(call(m, main, 'leaseSecret', leaseRequest('leak-bearer', 'leak.call')))).code).toBe('AUTHORIZATION_DENIED');
    await toolplane(['--json', 'connections', 'list']);

    // Let the sweepers run over the short lease, then stop both brokers cleanly so every log line is written.
    await waitForOutput(brokers[0] as ChildRun, () => brokers.map((broker) => broker.stdout()).join(''), '"expiredLeases":1', 30_000);
    for (const broker of brokers) broker.child.kill('SIGTERM');
    expect(await Promise.all(brokers.map((broker) => broker.exited))).toEqual([0, 0]);

    // Gather every haystack.
    const haystacks = new Map<string, string>();
    brokers.forEach((broker, i) => {
      haystacks.set(`broker ${i} stdout`, broker.stdout());
      haystacks.set(`broker ${i} stderr`, broker.stderr());
    });
    const events = await messagesOf(streams.events.name);
    haystacks.set('events stream', events.join('\n'));
    const privateRecord = await messagesOf(secretBrokerStream.name);
    const tokenBucket = await messagesOf(`KV_${secretBrokerTokenBucket.name}`);
    const collections = await store.db.listCollections().toArray();
    for (const { name } of collections) haystacks.set(`collection ${name}`, JSON.stringify(await store.db.collection(name).find({}).toArray()));
    haystacks.set('CLI output', cliOutput.join('\n'));
    // Everything above is the public side; the private side is searched for the plaintexts as well.
    const publicSide = new Map(haystacks);
    haystacks.set('private stream', privateRecord.join('\n'));
    haystacks.set('token bucket', tokenBucket.join('\n'));

    // The haystacks are the real thing: trace-level logs of both replicas, our events, our documents.
    const logs = brokers.map((broker) => broker.stdout()).join('');
    for (const message of ['lease granted', 'lease denied', 'connection created', 'connection rotated', 'connection revoked', 'access token obtained', '"level":"debug"', '"level":"trace"']) expect(logs).toContain(message);
    expect(events.filter((event) => event.includes(main.tenant) && event.includes('SecretLeased')).length).toBeGreaterThanOrEqual(6);
    expect(events.some((event) => event.includes(main.tenant) && event.includes('SecretLeaseDenied'))).toBe(true);
    expect(collections.map((collection) => collection.name)).toEqual(expect.arrayContaining(['connections', 'secret_leases']));
    // Three connections; rotated and revoked ones keep only their last message (older ciphertexts purged).
    expect(new Set(privateRecord.filter((message) => message.includes(main.tenant) && message.includes('.connection.')).map((message) => message.split(' ')[0])).size).toBe(3);
    expect(privateRecord.some((message) => message.includes('"leak-bearer"') && message.includes('"ciphertext"'))).toBe(false);
    expect(privateRecord.filter((message) => message.includes(main.tenant) && message.includes('"LeaseGranted"')).length).toBeGreaterThanOrEqual(6);
    expect(tokenBucket.length).toBeGreaterThanOrEqual(2);
    expect(haystacks.get('collection connections')).toContain('leak-oauth');
    expect(haystacks.get('CLI output')).toContain('leak-basic');

    const everySecret = [...Object.values(secrets), ...tokens.issued, token];
    expect(tokens.issued).toHaveLength(2);
    expect(findLeaks(everySecret, haystacks)).toEqual([]);

    // The private side's ciphertexts and wrapped keys never reach the public side, nor do its records.
    await gatherEnvelopes();
    // Five credentials (three created, two rotated) and two access tokens, each a ciphertext and a wrapped key.
    expect(envelopeParts.size).toBeGreaterThanOrEqual(2 * (3 + 2 + 2));
    expect(findLeaks([...envelopeParts], publicSide)).toEqual([]);
    for (const type of ['ConnectionCreated', 'ConnectionRotated', 'ConnectionRevoked', 'LeaseGranted', 'LeaseEnded']) expect(haystacks.get('events stream')).not.toContain(type);
  });
});
