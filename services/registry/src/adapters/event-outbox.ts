import { LifecycleEvent, eventMsgId, subjectOfEvent, type RegistryEvent } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import { compareAndSet, type StoreCollection, type VersionedDocument } from '@toolplane/store';
import type { Outbox } from '../collections.js';

/** A stored aggregate that carries its unpublished events. */
export type OutboxDocument = VersionedDocument & Outbox & { _id: string };

/** What publishing an outbox needs; `onError` hears about a publish that failed (the events stay for the sweeper). */
export interface OutboxDeps {
  readonly messaging: Messaging;
  readonly onError?: (error: unknown, document: { readonly _id: string }) => void;
}

/** Serialises lifecycle events for the outbox. */
export function toOutbox(events: readonly RegistryEvent[]): string[] {
  return events.map((event) => JSON.stringify(event));
}

/**
 * Publishes a document's outbox in order (each event under its deterministic Nats-Msg-Id, so a republish within
 * the stream's duplicate window is dropped), then clears it with a compare-and-set. Returns the document as it is
 * after: cleared, or unchanged when publishing failed (the events wait for the next flush), or as another writer
 * left it (that writer carried these events into its own outbox and publishes them itself).
 */
export async function flushOutbox<T extends OutboxDocument>(deps: OutboxDeps, collection: StoreCollection<T>, document: T, signal?: AbortSignal): Promise<T> {
  if (document.outbox.length === 0) return document;
  try {
    for (const text of document.outbox) {
      const event = LifecycleEvent.parse(JSON.parse(text));
      await publish(deps.messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), ...(signal ? { signal } : {}) });
    }
  } catch (error) {
    deps.onError?.(error, document);
    return document;
  }
  // The outbox field is ours: clearing it must not be confused with a change by another writer.
  const cleared = await compareAndSet(collection, { id: document._id, expect: { version: document.version }, set: { outbox: [] } as unknown as Partial<T> }, signal ? { signal } : {});
  return (cleared.ok ? cleared.document : (cleared.current ?? document)) as T;
}
