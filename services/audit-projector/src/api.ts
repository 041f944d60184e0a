// The audit service's request/reply operations. Tenant and workspace come from the request's subject (which
// NATS permissions pin to the caller's credentials), never from its body.
import type { z } from 'zod';
import { auditCommandSchemas, auditOperations, commandFilter, scopeOfSubject, type ProjectionGenerations, type ProjectionStatusReply, type Scope } from '@toolplane/contracts';
import { serve, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import type { Store } from '@toolplane/store';
import { compact } from './call-fold.js';
import { flowJournal, getCall, listCalls, verifyChain } from './queries.js';
import type { RebuildManager } from './rebuild.js';

type Operation = keyof typeof auditCommandSchemas;
type Handler<O extends Operation> = (scope: Scope, request: z.output<(typeof auditCommandSchemas)[O]['request']>, signal: AbortSignal) => Promise<z.input<(typeof auditCommandSchemas)[O]['reply']>>;

/** The pointer as the status operations show it (without the holder's name). */
export function statusOf(pointer: ProjectionGenerations): ProjectionStatusReply {
  const { holder: _holder, ...rebuild } = pointer.rebuild ?? { holder: '' };
  return compact({ live: pointer.live, previous: pointer.previous, rebuild: pointer.rebuild ? (rebuild as ProjectionStatusReply['rebuild']) : undefined });
}

/** Serves every audit operation in one queue group shared by the replicas; resolves once all are subscribed. */
export async function serveAuditApi(
  messaging: Messaging,
  deps: { readonly store: Store; readonly rebuilds: RebuildManager; readonly onDiagnostic?: (diagnostic: ServeDiagnostic) => void },
): Promise<ServeHandle[]> {
  const { store, rebuilds } = deps;
  const handlers: { [O in Operation]: Handler<O> } = {
    getCall: (scope, request, signal) => getCall(store, scope, request.toolCallId, signal),
    listCalls: (scope, request, signal) => listCalls(store, scope, request, signal),
    flowJournal: (scope, request, signal) => flowJournal(store, scope, request, signal),
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
      handler: (request, context) => handler(scopeOfSubject(context.subject), request as z.output<(typeof auditCommandSchemas)[O]['request']>, context.signal),
      ...(deps.onDiagnostic ? { onDiagnostic: deps.onDiagnostic } : {}),
    });
  };
  return Promise.all((Object.keys(handlers) as Operation[]).map((operation) => serveOne(operation)));
}
