// The audit service's request/reply operations. Tenant and workspace come from the request's subject (which
// NATS permissions pin to the caller's credentials), never from its body. Every operation needs an operator token
// of that scope (`Authorization: Bearer …`, never logged); a rebuild also needs PLATFORM_ADMIN_ROLE.
import type { z } from 'zod';
import {
  PLATFORM_ADMIN_ROLE,
  auditCommandSchemas,
  auditOperations,
  commandFilter,
  scopeOfSubject,
  type ProjectionGenerations,
  type ProjectionStatusReply,
  type Scope,
} from '@toolplane/contracts';
import { verifyOperator, type TokenVerifier } from '@toolplane/auth';
import { serve, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import type { Store } from '@toolplane/store';
import { compact } from './call-fold.js';
import type { Generations } from './generations.js';
import { flowJournal, getCall, listCalls, verifyChain } from './queries.js';
import type { RebuildManager } from './rebuild.js';

type Operation = keyof typeof auditCommandSchemas;
type Handler<O extends Operation> = (scope: Scope, request: z.output<(typeof auditCommandSchemas)[O]['request']>, signal: AbortSignal) => Promise<z.input<(typeof auditCommandSchemas)[O]['reply']>>;

/** The pointer as the status operations show it (without the holder's name). */
export function statusOf(pointer: ProjectionGenerations): ProjectionStatusReply {
  const { holder: _holder, ...rebuild } = pointer.rebuild ?? { holder: '' };
  return compact({ live: pointer.live, previous: pointer.previous, rebuild: pointer.rebuild ? (rebuild as ProjectionStatusReply['rebuild']) : undefined });
}

/** The role each operation needs beyond an operator token of the scope. */
const requiredRole: Partial<Record<Operation, string>> = { rebuildProjections: PLATFORM_ADMIN_ROLE };

/** Serves every audit operation in one queue group shared by the replicas; resolves once all are subscribed. */
export async function serveAuditApi(
  messaging: Messaging,
  deps: { readonly store: Store; readonly generations: Generations; readonly rebuilds: RebuildManager; readonly verifier: TokenVerifier; readonly onDiagnostic?: (diagnostic: ServeDiagnostic) => void },
): Promise<ServeHandle[]> {
  const { store, generations, rebuilds, verifier } = deps;
  const handlers: { [O in Operation]: Handler<O> } = {
    getCall: (scope, request, signal) => getCall(store, generations, scope, request.toolCallId, signal),
    listCalls: (scope, request, signal) => listCalls(store, generations, scope, request, signal),
    flowJournal: (scope, request, signal) => flowJournal(store, generations, scope, request, signal),
    verifyChain: (scope, _request, signal) => verifyChain(store, scope.tenant, signal),
    rebuildProjections: async (_scope, _request, signal) => statusOf(await rebuilds.start(signal)),
    projectionStatus: async (_scope, _request, signal) => statusOf(await rebuilds.status(signal)),
  };
  const serveOne = <O extends Operation>(operation: O) => {
    const schemas = auditCommandSchemas[operation];
    const handler = handlers[operation] as Handler<O>;
    return serve(messaging, {
      subject: commandFilter('audit', { operation: auditOperations[operation] }),
      queue: 'audit-projector',
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      handler: async (request, context) => {
        const scope = scopeOfSubject(context.subject);
        const role = requiredRole[operation];
        await verifyOperator(verifier, scope, context.headers, role === undefined ? {} : { role });
        return handler(scope, request as z.output<(typeof auditCommandSchemas)[O]['request']>, context.signal);
      },
      ...(deps.onDiagnostic ? { onDiagnostic: deps.onDiagnostic } : {}),
    });
  };
  return Promise.all((Object.keys(handlers) as Operation[]).map((operation) => serveOne(operation)));
}
