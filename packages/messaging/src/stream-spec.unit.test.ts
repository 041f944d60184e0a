import { describe, expect, it } from 'vitest';
import { nanos } from '@nats-io/nats-core';
import { streamConfigDiff, toStreamConfig, type StreamSpec } from './stream-spec.js';

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
