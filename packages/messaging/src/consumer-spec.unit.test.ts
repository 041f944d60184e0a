import { describe, expect, it } from 'vitest';
import { nanos } from '@nats-io/nats-core';
import { consumerConfigDiff, consumerFilters, minPinTimeoutMs, pinnedGroupOf, toConsumerConfig, type ConsumerSpec } from './consumer-spec.js';

const spec: ConsumerSpec = { durableName: 'tool_adapter' };

describe('toConsumerConfig', () => {
  it('declares an explicit-ack pull consumer with the server defaults made explicit', () => {
    expect(toConsumerConfig(spec)).toEqual({
      durable_name: 'tool_adapter',
      ack_policy: 'explicit',
      deliver_policy: 'all',
      replay_policy: 'instant',
      description: '',
      ack_wait: nanos(30_000),
      max_deliver: -1,
      max_ack_pending: 1000,
    });
  });

  it('puts a single filter in filter_subject and several in filter_subjects', () => {
    expect(toConsumerConfig({ ...spec, filterSubject: 'a.>' })).toMatchObject({ filter_subject: 'a.>' });
    expect(toConsumerConfig({ ...spec, filterSubject: 'a.>', filterSubjects: ['b.>', 'a.>'] })).toMatchObject({ filter_subjects: ['a.>', 'b.>'] });
    expect(consumerFilters({ ...spec, filterSubjects: ['x', 'x'] })).toEqual(['x']);
  });

  it('lets the first backoff step stand for the ack wait, as the server does', () => {
    expect(toConsumerConfig({ ...spec, ackWaitMs: 60_000, backoffMs: [2_000, 10_000], maxDeliver: 5 })).toMatchObject({
      ack_wait: nanos(2_000),
      backoff: [nanos(2_000), nanos(10_000)],
      max_deliver: 5,
    });
  });
});

describe('a pinned consumer spec', () => {
  const pinned: ConsumerSpec = { ...spec, pinned: { group: 'writers', timeoutMs: 30_000 } };

  it('declares a priority group with the pinned_client policy and its timeout', () => {
    expect(toConsumerConfig(pinned)).toMatchObject({ priority_groups: ['writers'], priority_policy: 'pinned_client', priority_timeout: nanos(30_000) });
    expect(pinnedGroupOf(toConsumerConfig(pinned))).toBe('writers');
    expect(pinnedGroupOf(toConsumerConfig(spec))).toBeUndefined();
  });

  it('refuses a group the server would refuse and a timeout a pull could not keep', () => {
    expect(() => toConsumerConfig({ ...spec, pinned: { group: 'seventeen-letters', timeoutMs: 30_000 } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => toConsumerConfig({ ...spec, pinned: { group: 'has space', timeoutMs: 30_000 } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => toConsumerConfig({ ...spec, pinned: { group: 'writers', timeoutMs: minPinTimeoutMs - 1 } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('diffs the pinning as one setting: added, removed, another group or another timeout', () => {
    const desired = toConsumerConfig(pinned);
    expect(consumerConfigDiff(desired, { ...desired })).toEqual([]);
    expect(consumerConfigDiff(desired, toConsumerConfig(spec))).toEqual(['pinned']);
    expect(consumerConfigDiff(toConsumerConfig(spec), desired)).toEqual(['pinned']);
    expect(consumerConfigDiff(desired, toConsumerConfig({ ...spec, pinned: { group: 'others', timeoutMs: 30_000 } }))).toEqual(['pinned']);
    expect(consumerConfigDiff(desired, toConsumerConfig({ ...spec, pinned: { group: 'writers', timeoutMs: 60_000 } }))).toEqual(['pinned']);
    // The server reports a consumer without priority groups with no policy at all.
    expect(consumerConfigDiff(toConsumerConfig(spec), { ...toConsumerConfig(spec), priority_policy: 'none' })).toEqual([]);
  });
});

describe('consumerConfigDiff', () => {
  it('finds nothing to change in the config the server reports back', () => {
    const desired = toConsumerConfig({ ...spec, filterSubject: 'a.>' });
    expect(consumerConfigDiff(desired, { ...desired, description: undefined, name: 'tool_adapter', max_waiting: 512 })).toEqual([]);
  });

  it('treats filter_subject and a one-element filter_subjects alike', () => {
    const desired = toConsumerConfig({ ...spec, filterSubject: 'a.>' });
    const { filter_subject: _, ...rest } = desired;
    expect(consumerConfigDiff(desired, { ...rest, filter_subjects: ['a.>'] })).toEqual([]);
  });

  it('names every setting that differs, including a removed backoff', () => {
    const desired = toConsumerConfig({ ...spec, ackWaitMs: 5_000, filterSubject: 'b.>' });
    const current = toConsumerConfig({ ...spec, backoffMs: [1_000], maxDeliver: 3, filterSubject: 'a.>' });
    expect(consumerConfigDiff(desired, current).sort()).toEqual(['ack_wait', 'backoff', 'filterSubjects', 'max_deliver']);
  });
});
