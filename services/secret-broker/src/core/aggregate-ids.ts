import type { Scope } from '@toolplane/contracts';
import { refIsId } from './connection-rules.js';
import { deterministicUuid } from './deterministic-id.js';

// The ids of the broker's aggregates, derived from what names them, so that every replica finds an aggregate's
// subject without asking a database: a connection's id from its scope and name (names are unique in a workspace for
// good, revoked connections keep theirs), a lease's from its invocation and connection (one lease per pair).

/** The id of the connection a name gives in a scope (the id it was created with). */
export function connectionIdOfName(scope: Scope, name: string): string {
  return deterministicUuid(`connection/${scope.tenant}/${scope.workspace}/${name}`);
}

/** The id of the connection a ref (its id or its name) names in a scope. */
export function connectionIdOf(scope: Scope, ref: string): string {
  return refIsId(ref) ? ref.toLowerCase() : connectionIdOfName(scope, ref);
}

/** The id of the one lease an invocation may hold on a connection. */
export function leaseIdOf(scope: Scope, invocationId: string, connectionId: string): string {
  return deterministicUuid(`lease/${scope.tenant}/${scope.workspace}/${invocationId}/${connectionId}`);
}
