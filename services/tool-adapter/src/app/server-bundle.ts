import { toWireError, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import type { ServerPolicyBundle } from '../core/policy-evaluator.js';
import type { InvocationRuntime } from './invocation-runtime.js';

/**
 * The policy bundle the tool's server names (its governancePolicyRef, fixed at registration), from the server
 * directory the credential stage and execution use too, so a call asks the registry at most once per directory TTL.
 * A tool without a server (a Flow) has none; a server that cannot be asked is `unavailable`, which the evaluator
 * denies: a call is never governed, and a tool never offered, without the bundle its server names.
 */
export async function serverBundleOf(runtime: Pick<InvocationRuntime, 'servers' | 'policies'>, scope: Scope, descriptor: ToolDescriptor, signal: AbortSignal): Promise<ServerPolicyBundle> {
  if (descriptor.kind !== 'Mcp' || descriptor.mcpServerId === undefined) return { kind: 'none' };
  let name: string;
  try {
    name = (await runtime.servers(scope, descriptor.mcpServerId, signal)).governancePolicyRef;
  } catch (error) {
    if (signal.aborted) throw error;
    return { kind: 'unavailable', problem: toWireError(error).message.slice(0, 400) };
  }
  return runtime.policies.policyBundle(scope.tenant, name, signal);
}

/** The bundles of the servers of `descriptors`, by server id: each server asked once. */
export async function serverBundlesOf(runtime: Pick<InvocationRuntime, 'servers' | 'policies'>, scope: Scope, descriptors: readonly ToolDescriptor[], signal: AbortSignal): Promise<Map<string, ServerPolicyBundle>> {
  const byServer = new Map<string, ToolDescriptor>();
  for (const descriptor of descriptors) if (descriptor.kind === 'Mcp' && descriptor.mcpServerId !== undefined && !byServer.has(descriptor.mcpServerId)) byServer.set(descriptor.mcpServerId, descriptor);
  const bundles = await Promise.all([...byServer].map(async ([serverId, descriptor]) => [serverId, await serverBundleOf(runtime, scope, descriptor, signal)] as const));
  return new Map(bundles);
}
