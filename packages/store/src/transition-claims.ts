import { BSON, type Db } from 'mongodb';
import { isDuplicateKeyError, toStoreError } from './store-error.js';

/**
 * Claims make compareAndSet safe on servers whose updates are not atomic with their filter (FerretDB 1.x
 * reads the matching document, then writes it back by `_id`, so two writers with the same expectation can
 * both "win"). Inserting a document against a unique `_id` is atomic everywhere, so a writer first inserts
 * the claim `<collection>/<id>@<version>#<generation>`; only the one that inserted it may move the document
 * on from that version. A claim is deleted when its writer is done. A writer that dies holding one blocks
 * that version until the lease runs out; then the next writer inserts the next generation (never deleting
 * the old claim, whose `_id` is therefore never reused while it matters). The remaining assumption is that
 * a live writer finishes its single update within the lease; the writer checks its lease before writing.
 */
export const transitionClaimsCollection = 'store_transition_claims';

interface ClaimDocument {
  _id: string;
  target: string;
  generation: number;
  expiresAt: Date;
}

/** A claim this process holds on one version of one document. */
export interface TransitionClaim {
  readonly id: string;
  /** Epoch milliseconds after which other writers may take over. */
  readonly expiresAt: number;
}

/** The claim key for moving document `id` of `collection` on from `version`. */
export function claimTarget(collection: string, id: unknown, version: number): string {
  return `${collection}/${BSON.EJSON.stringify(id, { relaxed: false })}@${version}`;
}

/** Creates the index that finds the latest claim of a target. */
export async function ensureClaimIndex(db: Db): Promise<void> {
  try {
    await db.collection<ClaimDocument>(transitionClaimsCollection).createIndex({ target: 1, generation: -1 }, { name: 'target_generation' });
  } catch (error) {
    throw toStoreError(error, `creating the index of ${transitionClaimsCollection}`);
  }
}

/** Takes the claim on `target` unless another writer holds a live one; undefined when it is taken. */
export async function tryClaim(db: Db, target: string, leaseMs: number, now: number, signal?: AbortSignal): Promise<TransitionClaim | undefined> {
  const claims = db.collection<ClaimDocument>(transitionClaimsCollection);
  try {
    const latest = await claims.findOne({ target }, { sort: { generation: -1 }, signal });
    // Clocks are compared across replicas here: leases are seconds long, skew between hosts is expected to be far smaller.
    if (latest && latest.expiresAt.getTime() > now) return undefined;
    const generation = latest ? latest.generation + 1 : 0;
    const claim: ClaimDocument = { _id: `${target}#${generation}`, target, generation, expiresAt: new Date(now + leaseMs) };
    await claims.insertOne(claim);
    return { id: claim._id, expiresAt: claim.expiresAt.getTime() };
  } catch (error) {
    if (isDuplicateKeyError(error)) return undefined;
    throw toStoreError(error, `claiming ${target}`);
  }
}

/** Gives a claim back. Best effort: a claim that could not be deleted only delays other writers until it expires. */
export async function releaseClaim(db: Db, claim: TransitionClaim): Promise<void> {
  try {
    await db.collection<ClaimDocument>(transitionClaimsCollection).deleteOne({ _id: claim.id });
  } catch {
    // The transition's own outcome is already decided; failing it now would misreport it.
  }
}
