// The JetStream publisher behind publish() and appendToSubject(), against real nats-servers: acknowledgements,
// expected headers, the failures (typed as nats.js's own publish had them typed), one shared deadline timer, aborts,
// a closing connection, a refused subject, and server restarts under connected clients: what was published while the
// server was away is sent again and stored once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testScope } from '@toolplane/testing';
import { eventually } from '../test/support.js';
import { startPrivateNatsServer, type PrivateNatsServer } from '../test/nats-server.js';
import { connectMessaging } from './connect.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import { publish } from './publish.js';
import { appendToSubject, isSubjectMovedOn, readSubject } from './subject-log.js';

const scope = testScope('messaging_stream_publisher');
const Note = z.strictObject({ n: z.number() });
const stream = `${scope.prefix}_NOTES`;
let m: Messaging;
let silent: Messaging;
/** What reached the subscriber that never answers. */
const heard: string[] = [];

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_publisher` });
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.notes.>`], retention: 'limits', storage: 'memory', duplicateWindowMs: 60_000 });
  // A subject with a listener but no stream: a publish to it is delivered and never acknowledged.
  silent = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_silent` });
  silent.connection.subscribe(`${scope.prefix}.silent.>`, {
    callback: (error, msg) => {
      if (error === null) heard.push(msg.subject);
    },
  });
  await silent.connection.flush();
});
afterAll(async () => {
  await m.manager.streams.delete(stream).catch(() => undefined);
  await m.drain();
  await silent.drain();
});

const silentPublish = (connection: Messaging, name: string, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
  publish(connection, { subject: `${scope.prefix}.silent.${name}`, schema: Note, message: { n: 1 }, msgId: `${name}-${Date.now()}`, ...extra });

describe('the stream publisher', () => {
  it('resolves with the stream and sequence, sends Nats-Msg-Id and the caller’s headers, and acknowledges a repeat as a duplicate', async () => {
    const first = await publish(m, { subject: `${scope.prefix}.notes.a`, schema: Note, message: { n: 1 }, msgId: 'note-a', headers: { 'Toolplane-Trace': ['t1', 't2'] } });
    expect(first).toEqual({ stream, seq: expect.any(Number) as unknown, duplicate: false });
    const again = await publish(m, { subject: `${scope.prefix}.notes.a`, schema: Note, message: { n: 1 }, msgId: 'note-a' });
    expect(again).toEqual({ stream, seq: first.seq, duplicate: true });
    const stored = await m.manager.streams.getMessage(stream, { seq: first.seq });
    expect(stored?.header.get('Nats-Msg-Id')).toBe('note-a');
    expect(stored?.header.values('Toolplane-Trace')).toEqual(['t1', 't2']);
    expect(stored?.json()).toEqual({ n: 1 });
  });

  it('appends only against the subject’s last sequence and sends it as Nats-Expected-Last-Subject-Sequence: a stale writer is CONFLICT (subject moved on)', async () => {
    const subject = `${scope.prefix}.notes.log`;
    const created = await appendToSubject(m, { subject, schema: Note, message: { n: 1 }, expectedLastSequence: 0, msgId: 'log-1' });
    expect(created.duplicate).toBe(false);
    const stored = await m.manager.streams.getMessage(stream, { seq: created.seq });
    expect(stored?.header.get('Nats-Expected-Last-Subject-Sequence')).toBe('0');
    // A second writer that also decided against the empty subject loses.
    const stale = appendToSubject(m, { subject, schema: Note, message: { n: 2 }, expectedLastSequence: 0, msgId: 'log-2-stale' });
    await expect(stale).rejects.toMatchObject({ code: 'CONFLICT', retryable: true, details: { reason: 'SUBJECT_MOVED_ON' } });
    expect(isSubjectMovedOn(await stale.catch((error: unknown) => error))).toBe(true);
    const next = await appendToSubject(m, { subject, schema: Note, message: { n: 2 }, expectedLastSequence: created.seq, msgId: 'log-2' });
    expect(next.seq).toBeGreaterThan(created.seq);
    expect((await m.manager.streams.getMessage(stream, { seq: next.seq }))?.header.get('Nats-Expected-Last-Subject-Sequence')).toBe(String(created.seq));
    // The server checks the expected sequence before its duplicate window: a retry of a stored append is refused too.
    await expect(appendToSubject(m, { subject, schema: Note, message: { n: 2 }, expectedLastSequence: created.seq, msgId: 'log-2' })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('fails a subject no stream captures with TEMPORARY_UNAVAILABLE (no responders), and a server error with its code', async () => {
    await expect(publish(m, { subject: `${scope.prefix}.nowhere.x`, schema: Note, message: { n: 1 }, msgId: 'nowhere' })).rejects.toMatchObject({
      code: 'TEMPORARY_UNAVAILABLE',
      message: expect.stringContaining(`publishing to ${scope.prefix}.nowhere.x failed`) as unknown,
    });
    // Nats-Expected-Stream naming another stream: JetStream answers 400 with an error object.
    await expect(
      publish(m, { subject: `${scope.prefix}.notes.b`, schema: Note, message: { n: 1 }, msgId: 'expect-stream', headers: { 'Nats-Expected-Stream': 'ANOTHER' } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/expected stream does not match/i) as unknown });
  });

  it('times out an unacknowledged publish at its deadline with TIMEOUT, a short deadline behind long ones included', async () => {
    const long = silentPublish(m, 'long', { timeoutMs: 3_000 });
    long.catch(() => undefined);
    const started = performance.now();
    await expect(silentPublish(m, 'short', { timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(295);
    expect(waited).toBeLessThan(2_000);
    // The default deadline is the connection's timeout.
    const quick = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_quick`, timeoutMs: 400 });
    try {
      const at = performance.now();
      await expect(silentPublish(quick, 'default')).rejects.toMatchObject({ code: 'TIMEOUT' });
      expect(performance.now() - at).toBeGreaterThanOrEqual(395);
    } finally {
      await quick.close();
    }
    await expect(long).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('honours its AbortSignal: an aborted wait is CANCELLED at once, an already aborted signal publishes nothing', async () => {
    const controller = new AbortController();
    const waiting = silentPublish(m, 'aborted', { signal: controller.signal, timeoutMs: 10_000 });
    await eventually('the publish delivered', () => heard.some((subject) => subject.endsWith('.aborted')));
    const at = performance.now();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(performance.now() - at).toBeLessThan(200);
    await expect(silentPublish(m, 'never', { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'CANCELLED' });
    await silent.connection.flush();
    await m.connection.flush();
    expect(heard.filter((subject) => subject.endsWith('.never'))).toEqual([]);
    // A signal that times out: TIMEOUT, like raceAbort's.
    await expect(silentPublish(m, 'signal-timeout', { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('fails every waiting publish with TEMPORARY_UNAVAILABLE when the connection closes or drains, and refuses new ones', async () => {
    for (const end of ['close', 'drain'] as const) {
      const client = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_${end}` });
      const waiting = [silentPublish(client, `${end}-1`, { timeoutMs: 20_000 }), silentPublish(client, `${end}-2`, { timeoutMs: 20_000 })];
      for (const one of waiting) one.catch(() => undefined);
      await eventually('both delivered', () => heard.filter((subject) => subject.includes(`.${end}-`)).length === 2);
      const at = performance.now();
      await (end === 'close' ? client.close() : client.drain());
      for (const one of waiting) await expect(one).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
      expect(performance.now() - at).toBeLessThan(5_000);
      await expect(publish(client, { subject: `${scope.prefix}.notes.c`, schema: Note, message: { n: 1 }, msgId: `after-${end}` })).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE' });
    }
  });
});

describe('the stream publisher on a server of its own', () => {
  let server: PrivateNatsServer;
  beforeAll(async () => {
    server = await startPrivateNatsServer(
      [
        'authorization {',
        '  users: [',
        '    { user: writer, password: pw-writer, permissions: { publish: { allow: ["ok.>", "$JS.API.>"] }, subscribe: { allow: ["_INBOX_writer.>"] } } }',
        '    { user: admin, password: pw-admin }',
        '  ]',
        '}',
      ].join('\n'),
    );
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('surfaces a subject the user may not publish to as AUTHORIZATION_DENIED, and acknowledges its other publishes under its inbox prefix', async () => {
    const admin = await connectMessaging({ url: server.url({ user: 'admin', pass: 'pw-admin' }), name: 'admin' });
    const writer = await connectMessaging({ url: server.url({ user: 'writer', pass: 'pw-writer' }), name: 'writer', inboxPrefix: '_INBOX_writer', timeoutMs: 5_000 });
    try {
      // The stream captures the refused subject too: only the permission stands between the publish and its storage.
      await ensureStream(admin, { name: 'PERMS', subjects: ['ok.>', 'denied.>'], retention: 'limits', storage: 'memory' });
      const [allowed, refused] = await Promise.allSettled([
        publish(writer, { subject: 'ok.1', schema: Note, message: { n: 1 }, msgId: 'ok-1' }),
        publish(writer, { subject: 'denied.1', schema: Note, message: { n: 2 }, msgId: 'denied-1' }),
      ]);
      expect(allowed).toMatchObject({ status: 'fulfilled', value: { stream: 'PERMS', seq: 1 } });
      expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'AUTHORIZATION_DENIED', message: expect.stringMatching(/permissions violation/i) as unknown } });
      expect((await admin.manager.streams.info('PERMS')).state.messages).toBe(1);
      await expect(publish(writer, { subject: 'ok.2', schema: Note, message: { n: 3 }, msgId: 'ok-2' })).resolves.toMatchObject({ seq: 2 });
    } finally {
      await writer.close();
      await admin.close();
    }
  });

  it('keeps routing acknowledgements after the server restarts, and sends a publish made while it was down again', async () => {
    const m2 = await connectMessaging({ url: server.url({ user: 'admin', pass: 'pw-admin' }), name: 'restarted', reconnectTimeWaitMs: 100, timeoutMs: 5_000 });
    try {
      await ensureStream(m2, { name: 'RESTART', subjects: ['restart.>'], retention: 'limits', storage: 'file' });
      await expect(publish(m2, { subject: 'restart.1', schema: Note, message: { n: 1 }, msgId: 'r-1' })).resolves.toMatchObject({ stream: 'RESTART', seq: 1 });
      const restarting = server.restart();
      await eventually('the client to notice the outage', () => !m2.isConnected());
      // nats.js discards what was written while disconnected on each dial: the publisher sends it again once back.
      const during = publish(m2, { subject: 'restart.during', schema: Note, message: { n: 2 }, msgId: 'r-during' });
      await restarting;
      await expect(during).resolves.toMatchObject({ stream: 'RESTART', seq: 2, duplicate: false });
      await eventually('the client reconnected', () => m2.isConnected(), 15_000);
      await expect(publish(m2, { subject: 'restart.2', schema: Note, message: { n: 3 }, msgId: 'r-2' })).resolves.toMatchObject({ stream: 'RESTART', seq: 3, duplicate: false });
      await expect(appendToSubject(m2, { subject: 'restart.log', schema: Note, message: { n: 4 }, expectedLastSequence: 0, msgId: 'r-3' })).resolves.toMatchObject({ seq: 4 });
    } finally {
      await m2.close();
    }
  }, 60_000);

  it('stores every publish and append made across a restart exactly once, and none waits out its deadline', async () => {
    const timeoutMs = 10_000;
    const m2 = await connectMessaging({ url: server.url({ user: 'admin', pass: 'pw-admin' }), name: 'under-restart', reconnectTimeWaitMs: 100, timeoutMs });
    const logs = 4;
    try {
      await ensureStream(m2, { name: 'UNDER_RESTART', subjects: ['load.>'], retention: 'limits', storage: 'file', allowDirect: true, duplicateWindowMs: 120_000 });
      const settled: { readonly what: string; readonly ms: number; readonly seq?: number; readonly code?: string }[] = [];
      const track = async (what: string, made: Promise<{ seq: number }>) => {
        const at = performance.now();
        try {
          const ack = await made;
          settled.push({ what, ms: performance.now() - at, seq: ack.seq });
          return ack.seq;
        } catch (error) {
          settled.push({ what, ms: performance.now() - at, code: `${(error as { code?: string }).code ?? '?'}: ${String(error)}` });
          return undefined;
        }
      };
      let running = true;
      let madeWhileDown = 0;
      // Plain publishes, one every 10 ms whatever became of the others, each with an id of its own.
      const issued: Promise<unknown>[] = [];
      const pacer = (async () => {
        for (let n = 0; running; n += 1) {
          if (!m2.isConnected()) madeWhileDown += 1;
          issued.push(track(`publish ${n}`, publish(m2, { subject: 'load.pub', schema: Note, message: { n }, msgId: `pub-${n}` })));
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      // Appends, each log's next one expecting the sequence its last one was stored at.
      const appended: number[][] = Array.from({ length: logs }, () => []);
      const appenders = appended.map(async (seqs, log) => {
        let last = 0;
        for (let n = 0; running; n += 1) {
          const seq = await track(`append ${log}/${n}`, appendToSubject(m2, { subject: `load.log.${log}`, schema: Note, message: { n }, expectedLastSequence: last, msgId: `log-${log}-${n}` }));
          if (seq === undefined) return;
          seqs.push(seq);
          last = seq;
        }
      });
      await eventually('some writes stored', () => settled.length >= 50);
      const restarting = server.restart({ downMs: 2_000 });
      await eventually('the client to notice the outage', () => !m2.isConnected());
      await restarting;
      await eventually('the client reconnected', () => m2.isConnected(), 15_000);
      const after = settled.length;
      await eventually('writes stored after the reconnect', () => settled.length >= after + 50, 15_000);
      running = false;
      await Promise.all([pacer, ...appenders]);
      await Promise.all(issued);

      // The outage was hit: writes were made while the connection was down.
      expect(madeWhileDown).toBeGreaterThan(0);
      // Every write was acknowledged, none after waiting out its deadline (the outage lasted about 2.5 s).
      expect(settled.filter((one) => one.code !== undefined)).toEqual([]);
      expect(Math.max(...settled.map((one) => one.ms))).toBeLessThan(timeoutMs / 2);
      // Each plain publish is stored once, at the sequence it was acknowledged with.
      const published = settled.filter((one) => one.what.startsWith('publish '));
      const stored = await readSubject(m2, { stream: 'UNDER_RESTART', subject: 'load.pub', schema: Note });
      expect(stored.entries.map((entry) => entry.value.n).sort((a, b) => a - b)).toEqual(published.map((one) => Number(one.what.slice(8))).sort((a, b) => a - b));
      expect(stored.entries.map((entry) => entry.seq).sort((a, b) => a - b)).toEqual(published.map((one) => one.seq).sort((a, b) => (a ?? 0) - (b ?? 0)));
      // Each log holds its appends in order, once each, at the sequences they were acknowledged with.
      for (const [log, seqs] of appended.entries()) {
        const entries = (await readSubject(m2, { stream: 'UNDER_RESTART', subject: `load.log.${log}`, schema: Note })).entries;
        expect(entries.map((entry) => entry.value.n)).toEqual(seqs.map((_seq, n) => n));
        expect(entries.map((entry) => entry.seq)).toEqual(seqs);
      }
    } finally {
      await m2.close();
    }
  }, 90_000);

  it('acknowledges a resent append that finds its own message stored, and refuses one that finds another writer’s', async () => {
    const m2 = await connectMessaging({ url: server.url({ user: 'admin', pass: 'pw-admin' }), name: 'resent-append', timeoutMs: 5_000 });
    const other = await connectMessaging({ url: server.url({ user: 'admin', pass: 'pw-admin' }), name: 'other-writer', timeoutMs: 5_000 });
    try {
      await ensureStream(m2, { name: 'RESENT', subjects: ['resent.>'], retention: 'limits', storage: 'memory', allowDirect: true });
      // The copy sent before an outage was stored (here by another connection, with the same id); the resend is refused
      // as "wrong last sequence" and finds that copy at the position it expected.
      const first = await appendToSubject(other, { subject: 'resent.own', schema: Note, message: { n: 1 }, expectedLastSequence: 0, msgId: 'own-1' });
      const resent = appendToSubject(m2, { subject: 'resent.own', schema: Note, message: { n: 1 }, expectedLastSequence: 0, msgId: 'own-1' });
      // What the connection does when it comes back: every publish still waiting is sent again.
      m2.publisher.reconnected();
      await expect(resent).resolves.toEqual({ stream: 'RESENT', seq: first.seq, duplicate: false });
      // Another writer's message there: the subject did move on.
      await appendToSubject(other, { subject: 'resent.theirs', schema: Note, message: { n: 2 }, expectedLastSequence: 0, msgId: 'theirs-1' });
      const lost = appendToSubject(m2, { subject: 'resent.theirs', schema: Note, message: { n: 3 }, expectedLastSequence: 0, msgId: 'mine-1' });
      m2.publisher.reconnected();
      await expect(lost).rejects.toMatchObject({ code: 'CONFLICT', details: { reason: 'SUBJECT_MOVED_ON' } });
      // An append that was never resent is refused as the server answered, even with its own id stored (no read back).
      await expect(appendToSubject(m2, { subject: 'resent.own', schema: Note, message: { n: 1 }, expectedLastSequence: 0, msgId: 'own-1' })).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await m2.manager.streams.info('RESENT')).state.messages).toBe(2);
    } finally {
      await other.close();
      await m2.close();
    }
  });
});
