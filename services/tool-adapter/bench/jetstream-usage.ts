// What JetStream stored during a benchmark phase, from the server's monitoring endpoint (`/jsz?streams=true`): every
// stream's (and KV bucket's, a stream named KV_<bucket>) appended and retained messages, per governed call, and which
// of them a READ call's critical path awaits. Read from what the server reports, so it follows however the adapter
// lays out its streams.
import { streams } from '@toolplane/contracts';

/** One stream as `/jsz` reports it. */
interface StreamDetail {
  readonly name: string;
  readonly config?: { readonly retention?: string };
  readonly state: { readonly messages: number; readonly last_seq: number };
  readonly consumer_detail?: readonly { readonly name: string; readonly num_pending: number; readonly num_ack_pending: number }[];
}

interface Jsz {
  readonly config?: { readonly sync_always?: boolean; readonly sync_interval?: number };
  readonly account_details?: readonly { readonly stream_detail?: readonly StreamDetail[] }[];
}

/** The streams of a server at one moment: last sequence (appends so far) and messages kept, by stream name. */
export interface StreamsSample {
  readonly streams: ReadonlyMap<string, { readonly lastSeq: number; readonly messages: number; readonly retention: string }>;
  /** Messages consumers have still to be delivered or to ack, over all consumers. */
  readonly consumerBacklog: number;
  readonly syncAlways: boolean;
}

/** Reads `/jsz` at `monitorUrl` (streams, their config, and consumers). */
export async function sampleStreams(monitorUrl: string): Promise<StreamsSample> {
  const response = await fetch(`${monitorUrl}/jsz?streams=true&config=true&consumers=true`);
  const jsz = (await response.json()) as Jsz;
  const byName = new Map<string, { lastSeq: number; messages: number; retention: string }>();
  let consumerBacklog = 0;
  for (const account of jsz.account_details ?? []) {
    for (const stream of account.stream_detail ?? []) {
      byName.set(stream.name, { lastSeq: stream.state.last_seq, messages: stream.state.messages, retention: stream.config?.retention ?? 'limits' });
      for (const consumer of stream.consumer_detail ?? []) consumerBacklog += consumer.num_pending + consumer.num_ack_pending;
    }
  }
  return { streams: byName, consumerBacklog, syncAlways: jsz.config?.sync_always === true };
}

/**
 * Which streams a READ call's critical path must await a write to, by name (BENCH_AWAITED_STREAMS, a regular
 * expression, overrides it):
 * - the invocation work queue (`streams.invocations`): the request publish, which the caller awaits;
 * - every other stream whose name says INVOCATION (the adapter's private invocation-state stream or streams, and a KV
 *   bucket of invocation state): the started fact must be durable before the provider is called and the terminal
 *   fact before the reply;
 * - KV buckets whose name says RATE (rate-limit counters): the count is a compare-and-set the policy step awaits.
 * Not counted: the public lifecycle events (TOOLPLANE_EVENTS, pipelined and confirmed before the request's ack), KV
 * buckets of profiles, policies and descriptors (watched into memory, not written by a call), dead letters.
 */
export function awaitedStreamMatcher(override: string | undefined): (name: string) => boolean {
  if (override !== undefined && override !== '') {
    const pattern = new RegExp(override);
    return (name) => pattern.test(name);
  }
  return (name) => name === streams.invocations.name || (name !== streams.events.name && /INVOCATION/i.test(name)) || (name.startsWith('KV_') && /RATE/i.test(name));
}

/** JetStream's part of a phase's cost, per governed call. */
export interface JetStreamCosts {
  /** Messages appended to every stream and KV bucket, per call (last-sequence deltas: a work queue's acked requests count). */
  readonly jsMsgsPerCall: number;
  /** Messages still kept after the phase, per call (message-count deltas: acked work-queue requests and replaced KV values are gone). */
  readonly jsRetainedPerCall: number;
  /** Appended messages per call, by stream (those with any). */
  readonly jsMsgsByStream: Record<string, number>;
  /** Awaited durable writes on a READ call's critical path, per call: the appends to `awaitedStreams`. */
  readonly awaitedWritesPerCall: number;
  readonly awaitedStreams: readonly string[];
}

/** The appends of `before` → `after`, per call of `calls`. */
export function jetStreamCosts(before: StreamsSample, after: StreamsSample, calls: number, awaited: (name: string) => boolean): JetStreamCosts {
  const per = (value: number) => Number((value / Math.max(1, calls)).toFixed(2));
  let appended = 0;
  let retained = 0;
  let awaitedAppends = 0;
  const byStream: Record<string, number> = {};
  const awaitedStreams: string[] = [];
  for (const [name, now] of [...after.streams].sort(([a], [b]) => a.localeCompare(b))) {
    const was = before.streams.get(name) ?? { lastSeq: 0, messages: 0 };
    const appends = now.lastSeq - was.lastSeq;
    appended += appends;
    retained += now.messages - was.messages;
    if (appends > 0) byStream[name] = per(appends);
    if (awaited(name)) {
      awaitedStreams.push(name);
      awaitedAppends += appends;
    }
  }
  return { jsMsgsPerCall: per(appended), jsRetainedPerCall: per(retained), jsMsgsByStream: byStream, awaitedWritesPerCall: per(awaitedAppends), awaitedStreams };
}
