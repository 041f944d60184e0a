import { ToolplaneError, type RegistryEvent } from '@toolplane/contracts';
import { compareAndSet, insertIfAbsent, type Filter, type StoreCollection } from '@toolplane/store';
import { documentChanges } from '../core/document-diff.js';
import { flushOutbox, toOutbox, type OutboxDeps, type OutboxDocument } from './event-outbox.js';

// Writes one aggregate's decided change as a single compare-and-set on its version, with the change's lifecycle
// events in the same write (the outbox), then publishes them. A writer that loses the race re-reads and decides
// again against what the winner left, so concurrent commands and replicas never both apply a change, and the
// event ids (derived from the aggregate and the version the change produced) are the same whoever publishes them.

/** How one kind of aggregate is read, decided, folded and turned into events. */
export interface AggregateKind<S, E, D extends OutboxDocument> {
  readonly collection: StoreCollection<D>;
  /** The aggregate's state as the core sees it (bookkeeping stripped). */
  readonly toState: (document: D) => S;
  readonly fold: (state: S, events: readonly E[]) => S;
  readonly lifecycleEvents: (events: readonly E[], next: S, versionAfter: number) => RegistryEvent[];
  /** Bookkeeping fields that follow from the next state (e.g. a name claim), written with the change. */
  readonly bookkeeping?: (next: S, document: D) => Partial<D>;
}

/** The outcome of a change: the state after it, and what was decided (nothing when the command changed nothing). */
export interface Changed<S, E> {
  readonly state: S;
  readonly events: readonly E[];
  readonly document: OutboxDocument;
}

const maxAttempts = 20;

/**
 * Loads the aggregate matching `key`, decides, and writes the change; retries on a lost race. NOT_FOUND when no
 * document matches; whatever `decide` throws is passed on, with nothing written.
 */
export async function changeAggregate<S extends object, E, D extends OutboxDocument>(
  deps: OutboxDeps,
  kind: AggregateKind<S, E, D>,
  key: Filter<D>,
  decide: (state: S) => E[],
  options: { readonly signal?: AbortSignal; readonly notFound?: string } = {},
): Promise<Changed<S, E>> {
  const { signal } = options;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const document = (await kind.collection.raw.findOne(key, { signal })) as D | null;
    if (document === null) throw new ToolplaneError('NOT_FOUND', options.notFound ?? 'not found');
    const state = kind.toState(document);
    const events = decide(state);
    if (events.length === 0) {
      const flushed = await flushOutbox(deps, kind.collection, document, signal);
      return { state: kind.toState(flushed), events, document: flushed };
    }
    const next = kind.fold(state, events);
    const versionAfter = document.version + 1;
    const { set, unset } = documentChanges(state, next);
    const written = await compareAndSet(
      kind.collection,
      {
        id: document._id,
        expect: { version: document.version },
        set: { ...set, ...kind.bookkeeping?.(next, document), outbox: [...document.outbox, ...toOutbox(kind.lifecycleEvents(events, next, versionAfter))] } as Partial<D>,
        unset: unset as never[],
      },
      signal ? { signal } : {},
    );
    if (!written.ok) continue;
    const flushed = await flushOutbox(deps, kind.collection, written.document as D, signal);
    return { state: kind.toState(flushed), events, document: flushed };
  }
  throw new ToolplaneError('CONFLICT', 'the document kept changing under this command; try again', { retryable: true });
}

/**
 * Creates an aggregate whose first events are decided already (registration, a new descriptor version): inserted
 * with its outbox unless a document with the same key exists, then published. `created` false hands back the
 * existing document untouched.
 */
export async function createAggregate<S, D extends OutboxDocument>(
  deps: OutboxDeps,
  kind: Pick<AggregateKind<S, unknown, D>, 'collection' | 'toState'>,
  document: D,
  events: readonly RegistryEvent[],
  key: Filter<D>,
  signal?: AbortSignal,
): Promise<{ readonly created: boolean; readonly state: S; readonly document: D }> {
  const result = await insertIfAbsent(kind.collection, { ...document, outbox: toOutbox(events) } as never, { key, ...(signal ? { signal } : {}) });
  const stored = (result.created ? result.document : result.existing) as D;
  const flushed = await flushOutbox(deps, kind.collection, stored, signal);
  return { created: result.created, state: kind.toState(flushed), document: flushed };
}
