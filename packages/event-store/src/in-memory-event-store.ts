import { throwIfAborted, ToolplaneError } from '@toolplane/contracts';
import { versionConflict, type AppendResult, type EventStore, type StoredStream } from './event-store.js';

/**
 * An EventStore in memory with the JetStream store's semantics: versions are positions in one global sequence (as a
 * stream's sequence is shared by its subjects), an append is all or nothing, a stale expected version is a conflict.
 * For unit tests of command handlers; events are copied in and out, so a test cannot change what was stored.
 */
export function inMemoryEventStore<Event>(): EventStore<Event> & { readonly streams: () => ReadonlyMap<string, StoredStream<Event>> } {
  const logs = new Map<string, { version: number; entries: { version: number; event: Event }[] }>();
  let sequence = 0;
  return {
    readStream(streamId, options = {}) {
      throwIfAborted(options.signal, `reading ${streamId}`);
      const log = logs.get(streamId);
      const after = options.afterVersion ?? 0;
      const events = (log?.entries ?? []).filter((entry) => entry.version > after).map((entry) => structuredClone(entry.event));
      return Promise.resolve({ events, version: log?.version ?? 0 });
    },
    appendToStream(streamId, events, options): Promise<AppendResult> {
      throwIfAborted(options.signal, `appending to ${streamId}`);
      if (events.length === 0) return Promise.reject(new ToolplaneError('INVALID_ARGUMENT', `an append to ${streamId} needs at least one event`));
      const log = logs.get(streamId) ?? { version: 0, entries: [] };
      if (log.version !== options.expectedVersion) return Promise.reject(versionConflict(streamId, options.expectedVersion));
      sequence += 1;
      const version = sequence;
      logs.set(streamId, { version, entries: [...log.entries, ...events.map((event) => ({ version, event: structuredClone(event) }))] });
      return Promise.resolve({ nextExpectedVersion: version });
    },
    streams: () => new Map([...logs].map(([id, log]) => [id, { events: log.entries.map((entry) => entry.event), version: log.version }])),
  };
}
