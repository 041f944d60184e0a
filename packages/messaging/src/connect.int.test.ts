import { describe, expect, it } from 'vitest';
import { freePort, testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
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
});
