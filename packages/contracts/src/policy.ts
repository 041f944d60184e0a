import { z } from 'zod';
import { Approvers } from './approval-events.js';
import { DataClassification, RiskClass, SideEffectClass } from './classification.js';
import { KnowledgeScope, PromptTarget } from './tool-descriptor-document.js';
import { ToolFailure } from './errors.js';
import { PipelineStage } from './invocation-events.js';
import {
  ExternalId,
  InvocationId,
  IsoDateTime,
  JsonObject,
  PrincipalId,
  Sha256Hex,
  TenantId,
  ToolId,
  ToolVersion,
  Uuid,
  WorkspaceId,
  boundedText,
} from './primitives.js';

// Policy documents are data evaluated by a deterministic evaluator in the tool adapter: no code, no regular
// expressions over tool ids (globs instead), so evaluation cannot be made slow or ambiguous by a policy author.

/**
 * A tool id, or a glob over tool ids: dot-separated segments where `*` inside a segment matches any run of
 * segment characters and a whole `**` segment matches any number of segments (`github.*`, `*.read_*`, `**`).
 */
export const ToolPattern = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_*-]+(?:\.[A-Za-z0-9_*-]+)*$/)
  .meta({ description: 'Tool id or glob: dot-separated segments of [A-Za-z0-9_-*]; `*` within a segment, `**` for any segments.' });
export type ToolPattern = z.infer<typeof ToolPattern>;

/** A permission or role name, as tool descriptors and context tokens spell them. */
export const PermissionName = z.string().regex(/^[!-~]{1,128}$/);
export type PermissionName = z.infer<typeof PermissionName>;

/** A command-line pattern: a regular-expression source, matched in linear time (RE2 syntax: no backreferences or lookaround). */
export const CommandPattern = z.string().min(1).max(1024);
export type CommandPattern = z.infer<typeof CommandPattern>;

/**
 * What one agent may do (collection of agent profiles, one per agent in a workspace): the tools it may call (by id
 * or glob, minus explicit exclusions), the highest risk and side-effect class it may cause, and the permissions it
 * holds in addition to those of the principal it acts for.
 */
export const AgentProfile = z.object({
  tenant: TenantId,
  workspace: WorkspaceId,
  agentId: ExternalId,
  description: z.string().max(2000).optional(),
  /** A tool is callable only if one of these matches its id. */
  allowedTools: z.array(ToolPattern).max(256),
  /** A tool matching one of these is never callable, whatever `allowedTools` says. */
  deniedTools: z.array(ToolPattern).max(256),
  maxRiskClass: RiskClass,
  /** The strongest effective side-effect class the agent may cause; absent means no limit beyond tenant policy. */
  maxSideEffectClass: SideEffectClass.optional(),
  permissions: z.array(PermissionName).max(256),
  /** The most sensitive resource content the agent may read; absent: INTERNAL (DEFAULT_CLEARANCE). */
  clearance: DataClassification.optional(),
  updatedBy: PrincipalId,
  updatedAt: IsoDateTime,
  /** Incremented by every change; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type AgentProfile = z.infer<typeof AgentProfile>;

/** The kind of environment a workspace is. */
export const EnvironmentClass = z.enum(['DEVELOPMENT', 'STAGING', 'PRODUCTION']);
export type EnvironmentClass = z.infer<typeof EnvironmentClass>;

/** How a workspace's environment raises the calls made in it (a production workspace makes writes weigh more). */
export const WorkspaceEnvironment = z.strictObject({
  workspace: WorkspaceId,
  environment: EnvironmentClass,
  /** Every non-READ call in the workspace is raised to at least this class. */
  raiseTo: SideEffectClass.optional(),
  /** Raise READ calls too. */
  raiseReads: z.boolean(),
  /** Every non-READ call in the workspace needs an approval. */
  requireApprovalForWrites: z.boolean(),
});
export type WorkspaceEnvironment = z.infer<typeof WorkspaceEnvironment>;

/** A policy-side raise of the effective class of the tools a pattern matches. */
export const ClassRaise = z.strictObject({ tools: ToolPattern, raiseTo: SideEffectClass, reason: boundedText(512) });
export type ClassRaise = z.infer<typeof ClassRaise>;

/**
 * A rate limit of a tenant policy: at most `limit` calls per aligned window of `windowMs` for the tools `tools`
 * matches, counted per tool (TOOL), per agent across those tools (AGENT) or per agent and tool (AGENT_TOOL).
 */
export const RateLimitRule = z.strictObject({
  tools: ToolPattern,
  per: z.enum(['TOOL', 'AGENT', 'AGENT_TOOL']),
  limit: z.number().int().positive(),
  windowMs: z.number().int().positive().max(86_400_000),
});
export type RateLimitRule = z.infer<typeof RateLimitRule>;

const killSwitchFields = { reason: boundedText(1024), engagedBy: PrincipalId, engagedAt: IsoDateTime };

/** An engaged kill switch: every call of the tenant, of the tools a pattern matches, or of one MCP server is denied. */
export const KillSwitch = z.discriminatedUnion('target', [
  z.strictObject({ target: z.literal('TENANT'), ...killSwitchFields }),
  z.strictObject({ target: z.literal('TOOL'), tools: ToolPattern, ...killSwitchFields }),
  z.strictObject({ target: z.literal('SERVER'), mcpServerId: Uuid, ...killSwitchFields }),
]);
export type KillSwitch = z.infer<typeof KillSwitch>;

/** What happens to a shell-like call whose command matches a block pattern or misses every allow pattern. */
export const BlockedCommandAction = z.enum(['DENY', 'ESCALATE']);
export type BlockedCommandAction = z.infer<typeof BlockedCommandAction>;

/** Tenant-wide command rules for shell-like tools, added to each descriptor's own allow and block patterns. */
export const CommandRules = z.strictObject({
  block: z.array(CommandPattern).max(256),
  onBlocked: BlockedCommandAction,
  /** With ESCALATE, the class a blocked command is raised to; it then needs an approval. */
  escalateTo: SideEffectClass,
});
export type CommandRules = z.infer<typeof CommandRules>;

/**
 * The governance of one tenant (one document per tenant, for all its workspaces): denied classes, which classes
 * need approval and from whom, rate limits, kill switches, environment and policy raises of the effective class,
 * and command rules for shell-like tools.
 */
export const TenantPolicy = z.object({
  tenant: TenantId,
  /** Calls whose effective class is one of these are denied. */
  deniedSideEffectClasses: z.array(SideEffectClass).max(6),
  /** Calls whose effective class is one of these need an approval. */
  approvalRequiredClasses: z.array(SideEffectClass).max(6),
  /** Calls of tools at or above this risk class need an approval. */
  approvalRiskThreshold: RiskClass.optional(),
  /** Tools above this risk class are denied. */
  maxRiskClass: RiskClass.optional(),
  approvers: Approvers,
  approvalTtlMs: z.number().int().positive().max(7 * 86_400_000),
  rateLimits: z.array(RateLimitRule).max(64),
  killSwitches: z.array(KillSwitch).max(256),
  environments: z.array(WorkspaceEnvironment).max(256),
  classRaises: z.array(ClassRaise).max(256),
  commands: CommandRules,
  /** Whether a principal acting without an agent (an operator through the CLI) may call tools at all. */
  allowDirectPrincipalCalls: z.boolean(),
  /**
   * Argument field names (matched case-insensitively, at any depth) whose values an operator never sees in an argument
   * preview, besides the well-known credential names and the fields a tool's schema marks `writeOnly`.
   */
  sensitiveArgumentFields: z.array(z.string().min(1).max(128)).max(128).default([]),
  updatedBy: PrincipalId,
  updatedAt: IsoDateTime,
  /** Incremented by every change; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type TenantPolicy = z.infer<typeof TenantPolicy>;

/** The policy bundle a server names by default: with none stored under that name it adds no rules. */
export const DEFAULT_POLICY_BUNDLE = 'default';

/** The name of a policy bundle, as a server's `governancePolicyRef` spells it. */
export const PolicyBundleName = ExternalId;
export type PolicyBundleName = z.infer<typeof PolicyBundleName>;

/**
 * A named set of rules in the tenant policy's language (one document per tenant and name), applied to every call
 * through a server whose `governancePolicyRef` names it, in addition to the agent's profile and the tenant policy:
 * the strictest outcome wins, and every reason it causes names it. Approvers, approval lifetimes, kill switches and
 * environments stay the tenant policy's: a bundle can only add denials, approvals, raises and limits.
 */
export const PolicyBundle = z.object({
  tenant: TenantId,
  name: PolicyBundleName,
  description: z.string().max(2000).optional(),
  /** Calls whose effective class is one of these are denied. */
  deniedSideEffectClasses: z.array(SideEffectClass).max(6),
  /** Calls whose effective class is one of these need an approval (decided by the tenant policy's approvers). */
  approvalRequiredClasses: z.array(SideEffectClass).max(6),
  /** Calls of tools at or above this risk class need an approval. */
  approvalRiskThreshold: RiskClass.optional(),
  /** Tools above this risk class are denied. */
  maxRiskClass: RiskClass.optional(),
  /** Counted apart from the tenant policy's limits, per bundle. */
  rateLimits: z.array(RateLimitRule).max(64),
  /** Raises of the effective class of the tools a pattern matches; every other rule then sees the raised class. */
  classRaises: z.array(ClassRaise).max(256),
  /** Command rules for shell-like tools, checked besides the tenant policy's and the descriptor's. */
  commands: CommandRules,
  updatedBy: PrincipalId,
  updatedAt: IsoDateTime,
  /** Incremented by every change; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type PolicyBundle = z.infer<typeof PolicyBundle>;

/** The outcome of a policy evaluation. */
export const PolicyEffect = z.enum(['allow', 'deny', 'approval_required']);
export type PolicyEffect = z.infer<typeof PolicyEffect>;

/** Why a policy decided as it did, or why a tool is hidden from a model; stable codes for programs, messages for people. */
export const PolicyReasonCode = z.enum([
  'KILL_SWITCH_TENANT',
  'KILL_SWITCH_TOOL',
  'KILL_SWITCH_SERVER',
  'DIRECT_CALLS_NOT_ALLOWED',
  'NO_AGENT_PROFILE',
  'TOOL_NOT_IN_PROFILE',
  'TOOL_DENIED_BY_PROFILE',
  'RISK_ABOVE_AGENT_MAX',
  'CLASS_ABOVE_AGENT_MAX',
  'MISSING_PERMISSION',
  'MISSING_ROLE',
  'CLASSIFICATION_ABOVE_CLEARANCE',
  'CLASS_DENIED',
  'RISK_ABOVE_TENANT_MAX',
  'RISK_ABOVE_BUNDLE_MAX',
  'POLICY_BUNDLE_MISSING',
  'POLICY_BUNDLE_UNAVAILABLE',
  'COMMAND_UNREADABLE',
  'COMMAND_PATTERN_INVALID',
  'COMMAND_BLOCKED',
  'COMMAND_NOT_ALLOWED',
  'RATE_LIMITED',
  'CLASS_RAISED_BY_ENVIRONMENT',
  'CLASS_RAISED_BY_POLICY',
  'CLASS_RAISED_BY_COMMAND',
  'APPROVAL_REQUIRED_FOR_CLASS',
  'APPROVAL_REQUIRED_FOR_RISK',
  'APPROVAL_REQUIRED_FOR_ENVIRONMENT',
  'APPROVAL_REQUIRED_FOR_COMMAND',
  'APPROVAL_REQUIRED_BY_TOOL',
  'TOOL_INACTIVE',
  /** The tool's release was deprecated or revoked: its descriptor was retired with it. */
  'RELEASE_NOT_PUBLISHED',
  'TOOL_UNHEALTHY',
  'TOOL_VERSION_SUPERSEDED',
  'SCHEMA_UNUSABLE',
  'NOT_IN_RUN_POLICY',
  'DENIED_BY_RUN_POLICY',
  'CLASS_ABOVE_RUN_MAX',
  'RISK_ABOVE_RUN_MAX',
  'OUTSIDE_TASK_SCOPE',
  'CLASS_ABOVE_RESTRICTION',
  'RISK_ABOVE_RESTRICTION',
  'APPROVAL_REQUIRED_EXCLUDED',
]);
export type PolicyReasonCode = z.infer<typeof PolicyReasonCode>;

/** One finding of a policy evaluation: what it found, at which pipeline stage, and what it did to the decision. */
export const PolicyReason = z.strictObject({
  code: PolicyReasonCode,
  stage: PipelineStage,
  effect: z.enum(['deny', 'approval_required', 'raise']),
  message: boundedText(512),
  /** The policy bundle whose rule this is, when a server's bundle caused it. */
  policyBundle: PolicyBundleName.optional(),
});
export type PolicyReason = z.infer<typeof PolicyReason>;

/**
 * The deterministic verdict of agent permission, tenant policy and side-effect classification on one invocation:
 * bound to the invocation, tool version and request hash it was made for; its id (derived from its inputs) goes
 * into the receipt.
 */
export const PolicyDecision = z.strictObject({
  decisionId: Uuid,
  invocationId: InvocationId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  requestHash: Sha256Hex,
  effect: PolicyEffect,
  declaredClass: SideEffectClass,
  /** The declared class raised by environment, policy and command rules; never lower than `declaredClass`. */
  effectiveClass: SideEffectClass,
  riskClass: RiskClass,
  /** The first stage that denied, when the effect is deny. */
  deniedAt: PipelineStage.optional(),
  /** The failure a denied call ends with (AUTHORIZATION_DENIED or RATE_LIMITED). */
  failure: ToolFailure.optional(),
  /** For RATE_LIMITED: when the window that refused the call ends. */
  retryAfterMs: z.number().int().nonnegative().optional(),
  /** For approval_required: who decides and how long the approval stays open. */
  approval: z.strictObject({ approvers: Approvers, ttlMs: z.number().int().positive() }).optional(),
  reasons: z.array(PolicyReason).max(64),
  agentProfileVersion: z.number().int().positive().optional(),
  tenantPolicyVersion: z.number().int().positive().optional(),
  /** The bundle the tool's server names, and the version applied (absent when none is stored under that name). */
  policyBundle: z.strictObject({ name: PolicyBundleName, version: z.number().int().positive().optional() }).optional(),
  evaluatedAt: IsoDateTime,
});
export type PolicyDecision = z.infer<typeof PolicyDecision>;

/** A run's own limits on the tools its model may see (set by the agent runtime for one run). */
export const RunPolicy = z.strictObject({
  allowedTools: z.array(ToolPattern).max(256).optional(),
  deniedTools: z.array(ToolPattern).max(256).optional(),
  maxSideEffectClass: SideEffectClass.optional(),
  maxRiskClass: RiskClass.optional(),
});
export type RunPolicy = z.infer<typeof RunPolicy>;

/** The tools relevant to the task at hand; the model sees nothing outside them. */
export const TaskScope = z.strictObject({ tools: z.array(ToolPattern).max(256) });
export type TaskScope = z.infer<typeof TaskScope>;

/** Risk restrictions for a tool set: ceilings, and whether tools needing an approval are left out. */
export const RiskRestrictions = z.strictObject({
  maxSideEffectClass: SideEffectClass.optional(),
  maxRiskClass: RiskClass.optional(),
  excludeApprovalRequired: z.boolean().optional(),
});
export type RiskRestrictions = z.infer<typeof RiskRestrictions>;

/**
 * Asks the tool adapter which tools a model may see for this agent and run. The agent and principal come from the
 * context token; tenant and workspace from the subject.
 */
export const EffectiveToolSetRequest = z
  .strictObject({
    contextToken: z
      .string()
      .max(16_384)
      .regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*){2,4}$/),
    runPolicy: RunPolicy.optional(),
    taskScope: TaskScope.optional(),
    restrictions: RiskRestrictions.optional(),
    /** Also list every hidden tool with the reasons it is hidden. */
    explain: z.boolean().optional(),
  })
  .meta({ description: 'Asks for the tools a model may see: registered ∩ agent ∩ tenant policy ∩ run policy ∩ task scope ∩ risk restrictions.' });
export type EffectiveToolSetRequest = z.infer<typeof EffectiveToolSetRequest>;

/** One tool a model may see: what the model needs to call it, plus the governance facts a runtime may show. */
export const EffectiveTool = z.strictObject({
  toolId: ToolId,
  toolVersion: ToolVersion,
  /** A model-API-safe name (`[A-Za-z0-9_-]{1,64}`), unique within the set; map it back to `toolId` to invoke. */
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  title: z.string().max(256).optional(),
  description: z.string().max(16_384),
  inputSchema: JsonObject,
  /** The JSON Schema the tool's structured content follows, when it declares one (the adapter checks every result against it). */
  outputSchema: JsonObject.optional(),
  /** The effective class for this agent and workspace, before command rules (which depend on arguments). */
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  /** Whether calls will wait for a human approval. */
  requiresApproval: z.boolean(),
});
export type EffectiveTool = z.infer<typeof EffectiveTool>;

/** One bound resource a model may read (with resources/read through the pipeline). */
export const EffectiveResource = z.strictObject({
  resourceId: ToolId,
  toolVersion: ToolVersion,
  /** The resource's URI at its server. */
  uri: z.string().min(1).max(256),
  name: z.string().max(256),
  title: z.string().max(256).optional(),
  description: z.string().max(16_384),
  mimeType: z.string().max(256).optional(),
  knowledgeSource: ExternalId,
  scope: KnowledgeScope,
  classification: DataClassification,
});
export type EffectiveResource = z.infer<typeof EffectiveResource>;

/**
 * One bound resource template a model may read: the URIs it expands to, each read with resources/read through the
 * pipeline, the template's variables being the read's arguments (each a required string).
 */
export const EffectiveResourceTemplate = EffectiveResource.omit({ uri: true }).extend({
  /** The RFC 6570 template at its server. */
  uriTemplate: z.string().min(1).max(256),
});
export type EffectiveResourceTemplate = z.infer<typeof EffectiveResourceTemplate>;

/** One bound prompt a model may fetch (with prompts/get through the pipeline). */
export const EffectivePrompt = z.strictObject({
  promptId: ToolId,
  toolVersion: ToolVersion,
  /** The prompt's name at its server. */
  name: z.string().max(256),
  title: z.string().max(256).optional(),
  description: z.string().max(16_384),
  arguments: z.array(z.strictObject({ name: z.string().min(1).max(128), description: z.string().max(1024).optional(), required: z.boolean() })).max(64),
  target: PromptTarget,
});
export type EffectivePrompt = z.infer<typeof EffectivePrompt>;

/** A tool (or resource, or prompt) the model does not see, and why. */
export const HiddenTool = z.strictObject({
  toolId: ToolId,
  toolVersion: ToolVersion,
  reasons: z
    .array(z.strictObject({ code: PolicyReasonCode, message: boundedText(512) }))
    .min(1)
    .max(32),
});
export type HiddenTool = z.infer<typeof HiddenTool>;

/** The answer to an {@link EffectiveToolSetRequest}: the visible tools, and with `explain` the hidden ones. */
export const EffectiveToolSet = z
  .strictObject({
    agentId: ExternalId.optional(),
    tools: z.array(EffectiveTool).max(4096),
    /** The bound resources the agent may read. */
    resources: z.array(EffectiveResource).max(4096).optional(),
    /** The bound resource templates the agent may read. */
    resourceTemplates: z.array(EffectiveResourceTemplate).max(4096).optional(),
    /** The bound prompts the agent may fetch. */
    prompts: z.array(EffectivePrompt).max(4096).optional(),
    hidden: z.array(HiddenTool).max(16_384).optional(),
  })
  .meta({ description: 'The tools a model may see for an agent and run, with the reasons others are hidden when asked.' });
export type EffectiveToolSet = z.infer<typeof EffectiveToolSet>;

/**
 * An agent profile that lists a tool (allowedTools matches it, deniedTools does not) but may not use it as published:
 * found when the tool is bound or its class changes (model rule D21), so an operator hears of it before agents are
 * denied at call time.
 */
export const PublicationConflict = z.strictObject({
  agentId: ExternalId,
  code: z.enum(['CLASS_ABOVE_AGENT_MAX', 'RISK_ABOVE_AGENT_MAX', 'CLASSIFICATION_ABOVE_CLEARANCE']),
  reason: boundedText(512),
});
export type PublicationConflict = z.infer<typeof PublicationConflict>;
