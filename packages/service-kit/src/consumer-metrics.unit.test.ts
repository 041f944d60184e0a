import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { ToolplaneError } from '@toolplane/contracts';
import type { ConsumerProgress } from '@toolplane/messaging';
import { declareConsumerMetrics, type ConsumerRef } from './consumer-metrics.js';
import { serviceMetrics } from './service-metrics.js';

const progress = (pending: number, ackPending: number, redelivered: number): ConsumerProgress => ({ ackFloor: 0, delivered: 0, pending, ackPending, redelivered });

describe('declareConsumerMetrics', () => {
  it('collects pending, ack-pending and redelivered per consumer at scrape time, one info read per consumer', async () => {
    const registry = new Registry();
    const reads: string[] = [];
    let state: Record<string, ConsumerProgress> = { invocations: progress(4, 2, 1), results: progress(0, 0, 0) };
    declareConsumerMetrics(
      serviceMetrics(registry),
      [
        { stream: 'TOOLPLANE_INVOCATIONS', consumer: 'invocations' },
        { stream: 'TOOLPLANE_RESULTS', consumer: 'results' },
      ],
      async (_stream, consumer) => {
        reads.push(consumer);
        await Promise.resolve();
        const found = state[consumer];
        if (found === undefined) throw new Error(`no consumer ${consumer}`);
        return found;
      },
      { signal: new AbortController().signal, onReadFailed: () => undefined },
    );
    expect(reads).toEqual([]);

    const text = await registry.metrics();
    expect(text).toContain('toolplane_consumer_pending{stream="TOOLPLANE_INVOCATIONS",consumer="invocations"} 4');
    expect(text).toContain('toolplane_consumer_ack_pending{stream="TOOLPLANE_INVOCATIONS",consumer="invocations"} 2');
    expect(text).toContain('toolplane_consumer_redelivered{stream="TOOLPLANE_INVOCATIONS",consumer="invocations"} 1');
    expect(text).toContain('toolplane_consumer_pending{stream="TOOLPLANE_RESULTS",consumer="results"} 0');
    expect(reads.sort()).toEqual(['invocations', 'results']);

    state = { invocations: progress(0, 1, 0), results: progress(9, 0, 0) };
    const next = await registry.metrics();
    expect(next).toContain('toolplane_consumer_pending{stream="TOOLPLANE_INVOCATIONS",consumer="invocations"} 0');
    expect(next).toContain('toolplane_consumer_pending{stream="TOOLPLANE_RESULTS",consumer="results"} 9');
    expect(reads).toHaveLength(4);
  });

  it('leaves a consumer whose info cannot be read out of the scrape, reports it, and answers for the others', async () => {
    const registry = new Registry();
    const failed: ConsumerRef[] = [];
    declareConsumerMetrics(
      serviceMetrics(registry),
      [
        { stream: 'S', consumer: 'gone' },
        { stream: 'S', consumer: 'here' },
      ],
      (_stream, consumer) => (consumer === 'gone' ? Promise.reject(new ToolplaneError('NOT_FOUND', 'no such consumer')) : Promise.resolve(progress(3, 0, 0))),
      { signal: new AbortController().signal, onReadFailed: (ref) => failed.push(ref) },
    );

    const text = await registry.metrics();
    expect(text).toContain('toolplane_consumer_pending{stream="S",consumer="here"} 3');
    expect(text).not.toContain('consumer="gone"');
    // Three gauges, one shared read: the failure is reported once per scrape.
    expect(failed).toEqual([{ stream: 'S', consumer: 'gone' }]);
  });

  it('gives up on a read that outlasts its timeout', async () => {
    const registry = new Registry();
    const failed: unknown[] = [];
    declareConsumerMetrics(
      serviceMetrics(registry),
      [{ stream: 'S', consumer: 'slow' }],
      (_stream, _consumer, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        }),
      { signal: new AbortController().signal, onReadFailed: (_ref, error) => failed.push(error), timeoutMs: 20 },
    );
    expect(await registry.metrics()).not.toContain('consumer="slow"');
    expect(failed).toHaveLength(1);
  });

  it('declares nothing for a service without consumers', async () => {
    const registry = new Registry();
    declareConsumerMetrics(serviceMetrics(registry), [], () => Promise.reject(new Error('not called')), { signal: new AbortController().signal, onReadFailed: () => undefined });
    expect(await registry.metrics()).not.toContain('consumer_pending');
  });
});
