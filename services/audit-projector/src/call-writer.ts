// Writes folded call deltas into `runtime_tool_calls`, as the single writer of those documents: one replica at a
// time consumes the events (the projector's consumer is pinned to one client), so no two writers race for a call,
// and nothing here needs a conditional update (FerretDB 1.x has none that is atomic). A new call is one insert;
// for an existing one (a call held longer than the hold, or a new attempt after it settled) the stored document is
// read by `_id`, joined with the delta, and replaced by `_id`. The join is idempotent, so a redelivered delta, or
// one already in the stored state, writes nothing.
//
// The residual risk: a replica that stalled past the pin timeout (a long GC pause, a hung socket) may still finish
// a batch after the server pinned another one. If both write the same call at that moment, the later replace wins
// and the other's events are missing from that document (never from the stream; a rebuild restores them). Reading
// right before every update keeps the window to one read-and-replace, and a replica that has been told it lost the
// pin writes nothing more (see projection-consumer.ts).
import { canonicalJson, type RuntimeToolCallDocument } from '@toolplane/contracts';
import { findByIds, insertManyIfAbsent, replaceManyById, type Store } from '@toolplane/store';
import { mergeCallStates, projectCall, type CallFoldState } from './call-fold.js';
import { runtimeToolCallsCollection } from './collections.js';

/** What a batch adds to one call. */
export interface CallDelta {
  /** The document id: `{tenant}/{workspace}/{toolCallId}`. */
  readonly key: string;
  readonly scope: { readonly tenant: string; readonly workspace: string; readonly toolCallId: string };
  readonly delta: CallFoldState;
}

/** The stored document of a call in a fold state; `version` counts the writes of the document. */
export function callDocument(key: string, scope: CallDelta['scope'], attempts: CallFoldState, version: number): RuntimeToolCallDocument {
  return { _id: key, ...projectCall(scope, attempts), version };
}

/** Writes call deltas; remembers which calls it stored, so that the next batch for one goes straight to the update. */
export class CallWriter {
  private readonly stored = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly cacheSize = 20_000,
  ) {}

  /** Forgets what it remembered (when this replica's pin changed, another one may have written meanwhile). */
  forget(): void {
    this.stored.clear();
  }

  /** Merges every delta into its call's document in the given generation. */
  async write(generation: number, deltas: readonly CallDelta[], signal?: AbortSignal): Promise<void> {
    const collection = this.store.collection(runtimeToolCallsCollection(generation));
    const cacheKey = (key: string) => `${generation}|${key}`;
    const options = signal ? { signal } : {};
    const fresh = deltas.filter((delta) => !this.stored.has(cacheKey(delta.key)));
    const existing = deltas.filter((delta) => this.stored.has(cacheKey(delta.key)));
    if (fresh.length > 0) {
      const { inserted } = await insertManyIfAbsent(collection, fresh.map((delta) => callDocument(delta.key, delta.scope, delta.delta, 1)), options);
      fresh.forEach((delta, i) => {
        if (inserted[i]) this.remember(cacheKey(delta.key));
        // Stored by an earlier batch (this replica's before a restart, or another's before the pin moved).
        else existing.push(delta);
      });
    }
    if (existing.length === 0) return;
    // Read right before the write, never from memory: a cached state may predate another replica's writes.
    const current = await findByIds(collection, existing.map((delta) => delta.key), options);
    const replacements: RuntimeToolCallDocument[] = [];
    existing.forEach((delta, i) => {
      const document = current[i];
      const merged = document ? mergeCallStates(document.attempts, delta.delta) : delta.delta;
      // Already folded in (a redelivery): nothing to write.
      if (document && canonicalJson(merged) === canonicalJson(document.attempts)) return;
      replacements.push(callDocument(delta.key, delta.scope, merged, (document?.version ?? 0) + 1));
    });
    // By `_id` alone, upserting: a document deleted meanwhile is stored again rather than lost.
    if (replacements.length > 0) await replaceManyById(collection, replacements, options);
    for (const delta of existing) this.remember(cacheKey(delta.key));
  }

  private remember(key: string): void {
    this.stored.delete(key);
    this.stored.add(key);
    if (this.stored.size > this.cacheSize) {
      const oldest = this.stored.values().next();
      if (!oldest.done) this.stored.delete(oldest.value);
    }
  }
}
