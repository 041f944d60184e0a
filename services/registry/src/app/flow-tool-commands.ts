import { flowProviderId, type PublishFlowToolReply, type PublishFlowToolRequest, type RetireFlowToolReply, type RetireFlowToolRequest, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import { ToolplaneError } from '@toolplane/contracts';
import { decideDescriptor } from '../core/descriptor-aggregate.js';
import { flowProviderRegistration, flowToolDescriptor, flowToolIdOf, planFlowPublish, retirableFlowVersions } from '../core/flow-tools.js';
import { changeDescriptor, changeServer, createDescriptor, descriptorVersions } from './aggregates.js';
import type { Actor, RegistryContext } from './registry-context.js';

// FlowRunner's materialization of ToolDefinitions (ADR-0106): a saved, enabled or disabled definition publishes its
// version as the tool `flows.<name>` of the workspace's reserved provider; a deleted one retires it. The provider is
// created by the first publication and kept when definitions go, so a SERVER kill switch on it covers every flow
// tool of the workspace. Both run on the registry's one write path, like a bind.

const maxPublishAttempts = 5;

async function refreshReadModel(context: RegistryContext, descriptor: ToolDescriptor, signal?: AbortSignal): Promise<void> {
  try {
    await context.publishDescriptor(descriptor, signal);
  } catch (error) {
    context.onPublishError?.(error, `read model of descriptor ${descriptor.toolId} version ${descriptor.toolVersion}`);
  }
}

/**
 * Publishes a definition's version as its flow tool, for `actor` (the verified operator). The same version published
 * the same way again is answered as it is (`created` false); a newer version supersedes the active older one.
 */
export async function publishFlowTool(context: RegistryContext, scope: Scope, request: PublishFlowToolRequest, actor: string, signal?: AbortSignal): Promise<PublishFlowToolReply> {
  const who = { actor, at: context.now() } satisfies Actor;
  const candidate = flowToolDescriptor(scope, request, actor, who.at);
  const events = decideDescriptor({ type: 'PublishFlowTool', descriptor: candidate }, undefined);
  for (let attempt = 0; attempt < maxPublishAttempts; attempt++) {
    const plan = planFlowPublish(candidate, await descriptorVersions(context, scope, candidate.toolId, signal));
    if (plan.kind === 'Existing') {
      await refreshReadModel(context, plan.descriptor, signal);
      return { descriptor: plan.descriptor, created: false };
    }
    // The provider first (created when absent, the version recorded among its bindings): a crash after it leaves a
    // provider that names a version never bound, which readers skip, never a tool of a provider that does not list it.
    await changeServer(
      context,
      scope,
      flowProviderId(scope),
      [
        { type: 'EnsureLocalProvider', registration: flowProviderRegistration(scope, actor), at: who.at },
        { type: 'RecordBinding', toolName: candidate.providerToolName, toolId: candidate.toolId, toolVersion: candidate.toolVersion, at: who.at },
      ],
      who,
      signal,
    );
    const created = await createDescriptor(context, candidate, events, who, signal);
    // Another publication bound this version first: plan again against it.
    if (!created.created) continue;
    for (const old of plan.supersede) await changeDescriptor(context, old, { type: 'RetireDescriptor', reason: 'Superseded', at: who.at }, who, signal);
    return { descriptor: created.descriptor, created: true };
  }
  throw new ToolplaneError('CONFLICT', `the versions of ${candidate.toolId} kept changing under this publication; try again`, { retryable: true });
}

/** Retires a deleted definition's flow tool (its active or disabled version, reason Retired); nothing published: no descriptor. */
export async function retireFlowTool(context: RegistryContext, scope: Scope, request: RetireFlowToolRequest, actor: string, signal?: AbortSignal): Promise<RetireFlowToolReply> {
  const who = { actor, at: context.now() } satisfies Actor;
  const versions = await descriptorVersions(context, scope, flowToolIdOf(request.definitionName), signal);
  let latest = versions.at(-1);
  if (latest === undefined) return {};
  for (const version of retirableFlowVersions(versions)) {
    const changed = await changeDescriptor(context, version, { type: 'RetireDescriptor', reason: 'Retired', at: who.at }, who, signal);
    if (version.toolVersion === latest.toolVersion) latest = changed.descriptor;
  }
  return { descriptor: latest };
}
