import { nanos } from '@nats-io/nats-core';
import type { ConsumerConfig } from '@nats-io/jetstream';
import { ToolplaneError } from '@toolplane/contracts';
import { sameSet } from './stream-spec.js';

/** A durable pull consumer declared as plain data. */
export interface ConsumerSpec {
  readonly durableName: string;
  /** Only messages on this subject (wildcards allowed). */
  readonly filterSubject?: string;
  /** Only messages on these subjects; combined with filterSubject. No filter: the whole stream. */
  readonly filterSubjects?: readonly string[];
  readonly description?: string;
  /** How long a delivered message may stay unacknowledged before it is redelivered; default 30 s. */
  readonly ackWaitMs?: number;
  /**
   * The server's delivery bound; default -1 (unbounded): `consume()` bounds deliveries itself and
   * dead-letters, so a bound here must be larger than consume's `maxDeliver` or messages stall.
   */
  readonly maxDeliver?: number;
  /** Redelivery delays after an ack timeout, by delivery; when set, its first entry replaces ackWaitMs. */
  readonly backoffMs?: readonly number[];
  /** Delivered but unacknowledged messages allowed at once, across all replicas; default 1000. */
  readonly maxAckPending?: number;
  /** Where a new consumer starts: every stored message (default) or only new ones. */
  readonly deliverPolicy?: 'all' | 'new';
  /**
   * One active client at a time (a priority group with the `pinned_client` policy, NATS 2.11+): the server delivers
   * only to the client it pinned, and pins another one when the pinned client has not pulled for `timeoutMs`.
   * Every client must pull with the group (consume() does); with it, `maxAckPending` bounds what the one active
   * client holds, so set it to that client's concurrency.
   */
  readonly pinned?: PinnedSpec;
}

/** The priority group of a consumer with one active client, and how long a silent client keeps its pin. */
export interface PinnedSpec {
  /** 1-16 letters, digits, `_`, `-`, `/` or `=`. */
  readonly group: string;
  /** How long the pinned client may go without pulling before another one is pinned; at least 2000. */
  readonly timeoutMs: number;
}

/** The shortest pin timeout consume() can keep a pin with (its pulls expire after half of it, and at least after 1 s). */
export const minPinTimeoutMs = 2_000;
const PRIORITY_GROUP = /^[A-Za-z0-9_/=-]{1,16}$/;

/** The part of a ConsumerConfig that a ConsumerSpec decides. */
export type ManagedConsumerConfig = Pick<
  ConsumerConfig,
  | 'durable_name'
  | 'ack_policy'
  | 'deliver_policy'
  | 'replay_policy'
  | 'description'
  | 'ack_wait'
  | 'max_deliver'
  | 'backoff'
  | 'max_ack_pending'
  | 'filter_subject'
  | 'filter_subjects'
  | 'priority_groups'
  | 'priority_policy'
  | 'priority_timeout'
>;

/** The field names ConsumerSpec-level diffs report. */
export type ConsumerField = 'filterSubjects' | 'pinned' | Exclude<keyof ManagedConsumerConfig, 'filter_subject' | 'filter_subjects' | 'priority_groups' | 'priority_policy' | 'priority_timeout'>;

/** The subjects a spec filters on, deduplicated; empty means the whole stream. */
export function consumerFilters(spec: ConsumerSpec): string[] {
  return [...new Set([...(spec.filterSubject === undefined ? [] : [spec.filterSubject]), ...(spec.filterSubjects ?? [])])];
}

/** Translates a spec into the JetStream config it stands for, with the server's defaults made explicit so a diff is exact. */
export function toConsumerConfig(spec: ConsumerSpec): ManagedConsumerConfig {
  if (spec.pinned) checkPinned(spec.durableName, spec.pinned);
  const backoffMs = spec.backoffMs ?? [];
  const filters = consumerFilters(spec);
  return {
    durable_name: spec.durableName,
    ack_policy: 'explicit',
    deliver_policy: spec.deliverPolicy ?? 'all',
    replay_policy: 'instant',
    description: spec.description ?? '',
    // The server replaces ack_wait with the first backoff step; saying so here keeps re-declaring a no-op.
    ack_wait: nanos(backoffMs[0] ?? spec.ackWaitMs ?? 30_000),
    max_deliver: spec.maxDeliver ?? -1,
    ...(backoffMs.length > 0 ? { backoff: backoffMs.map((ms) => nanos(ms)) } : {}),
    max_ack_pending: spec.maxAckPending ?? 1000,
    // One filter goes in filter_subject, which every server version since 2.9 understands.
    ...(filters.length === 1 ? { filter_subject: filters[0] } : filters.length > 1 ? { filter_subjects: filters } : {}),
    ...(spec.pinned ? { priority_groups: [spec.pinned.group], priority_policy: 'pinned_client', priority_timeout: nanos(spec.pinned.timeoutMs) } : {}),
  };
}

function checkPinned(durableName: string, pinned: PinnedSpec): void {
  if (!PRIORITY_GROUP.test(pinned.group)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `consumer ${durableName}: priority group ${JSON.stringify(pinned.group)} is not 1-16 letters, digits, _, -, / or =`);
  }
  if (!Number.isSafeInteger(pinned.timeoutMs) || pinned.timeoutMs < minPinTimeoutMs) {
    throw new ToolplaneError('INVALID_ARGUMENT', `consumer ${durableName}: the pin timeout must be a whole number of milliseconds, at least ${minPinTimeoutMs}`);
  }
}

/** The group of a consumer config with one active client (policy `pinned_client`), if it is one. */
export function pinnedGroupOf(config: Partial<ConsumerConfig>): string | undefined {
  return config.priority_policy === 'pinned_client' ? config.priority_groups?.[0] : undefined;
}

/** The subjects a consumer config filters on; empty means the whole stream. */
export function configFilters(config: Partial<ConsumerConfig>): string[] {
  const single = config.filter_subject === undefined || config.filter_subject === '' ? [] : [config.filter_subject];
  return [...single, ...(config.filter_subjects ?? [])];
}

/** The managed fields in which a consumer's current config differs from the desired one (empty: nothing to do). */
export function consumerConfigDiff(desired: ManagedConsumerConfig, current: Partial<ConsumerConfig>): ConsumerField[] {
  const differs: ConsumerField[] = [];
  if (!sameSet(configFilters(desired), configFilters(current))) differs.push('filterSubjects');
  if ((current.description ?? '') !== desired.description) differs.push('description');
  const currentBackoff = current.backoff ?? [];
  const desiredBackoff = desired.backoff ?? [];
  if (currentBackoff.length !== desiredBackoff.length || currentBackoff.some((value, i) => value !== desiredBackoff[i])) differs.push('backoff');
  if (!samePinning(desired, current)) differs.push('pinned');
  for (const key of ['durable_name', 'ack_policy', 'deliver_policy', 'replay_policy', 'ack_wait', 'max_deliver', 'max_ack_pending'] as const) {
    if (current[key] !== desired[key]) differs.push(key);
  }
  return differs;
}

function samePinning(desired: Partial<ConsumerConfig>, current: Partial<ConsumerConfig>): boolean {
  const policy = (config: Partial<ConsumerConfig>) => config.priority_policy ?? 'none';
  if (policy(desired) !== policy(current)) return false;
  if (policy(desired) === 'none') return true;
  return sameSet(desired.priority_groups ?? [], current.priority_groups ?? []) && (desired.priority_timeout ?? 0) === (current.priority_timeout ?? 0);
}
