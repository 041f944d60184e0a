import { canonicalJson } from '@toolplane/contracts';

/** What to write to turn a stored document into its next state: top-level fields to set and to remove. */
export interface DocumentChanges<T> {
  readonly set: Partial<T>;
  readonly unset: (keyof T & string)[];
}

const untouched = new Set(['_id', 'version']);

/**
 * The top-level differences between two states of a document (ignoring `_id` and `version`, which the store owns),
 * so a decided change can be written as one compare-and-set.
 */
export function documentChanges<T extends object>(before: T, after: T): DocumentChanges<T> {
  const set: Partial<T> = {};
  const unset: (keyof T & string)[] = [];
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const key of keys) {
    if (untouched.has(key)) continue;
    const field = key as keyof T & string;
    const next = after[field];
    if (next === undefined) {
      if (before[field] !== undefined) unset.push(field);
      continue;
    }
    if (before[field] === undefined || canonicalJson(before[field]) !== canonicalJson(next)) set[field] = next;
  }
  return { set, unset };
}
