import { ToolplaneError } from '@toolplane/contracts';
import { BSON, type Document, type Filter } from 'mongodb';
import { assertStorable } from './assert-storable.js';

/** A stored aggregate guarded by compare-and-set: `version` goes up by one with every transition. */
export interface VersionedDocument extends Document {
  _id: unknown;
  version: number;
}

/** The `state` values of a document type (never, if it has no `state`). */
export type StateOf<TDoc> = TDoc extends { state: infer S } ? S : never;

type NumericField<TDoc> = Exclude<{ [K in keyof TDoc]-?: NonNullable<TDoc[K]> extends number ? K : never }[keyof TDoc], 'version'> & string;
type OptionalField<TDoc> = Exclude<{ [K in keyof TDoc]-?: undefined extends TDoc[K] ? K : never }[keyof TDoc], '_id' | 'version'> & string;

/** One guarded transition: move document `id` on from `expect`, applying `set`, `inc` and `unset`. */
export interface Transition<TDoc extends VersionedDocument> {
  readonly id: TDoc['_id'];
  readonly expect: {
    readonly version: number;
    /** The state (or any of the states) the document must be in. */
    readonly state?: StateOf<TDoc> | readonly StateOf<TDoc>[];
  };
  /** Further conditions the document must meet, e.g. its tenant and workspace (no `_id`, `version` or `state`). */
  readonly where?: Filter<TDoc>;
  /** Top-level fields to replace; `$`-prefixed or dotted keys are refused anywhere inside. */
  readonly set?: Readonly<Partial<Omit<TDoc, '_id' | 'version'>>>;
  readonly inc?: Readonly<Partial<Record<NumericField<TDoc>, number>>>;
  readonly unset?: readonly OptionalField<TDoc>[];
}

const reserved = new Set(['_id', 'version']);

/** The filter that matches the document only while it still meets the transition's expectation. */
export function casFilter<TDoc extends VersionedDocument>(transition: Transition<TDoc>): Filter<TDoc> {
  const where: Document = { ...(transition.where ?? {}) };
  for (const key of ['_id', 'version', 'state']) {
    if (Object.hasOwn(where, key)) throw invalid(`"where" must not name ${key}: use id and expect`);
  }
  const { version, state } = transition.expect;
  if (!Number.isSafeInteger(version) || version < 0) throw invalid('expect.version must be a whole number >= 0');
  const filter: Document = { ...where, _id: transition.id, version };
  if (state !== undefined) filter['state'] = Array.isArray(state) ? { $in: [...(state as readonly unknown[])] } : state;
  return filter as Filter<TDoc>;
}

/** The filter that finds the document as it is now (inside `where`, so nothing outside that scope leaks). */
export function currentFilter<TDoc extends VersionedDocument>(transition: Transition<TDoc>): Filter<TDoc> {
  return { ...(transition.where ?? {}), _id: transition.id } as Filter<TDoc>;
}

/** Whether a document read now still meets the transition's expectation (a hint; the guarded write decides). */
export function meetsExpectation<TDoc extends VersionedDocument>(document: Document, transition: Transition<TDoc>): boolean {
  const { version, state } = transition.expect;
  if (document['version'] !== version) return false;
  if (state === undefined) return true;
  const states: readonly unknown[] = Array.isArray(state) ? state : [state];
  return states.includes(document['state']);
}

/**
 * Whether `where` holds only plain values, so that it can be checked on a document read by `_id` alone
 * ({@link matchesWhere}) instead of in the server's filter.
 */
export function isPlainWhere(where: Document | undefined): boolean {
  return where === undefined || Object.values(where).every((value) => !isOperatorValue(value));
}

/** Whether a document has every field of a plain `where` (equality by BSON value; absent equals null). */
export function matchesWhere(document: Document, where: Document | undefined): boolean {
  if (where === undefined) return true;
  return Object.entries(where).every(([field, value]) => sameValue(document[field], value));
}

/** Whether a filter value is an operator expression (`{ $in: … }`) rather than a plain value. */
export function isOperatorValue(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  if (value instanceof Date || value instanceof BSON.ObjectId) return false;
  return Object.keys(value).some((key) => key.startsWith('$'));
}

function sameValue(a: unknown, b: unknown): boolean {
  return BSON.EJSON.stringify({ v: a ?? null }, { relaxed: false }) === BSON.EJSON.stringify({ v: b ?? null }, { relaxed: false });
}

/** The update of a transition: its changes plus `version` incremented by one, in the same atomic write. */
export function casUpdate<TDoc extends VersionedDocument>(transition: Transition<TDoc>): Document {
  const set: Document = { ...(transition.set ?? {}) };
  const inc: Document = { ...(transition.inc ?? {}) };
  const unset = [...(transition.unset ?? [])] as string[];
  assertStorable(set, 'set');
  for (const [field, amount] of Object.entries(inc)) {
    checkField(field, 'inc');
    if (typeof amount !== 'number' || !Number.isFinite(amount)) throw invalid(`inc.${field} must be a finite number`);
  }
  for (const field of Object.keys(set)) checkField(field, 'set');
  for (const field of unset) checkField(field, 'unset');
  const touched = new Map<string, string>();
  for (const [operator, fields] of [['set', Object.keys(set)], ['inc', Object.keys(inc)], ['unset', unset]] as const) {
    for (const field of fields) {
      const earlier = touched.get(field);
      if (earlier) throw invalid(`"${field}" appears in both ${earlier} and ${operator}`);
      touched.set(field, operator);
    }
  }
  const update: Document = { $inc: { ...inc, version: 1 } };
  if (Object.keys(set).length > 0) update['$set'] = set;
  if (unset.length > 0) update['$unset'] = Object.fromEntries(unset.map((field) => [field, '']));
  return update;
}

function checkField(field: string, operator: string): void {
  if (reserved.has(field)) throw invalid(`${operator} must not change ${field}: compareAndSet owns it`);
  if (field === '' || field.startsWith('$') || field.includes('.')) throw invalid(`${operator}: "${field}" is not a top-level field name`);
}

function invalid(message: string): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', `compareAndSet: ${message}`);
}
