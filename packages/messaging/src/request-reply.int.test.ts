import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolplaneError } from '@toolplane/contracts';
import { testScope } from '@toolplane/testing';
import { collector, gate } from '../test/support.js';
import { connectMessaging } from './connect.js';
import type { Messaging } from './messaging.js';
import { request } from './request.js';
import { serve, type ServeDiagnostic } from './serve.js';

const scope = testScope('messaging_request_reply');
const GetCall = z.object({ toolCallId: z.string().min(1) }).strict();
const Call = z.object({ toolCallId: z.string(), state: z.enum(['Executing', 'Observed']) }).strict();
let m: Messaging;
let n = 0;
/** A subject of this test's own. */
const subject = () => `${scope.prefix}.calls.get.${++n}`;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_rr` });
});
afterAll(async () => {
  await m.drain();
});

describe('request/reply', () => {
  it('returns the responder’s typed data', async () => {
    const s = subject();
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: ({ toolCallId }) => Promise.resolve({ toolCallId, state: 'Observed' as const }),
    });
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 2_000 })).resolves.toEqual({
      toolCallId: 'tc1',
      state: 'Observed',
    });
    await responder.stop();
  });

  it('carries the handler’s error code, message and details to the requester', async () => {
    const s = subject();
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: () => Promise.reject(new ToolplaneError('CONFLICT', 'the call is already settled', { details: { state: 'Observed' } })),
    });
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 2_000 })).rejects.toMatchObject({
      name: 'ToolplaneError',
      code: 'CONFLICT',
      message: 'the call is already settled',
      retryable: false,
      details: { state: 'Observed' },
    });
    await responder.stop();
  });

  it('answers a request that breaks its contract with INVALID_ARGUMENT, without calling the handler', async () => {
    const s = subject();
    let called = false;
    const diagnostics: ServeDiagnostic[] = [];
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      onDiagnostic: (d) => diagnostics.push(d),
      handler: () => {
        called = true;
        return Promise.resolve({ toolCallId: 'x', state: 'Observed' as const });
      },
    });
    // A requester that skipped validation, e.g. another language's client.
    const raw = await m.connection.request(s, JSON.stringify({ toolCallId: '' }), { timeout: 2_000 });
    expect(raw.json()).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('toolCallId') as unknown } });
    const undecodable = await m.connection.request(s, 'not json', { timeout: 2_000 });
    expect(undecodable.json()).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT' } });
    expect(called).toBe(false);
    expect(diagnostics.map((d) => d.type)).toEqual(['invalid_request', 'invalid_request']);
    await responder.stop();
  });

  it('refuses to send a body that breaks its contract', async () => {
    const s = subject();
    const requests = collector<string>();
    const sub = m.connection.subscribe(s, { callback: (_, msg) => requests.push(msg.string()) });
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: '' }, timeoutMs: 500 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await m.connection.flush();
    expect(requests.all).toEqual([]);
    sub.unsubscribe();
  });

  it('fails with TEMPORARY_UNAVAILABLE when nothing serves the subject', async () => {
    const s = subject();
    const started = Date.now();
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 5_000 })).rejects.toMatchObject({
      code: 'TEMPORARY_UNAVAILABLE',
      message: expect.stringContaining(s) as unknown,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('fails with TIMEOUT when no reply comes in time, and the responder’s handler sees the deadline', async () => {
    const s = subject();
    const handlerAborted = gate();
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: async (_, { signal }) => {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        handlerAborted.open();
        throw new ToolplaneError('CANCELLED', 'gave up');
      },
    });
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    await handlerAborted.promise;
    await responder.stop();
  });

  it('fails with INTERNAL when the reply is malformed or breaks its contract', async () => {
    const s = subject();
    const sub = m.connection.subscribe(s, { callback: (_, msg) => void msg.respond('definitely not an envelope') });
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 2_000 })).rejects.toMatchObject({ code: 'INTERNAL' });
    sub.unsubscribe();

    const t = subject();
    const responder = await serve(m, {
      subject: t,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: () => Promise.resolve({ toolCallId: 'tc1', state: 'Lost' } as never),
    });
    await expect(request(m, { subject: t, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 2_000 })).rejects.toMatchObject({ code: 'INTERNAL' });
    await responder.stop();
  });

  it('fails with CANCELLED when the requester’s signal aborts', async () => {
    const s = subject();
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: async (_, { signal }) => {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        throw new ToolplaneError('CANCELLED', 'stopping');
      },
    });
    const controller = new AbortController();
    const pending = request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 5_000, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await responder.stop();
  });

  it('gives each request to one replica of a queue group', async () => {
    const s = subject();
    const answeredBy: string[] = [];
    const replicas = await Promise.all(
      ['a', 'b'].map((replica) =>
        serve(m, {
          subject: s,
          queue: 'audit',
          requestSchema: GetCall,
          replySchema: Call,
          handler: ({ toolCallId }) => {
            answeredBy.push(replica);
            return Promise.resolve({ toolCallId, state: 'Observed' as const });
          },
        }),
      ),
    );
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: `tc${i}` }, timeoutMs: 2_000 })));
    expect(replies.map((r) => r.toolCallId)).toEqual(Array.from({ length: 20 }, (_, i) => `tc${i}`));
    await m.connection.flush();
    expect(answeredBy).toHaveLength(20);
    expect(new Set(answeredBy)).toEqual(new Set(['a', 'b']));
    await Promise.all(replicas.map((r) => r.stop()));
  });

  it('stop() answers in-flight requests with TEMPORARY_UNAVAILABLE and takes no more', async () => {
    const s = subject();
    const started = gate();
    const responder = await serve(m, {
      subject: s,
      queue: 'audit',
      requestSchema: GetCall,
      replySchema: Call,
      handler: async (_, { signal }) => {
        started.open();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        throw new ToolplaneError('CANCELLED', 'stopping');
      },
    });
    const pending = request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 5_000 });
    await started.promise;
    await responder.stop();
    await expect(pending).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
    await expect(responder.closed()).resolves.toBeUndefined();
    await expect(request(m, { subject: s, requestSchema: GetCall, replySchema: Call, body: { toolCallId: 'tc1' }, timeoutMs: 2_000 })).rejects.toMatchObject({
      code: 'TEMPORARY_UNAVAILABLE',
    });
  });
});
