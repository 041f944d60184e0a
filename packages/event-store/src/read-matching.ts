import type { z } from 'zod';
import { readSubject, type Messaging } from '@toolplane/messaging';
import { storedAppendSchema } from './jetstream-event-store.js';

/** One append read from an event store's stream: the sequence it was stored at and the events of its decision. */
export interface StoredAppend<Event> {
  readonly seq: number;
  readonly events: readonly Event[];
}

/** What to read: a subject filter (wildcards allowed) of a JetStream event store's stream. */
export interface ReadAppendsMatchingOptions<S extends z.ZodType> {
  /** The stream holding the aggregates (it must allow direct gets). */
  readonly stream: string;
  /** A subject filter over the aggregates' subjects, e.g. every aggregate of one kind in one scope. */
  readonly filter: string;
  /** The contract every event satisfies. */
  readonly schema: S;
  readonly signal?: AbortSignal;
}

/**
 * Every append stored under a subject filter of a JetStream event store's stream, in stream order: for listings over
 * the aggregates of one kind (a workspace's flows, its definitions) without a read model. The messages carry no
 * subject, so the events must name their aggregate themselves; an aggregate's version is the sequence of its last
 * append, as `readStream` reads it. Reads the whole selection: for kinds whose aggregates are few and short.
 */
export async function readAppendsMatching<S extends z.ZodType>(m: Messaging, options: ReadAppendsMatchingOptions<S>): Promise<readonly StoredAppend<z.output<S>>[]> {
  const log = await readSubject(m, {
    stream: options.stream,
    subject: options.filter,
    schema: storedAppendSchema(options.schema),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return log.entries.map((entry) => ({ seq: entry.seq, events: entry.value.events }));
}
