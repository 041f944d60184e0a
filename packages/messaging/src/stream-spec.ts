import { nanos } from '@nats-io/nats-core';
import type { StreamConfig } from '@nats-io/jetstream';
import { ToolplaneError } from '@toolplane/contracts';

/** A stream declared as plain data (the contracts package holds the platform's streams in this shape). */
export interface StreamSpec {
  readonly name: string;
  readonly subjects: readonly string[];
  readonly retention: 'workqueue' | 'limits' | 'interest';
  readonly storage: 'file' | 'memory';
  readonly description?: string;
  /** Window in which a repeated Nats-Msg-Id is dropped; default 2 minutes (or maxAgeMs, if shorter). */
  readonly duplicateWindowMs?: number;
  /** Largest message accepted, in bytes; default unlimited (the server's max_payload still applies). */
  readonly maxMsgSize?: number;
  /** Age after which messages are removed; default 0 (kept until the retention policy removes them). */
  readonly maxAgeMs?: number;
  /** Total size after which the oldest messages are removed; default unlimited. */
  readonly maxBytes?: number;
  /** Copies kept in a cluster (1–5); default: the connection's `streamReplicas` (see connectMessaging). */
  readonly replicas?: number;
  /** Whether any replica answers direct gets (reading a subject's log in one round trip); default false. */
  readonly allowDirect?: boolean;
}

/** The part of a StreamConfig that a StreamSpec decides. */
export type ManagedStreamConfig = Pick<
  StreamConfig,
  'name' | 'subjects' | 'retention' | 'storage' | 'description' | 'duplicate_window' | 'max_msg_size' | 'max_age' | 'max_bytes' | 'num_replicas' | 'allow_direct'
>;

const defaultDuplicateWindowMs = 120_000;

/** Translates a spec into the JetStream config it stands for, with the server's defaults made explicit so a diff is exact. */
export function toStreamConfig(spec: StreamSpec): ManagedStreamConfig {
  const maxAgeMs = spec.maxAgeMs ?? 0;
  // The server refuses a duplicate window longer than max_age, and shortens its default to fit.
  const duplicateWindowMs = spec.duplicateWindowMs ?? (maxAgeMs > 0 ? Math.min(defaultDuplicateWindowMs, maxAgeMs) : defaultDuplicateWindowMs);
  return {
    name: spec.name,
    subjects: [...spec.subjects],
    retention: spec.retention,
    storage: spec.storage,
    description: spec.description ?? '',
    duplicate_window: nanos(duplicateWindowMs),
    max_msg_size: spec.maxMsgSize ?? -1,
    max_age: nanos(maxAgeMs),
    max_bytes: spec.maxBytes ?? -1,
    num_replicas: spec.replicas ?? 1,
    allow_direct: spec.allowDirect ?? false,
  };
}

/** The managed fields in which a stream's current config differs from the desired one (empty: nothing to do). */
export function streamConfigDiff(desired: ManagedStreamConfig, current: Partial<StreamConfig>): (keyof ManagedStreamConfig)[] {
  const differs: (keyof ManagedStreamConfig)[] = [];
  if (!sameSet(desired.subjects, current.subjects ?? [])) differs.push('subjects');
  if ((current.description ?? '') !== desired.description) differs.push('description');
  for (const key of ['retention', 'storage', 'duplicate_window', 'max_msg_size', 'max_age', 'max_bytes', 'num_replicas', 'allow_direct'] as const) {
    if (current[key] !== desired[key]) differs.push(key);
  }
  return differs;
}

/**
 * Refuses a declaration that would lower a stream's (or bucket's) replica count. A stream declared with fewer
 * replicas than it has is almost always a service started without the cluster's replica setting, not an intent
 * to give up copies: scaling down silently would leave an R3 deployment's record on one node. Raising the
 * count (moving a deployment from one node to a cluster) goes ahead like any other change.
 */
export function replicaReductionError(stream: string, desired: number, current: number | undefined): ToolplaneError | undefined {
  const have = current ?? 1;
  if (have <= desired) return undefined;
  return new ToolplaneError(
    'CONFLICT',
    `stream ${stream} has ${have} replicas and is declared with ${desired}: a declaration never lowers the replica count; declare it with ${have} (NATS_STREAM_REPLICAS=${have}), or scale the stream down yourself (nats stream edit ${stream} --replicas ${desired})`,
  );
}

/** Whether two lists hold the same strings, in any order. */
export function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((item) => right.has(item));
}
