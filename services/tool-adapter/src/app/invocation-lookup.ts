import {
  LookupInvocationReply,
  LookupInvocationRequest,
  ToolplaneError,
  adapterOperations,
  commandFilter,
  isTerminalInvocationState,
  scopeOfSubject,
} from '@toolplane/contracts';
import { serve, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { decideIdempotency } from '../core/invocation-attempts.js';
import { invocationResultOf } from '../core/invocation-pipeline.js';
import type { InvocationRuntime } from './invocation-runtime.js';

/**
 * Answers `adapter.lookupInvocation`: where the caller's invocation under an idempotency key is, and once it ended
 * the same result and receipt its reply carried. This is how a runtime whose reply was lost recovers the outcome
 * without invoking again. Only the principal and agent that made the call get an answer; anyone else (another agent
 * of the workspace included) gets NOT_FOUND, exactly as for a key nobody used, so keys reveal nothing. A lookup
 * that names the request it means gets the CONFLICT invoking would get when the key holds another request (the same
 * comparison, decideIdempotency's), so a caller recovering a lost reply never takes another request's result.
 */
export async function serveInvocationLookup(runtime: InvocationRuntime, signal?: AbortSignal): Promise<ServeHandle> {
  return serve(runtime.messaging, {
    subject: commandFilter('adapter', { operation: adapterOperations.lookupInvocation }),
    queue: 'tool-adapter',
    requestSchema: LookupInvocationRequest,
    replySchema: LookupInvocationReply,
    ...(signal ? { signal } : {}),
    onDiagnostic: (diagnostic: ServeDiagnostic) => {
      if (diagnostic.type === 'handler_failed' || diagnostic.type === 'invalid_request' || diagnostic.type === 'invalid_reply') {
        runtime.logger.info({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message }, 'invocation lookup refused');
      } else runtime.logger.warn({ type: diagnostic.type, subject: diagnostic.subject, err: diagnostic.error }, 'invocation lookup responder problem');
    },
    handler: async (request, context) => {
      const scope = scopeOfSubject(context.subject);
      const claims = await runtime.verifier.verify(request.contextToken, { ...scope, kind: 'agent' });
      // The call's own record (authoritative and current), not a read model.
      const invocation = (await runtime.calls.read(scope, request.idempotencyKey, context.signal)).state.invocation;
      if (invocation === undefined || invocation.principal !== claims.principal || invocation.agentId !== claims.agentId) {
        throw new ToolplaneError('NOT_FOUND', 'no invocation of this agent holds that idempotency key');
      }
      if (request.request !== undefined) {
        const { toolId, toolVersion, arguments: args, completion } = request.request;
        const incoming = { scope, toolId, requestedToolVersion: toolVersion, arguments: args, completion };
        // Whether its handler is alive changes what invoking would do next, never whether the request conflicts.
        const decision = decideIdempotency(invocation, incoming, true);
        if (decision.kind === 'conflict') throw new ToolplaneError(decision.failure.code, decision.failure.message, { retryable: decision.failure.retryable });
      }
      const ended = isTerminalInvocationState(invocation.state) && invocation.receipt !== undefined;
      return {
        toolCallId: invocation.toolCallId,
        invocationId: invocation.invocationId,
        attempt: invocation.attempt,
        state: invocation.state,
        ...(invocation.approvalId === undefined ? {} : { approvalId: invocation.approvalId }),
        ...(ended ? { result: invocationResultOf(invocation) } : {}),
      };
    },
  });
}
