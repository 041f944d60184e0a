import {
  compareRiskClasses,
  compareSideEffectClasses,
  jsonProblem,
  sha256Hex,
  type AgentProfile,
  type EffectivePrompt,
  type EffectiveResource,
  type EffectiveResourceTemplate,
  type EffectiveTool,
  type EffectiveToolSet,
  type HiddenTool,
  type PolicyReasonCode,
  type PromptBinding,
  type ResourceBinding,
  type RiskRestrictions,
  type RunPolicy,
  type Scope,
  type TaskScope,
  type TenantPolicy,
  type ToolDescriptor,
} from '@toolplane/contracts';
import type { SchemaStatus } from './argument-validation.js';
import { inactiveMessage, releaseRetirement } from './descriptor-inactivity.js';
import { assessTool, type CallerIdentity, type ServerPolicyBundle } from './policy-evaluator.js';
import { firstMatchingToolPattern } from './tool-patterns.js';

// The effective tool set: registered ∩ agent permissions ∩ tenant policy ∩ server policy bundle ∩ run policy ∩ task
// scope ∩ risk restrictions, computed deterministically before a model sees any tool. The agent, tenant and bundle
// rules are the very ones the evaluator applies at call time (assessTool), so a visible tool is one a call can pass, arguments,
// command rules and rate limits aside.

/** Everything the effective tool set depends on. */
export interface EffectiveToolsInput {
  readonly scope: Scope;
  /** The registered descriptors of the scope (every version; inactive ones are reported as hidden). */
  readonly descriptors: readonly ToolDescriptor[];
  readonly caller: CallerIdentity;
  readonly agentProfile: AgentProfile | undefined;
  readonly tenantPolicy: TenantPolicy;
  /** The policy bundle of each descriptor's server, by server id (a server absent here applies none). */
  readonly serverBundles?: ReadonlyMap<string, ServerPolicyBundle> | undefined;
  readonly runPolicy?: RunPolicy | undefined;
  readonly taskScope?: TaskScope | undefined;
  readonly restrictions?: RiskRestrictions | undefined;
  /** Also report the hidden tools and why. */
  readonly explain?: boolean | undefined;
  /** Whether a descriptor's input schema can be used (the validator cache knows); unchecked when absent. */
  readonly schemaStatus?: ((descriptor: ToolDescriptor) => SchemaStatus) | undefined;
}

type Reason = HiddenTool['reasons'][number];

const MODEL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A model-API-safe name for a tool id: dots become `__`; too long or taken, it ends in a short hash instead. */
function modelName(toolId: string, taken: ReadonlySet<string>): string {
  const natural = toolId.replaceAll('.', '__');
  if (MODEL_NAME.test(natural) && !taken.has(natural)) return natural;
  const suffix = sha256Hex(toolId).slice(0, 10);
  return `${natural.slice(0, 64 - suffix.length - 1)}_${suffix}`;
}

/** The version of each tool a model may see: active and healthy, the most recently bound one. */
function newestUsable(descriptors: readonly ToolDescriptor[]): Map<string, ToolDescriptor> {
  const chosen = new Map<string, ToolDescriptor>();
  for (const descriptor of descriptors) {
    if (!descriptor.active || !descriptor.healthy) continue;
    const current = chosen.get(descriptor.toolId);
    if (
      current === undefined ||
      descriptor.boundAt > current.boundAt ||
      (descriptor.boundAt === current.boundAt && descriptor.toolVersion > current.toolVersion)
    ) {
      chosen.set(descriptor.toolId, descriptor);
    }
  }
  return chosen;
}

/** A descriptor's schema (its input schema unless told) as a JSON object; undefined when absent or not an object. */
function parsedSchema(descriptor: ToolDescriptor, which: 'inputSchemaJson' | 'outputSchemaJson' = 'inputSchemaJson'): Record<string, unknown> | undefined {
  const json = descriptor[which];
  if (json === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== 'object' || value === null || Array.isArray(value) || jsonProblem(value) !== undefined) return undefined;
    return value as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function hiddenBecause(descriptor: ToolDescriptor, input: EffectiveToolsInput, newest: ToolDescriptor | undefined): { reasons: Reason[]; tool?: EffectiveTool } {
  const reasons: Reason[] = [];
  const hide = (code: PolicyReasonCode, message: string) => reasons.push({ code, message });
  const { toolId } = descriptor;
  if (!descriptor.active) hide(releaseRetirement(descriptor) === undefined ? 'TOOL_INACTIVE' : 'RELEASE_NOT_PUBLISHED', inactiveMessage(descriptor));
  else if (!descriptor.healthy) hide('TOOL_UNHEALTHY', `${toolId}@${descriptor.toolVersion} is not healthy`);
  else if (newest !== descriptor) hide('TOOL_VERSION_SUPERSEDED', `${toolId}@${newest?.toolVersion ?? '?'} is the version in use`);

  const serverBundle = descriptor.mcpServerId === undefined ? undefined : input.serverBundles?.get(descriptor.mcpServerId);
  const assessment = assessTool(descriptor, input.caller, input.agentProfile, input.tenantPolicy, input.scope.workspace, undefined, serverBundle);
  for (const finding of assessment.findings) {
    if (finding.effect === 'deny') hide(finding.code, finding.message);
  }
  const requiresApproval = assessment.findings.some((finding) => finding.effect === 'approval_required');
  const effectiveClass = assessment.effectiveClass;

  const run = input.runPolicy;
  if (run?.allowedTools !== undefined && firstMatchingToolPattern(run.allowedTools, toolId) === undefined) hide('NOT_IN_RUN_POLICY', `the run policy does not allow ${toolId}`);
  const runDenied = run?.deniedTools === undefined ? undefined : firstMatchingToolPattern(run.deniedTools, toolId);
  if (runDenied !== undefined) hide('DENIED_BY_RUN_POLICY', `the run policy denies ${toolId} (pattern ${runDenied})`);
  if (run?.maxSideEffectClass !== undefined && compareSideEffectClasses(effectiveClass, run.maxSideEffectClass) > 0) {
    hide('CLASS_ABOVE_RUN_MAX', `${toolId} is ${effectiveClass}; the run allows at most ${run.maxSideEffectClass}`);
  }
  if (run?.maxRiskClass !== undefined && compareRiskClasses(descriptor.riskClass, run.maxRiskClass) > 0) {
    hide('RISK_ABOVE_RUN_MAX', `${toolId} is ${descriptor.riskClass} risk; the run allows at most ${run.maxRiskClass}`);
  }
  if (input.taskScope !== undefined && firstMatchingToolPattern(input.taskScope.tools, toolId) === undefined) hide('OUTSIDE_TASK_SCOPE', `${toolId} is outside the task's scope`);
  const restrictions = input.restrictions;
  if (restrictions?.maxSideEffectClass !== undefined && compareSideEffectClasses(effectiveClass, restrictions.maxSideEffectClass) > 0) {
    hide('CLASS_ABOVE_RESTRICTION', `${toolId} is ${effectiveClass}; the restrictions allow at most ${restrictions.maxSideEffectClass}`);
  }
  if (restrictions?.maxRiskClass !== undefined && compareRiskClasses(descriptor.riskClass, restrictions.maxRiskClass) > 0) {
    hide('RISK_ABOVE_RESTRICTION', `${toolId} is ${descriptor.riskClass} risk; the restrictions allow at most ${restrictions.maxRiskClass}`);
  }
  if (restrictions?.excludeApprovalRequired === true && requiresApproval) hide('APPROVAL_REQUIRED_EXCLUDED', `${toolId} needs an approval, and such tools are excluded`);

  const status = input.schemaStatus?.(descriptor);
  if (status !== undefined && !status.usable) hide('SCHEMA_UNUSABLE', `the ${status.schema ?? 'input'} schema of ${toolId} is unusable: ${status.problem}`);
  const inputSchema = parsedSchema(descriptor);
  if (inputSchema === undefined && (status === undefined || status.usable)) hide('SCHEMA_UNUSABLE', `the input schema of ${toolId} is not a JSON object`);
  if (reasons.length > 0 || inputSchema === undefined) return { reasons };
  // What the tool's structured content must be (checked on every result): clients may validate against it too.
  const outputSchema = parsedSchema(descriptor, 'outputSchemaJson');
  return {
    reasons,
    tool: {
      toolId,
      toolVersion: descriptor.toolVersion,
      name: toolId, // replaced by a model-safe name once the whole set is known
      ...(descriptor.title === undefined ? {} : { title: descriptor.title }),
      description: descriptor.description,
      inputSchema,
      ...(outputSchema === undefined ? {} : { outputSchema }),
      sideEffectClass: effectiveClass,
      riskClass: descriptor.riskClass,
      requiresApproval,
    },
  };
}

function clipReason(reason: Reason): Reason {
  return reason.message.length <= 512 ? reason : { code: reason.code, message: `${reason.message.slice(0, 511)}…` };
}

/**
 * The tools a model may see for this caller, run and task, each with a model-safe name, description and input
 * schema; with `explain`, every other registered tool version with the reasons it is hidden. Deterministic: sorted
 * by tool id, names assigned in that order.
 */
export function effectiveTools(input: EffectiveToolsInput): EffectiveToolSet {
  const inScope = input.descriptors
    .filter((d) => d.tenant === input.scope.tenant && d.workspace === input.scope.workspace)
    .toSorted((a, b) => (a.toolId === b.toolId ? (a.toolVersion < b.toolVersion ? -1 : a.toolVersion > b.toolVersion ? 1 : 0) : a.toolId < b.toolId ? -1 : 1));
  const newest = newestUsable(inScope);
  const tools: EffectiveTool[] = [];
  const resources: EffectiveResource[] = [];
  const resourceTemplates: EffectiveResourceTemplate[] = [];
  const prompts: EffectivePrompt[] = [];
  const hidden: HiddenTool[] = [];
  const names = new Set<string>();
  for (const descriptor of inScope) {
    const verdict = hiddenBecause(descriptor, input, newest.get(descriptor.toolId));
    if (verdict.tool !== undefined && descriptor.resource?.uriTemplate !== undefined) {
      resourceTemplates.push(effectiveResourceTemplate(descriptor, descriptor.resource, descriptor.resource.uriTemplate));
    } else if (verdict.tool !== undefined && descriptor.resource !== undefined) {
      resources.push(effectiveResource(descriptor, descriptor.resource));
    } else if (verdict.tool !== undefined && descriptor.prompt !== undefined) {
      prompts.push(effectivePrompt(descriptor, descriptor.prompt, verdict.tool.inputSchema));
    } else if (verdict.tool !== undefined) {
      const name = modelName(descriptor.toolId, names);
      names.add(name);
      tools.push({ ...verdict.tool, name });
    } else {
      hidden.push({ toolId: descriptor.toolId, toolVersion: descriptor.toolVersion, reasons: verdict.reasons.slice(0, 32).map(clipReason) });
    }
  }
  return {
    ...(input.caller.agentId === undefined ? {} : { agentId: input.caller.agentId }),
    tools,
    resources,
    resourceTemplates,
    prompts,
    ...(input.explain === true ? { hidden } : {}),
  };
}

function effectiveResource(descriptor: ToolDescriptor, binding: ResourceBinding): EffectiveResource {
  return {
    resourceId: descriptor.toolId,
    toolVersion: descriptor.toolVersion,
    uri: descriptor.providerToolName,
    name: descriptor.title ?? descriptor.providerToolName,
    ...(descriptor.title === undefined ? {} : { title: descriptor.title }),
    description: descriptor.description,
    ...(binding.mimeType === undefined ? {} : { mimeType: binding.mimeType }),
    knowledgeSource: binding.knowledgeSource,
    scope: binding.scope,
    classification: binding.classification,
  };
}

/** A bound resource template: its URIs are read as a resource is, the template's variables being the arguments. */
function effectiveResourceTemplate(descriptor: ToolDescriptor, binding: ResourceBinding, uriTemplate: string): EffectiveResourceTemplate {
  const { uri: _uri, ...rest } = effectiveResource(descriptor, binding);
  return { ...rest, uriTemplate };
}

/** A bound prompt with its arguments, read back from the input schema its binding made (string properties). */
function effectivePrompt(descriptor: ToolDescriptor, binding: PromptBinding, inputSchema: Record<string, unknown>): EffectivePrompt {
  const properties = typeof inputSchema.properties === 'object' && inputSchema.properties !== null ? (inputSchema.properties as Record<string, { description?: unknown }>) : {};
  const required = Array.isArray(inputSchema.required) ? (inputSchema.required as unknown[]) : [];
  return {
    promptId: descriptor.toolId,
    toolVersion: descriptor.toolVersion,
    name: descriptor.providerToolName,
    ...(descriptor.title === undefined ? {} : { title: descriptor.title }),
    description: descriptor.description,
    arguments: Object.entries(properties)
      .slice(0, 64)
      .map(([name, schema]) => ({
        name,
        ...(typeof schema.description === 'string' ? { description: schema.description.slice(0, 1024) } : {}),
        required: required.includes(name),
      })),
    target: binding.target,
  };
}
