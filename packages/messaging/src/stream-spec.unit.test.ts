import { describe, expect, it } from 'vitest';
import { nanos } from '@nats-io/nats-core';
import { replicaReductionError, streamConfigDiff, toStreamConfig, type StreamSpec } from './stream-spec.js';

const spec: StreamSpec = { name: 'INVOCATIONS', subjects: ['toolplane.v1.invocations.>'], retention: 'workqueue', storage: 'file' };

describe('toStreamConfig', () => {
  it('makes the server defaults explicit', () => {
    expect(toStreamConfig(spec)).toEqual({
      name: 'INVOCATIONS',
      subjects: ['toolplane.v1.invocations.>'],
      retention: 'workqueue',
      storage: 'file',
      description: '',
      duplicate_window: nanos(120_000),
      max_msg_size: -1,
      max_age: 0,
      max_bytes: -1,
      num_replicas: 1,
      allow_direct: false,
    });
  });

  it('translates milliseconds to nanoseconds', () => {
    expect(toStreamConfig({ ...spec, duplicateWindowMs: 5_000, maxAgeMs: 86_400_000, maxMsgSize: 1024, replicas: 3 })).toMatchObject({
      duplicate_window: 5_000_000_000,
      max_age: 86_400_000_000_000,
      max_msg_size: 1024,
      num_replicas: 3,
    });
  });

  it('shortens the default duplicate window to a shorter max age, as the server does', () => {
    expect(toStreamConfig({ ...spec, maxAgeMs: 30_000 }).duplicate_window).toBe(nanos(30_000));
  });
});

describe('streamConfigDiff', () => {
  it('finds nothing to change in the config the server reports back', () => {
    const desired = toStreamConfig(spec);
    const reported = { ...desired, description: undefined, max_msgs: -1, discard: 'old' as const, sealed: false };
    expect(streamConfigDiff(desired, reported)).toEqual([]);
  });

  it('ignores the order of subjects', () => {
    const desired = toStreamConfig({ ...spec, subjects: ['a.>', 'b.>'] });
    expect(streamConfigDiff(desired, { ...desired, subjects: ['b.>', 'a.>'] })).toEqual([]);
  });

  it('names every setting that differs', () => {
    const desired = toStreamConfig({ ...spec, maxAgeMs: 60_000, subjects: ['a.>', 'c.>'] });
    const current = toStreamConfig({ ...spec, subjects: ['a.>'] });
    expect(streamConfigDiff(desired, current).sort()).toEqual(['duplicate_window', 'max_age', 'subjects']);
  });
});

describe('replicas', () => {
  it('reports a replica count that differs as a change', () => {
    expect(streamConfigDiff(toStreamConfig({ ...spec, replicas: 3 }), toStreamConfig(spec))).toEqual(['num_replicas']);
    expect(streamConfigDiff(toStreamConfig(spec), toStreamConfig({ ...spec, replicas: 3 }))).toEqual(['num_replicas']);
  });

  it('lets a declaration keep or raise the replica count', () => {
    expect(replicaReductionError('INVOCATIONS', 3, 3)).toBeUndefined();
    expect(replicaReductionError('INVOCATIONS', 3, 1)).toBeUndefined();
    // A config without num_replicas is a single copy.
    expect(replicaReductionError('INVOCATIONS', 1, undefined)).toBeUndefined();
  });

  it('refuses to lower it with one CONFLICT line naming the stream, both counts and the setting', () => {
    const error = replicaReductionError('INVOCATIONS', 1, 3);
    expect(error).toMatchObject({ code: 'CONFLICT' });
    expect(error?.message).toMatch(/^stream INVOCATIONS has 3 replicas and is declared with 1: .*NATS_STREAM_REPLICAS=3[^\n]*$/);
  });
});
