import type { z } from 'zod';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { StoredMsg } from '@nats-io/jetstream';
import { hasErrorCode, raceAbort, ToolplaneError } from '@toolplane/contracts';
import { decode, encode } from './codec.js';
import { apiErrorCodes } from './declare.js';
import { expectedLastSubjectSequenceHeader, msgIdHeader } from './headers.js';
import type { Messaging } from './messaging.js';
import { isApiError, toToolplaneError } from './nats-errors.js';
import type { PublishAck } from './publish.js';

// A subject of a stream used as an append-only log with optimistic concurrency: the write path of an aggregate.
// An append names the sequence of the subject's last message it decided against ("expected last subject sequence",
// 0 for a subject that must still be empty); JetStream stores it only if that still holds, so of two writers who
// decided against the same state exactly one wins, and the other reads again and decides again.

// Messages read back per direct-get batch.
const readBatch = 256;

/** Why an append was refused: another writer appended to the subject first. Retryable: read again, decide again. */
export const subjectMovedOn = 'SUBJECT_MOVED_ON';

/** An append to one subject, guarded by the sequence of the last message its writer saw there. */
export interface AppendOptions<S extends z.ZodType> {
  readonly subject: string;
  readonly schema: S;
  readonly message: z.input<S>;
  /** The sequence of the subject's last message the writer decided against; 0 when it must still be empty. */
  readonly expectedLastSequence: number;
  /** Deduplication id: derive it from what is appended, so a retried append of the same bytes is dropped. */
  readonly msgId: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Appends a message to a subject if its last message is still `expectedLastSequence`. Another writer having appended
 * first is CONFLICT, retryable, with `details.reason` = `SUBJECT_MOVED_ON`. So is a retry of an append that was stored:
 * nats-server checks the expected sequence before the msgId's duplicate window; the writer reads again and finds its
 * own message there.
 */
export async function appendToSubject<S extends z.ZodType>(m: Messaging, options: AppendOptions<S>): Promise<PublishAck> {
  const what = `appending to ${options.subject}`;
  const payload = encode(options.schema, options.message, `the message for ${options.subject}`);
  const headers = natsHeaders();
  if (options.msgId !== '') headers.set(msgIdHeader, options.msgId);
  headers.set(expectedLastSubjectSequenceHeader, String(options.expectedLastSequence));
  try {
    return await m.publisher.publish({ subject: options.subject, payload, headers, timeoutMs: options.timeoutMs, signal: options.signal, what });
  } catch (error) {
    if (isApiError(error, apiErrorCodes.wrongLastSequence)) {
      throw new ToolplaneError('CONFLICT', `${what}: another writer appended first`, { retryable: true, details: { reason: subjectMovedOn }, cause: error });
    }
    throw toToolplaneError(error, what);
  }
}

/** Whether an error is an append refused because the subject moved on (see `appendToSubject`). */
export function isSubjectMovedOn(error: unknown): boolean {
  return hasErrorCode(error) && error.code === 'CONFLICT' && (error as { details?: Record<string, unknown> }).details?.['reason'] === subjectMovedOn;
}

/** A message read back from a subject, with its stream sequence. */
export interface SubjectEntry<T> {
  readonly seq: number;
  readonly value: T;
}

/** A subject's messages after a sequence, and the sequence of its last one (0 when it has none). */
export interface SubjectLog<T> {
  readonly entries: readonly SubjectEntry<T>[];
  readonly lastSequence: number;
}

/** What to read: a subject of a stream that allows direct gets, from after `afterSequence` (default: all). */
export interface ReadSubjectOptions<S extends z.ZodType> {
  readonly stream: string;
  readonly subject: string;
  readonly schema: S;
  readonly afterSequence?: number;
  readonly signal?: AbortSignal;
}

/**
 * Reads a subject's messages in order with batched direct gets (one round trip for a short log), validating each
 * against the schema: a stored message that breaks its contract is INTERNAL (the log is the owner's own record).
 */
export async function readSubject<S extends z.ZodType>(m: Messaging, options: ReadSubjectOptions<S>): Promise<SubjectLog<z.output<S>>> {
  const what = `reading ${options.subject} from ${options.stream}`;
  const entries: SubjectEntry<z.output<S>>[] = [];
  let from = (options.afterSequence ?? 0) + 1;
  try {
    for (;;) {
      const batch = await raceAbort(directBatch(m, options.stream, options.subject, from), options.signal, what);
      for (const stored of batch) {
        const decoded = decode(options.schema, stored.data, `message ${stored.seq} of ${options.subject}`);
        if (!decoded.ok) throw new ToolplaneError('INTERNAL', decoded.reason.message);
        entries.push({ seq: stored.seq, value: decoded.value });
      }
      const last = batch.at(-1);
      if (last === undefined || batch.length < readBatch) break;
      from = last.seq + 1;
    }
  } catch (error) {
    throw toToolplaneError(error, what);
  }
  return { entries, lastSequence: entries.at(-1)?.seq ?? options.afterSequence ?? 0 };
}

/** The sequence of a subject's last message, 0 when it has none (one direct get). */
export async function lastSubjectSequence(m: Messaging, stream: string, subject: string, signal?: AbortSignal): Promise<number> {
  const what = `reading the last message of ${subject} from ${stream}`;
  try {
    const stored = await raceAbort(m.manager.direct.getMessage(stream, { last_by_subj: subject }), signal, what);
    return stored?.seq ?? 0;
  } catch (error) {
    if (isApiError(error, apiErrorCodes.noMessageFound)) return 0;
    throw toToolplaneError(error, what);
  }
}


async function directBatch(m: Messaging, stream: string, subject: string, from: number): Promise<StoredMsg[]> {
  const iterator = await m.manager.direct.getBatch(stream, { seq: from, next_by_subj: subject, batch: readBatch });
  const batch: StoredMsg[] = [];
  try {
    for await (const stored of iterator) batch.push(stored);
  } catch (error) {
    // The batch of a subject with nothing at or after `from` ends with "no message found".
    if (!isApiError(error, apiErrorCodes.noMessageFound) && !isNoMessages(error)) throw error;
  }
  return batch;
}

function isNoMessages(error: unknown): boolean {
  return error instanceof Error && /no message|not found|404/i.test(error.message);
}
