// BENCH_PRELOAD: fills the streams and read models with the history of N calls before measuring, so the benchmark
// shows whether a call's cost grows with what is stored. It does not assume how the adapter stores a call: it records
// what one real governed call left behind (the messages it appended to every stream, read back by sequence, and the
// documents of the adapter's database that name it) and replays that N times as fast as it can (pipelined publishes,
// batched inserts), with the call's identities (idempotency key, every UUID, and the long per-call tokens of its
// subjects such as a hashed key) replaced by fresh ones for each copy. Not replayed: the invocation work queue (a
// copied request would be executed), KV buckets (current values, not history: a copied rate counter would reset the
// live one) and dead letters. Everything lands in the benchmark's own scope, the worst case for per-scope indexes.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { streams as streamDefinitions, type Scope } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { Store } from '@toolplane/store';
import { sampleStreams, type StreamsSample } from './jetstream-usage.js';

/** What the preload needs: the server and the database the adapter uses, and one real call to record. */
export interface PreloadTarget {
  readonly messaging: Messaging;
  readonly monitorUrl: string;
  readonly store: Store;
  readonly scope: Scope;
  /** Makes one governed call and resolves with its idempotency key once its reply came (rejects otherwise). */
  readonly recordedCall: () => Promise<string>;
  /** The invocation and tool-call ids of the call under a key (from the adapter's lookup). */
  readonly idsOf: (idempotencyKey: string) => Promise<readonly string[]>;
  readonly log: (line: string) => void;
}

/** What the preload did. */
export interface PreloadReport {
  readonly calls: number;
  readonly ms: number;
  /** Messages appended per copied call, and in all. */
  readonly messagesPerCall: number;
  readonly messages: number;
  readonly failedPublishes: number;
  /** Documents inserted per copied call, and in all (duplicates a projector had already written are skipped). */
  readonly documentsPerCall: number;
  readonly documents: number;
  /** How long consumers took to work off what was replayed. */
  readonly settleMs: number;
}

interface RecordedMessage {
  readonly subject: string;
  /** The payload as text when it is UTF-8, so identities in it can be replaced; else the bytes as they are. */
  readonly text: string | undefined;
  readonly bytes: Uint8Array;
}

interface RecordedDocument {
  readonly collection: string;
  readonly document: Record<string, unknown>;
}

const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const longTokenPattern = /^[A-Za-z0-9_-]{16,}$/;
const publishChunk = 1_000;
const chunksInFlight = 4;
const insertBatch = 1_000;

/** Records one call, then replays it `calls` times; `settleMs` bounds the wait for consumers to catch up. */
export async function preload(target: PreloadTarget, calls: number, settleMs: number): Promise<PreloadReport> {
  const started = performance.now();
  const recorded = await recordCall(target);
  target.log(`  preload: one call left ${recorded.messages.length} messages (${[...new Set(recorded.messages.map((m) => m.subject.split('.').slice(0, 3).join('.')))].join(', ')}) and ${recorded.documents.length} documents (${[...new Set(recorded.documents.map((d) => d.collection))].join(', ') || 'none'}); ${recorded.identities.length} identities replaced per copy`);
  const identity = new Map(recorded.identities.map((value, index) => [value, index]));
  const pattern = recorded.identities.length === 0 ? undefined : new RegExp([...recorded.identities].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
  const substitute = (text: string, replacements: readonly string[]) => (pattern === undefined ? text : text.replace(pattern, (found) => replacements[identity.get(found) ?? -1] ?? found));

  const baseline = (await sampleStreams(target.monitorUrl)).consumerBacklog;
  let failedPublishes = 0;
  let pending: Promise<void>[] = [];
  let chunk: Promise<unknown>[] = [];
  const encoder = new TextEncoder();
  for (let call = 0; call < calls; call += 1) {
    const replacements = recorded.identities.map((value) => freshLike(value, recorded.key, call));
    for (const message of recorded.messages) {
      const subject = substitute(message.subject, replacements);
      const payload = message.text === undefined ? message.bytes : encoder.encode(substitute(message.text, replacements));
      chunk.push(target.messaging.jetstream.publish(subject, payload, { timeout: 60_000 }).catch(() => (failedPublishes += 1)));
      if (chunk.length >= publishChunk) {
        pending.push(Promise.all(chunk).then(() => undefined));
        chunk = [];
        if (pending.length >= chunksInFlight) {
          await pending[0];
          pending = pending.slice(1);
        }
      }
    }
    if ((call + 1) % 50_000 === 0) target.log(`  preload: ${call + 1} calls published (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  await Promise.all([...pending, ...chunk]);
  const published = performance.now();

  // A consumer that folds these streams (a projector) works them off before anything is measured.
  const settleUntil = Date.now() + settleMs;
  let backlog = (await sampleStreams(target.monitorUrl)).consumerBacklog;
  while (backlog > baseline && Date.now() < settleUntil) {
    await sleep(250);
    backlog = (await sampleStreams(target.monitorUrl)).consumerBacklog;
  }
  if (backlog > baseline) target.log(`  preload: consumers still had ${backlog - baseline} messages to work off after ${settleMs} ms`);
  const settled = performance.now();

  let documents = 0;
  for (const [collection, templates] of groupBy(recorded.documents, (d) => d.collection)) {
    let batch: Record<string, unknown>[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      documents += await insertAll(target.store, collection, batch);
      batch = [];
    };
    for (let call = 0; call < calls; call += 1) {
      const replacements = recorded.identities.map((value) => freshLike(value, recorded.key, call));
      for (const template of templates) batch.push(copyDocument(template.document, (text) => substitute(text, replacements), call));
      if (batch.length >= insertBatch) await flush();
    }
    await flush();
  }
  return {
    calls,
    ms: Math.round(performance.now() - started),
    messagesPerCall: recorded.messages.length,
    messages: recorded.messages.length * calls - failedPublishes,
    failedPublishes,
    documentsPerCall: recorded.documents.length,
    documents,
    settleMs: Math.round(settled - published),
  };
}

/** One real call's messages and documents, and the values in them that identify it. */
async function recordCall(target: PreloadTarget): Promise<{ key: string; messages: RecordedMessage[]; documents: RecordedDocument[]; identities: string[] }> {
  const before = await quietStreams(target.monitorUrl);
  const key = await target.recordedCall();
  const after = await quietStreams(target.monitorUrl);
  const ids = await target.idsOf(key);

  const skipped = (name: string, retention: string) => retention === 'workqueue' || name.startsWith('KV_') || name === streamDefinitions.deadLetters.name;
  const messages: RecordedMessage[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (const [name, state] of after.streams) {
    if (skipped(name, state.retention)) continue;
    for (let seq = (before.streams.get(name)?.lastSeq ?? 0) + 1; seq <= state.lastSeq; seq += 1) {
      const stored = await target.messaging.manager.streams.getMessage(name, { seq }).catch(() => null);
      if (stored === null) continue;
      let text: string | undefined;
      try {
        text = decoder.decode(stored.data);
      } catch {
        text = undefined;
      }
      messages.push({ subject: stored.subject, text, bytes: stored.data });
    }
  }

  const documents: RecordedDocument[] = [];
  const marks = [key, ...ids];
  for (const { name } of await target.store.db.listCollections({}, { nameOnly: true }).toArray()) {
    if (name.startsWith('system.')) continue;
    for (const document of await target.store.db.collection(name).find({}).limit(10_000).toArray()) {
      const text = JSON.stringify(document);
      if (marks.some((mark) => text.includes(mark))) documents.push({ collection: name, document });
    }
  }

  const identities = new Set<string>([key, ...ids]);
  const constant = new Set([target.scope.tenant, target.scope.workspace]);
  for (const message of messages) {
    for (const token of message.subject.split('.')) if (longTokenPattern.test(token) && !constant.has(token)) identities.add(token);
    for (const found of `${message.subject} ${message.text ?? ''}`.match(uuidPattern) ?? []) identities.add(found);
  }
  for (const { document } of documents) for (const found of JSON.stringify(document).match(uuidPattern) ?? []) identities.add(found);
  // The key (and tokens containing it) first: a token that is the key with a prefix is replaced whole.
  return { key, messages, documents, identities: [...identities] };
}

/** A sample taken once the streams stopped growing (the call's pipelined events have landed). */
async function quietStreams(monitorUrl: string): Promise<StreamsSample> {
  let last = await sampleStreams(monitorUrl);
  for (let round = 0; round < 50; round += 1) {
    await sleep(200);
    const next = await sampleStreams(monitorUrl);
    if ([...next.streams].every(([name, state]) => last.streams.get(name)?.lastSeq === state.lastSeq) && next.streams.size === last.streams.size) return next;
    last = next;
  }
  return last;
}

/** A value shaped like `value` for copy `call`: a UUID for a UUID, a distinct key for the key, else random of its alphabet. */
function freshLike(value: string, key: string, call: number): string {
  if (value === key) return `preload-${call}-${randomBytes(4).toString('hex')}`;
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) return randomUUID();
  if (/^[0-9a-f]+$/.test(value)) return randomBytes(Math.ceil(value.length / 2)).toString('hex').slice(0, value.length);
  return randomBytes(value.length).toString('base64url').slice(0, value.length);
}

/** `document` with every string (and key) passed through `substitute`; an _id the substitution left alone is suffixed. */
function copyDocument(document: Record<string, unknown>, substitute: (text: string) => string, call: number): Record<string, unknown> {
  const copy = deepCopy(document, substitute) as Record<string, unknown>;
  const id = document['_id'];
  if (typeof id !== 'string') delete copy['_id'];
  else if (copy['_id'] === id) copy['_id'] = `${id}~preload${call}`;
  return copy;
}

function deepCopy(value: unknown, substitute: (text: string) => string): unknown {
  if (typeof value === 'string') return substitute(value);
  if (Array.isArray(value)) return value.map((item) => deepCopy(item, substitute));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [substitute(name), deepCopy(item, substitute)]));
  }
  return value;
}

/** Inserts what is not there yet (unordered: a duplicate key skips one document, not the rest); how many went in. */
async function insertAll(store: Store, collection: string, documents: Record<string, unknown>[]): Promise<number> {
  try {
    return (await store.db.collection(collection).insertMany(documents, { ordered: false })).insertedCount;
  } catch (error) {
    const inserted = (error as { insertedCount?: number; result?: { insertedCount?: number } }).insertedCount ?? (error as { result?: { insertedCount?: number } }).result?.insertedCount;
    if (inserted === undefined) throw error;
    return inserted;
  }
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
