import { ToolplaneError, canonicalJson, hasErrorCode, type MaterializedTool, type PublishFlowToolRequest, type Scope, type ToolDescriptor } from '@toolplane/contracts';
import type { RegistryGateway } from '../adapters/registry-gateway.js';
import { etagOf, type DefinitionAggregate } from '../core/definition-aggregate.js';
import type { Operator } from './management-context.js';

// Every change of a ToolDefinition is followed by the registry publishing (saved: enabled, or disabled as an inactive
// tool) or retiring (deleted) the definition's tool, at the definition's version. This runs after the change was
// appended, and FlowRunner keeps no state about it outside the stream: when the registry cannot be reached or refuses,
// the change stays recorded and the caller is told TEMPORARY_UNAVAILABLE with the etag the change made. The next save
// of the definition repairs it: saving the same definition again (or deleting again at the etag of the delete)
// records nothing and asks the registry again, which publishes the version the record holds (the registry answers a
// publication it already has with `created` false), so whatever was missed is caught up.

/** Why a change was stored and its tool not (yet) published or retired (details.reason of the error). */
export const TOOL_NOT_MATERIALIZED = 'TOOL_NOT_MATERIALIZED';

/** What the registry is asked to publish for a saved definition. */
export function publishRequestOf(state: DefinitionAggregate): PublishFlowToolRequest | undefined {
  const spec = state.definition?.spec;
  if (spec === undefined || state.deleted) return undefined;
  return {
    definitionName: spec.name,
    mcpName: spec.mcpName,
    ...(spec.title === undefined ? {} : { title: spec.title }),
    description: spec.description,
    inputSchemaJson: canonicalJson(spec.inputSchema),
    outputSchemaJson: canonicalJson(spec.outputSchema),
    sideEffectClass: spec.sideEffectClass,
    riskClass: spec.riskClass,
    approvalRequired: spec.approval === 'Required',
    timeoutMs: spec.timeoutMs,
    enabled: spec.enabled,
    definitionVersion: state.version,
  };
}

function toolOf(descriptor: ToolDescriptor): MaterializedTool {
  return {
    toolId: descriptor.toolId,
    toolVersion: descriptor.toolVersion,
    active: descriptor.active,
    ...(descriptor.inactiveReason === undefined ? {} : { inactiveReason: descriptor.inactiveReason }),
  };
}

/**
 * Makes the registry's tool of a definition match its record: published at its version when it exists, retired when
 * it was deleted. Returns the tool as the registry left it (undefined: a deleted definition whose tool was never
 * published). A failure is TEMPORARY_UNAVAILABLE naming the etag of the stored change (see above).
 */
export async function materializeDefinition(registry: RegistryGateway, scope: Scope, state: DefinitionAggregate, operator: Operator, signal?: AbortSignal): Promise<MaterializedTool | undefined> {
  const name = state.definition?.spec.name;
  if (name === undefined) return undefined;
  const publish = publishRequestOf(state);
  try {
    if (publish !== undefined) return toolOf((await registry.publishFlowTool(scope, publish, operator.token, signal)).descriptor);
    const retired = await registry.retireFlowTool(scope, { definitionName: name }, operator.token, signal);
    return retired.descriptor === undefined ? undefined : toolOf(retired.descriptor);
  } catch (error) {
    const etag = etagOf(state.version);
    const why = hasErrorCode(error) ? `${error.code}: ${error.message}` : String(error);
    const change = publish === undefined ? 'deleted' : 'saved';
    throw new ToolplaneError(
      'TEMPORARY_UNAVAILABLE',
      `definition ${name} was ${change} (etag ${etag}), but the registry did not ${publish === undefined ? 'retire' : 'publish'} its tool (${why}); ${publish === undefined ? 'delete it again' : 'save it again'} with If-Match ${etag} to repair it`,
      { details: { reason: TOOL_NOT_MATERIALIZED, etag, ...(hasErrorCode(error) ? { registryCode: error.code } : {}) }, cause: error },
    );
  }
}
