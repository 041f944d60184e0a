import { z } from 'zod';
import { canonicalJson, sha256Hex, ToolplaneError } from '@toolplane/contracts';
import { appendToSubject, isSubjectMovedOn, readSubject, type Messaging } from '@toolplane/messaging';
import { isVersionConflict, versionConflict, type EventStore } from './event-store.js';

/** Where a JetStream event store keeps its aggregates: a stream (declared with direct gets allowed) and a subject per id. */
export interface JetStreamEventStoreOptions<S extends z.ZodType> {
  /** The stream holding the subjects (it must allow direct gets: an aggregate is read in one round trip). */
  readonly stream: string;
  /** The subject of an aggregate's stream id (one subject per aggregate, inside the stream's subjects). */
  readonly subjectOf: (streamId: string) => string;
  /** The contract every event satisfies; validated on append and on read. */
  readonly schema: S;
  /** Deadline of one append's acknowledgement; default the connection's. */
  readonly timeoutMs?: number;
  /**
   * Events built by the aggregate's own decider from values already validated are not validated again on append
   * (they still are on read); default false. For a hot path whose events are large.
   */
  readonly trustAppends?: boolean;
  /**
   * The message id of an append, when hashing the canonical JSON of large events costs too much: it must differ
   * between two different decisions at the same version (default: derived from subject, version and events).
   */
  readonly msgIdOf?: (streamId: string, expectedVersion: number, events: readonly z.output<S>[]) => string;
}

/**
 * The message one append stores on an aggregate's subject: the events of one decision, in order. For consumers of an
 * event store's stream (projectors, relays) that read what was appended as it arrives.
 */
export function storedAppendSchema<S extends z.ZodType>(schema: S) {
  return z.object({ events: z.array(schema).min(1) });
}

/**
 * An EventStore on JetStream: each append is one message on the aggregate's subject holding the decided events,
 * stored only if the subject's last sequence is still the expected version (so appending is persisting, and of two
 * writers that decided against the same version one wins). A version is the JetStream sequence of the subject's last
 * message. The message id is derived from the subject, the expected version and the events (JetStream checks the
 * expected sequence first, so a retry after the first copy was stored is a version conflict; the id keeps a copy the
 * client resends across a reconnect from being stored twice).
 */
export function jetStreamEventStore<S extends z.ZodType>(m: Messaging, options: JetStreamEventStoreOptions<S>): EventStore<z.output<S>> {
  const envelope = storedAppendSchema(options.schema);
  const appended = options.trustAppends === true ? storedAppendSchema(z.custom<z.output<S>>()) : envelope;
  return {
    async readStream(streamId, read = {}) {
      const log = await readSubject(m, {
        stream: options.stream,
        subject: options.subjectOf(streamId),
        schema: envelope,
        ...(read.afterVersion === undefined ? {} : { afterSequence: read.afterVersion }),
        ...(read.signal === undefined ? {} : { signal: read.signal }),
      });
      return { events: log.entries.flatMap((entry) => entry.value.events as z.output<S>[]), version: log.lastSequence };
    },
    async appendToStream(streamId, events, append) {
      if (events.length === 0) throw new ToolplaneError('INVALID_ARGUMENT', `an append to ${streamId} needs at least one event`);
      const subject = options.subjectOf(streamId);
      const message = { events: [...events] };
      try {
        const ack = await appendToSubject(m, {
          subject,
          schema: appended,
          message,
          expectedLastSequence: append.expectedVersion,
          msgId: options.msgIdOf?.(streamId, append.expectedVersion, events) ?? sha256Hex(`${subject}\n${append.expectedVersion}\n${canonicalJson(message)}`),
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
          ...(append.signal === undefined ? {} : { signal: append.signal }),
        });
        // A duplicate is an earlier copy of this append, already stored: the stream has moved on from the version.
        if (ack.duplicate) throw versionConflict(streamId, append.expectedVersion);
        return { nextExpectedVersion: ack.seq };
      } catch (error) {
        if (isVersionConflict(error)) throw error;
        if (isSubjectMovedOn(error)) throw versionConflict(streamId, append.expectedVersion, error);
        throw error;
      }
    },
  };
}
