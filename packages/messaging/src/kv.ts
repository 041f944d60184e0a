import type { z } from 'zod';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { raceAbort, ToolplaneError, type WireError } from '@toolplane/contracts';
import { decode, encode } from './codec.js';
import { apiErrorCodes } from './declare.js';
import type { Messaging } from './messaging.js';
import { isApiError, toToolplaneError } from './nats-errors.js';
import { replicaReductionError } from './stream-spec.js';

/** A key-value bucket as plain data; opening it creates it when it does not exist. */
export interface KvBucketSpec {
  /** Letters, digits, `_` and `-`. */
  readonly name: string;
  readonly description?: string;
  /** Values kept per key (default 1: the latest only). */
  readonly history?: number;
  /** Default `file`. */
  readonly storage?: 'file' | 'memory';
  /** The largest value in bytes (default: the server's message limit). */
  readonly maxValueBytes?: number;
  /** Copies kept in a cluster (1–5); default: the connection's `streamReplicas` (see connectMessaging). */
  readonly replicas?: number;
}

/** A value read from a bucket, with the revision an update must name. */
export interface KvValue<T> {
  readonly key: string;
  readonly value: T;
  readonly revision: number;
}

/**
 * One change seen by a watch. `ready` comes once, after the values that existed when the watch started: a
 * reader that waits for it has a complete copy from then on. An entry whose value breaks the contract is
 * reported as `invalid` (never thrown), so one bad value cannot stop a watch.
 */
export type KvChange<T> =
  | { readonly kind: 'put'; readonly key: string; readonly value: T; readonly revision: number }
  | { readonly kind: 'delete'; readonly key: string; readonly revision: number }
  | { readonly kind: 'invalid'; readonly key: string; readonly revision: number; readonly reason: WireError }
  | { readonly kind: 'ready' };

/** A running watch: iterate it for changes; it ends when stopped, when its signal aborts, or when the connection closes. */
export interface KvWatch<T> extends AsyncIterable<KvChange<T>> {
  stop(): void;
}

/** A bucket whose values are validated against one contract on the way in and out. */
export interface TypedKv<T> {
  readonly bucket: string;
  /** The current value, or undefined when the key has none (never written, or deleted). */
  get(key: string, options?: { readonly signal?: AbortSignal }): Promise<KvValue<T> | undefined>;
  /** Writes a value whatever is there; resolves with its revision. */
  put(key: string, value: T, options?: { readonly signal?: AbortSignal }): Promise<number>;
  /** Writes a value only if the key has none: CONFLICT otherwise. */
  create(key: string, value: T, options?: { readonly signal?: AbortSignal }): Promise<number>;
  /** Writes a value only if the key is still at `revision`: CONFLICT otherwise (compare-and-set). */
  update(key: string, value: T, revision: number, options?: { readonly signal?: AbortSignal }): Promise<number>;
  /** Deletes the key's value (a delete marker watchers see). */
  delete(key: string, options?: { readonly signal?: AbortSignal }): Promise<void>;
  /** Watches a key or a wildcard filter (`>` by default): the current values, `ready`, then every change. */
  watch(options?: { readonly key?: string; readonly signal?: AbortSignal }): Promise<KvWatch<T>>;
  /** The revision of the bucket's latest change (0 when nothing was written): a watch that has seen it is up to date. */
  lastRevision(options?: { readonly signal?: AbortSignal }): Promise<number>;
}

const BUCKET_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Opens a key-value bucket, creating it when it does not exist, and returns it typed by `schema`: values are
 * validated before they are written (INVALID_ARGUMENT, nothing written) and when they are read. An existing
 * bucket keeps its settings, except that one with fewer replicas than declared is scaled up; one with more fails
 * with CONFLICT, as ensureStream does (a declaration never scales a bucket down).
 */
export async function openKv<S extends z.ZodType>(m: Messaging, spec: KvBucketSpec, schema: S, options: { readonly signal?: AbortSignal } = {}): Promise<TypedKv<z.output<S>>> {
  if (!BUCKET_NAME.test(spec.name)) throw new ToolplaneError('INVALID_ARGUMENT', `bucket name ${JSON.stringify(spec.name)} is not letters, digits, _ and - (at most 64)`);
  const what = `opening bucket ${spec.name}`;
  const replicas = spec.replicas ?? m.streamReplicas;
  let kv: KV;
  try {
    kv = await raceAbort(
      (async () => {
        const opened = await new Kvm(m.jetstream).create(spec.name, {
          history: spec.history ?? 1,
          storage: spec.storage === 'memory' ? 'memory' : 'file',
          replicas,
          ...(spec.description === undefined ? {} : { description: spec.description }),
          ...(spec.maxValueBytes === undefined ? {} : { maxValueSize: spec.maxValueBytes }),
        });
        // create() opens an existing bucket as it is: its replica count is reconciled here, as ensureStream does a stream's.
        const stream = `KV_${spec.name}`;
        const current = (await opened.status()).replicas;
        const reduction = replicaReductionError(stream, replicas, current);
        if (reduction !== undefined) throw reduction;
        if (current < replicas) await m.manager.streams.update(stream, { num_replicas: replicas });
        return opened;
      })(),
      options.signal,
      what,
    );
  } catch (error) {
    throw toToolplaneError(error, what);
  }
  return typedKv(m, kv, spec.name, schema);
}

function typedKv<S extends z.ZodType>(m: Messaging, kv: KV, bucket: string, schema: S): TypedKv<z.output<S>> {
  type T = z.output<S>;
  const run = async <R>(what: string, signal: AbortSignal | undefined, work: () => Promise<R>): Promise<R> => {
    try {
      return await raceAbort(work(), signal, what);
    } catch (error) {
      if (isApiError(error, apiErrorCodes.wrongLastSequence)) throw new ToolplaneError('CONFLICT', `${what}: the key changed since it was read`, { cause: error });
      throw toToolplaneError(error, what);
    }
  };
  // A value read back from the bucket is an output of the schema; values are stored only in that form.
  const payload = (key: string, value: T) => encode(schema, value as z.input<S>, `the value of ${bucket}/${key}`);

  return {
    bucket,
    get: (key, options = {}) =>
      run(`reading ${bucket}/${key}`, options.signal, async () => {
        const entry = await kv.get(key);
        if (entry === null || entry.operation !== 'PUT') return undefined;
        const decoded = decode(schema, entry.value, `the value of ${bucket}/${key}`);
        if (!decoded.ok) throw new ToolplaneError('INTERNAL', decoded.reason.message);
        return { key, value: decoded.value, revision: entry.revision };
      }),
    put: (key, value, options = {}) => run(`writing ${bucket}/${key}`, options.signal, () => kv.put(key, payload(key, value))),
    create: (key, value, options = {}) => run(`creating ${bucket}/${key}`, options.signal, () => kv.create(key, payload(key, value))),
    update: (key, value, revision, options = {}) => run(`updating ${bucket}/${key}`, options.signal, () => kv.update(key, payload(key, value), revision)),
    delete: (key, options = {}) => run(`deleting ${bucket}/${key}`, options.signal, () => kv.delete(key)),
    watch: (options = {}) => run(`watching ${bucket}`, options.signal, () => startWatch(m, kv, bucket, schema, options.key ?? '>', options.signal)),
    lastRevision: (options = {}) => run(`reading the revision of ${bucket}`, options.signal, async () => (await m.manager.streams.info(`KV_${bucket}`)).state.last_seq),
  };
}

async function startWatch<S extends z.ZodType>(m: Messaging, kv: KV, bucket: string, schema: S, key: string, signal: AbortSignal | undefined): Promise<KvWatch<z.output<S>>> {
  // Whether any key matches now decides whether `ready` waits for the initial values: the watcher marks the last
  // of them as the first "update", but an empty selection delivers nothing to wait for.
  const info = await m.manager.streams.info(`KV_${bucket}`, { subjects_filter: `$KV.${bucket}.${key}` });
  const initiallyEmpty = Object.keys(info.state.subjects ?? {}).length === 0;
  const entries = await kv.watch({ key });
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    entries.stop();
  };
  if (signal?.aborted) stop();
  else signal?.addEventListener('abort', stop, { once: true });

  async function* changes(): AsyncGenerator<KvChange<z.output<S>>> {
    let ready = initiallyEmpty;
    if (ready) yield { kind: 'ready' };
    try {
      for await (const entry of entries) {
        yield toChange(entry, bucket, schema);
        if (!ready && entry.isUpdate) {
          ready = true;
          yield { kind: 'ready' };
        }
      }
    } finally {
      signal?.removeEventListener('abort', stop);
      stop();
    }
  }
  const iterator = changes();
  return { stop, [Symbol.asyncIterator]: () => iterator };
}

function toChange<S extends z.ZodType>(entry: KvWatchEntry, bucket: string, schema: S): KvChange<z.output<S>> {
  if (entry.operation !== 'PUT') return { kind: 'delete', key: entry.key, revision: entry.revision };
  const decoded = decode(schema, entry.value, `the value of ${bucket}/${entry.key}`);
  return decoded.ok ? { kind: 'put', key: entry.key, value: decoded.value, revision: entry.revision } : { kind: 'invalid', key: entry.key, revision: entry.revision, reason: decoded.reason };
}
