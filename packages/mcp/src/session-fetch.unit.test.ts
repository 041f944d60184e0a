import type { ToolplaneError } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { createSessionFetch, type FetchFunction } from './session-fetch.js';

function streamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

/** A fetch that records the signals it was given and answers with `respond()`. */
function recordingFetch(respond: () => Response) {
  const signals: AbortSignal[] = [];
  const baseFetch: FetchFunction = (_url, init) => {
    if (init?.signal) signals.push(init.signal);
    return Promise.resolve(respond());
  };
  return { baseFetch, signals };
}

describe('createSessionFetch', () => {
  it('gives every request its own signal and adds one listener, not one per request, to the shared signal', async () => {
    const { baseFetch, signals } = recordingFetch(() => new Response('{}', { headers: { 'content-type': 'application/json' } }));
    const session = createSessionFetch({ maxMessageBytes: 1024, onOversized: () => undefined, baseFetch });
    const shared = new AbortController();
    let added = 0;
    const original = shared.signal.addEventListener.bind(shared.signal);
    shared.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
      added++;
      original(...args);
    });
    for (let i = 0; i < 50; i++) await (await session.fetch('http://example.invalid/mcp', { method: 'POST', signal: shared.signal })).text();
    expect(new Set(signals).size).toBe(50);
    expect(signals).not.toContain(shared.signal);
    expect(added).toBe(1);
    expect(session.inFlight).toBe(0);
  });

  it('aborts the requests still running when the shared signal aborts', async () => {
    const { baseFetch, signals } = recordingFetch(() => new Response(new ReadableStream(), { headers: { 'content-type': 'text/event-stream' } }));
    const session = createSessionFetch({ maxMessageBytes: 1024, onOversized: () => undefined, baseFetch });
    const shared = new AbortController();
    await session.fetch('http://example.invalid/mcp', { method: 'GET', signal: shared.signal });
    expect(session.inFlight).toBe(1);
    shared.abort();
    expect(signals[0]?.aborted).toBe(true);
    expect(session.inFlight).toBe(0);
  });

  it('bounds a JSON body as a whole', async () => {
    const oversized: ToolplaneError[] = [];
    const { baseFetch } = recordingFetch(() => new Response(streamOf('x'.repeat(600), 'y'.repeat(600)), { headers: { 'content-type': 'application/json' } }));
    const session = createSessionFetch({ maxMessageBytes: 1000, onOversized: (error) => oversized.push(error), baseFetch });
    const response = await session.fetch('http://example.invalid/mcp', { method: 'POST' });
    await expect(response.text()).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'MessageTooLarge' } });
    expect(oversized).toHaveLength(1);
    expect(session.inFlight).toBe(0);
  });

  it('bounds each event of an event stream, not the stream', async () => {
    const event = `data: ${'x'.repeat(80)}\n\n`;
    const many = Array.from({ length: 50 }, () => event);
    const { baseFetch } = recordingFetch(() => new Response(streamOf(...many), { headers: { 'content-type': 'text/event-stream' } }));
    const session = createSessionFetch({ maxMessageBytes: 100, onOversized: () => undefined, baseFetch });
    expect(await (await session.fetch('http://example.invalid/mcp', { method: 'POST' })).text()).toBe(many.join(''));

    const big = recordingFetch(() => new Response(streamOf(event, `data: ${'x'.repeat(60)}`, `${'x'.repeat(60)}\n\n`), { headers: { 'content-type': 'text/event-stream' } }));
    const bounded = createSessionFetch({ maxMessageBytes: 100, onOversized: () => undefined, baseFetch: big.baseFetch });
    await expect((await bounded.fetch('http://example.invalid/mcp', { method: 'POST' })).text()).rejects.toMatchObject({ details: { providerErrorType: 'MessageTooLarge' } });
  });

  it('refuses a request body over the bound without sending it', async () => {
    const { baseFetch, signals } = recordingFetch(() => new Response('{}'));
    const session = createSessionFetch({ maxMessageBytes: 10, onOversized: () => undefined, baseFetch });
    await expect(session.fetch('http://example.invalid/mcp', { method: 'POST', body: 'x'.repeat(11) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(signals).toHaveLength(0);
  });
});
