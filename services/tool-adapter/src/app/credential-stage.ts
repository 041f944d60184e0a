import { ToolplaneError, toWireError, type LeasedCredential, type McpServer, type ToolFailure } from '@toolplane/contracts';
import type { McpTarget } from '@toolplane/mcp';
import { planConnections, secretValuesOf, targetOf } from '../core/credential-injection.js';
import type { PipelineState, StageOutcome } from '../core/invocation-pipeline.js';
import type { InvocationRuntime } from './invocation-runtime.js';

// The CREDENTIAL_BROKER stage: which connections the call needs (the tool's secretDependencies and its server's
// connection-backed settings), their leases from the secret broker, and the MCP target with the credentials in
// place. The plaintext stays in memory for this run only (the target and the values the sanitizer scrubs); the
// document records the lease ids.

/** What the stage hands on: its outcome, and in memory only the target and the secret values. */
export interface BrokeredCall {
  readonly outcome: Extract<StageOutcome, { step: 'CREDENTIAL_BROKER' }>;
  /** The server's target with the leased credentials injected; undefined when EXECUTE must look the server up. */
  readonly target?: McpTarget | undefined;
  /** Every leased secret value, for the sanitizer. */
  readonly secrets: readonly string[];
}

/** A stop (shutdown) while leasing is not the call's fault: the message goes back for another replica to resume it. */
function stopIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new ToolplaneError('CANCELLED', 'stopped while leasing the call’s credentials');
}

const denied = (failure: ToolFailure): BrokeredCall => ({ outcome: { step: 'CREDENTIAL_BROKER', result: 'denied', failure }, secrets: [] });

/** Leases the credentials of the call `state` is at, and builds its target. */
export async function brokerCredentials(runtime: InvocationRuntime, state: PipelineState, scope: { tenant: string; workspace: string }, signal: AbortSignal): Promise<BrokeredCall> {
  const { invocation, descriptor } = state;
  const dependencies = descriptor?.secretDependencies ?? [];
  let server: McpServer | undefined;
  if (descriptor?.kind === 'Mcp' && descriptor.mcpServerId !== undefined) {
    try {
      server = await runtime.servers(scope, descriptor.mcpServerId, signal);
    } catch (error) {
      stopIfAborted(signal);
      const wire = toWireError(error);
      const failure = { code: wire.code, message: `the tool's server cannot be reached: ${wire.message}`.slice(0, 4096), retryable: wire.retryable };
      // Without credentials to lease, the execution stage looks the server up again and reports it there.
      if (dependencies.length > 0) return denied(failure);
      return { outcome: { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] }, secrets: [] };
    }
  }
  const plan = planConnections(dependencies, server);
  if (!plan.ok) return denied(plan.failure);
  if (plan.connectionRefs.length === 0) {
    return { outcome: { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [] }, ...(server === undefined ? {} : { target: targetOf(server, new Map()) }), secrets: [] };
  }
  if (runtime.leaser === undefined) {
    return denied({ code: 'INTERNAL', message: 'this tool adapter has no sealing key (TOOL_ADAPTER_SECRET_KEY), so it cannot lease the credentials the tool needs', retryable: false });
  }
  const leased = await runtime.leaser.lease(
    scope,
    { invocationId: invocation.invocationId, toolId: invocation.toolId, connectionRefs: plan.connectionRefs, deadline: new Date(invocation.deadline), correlationId: invocation.correlationId },
    signal,
  );
  if (!leased.ok) {
    stopIfAborted(signal);
    return denied(leased.failure);
  }
  const credentials = new Map<string, LeasedCredential>(leased.leases.map((lease) => [lease.connectionRef, lease.credential]));
  return {
    outcome: { step: 'CREDENTIAL_BROKER', result: 'leased', secretLeaseIds: [...new Set(leased.leases.map((lease) => lease.leaseId))] },
    ...(server === undefined ? {} : { target: targetOf(server, credentials) }),
    secrets: secretValuesOf(credentials.values()),
  };
}
