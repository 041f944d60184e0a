import { hasErrorCode, ToolplaneError } from '@toolplane/contracts';

/**
 * Where an aggregate's events are kept: one stream (a JetStream subject) per aggregate id, read in order and appended
 * to with optimistic concurrency. A version is the position of the stream's last stored append (0: no events yet); it
 * only grows, and an append names the version its writer decided against.
 */
export interface EventStore<Event> {
  /** The aggregate's events in order and its current version (0 and no events when it has none). */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<StoredStream<Event>>;
  /**
   * Appends events (at least one, stored together or not at all) if the stream is still at `expectedVersion`;
   * otherwise fails with a version conflict (`isVersionConflict`), and nothing is stored. An append whose outcome is
   * unknown (its acknowledgement lost) may be retried: it is stored at most once, and a retry after the first copy was
   * stored is a version conflict whose writer reads again and finds its own events.
   */
  appendToStream(streamId: string, events: readonly Event[], options: AppendToStreamOptions): Promise<AppendResult>;
}

/** Options of a read. */
export interface ReadStreamOptions {
  /** Read only what was appended after this version (a reader that has folded up to it). */
  readonly afterVersion?: number;
  readonly signal?: AbortSignal;
}

/** Options of an append. */
export interface AppendToStreamOptions {
  /** The version the events were decided against: 0 for a stream that must not exist yet. */
  readonly expectedVersion: number;
  readonly signal?: AbortSignal;
}

/** A stream as read. */
export interface StoredStream<Event> {
  readonly events: readonly Event[];
  readonly version: number;
}

/** Where an append left the stream. */
export interface AppendResult {
  /** The stream's version after the append: the expected version of the next one. */
  readonly nextExpectedVersion: number;
}

const versionConflictReason = 'STREAM_VERSION_CONFLICT';

/** The failure of an append whose expected version no longer holds: CONFLICT, retryable by deciding again. */
export function versionConflict(streamId: string, expectedVersion: number, cause?: unknown): ToolplaneError {
  return new ToolplaneError('CONFLICT', `stream ${streamId} moved on from version ${expectedVersion}: another writer appended first`, {
    retryable: true,
    details: { reason: versionConflictReason, streamId, expectedVersion },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Whether an error is a version conflict of an append (recognised by code and reason, wherever it was raised). */
export function isVersionConflict(error: unknown): boolean {
  return hasErrorCode(error) && error.code === 'CONFLICT' && (error as { details?: Record<string, unknown> }).details?.['reason'] === versionConflictReason;
}
