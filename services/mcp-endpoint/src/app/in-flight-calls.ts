import type { Caller } from './authenticate.js';

/**
 * The tools/call requests this replica is answering, so a `notifications/cancelled` (which arrives as a request of
 * its own) aborts the right one. Keyed by who calls and in which session: a client can only cancel its own requests.
 */
export class InFlightCalls {
  readonly #calls = new Map<string, AbortController>();

  /** Tracks a request until the returned function is called; its signal aborts when the request is cancelled. */
  track(caller: Caller, session: string | undefined, requestId: string | number): { signal: AbortSignal; done: () => void } {
    const key = keyOf(caller, session, requestId);
    const controller = new AbortController();
    this.#calls.set(key, controller);
    return {
      signal: controller.signal,
      done: () => {
        if (this.#calls.get(key) === controller) this.#calls.delete(key);
      },
    };
  }

  /** Aborts the caller's request with this id, if this replica is answering it; true when it was. */
  cancel(caller: Caller, session: string | undefined, requestId: string | number, reason: string | undefined): boolean {
    const controller = this.#calls.get(keyOf(caller, session, requestId));
    controller?.abort(new Error(reason ?? 'the client cancelled the request'));
    return controller !== undefined;
  }

  get size(): number {
    return this.#calls.size;
  }
}

function keyOf(caller: Caller, session: string | undefined, requestId: string | number): string {
  return JSON.stringify([caller.scope.tenant, caller.scope.workspace, caller.claims.agentId, caller.claims.principal, session ?? null, requestId]);
}
