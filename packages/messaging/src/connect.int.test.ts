import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { freePort, testScope } from '@toolplane/testing';
import { collector } from '../test/support.js';
import { connectMessaging } from './connect.js';
import { ensureStream } from './ensure-stream.js';
import { publish } from './publish.js';
import { request } from './request.js';
import { serve } from './serve.js';
import type { MessagingStatus } from './status.js';

const scope = testScope('messaging_connect');

describe('connectMessaging', () => {
  it('connects to NATS with JetStream, reports its state, and drains to a resolved closed()', async () => {
    const statuses: MessagingStatus[] = [];
    const m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_client`, onStatus: (status) => statuses.push(status) });
    expect(m.isConnected()).toBe(true);
    expect(m.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    await expect(m.manager.getAccountInfo()).resolves.toMatchObject({ streams: expect.any(Number) as unknown });
    await m.drain();
    expect(m.isConnected()).toBe(false);
    await expect(m.closed()).resolves.toBeUndefined();
    // drain() again is harmless.
    await expect(m.drain()).resolves.toBeUndefined();
  });

  it('fails fast with TEMPORARY_UNAVAILABLE naming the URL, without its credentials, when nothing listens', async () => {
    const port = await freePort();
    const started = Date.now();
    const failure = connectMessaging({ url: `nats://alice:hunter2@127.0.0.1:${port}`, name: 'unreachable' });
    await expect(failure).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', message: expect.stringContaining(`nats://127.0.0.1:${port}`) as unknown });
    await expect(failure).rejects.toMatchObject({ message: expect.not.stringContaining('hunter2') as unknown });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('fails with INVALID_ARGUMENT on a malformed URL', async () => {
    await expect(connectMessaging({ url: 'nats://bob:pw@host:port', name: 'malformed' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('nats://host:port') as unknown,
    });
  });

  it('fails with CANCELLED when its signal is already aborted', async () => {
    await expect(connectMessaging({ url: scope.natsUrl, name: 'cancelled', signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('receives request replies and JetStream acknowledgements under its inbox prefix, never on _INBOX', async () => {
    const prefix = `_INBOX_${scope.prefix}.w1`;
    const requester = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_prefixed`, inboxPrefix: prefix });
    const watcher = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_watcher` });
    const marker = `marker-${randomUUID()}`;
    const stream = `${scope.prefix}_PREFIXED`;
    try {
      // Other test files share this server and `_INBOX`: only messages carrying this test's marker or stream count.
      const underPrefix = collector<{ subject: string; data: string }>();
      const underInbox: { subject: string; data: string }[] = [];
      watcher.connection.subscribe(`${prefix}.>`, {
        callback: (error, message) => {
          if (error === null) underPrefix.push({ subject: message.subject, data: message.string() });
        },
      });
      watcher.connection.subscribe('_INBOX.>', {
        callback: (error, message) => {
          if (error === null) underInbox.push({ subject: message.subject, data: message.string() });
        },
      });
      await watcher.connection.flush();

      const Ping = z.strictObject({ marker: z.string() });
      const responder = await serve(watcher, { subject: `${scope.prefix}.ping`, queue: 'ping', requestSchema: Ping, replySchema: Ping, handler: (body) => Promise.resolve(body) });
      await expect(request(requester, { subject: `${scope.prefix}.ping`, requestSchema: Ping, replySchema: Ping, body: { marker }, timeoutMs: 5_000 })).resolves.toEqual({ marker });
      const reply = await underPrefix.next();
      expect(reply.subject.startsWith(`${prefix}.`)).toBe(true);
      expect(reply.data).toContain(marker);
      await responder.stop();

      // The stream is made over the watcher's connection, so the next message under the prefix can only be the ack.
      await ensureStream(watcher, { name: stream, subjects: [`${scope.prefix}.js.>`], retention: 'limits', storage: 'memory' });
      const ack = await publish(requester, { subject: `${scope.prefix}.js.one`, schema: Ping, message: { marker }, msgId: marker });
      expect(ack).toMatchObject({ stream, seq: 1, duplicate: false });
      const acknowledged = await underPrefix.next();
      expect(acknowledged.subject.startsWith(`${prefix}.`)).toBe(true);
      expect(isAckOf(stream, acknowledged.data)).toBe(true);

      await watcher.connection.flush();
      expect(underInbox.filter((seen) => seen.data.includes(marker) || isAckOf(stream, seen.data))).toEqual([]);
    } finally {
      await watcher.manager.streams.delete(stream).catch(() => undefined);
      await requester.drain();
      await watcher.drain();
    }
  });

  it('refuses a malformed inbox prefix with INVALID_ARGUMENT', async () => {
    await expect(connectMessaging({ url: scope.natsUrl, name: 'bad-prefix', inboxPrefix: '_INBOX.*' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('_INBOX.*') as unknown });
  });
});

/** Whether `data` is a JetStream publish acknowledgement from `stream`. */
function isAckOf(stream: string, data: string): boolean {
  try {
    const parsed: unknown = JSON.parse(data);
    return typeof parsed === 'object' && parsed !== null && (parsed as { stream?: unknown }).stream === stream;
  } catch {
    return false;
  }
}
