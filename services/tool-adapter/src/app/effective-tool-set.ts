import { EffectiveToolSet, EffectiveToolSetRequest, adapterOperations, commandFilter, scopeOfSubject } from '@toolplane/contracts';
import { serve, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { effectiveTools } from '../core/effective-tools.js';
import type { InvocationRuntime } from './invocation-runtime.js';
import { serverBundlesOf } from './server-bundle.js';

/**
 * Answers which tools a model may see: the descriptors of the scope (from the read model) through the same agent,
 * tenant and server-bundle rules the evaluator applies at call time, then the run policy, task scope and risk
 * restrictions.
 * The agent comes from the verified context token, the scope from the subject.
 */
export async function serveEffectiveToolSet(runtime: InvocationRuntime, signal?: AbortSignal): Promise<ServeHandle> {
  return serve(runtime.messaging, {
    subject: commandFilter('adapter', { operation: adapterOperations.effectiveTools }),
    queue: 'tool-adapter',
    requestSchema: EffectiveToolSetRequest,
    replySchema: EffectiveToolSet,
    ...(signal ? { signal } : {}),
    onDiagnostic: (diagnostic: ServeDiagnostic) => {
      if (diagnostic.type === 'handler_failed' || diagnostic.type === 'invalid_request' || diagnostic.type === 'invalid_reply') {
        runtime.logger.info({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message }, 'effective tool set refused');
      } else runtime.logger.warn({ type: diagnostic.type, subject: diagnostic.subject, err: diagnostic.error }, 'effective tool set responder problem');
    },
    handler: async (request, context) => {
      const scope = scopeOfSubject(context.subject);
      const claims = await runtime.verifier.verify(request.contextToken, { ...scope, kind: 'agent' });
      const caller = { principal: claims.principal, agentId: claims.agentId, agentRevision: claims.agentRevision, roles: claims.roles ?? [] };
      const now = runtime.clock();
      const descriptors = runtime.descriptors.list(scope);
      const [agentProfile, tenantPolicy, serverBundles] = await Promise.all([
        runtime.policies.agentProfile(scope.tenant, scope.workspace, caller.agentId, context.signal),
        runtime.policies.tenantPolicy(scope.tenant, now, context.signal),
        // Only the servers of tools that can be offered: an inactive or unhealthy tool is hidden whatever its bundle
        // says, and a retired server's lookup would otherwise hold the whole set up.
        serverBundlesOf(
          runtime,
          scope,
          descriptors.filter((descriptor) => descriptor.active && descriptor.healthy),
          context.signal,
        ),
      ]);
      return effectiveTools({
        scope,
        descriptors,
        serverBundles,
        caller,
        agentProfile,
        tenantPolicy,
        runPolicy: request.runPolicy,
        taskScope: request.taskScope,
        restrictions: request.restrictions,
        explain: request.explain,
        schemaStatus: (descriptor) => runtime.validators.schemaStatus(descriptor),
      });
    },
  });
}
