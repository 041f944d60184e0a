import { ToolplaneError, sha256Hex, canonicalJson, type ApprovalRequested, type Scope, type ToolInvocation } from '@toolplane/contracts';
import { compareAndSet, insertIfAbsent, toStoreError, type StoreCollection } from '@toolplane/store';
import type { StoredInvocation } from '../collections.js';

// The ToolInvocation documents: created once under the unique (tenant, workspace, idempotencyKey) index, and from
// then on changed only by compare-and-set on their version, so two replicas can never both move one call on.

/** The document id of the call holding `idempotencyKey` in `scope` (stable across attempts). */
export function invocationDocumentId(scope: Scope, idempotencyKey: string): string {
  return sha256Hex(canonicalJson({ tenant: scope.tenant, workspace: scope.workspace, idempotencyKey }));
}

/** The contract document of a stored one (without `_id` and the processing lease). */
export function invocationOf(stored: StoredInvocation): ToolInvocation {
  const { _id: _ignored, leaseUntil: _lease, outbox: _outbox, ...invocation } = stored;
  return invocation;
}

/** Whether the handler that last wrote the document may still be working on it. */
export function leaseAlive(stored: StoredInvocation, now: Date): boolean {
  return stored.leaseUntil !== undefined && Date.parse(stored.leaseUntil) > now.getTime();
}

/**
 * A transition lost its compare-and-set: another handler (a replica resuming the call after this one's lease ran
 * out, a duplicate delivery) moved the invocation on first. Not a failure of the request: the handler decides
 * again against the document as it now is, and a delivery that still cannot settle is redelivered (retryable), never
 * dead-lettered, so its requester still gets the call's one outcome.
 */
export class InvocationChangedError extends ToolplaneError {
  constructor(message: string) {
    super('CONFLICT', message, { retryable: true });
  }
}

/** A live handler's hold on the processing lease of an executing call (see `InvocationStore.holdWhileExecuting`). */
export interface LeaseHold {
  /** Stops renewing; once no renewal is in flight, the call as last stored (its version guards the next write). */
  release(): Promise<ToolInvocation>;
}

/** Reads, creates and moves on ToolInvocation documents. */
export class InvocationStore {
  readonly #collection: StoreCollection<StoredInvocation>;
  readonly #leaseMs: number;

  constructor(collection: StoreCollection<StoredInvocation>, leaseMs: number) {
    this.#collection = collection;
    this.#leaseMs = leaseMs;
  }

  /** The call holding the key, if any. */
  async find(scope: Scope, idempotencyKey: string, signal?: AbortSignal): Promise<StoredInvocation | undefined> {
    const found = await this.#read('finding an invocation by idempotency key', signal, () => this.#collection.raw.findOne({ _id: invocationDocumentId(scope, idempotencyKey) }, signal ? { signal } : {}));
    return found ?? undefined;
  }

  /** The call with this invocation id in `scope`, if any. */
  async findByInvocationId(scope: Scope, invocationId: string, signal?: AbortSignal): Promise<StoredInvocation | undefined> {
    const found = await this.#read('finding an invocation by id', signal, () => this.#collection.raw.findOne({ tenant: scope.tenant, workspace: scope.workspace, invocationId }, signal ? { signal } : {}));
    return found ?? undefined;
  }

  /** The call with this ToolCallId in `scope` (one document per logical call, across its attempts), if any. */
  async findByToolCallId(scope: Scope, toolCallId: string, signal?: AbortSignal): Promise<StoredInvocation | undefined> {
    const found = await this.#read('finding an invocation by ToolCallId', signal, () => this.#collection.raw.findOne({ tenant: scope.tenant, workspace: scope.workspace, toolCallId }, signal ? { signal } : {}));
    return found ?? undefined;
  }

  /** The calls parked on an approval. */
  async findByApproval(scope: Scope, approvalId: string, signal?: AbortSignal): Promise<StoredInvocation[]> {
    return this.#read('finding the invocations of an approval', signal, () => this.#collection.raw.find({ tenant: scope.tenant, workspace: scope.workspace, approvalId }, signal ? { signal } : {}).toArray());
  }

  /** A read of the collection, its driver failures translated (a database away is TEMPORARY_UNAVAILABLE: retried). */
  async #read<T>(what: string, signal: AbortSignal | undefined, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      throw toStoreError(error, `${what} in tool_invocations`, signal);
    }
  }

  /** Inserts a Received invocation, unless the key is taken: then the holder. */
  async insert(invocation: ToolInvocation, now: Date, signal?: AbortSignal): Promise<{ created: true; invocation: ToolInvocation } | { created: false; existing: StoredInvocation }> {
    const scope = { tenant: invocation.tenant, workspace: invocation.workspace };
    const document: StoredInvocation = { ...invocation, _id: invocationDocumentId(scope, invocation.idempotencyKey), leaseUntil: this.#leaseFrom(now) };
    const result = await insertIfAbsent(this.#collection, document, { key: { tenant: scope.tenant, workspace: scope.workspace, idempotencyKey: invocation.idempotencyKey }, ...(signal ? { signal } : {}) });
    return result.created ? { created: true, invocation } : { created: false, existing: result.existing };
  }

  /**
   * Moves the stored document from `previous` (its version and state) to `next`, renewing the processing lease
   * (`release` clears it). Returns `next` with the new version; CONFLICT when another writer got there first.
   */
  async advance(
    previous: ToolInvocation,
    next: ToolInvocation,
    now: Date,
    options: { readonly release?: boolean; readonly outbox?: readonly ApprovalRequested[]; readonly signal?: AbortSignal } = {},
  ): Promise<ToolInvocation> {
    const scope = { tenant: previous.tenant, workspace: previous.workspace };
    const { version: _version, ...fields } = next;
    const present = new Set(Object.keys(fields));
    const unset = Object.keys(previous).filter((key) => key !== 'version' && !present.has(key));
    if (options.release === true) unset.push('leaseUntil');
    const result = await compareAndSet(
      this.#collection,
      {
        id: invocationDocumentId(scope, previous.idempotencyKey),
        expect: { version: previous.version, state: previous.state },
        set: { ...fields, ...(options.release === true ? {} : { leaseUntil: this.#leaseFrom(now) }), ...(options.outbox === undefined ? {} : { outbox: [...options.outbox] }) },
        ...(unset.length === 0 ? {} : { unset: unset as never }),
      },
      options.signal ? { signal: options.signal } : {},
    );
    if (!result.ok) throw new InvocationChangedError(`invocation ${previous.invocationId} was changed by another handler (now ${result.current?.state ?? 'gone'})`);
    return { ...next, version: result.document.version };
  }

  /**
   * Keeps the processing lease of an executing call alive while its provider call runs, renewing it every third of
   * the lease by compare-and-set like every other write (a plain update would bypass the claims on FerretDB, where a
   * renewal read before the terminal write and written after it would undo it). A live handler is never taken over,
   * and a dead one's lease lapses within one lease. Renewals move the version on: `release()` waits for the one in
   * flight and hands back the call as last stored, whose version guards the handler's next write. A renewal that
   * loses its compare-and-set (the call was taken over) stops the renewing; the handler's next write then loses too.
   */
  holdWhileExecuting(invocation: ToolInvocation, clock: () => Date): LeaseHold {
    const id = invocationDocumentId({ tenant: invocation.tenant, workspace: invocation.workspace }, invocation.idempotencyKey);
    let current = invocation;
    let renewing: Promise<void> | undefined;
    let stopped = false;
    const renew = async () => {
      try {
        const result = await compareAndSet(
          this.#collection,
          { id, expect: { version: current.version, state: 'Executing' }, set: { leaseUntil: this.#leaseFrom(clock()) } },
          { timeoutMs: this.#leaseMs },
        );
        if (result.ok) current = { ...current, version: result.document.version };
        else stop();
      } catch {
        // The store briefly away only lets the lease lapse early: a takeover then starts a READ again or ends a
        // write Uncertain, and this handler's terminal write loses its compare-and-set.
      }
    };
    const timer = setInterval(() => {
      if (stopped || renewing !== undefined) return;
      renewing = renew().finally(() => (renewing = undefined));
    }, Math.max(100, Math.floor(this.#leaseMs / 3)));
    timer.unref();
    const stop = () => {
      stopped = true;
      clearInterval(timer);
    };
    return {
      release: async () => {
        stop();
        await renewing;
        return current;
      },
    };
  }

  #leaseFrom(now: Date): string {
    return new Date(now.getTime() + this.#leaseMs).toISOString();
  }
}
