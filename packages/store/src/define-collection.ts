import { ToolplaneError } from '@toolplane/contracts';
import type { Document } from 'mongodb';

/** An index key: field paths in order, each ascending (1) or descending (-1). */
export type IndexKey = Readonly<Record<string, 1 | -1>>;

/**
 * One index of a collection, named so that ensureIndexes can find it again. Unique indexes should cover
 * fields every document has: MongoDB treats a missing field as null (so two documents without it collide),
 * FerretDB 1.x does not index it at all.
 */
export interface IndexDefinition {
  readonly name: string;
  readonly key: IndexKey;
  readonly unique?: boolean;
  /** Leave documents without the field out of the index (on FerretDB 1.x, unique indexes already do). */
  readonly sparse?: boolean;
  /**
   * Index only matching documents. FerretDB 1.x has no partial indexes: there a non-unique partial index is
   * created over all documents (same answers, bigger index) and a unique one is refused; prefer `sparse`.
   */
  readonly partialFilterExpression?: Readonly<Record<string, unknown>>;
  /**
   * Let the server delete documents this long after the date in the (single) key field. FerretDB 1.x has
   * no TTL indexes: there the index is created without expiry, reported as degraded, and the owner must sweep.
   */
  readonly expireAfterSeconds?: number;
}

/** A collection and the indexes it needs, declared once next to its document type. */
export interface CollectionDefinition<TDoc extends Document = Document> {
  readonly name: string;
  readonly indexes: readonly IndexDefinition[];
  /** Type only, never set: carries the document type to `store.collection(definition)`. */
  readonly documentType?: TDoc;
}

/** Declares a collection with its indexes; throws INVALID_ARGUMENT at module load if the declaration is wrong. */
export function defineCollection<TDoc extends Document>(definition: { readonly name: string; readonly indexes?: readonly IndexDefinition[] }): CollectionDefinition<TDoc> {
  const { name } = definition;
  const indexes = definition.indexes ?? [];
  const invalid = (why: string) => new ToolplaneError('INVALID_ARGUMENT', `collection ${JSON.stringify(name)}: ${why}`);
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name) || name.length > 120) throw invalid('a collection name is letters, digits, "_" and "-" (at most 120), starting with a letter or "_"');
  const seen = new Set<string>();
  for (const index of indexes) {
    const where = `index ${JSON.stringify(index.name)}`;
    if (index.name === '' || index.name === '_id_' || index.name.includes('$')) throw invalid(`${where}: choose a name other than "", "_id_" or one with "$"`);
    if (seen.has(index.name)) throw invalid(`${where} is declared twice`);
    seen.add(index.name);
    const fields = Object.entries(index.key);
    if (fields.length === 0) throw invalid(`${where} has no key fields`);
    for (const [field, direction] of fields) {
      if (field === '' || field.startsWith('$') || field.split('.').some((part) => part === '')) throw invalid(`${where}: "${field}" is not a field path`);
      if (direction !== 1 && direction !== -1) throw invalid(`${where}: direction of "${field}" must be 1 or -1`);
    }
    if (index.expireAfterSeconds !== undefined) {
      if (!Number.isInteger(index.expireAfterSeconds) || index.expireAfterSeconds < 0) throw invalid(`${where}: expireAfterSeconds must be a whole number >= 0`);
      if (fields.length !== 1) throw invalid(`${where}: a TTL index has exactly one key field`);
    }
    if (index.partialFilterExpression !== undefined && index.sparse) throw invalid(`${where}: use sparse or partialFilterExpression, not both`);
  }
  return { name, indexes };
}
