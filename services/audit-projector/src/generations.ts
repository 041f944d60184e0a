// The pointer to the live generation of the rebuildable projections. It is an aggregate of the audit projector's
// own, so it lives in JetStream, not beside the read models it points to: one key per database in a KV bucket,
// moved only by compare-and-set on the key's revision (of two replicas starting a rebuild at once, one wins). It
// is read before and after every live batch and by every query.
import { ProjectionGenerations, ToolplaneError, hasErrorCode } from '@toolplane/contracts';
import { openKv, type KvBucketSpec, type Messaging, type TypedKv } from '@toolplane/messaging';

/** The pointer's `_id`, as the contract names it. */
export const POINTER_ID = 'audit-projector';

/** The pointer as it is before any rebuild. */
export const initialGenerations: ProjectionGenerations = { _id: POINTER_ID, live: 1, version: 1 };

/** The bucket of the pointers: a few earlier values are kept for operators to look back on. */
export const generationsBucket: KvBucketSpec = {
  name: 'AUDIT_PROJECTION_GENERATIONS',
  description: 'Which generation of the rebuildable audit projections is live, per database (audit projector).',
  history: 10,
};

/** What a change of the pointer sets (its `_id` and `version` are the pointer's own). */
export type GenerationsChange = Partial<Omit<ProjectionGenerations, '_id' | 'version'>>;

/** The pointer of the projections in one database. */
export interface Generations {
  /** The pointer (the initial one when none was written yet). */
  read(signal?: AbortSignal): Promise<ProjectionGenerations>;
  /** The generation queries read and live writers write. */
  live(signal?: AbortSignal): Promise<number>;
  /**
   * Moves the pointer on from what `change` is given: re-reads and retries when another writer moved it first,
   * so `change` must decide from the pointer it receives; undefined leaves it as it is.
   */
  update(change: (current: ProjectionGenerations) => GenerationsChange | undefined, signal?: AbortSignal): Promise<ProjectionGenerations>;
}

const maxAttempts = 20;

/**
 * The key of a database's pointer. KV keys take letters, digits, `-`, `_`, `=`, `.` and `/`; a database name may hold
 * more, so every other character (and `=` itself) is written as `=` and its UTF-8 bytes in hex: one name, one key.
 */
export function generationsKey(dbName: string): string {
  let key = '';
  for (const char of dbName) {
    key += /^[A-Za-z0-9_-]$/.test(char) ? char : `=${Buffer.from(char, 'utf8').toString('hex')}`;
  }
  return key;
}

/** Opens (creating if need be) the bucket and returns the pointer of `dbName`'s projections. */
export async function openGenerations(m: Messaging, dbName: string, signal?: AbortSignal): Promise<Generations> {
  const kv = await openKv(m, generationsBucket, ProjectionGenerations, signal ? { signal } : {});
  return generationsOf(kv, generationsKey(dbName));
}

/** The pointer kept under `key` of a bucket. */
export function generationsOf(kv: TypedKv<ProjectionGenerations>, key: string): Generations {
  const options = (signal?: AbortSignal) => (signal ? { signal } : {});
  const read = async (signal?: AbortSignal) => (await kv.get(key, options(signal)))?.value ?? initialGenerations;
  return {
    read,
    live: async (signal) => (await read(signal)).live,
    async update(change, signal) {
      for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
        const stored = await kv.get(key, options(signal));
        const current = stored?.value ?? initialGenerations;
        const next = change(current);
        if (next === undefined) return current;
        const moved: ProjectionGenerations = { ...current, ...next, _id: POINTER_ID, version: current.version + 1 };
        try {
          if (stored === undefined) await kv.create(key, moved, options(signal));
          else await kv.update(key, moved, stored.revision, options(signal));
          return moved;
        } catch (error) {
          // Another replica moved the pointer since it was read: decide again from what it left.
          if (!hasErrorCode(error) || error.code !== 'CONFLICT') throw error;
        }
      }
      throw new ToolplaneError('CONFLICT', 'the projection pointer keeps changing under this writer');
    },
  };
}
