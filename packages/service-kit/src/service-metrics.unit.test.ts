import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { latencyBuckets, serviceMetrics } from './service-metrics.js';

/** The samples of one metric as `labels → value`, from the registry's JSON (what a scrape would show). */
async function samples(registry: Registry, name: string): Promise<Map<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  return new Map(
    metric.values.map((value) => {
      const labels = Object.entries(value.labels)
        .map(([key, label]) => `${key}=${String(label)}`)
        .sort()
        .join(',');
      const suffix = 'metricName' in value && typeof value.metricName === 'string' ? value.metricName.slice(name.length) : '';
      return [`${suffix}{${labels}}`, value.value];
    }),
  );
}

describe('serviceMetrics', () => {
  it('prefixes names with toolplane_ and counts by label set', async () => {
    const registry = new Registry();
    const calls = serviceMetrics(registry).counter({ name: 'calls_total', help: 'calls', labelNames: ['tool', 'state'] });
    calls.inc({ tool: 'a', state: 'succeeded' });
    calls.inc({ tool: 'a', state: 'succeeded' }, 2);
    calls.inc({ tool: 'b', state: 'failed' });

    const text = await registry.metrics();
    expect(text).toContain('# TYPE toolplane_calls_total counter');
    expect(text).toContain('toolplane_calls_total{tool="a",state="succeeded"} 3');
    expect(text).toContain('toolplane_calls_total{tool="b",state="failed"} 1');
  });

  it('counts a metric without labels', async () => {
    const registry = new Registry();
    const rejections = serviceMetrics(registry).counter({ name: 'rejections_total', help: 'rejections', labelNames: [] });
    rejections.inc({});
    rejections.inc({});
    expect(await registry.metrics()).toMatch(/^toolplane_rejections_total 2$/m);
  });

  it('folds label sets past maxSeries into every label = "other"', async () => {
    const registry = new Registry();
    const calls = serviceMetrics(registry, { maxSeries: 2 }).counter({ name: 'calls_total', help: 'calls', labelNames: ['tool', 'code'] });
    calls.inc({ tool: 'a', code: 'none' });
    calls.inc({ tool: 'b', code: 'none' });
    calls.inc({ tool: 'c', code: 'none' });
    calls.inc({ tool: 'd', code: 'DENIED' }, 4);
    // A set seen before the bound was reached keeps its own series.
    calls.inc({ tool: 'a', code: 'none' });

    expect(await samples(registry, 'toolplane_calls_total')).toEqual(
      new Map([
        ['{code=none,tool=a}', 2],
        ['{code=none,tool=b}', 1],
        ['{code=other,tool=other}', 5],
      ]),
    );
  });

  it('drops values that are not finite and negative counter increments instead of throwing', async () => {
    const registry = new Registry();
    const metrics = serviceMetrics(registry);
    const count = metrics.counter({ name: 'count_total', help: 'count', labelNames: [] });
    const latency = metrics.histogram({ name: 'latency_seconds', help: 'latency', labelNames: [] });
    expect(() => {
      count.inc({}, -1);
      count.inc({}, Number.NaN);
      latency.observe({}, Number.POSITIVE_INFINITY);
    }).not.toThrow();
    count.inc({});
    expect(await registry.metrics()).toMatch(/^toolplane_count_total 1$/m);
    expect(await registry.metrics()).toMatch(/^toolplane_latency_seconds_count 0$/m);
  });

  it('sets, increments and decrements a gauge', async () => {
    const registry = new Registry();
    const open = serviceMetrics(registry).gauge({ name: 'open_streams', help: 'open', labelNames: ['kind'] });
    open.set({ kind: 'sse' }, 5);
    open.inc({ kind: 'sse' });
    open.dec({ kind: 'sse' }, 3);
    expect(await registry.metrics()).toContain('toolplane_open_streams{kind="sse"} 3');
  });

  it('collects a gauge at scrape time and drops series no longer reported', async () => {
    const registry = new Registry();
    let pending: readonly (readonly [string, number])[] = [
      ['a', 3],
      ['b', 7],
    ];
    let scrapes = 0;
    serviceMetrics(registry).gauge({
      name: 'consumer_pending',
      help: 'pending',
      labelNames: ['consumer'],
      collect: async (set) => {
        scrapes += 1;
        await Promise.resolve();
        for (const [consumer, value] of pending) set({ consumer }, value);
      },
    });
    expect(scrapes).toBe(0);

    expect(await samples(registry, 'toolplane_consumer_pending')).toEqual(
      new Map([
        ['{consumer=a}', 3],
        ['{consumer=b}', 7],
      ]),
    );
    pending = [['a', 1]];
    expect(await samples(registry, 'toolplane_consumer_pending')).toEqual(new Map([['{consumer=a}', 1]]));
    expect(scrapes).toBe(2);
  });

  it('bounds a collected gauge per scrape, not over its lifetime', async () => {
    const registry = new Registry();
    let names = ['a', 'b'];
    serviceMetrics(registry, { maxSeries: 2 }).gauge({
      name: 'depth',
      help: 'depth',
      labelNames: ['consumer'],
      collect: (set) => {
        for (const consumer of names) set({ consumer }, 1);
      },
    });
    await registry.metrics();
    names = ['c', 'd', 'e'];
    expect(await samples(registry, 'toolplane_depth')).toEqual(
      new Map([
        ['{consumer=c}', 1],
        ['{consumer=d}', 1],
        ['{consumer=other}', 1],
      ]),
    );
  });

  it('observes durations into the default latency buckets, or the spec`s own', async () => {
    const registry = new Registry();
    const metrics = serviceMetrics(registry);
    const stages = metrics.histogram({ name: 'stage_seconds', help: 'stages', labelNames: ['stage'] });
    const custom = metrics.histogram({ name: 'custom_seconds', help: 'custom', labelNames: [], buckets: [1, 10] });
    stages.observe({ stage: 'policy' }, 0.0007);
    stages.observe({ stage: 'policy' }, 0.02);
    stages.observe({ stage: 'policy' }, 40);
    custom.observe({}, 5);

    const stageSamples = await samples(registry, 'toolplane_stage_seconds');
    const buckets = [...stageSamples.keys()].filter((key) => key.startsWith('_bucket')).map((key) => /le=([^,}]+)/.exec(key)?.[1]);
    expect(buckets).toEqual([...latencyBuckets.map(String), '+Inf']);
    expect(stageSamples.get('_bucket{le=0.0005,stage=policy}')).toBe(0);
    expect(stageSamples.get('_bucket{le=0.001,stage=policy}')).toBe(1);
    expect(stageSamples.get('_bucket{le=0.025,stage=policy}')).toBe(2);
    expect(stageSamples.get('_bucket{le=30,stage=policy}')).toBe(2);
    expect(stageSamples.get('_bucket{le=+Inf,stage=policy}')).toBe(3);
    expect(stageSamples.get('_count{stage=policy}')).toBe(3);
    expect(stageSamples.get('_sum{stage=policy}')).toBeCloseTo(40.0207, 6);

    expect(await samples(registry, 'toolplane_custom_seconds')).toEqual(
      new Map([
        ['_bucket{le=1}', 0],
        ['_bucket{le=10}', 1],
        ['_bucket{le=+Inf}', 1],
        ['_sum{}', 5],
        ['_count{}', 1],
      ]),
    );
  });
});
