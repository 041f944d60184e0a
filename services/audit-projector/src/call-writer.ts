// Writes folded call deltas into `runtime_tool_calls`. A new call is one insert (its _id is unique, so of two
// writers exactly one creates it); an existing one is moved on by compare-and-set (batched, with the store
// kit's claims on FerretDB) to the join of its stored state and the delta, retried on conflict with the state
// the winner left. Because the join is idempotent, a delta that is already in the stored state writes nothing.
import { RuntimeToolCall, canonicalJson, type RuntimeToolCallDocument } from '@toolplane/contracts';
import { compareAndSetMany, findByIds, insertManyIfAbsent, type Store, type Transition } from '@toolplane/store';
import { compact, mergeCallStates, projectCall, type CallFoldState } from './call-fold.js';
import { runtimeToolCallsCollection } from './collections.js';

/** What a batch adds to one call. */
export interface CallDelta {
  /** The document id: `{tenant}/{workspace}/{toolCallId}`. */
  readonly key: string;
  readonly scope: { readonly tenant: string; readonly workspace: string; readonly toolCallId: string };
  readonly delta: CallFoldState;
}

interface Known {
  readonly version: number;
  readonly attempts: CallFoldState;
}

// Optional fields of a call document: a field the new projection no longer has is unset.
const optionalFields = Object.entries(RuntimeToolCall.shape)
  .filter(([, schema]) => schema.safeParse(undefined).success)
  .map(([field]) => field) as (keyof RuntimeToolCall)[];

const maxRounds = 50;

/** The stored document of a call in a fold state. */
export function callDocument(key: string, scope: CallDelta['scope'], attempts: CallFoldState, version: number): RuntimeToolCallDocument {
  return { _id: key, ...projectCall(scope, attempts), version };
}

/** Writes call deltas; remembers the versions it wrote, so the next batch for a call usually needs no extra read. */
export class CallWriter {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly store: Store,
    private readonly cacheSize = 20_000,
  ) {}

  /** Merges every delta into its call's document in the given generation. */
  async write(generation: number, deltas: readonly CallDelta[], signal?: AbortSignal): Promise<void> {
    const collection = this.store.collection(runtimeToolCallsCollection(generation));
    const cacheKey = (key: string) => `${generation}|${key}`;
    let toInsert = deltas.filter((delta) => !this.known.has(cacheKey(delta.key)));
    let toUpdate = deltas.filter((delta) => this.known.has(cacheKey(delta.key)));
    for (let round = 0; toInsert.length + toUpdate.length > 0; round += 1) {
      if (round >= maxRounds) throw new Error(`runtime_tool_calls: ${toInsert.length + toUpdate.length} calls still conflict after ${maxRounds} rounds`);
      if (toInsert.length > 0) {
        const { inserted } = await insertManyIfAbsent(
          collection,
          toInsert.map((delta) => callDocument(delta.key, delta.scope, delta.delta, 1)),
          signal ? { signal } : {},
        );
        const existing: CallDelta[] = [];
        toInsert.forEach((delta, i) => {
          if (inserted[i]) this.remember(cacheKey(delta.key), { version: 1, attempts: delta.delta });
          else existing.push(delta);
        });
        // Another writer created these first: read them and merge into what they hold.
        const read = await findByIds(collection, existing.map((delta) => delta.key), signal ? { signal } : {});
        existing.forEach((delta, i) => {
          const document = read[i];
          if (document) this.remember(cacheKey(delta.key), { version: document.version, attempts: document.attempts });
        });
        toUpdate = [...toUpdate, ...existing.filter((_, i) => read[i])];
        toInsert = existing.filter((_, i) => !read[i]);
      }
      if (toUpdate.length === 0) continue;
      const transitions: Transition<RuntimeToolCallDocument>[] = [];
      const targets: { delta: CallDelta; merged: CallFoldState }[] = [];
      for (const delta of toUpdate) {
        const known = this.known.get(cacheKey(delta.key)) as Known;
        const merged = mergeCallStates(known.attempts, delta.delta);
        // Already folded in (a redelivery, or another replica got there first): nothing to write.
        if (canonicalJson(merged) === canonicalJson(known.attempts)) continue;
        const { _id, version: _version, ...fields } = callDocument(delta.key, delta.scope, merged, known.version + 1);
        transitions.push({ id: _id, expect: { version: known.version }, set: fields, unset: optionalFields.filter((field) => fields[field] === undefined) as Transition<RuntimeToolCallDocument>['unset'] });
        targets.push({ delta, merged });
      }
      const results = transitions.length === 0 ? [] : await compareAndSetMany(collection, transitions, signal ? { signal } : {});
      const retry: CallDelta[] = [];
      results.forEach((result, i) => {
        const { delta, merged } = targets[i] as { delta: CallDelta; merged: CallFoldState };
        if (result.ok) {
          this.remember(cacheKey(delta.key), { version: result.document.version, attempts: merged });
        } else if (result.current === null) {
          this.known.delete(cacheKey(delta.key));
          toInsert.push(delta);
        } else {
          // Someone moved the call on: merge into what they left.
          this.remember(cacheKey(delta.key), { version: result.current.version, attempts: result.current.attempts });
          retry.push(delta);
        }
      });
      toUpdate = retry;
    }
  }

  private remember(key: string, known: Known): void {
    this.known.delete(key);
    this.known.set(key, compact(known));
    if (this.known.size > this.cacheSize) {
      const oldest = this.known.keys().next();
      if (!oldest.done) this.known.delete(oldest.value);
    }
  }
}
