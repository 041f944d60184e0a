import { z } from 'zod';
import { DataClassification, IdempotencySemantics, RiskClass, SandboxKind, SideEffectClass, ToolKind } from './classification.js';
import { McpToolName } from './mcp.js';
import { ConnectionRef, ExternalId, IsoDateTime, PrincipalId, Sha256Hex, TenantId, ToolId, ToolVersion, Uuid, WorkspaceId } from './primitives.js';
import { DescriptorRetirementReason, InFlightPolicy } from './registry-events.js';

const Name = z.string().regex(/^[!-~]{1,128}$/);

/** How an executor may retry a call; only classes and idempotency that make a retry safe allow one at all. */
export const RetryPolicy = z.object({
  maxAttempts: z.number().int().min(1).max(10),
  initialBackoffMs: z.number().int().nonnegative(),
  maxBackoffMs: z.number().int().nonnegative(),
});
export type RetryPolicy = z.infer<typeof RetryPolicy>;

/** A rate limit: at most `limit` calls per `windowMs`, counted per tool or per agent and tool. */
export const RateLimit = z.object({ per: z.enum(['TOOL', 'AGENT']), limit: z.number().int().positive(), windowMs: z.number().int().positive() });
export type RateLimit = z.infer<typeof RateLimit>;

/** Who a bound resource's knowledge belongs to: the workspace it is bound in, or the whole tenant. */
export const KnowledgeScope = z.enum(['WORKSPACE', 'TENANT']);
export type KnowledgeScope = z.infer<typeof KnowledgeScope>;

/**
 * What a resource binding declares: the knowledge source the resource belongs to, its scope, and how sensitive its
 * content is (an agent reads it only up to its clearance). Its URI is the descriptor's `providerToolName`.
 */
export const ResourceBinding = z.strictObject({
  knowledgeSource: ExternalId,
  scope: KnowledgeScope,
  classification: DataClassification,
  mimeType: z.string().max(256).optional(),
  /**
   * Present when the binding is of a resource template: the RFC 6570 template (also the `providerToolName`), whose
   * variables are the descriptor's input (each a required string). A read expands it with the call's arguments.
   */
  uriTemplate: McpToolName.optional(),
});
export type ResourceBinding = z.infer<typeof ResourceBinding>;

/**
 * What a prompt maps to: a skill, or a step of a workflow; never to policy (ADR-0022 §5). A prompt's messages are
 * data for a model, so binding one cannot grant, deny or change anything a policy decides.
 */
export const PromptTarget = z.strictObject({
  kind: z.enum(['Skill', 'WorkflowStep'], { error: 'a prompt maps to a Skill or a WorkflowStep, never to policy (ADR-0022 §5)' }),
  /** The skill's id, or the workflow and step as `{flow}/{step}`. */
  ref: ExternalId,
});
export type PromptTarget = z.infer<typeof PromptTarget>;

/** What a prompt binding declares: its target. The prompt's name at its server is the descriptor's `providerToolName`. */
export const PromptBinding = z.strictObject({ target: PromptTarget });
export type PromptBinding = z.infer<typeof PromptBinding>;

/** What an MCP-backed descriptor governs: a tool (tools/call), a resource (resources/read) or a prompt (prompts/get). */
export type McpCapability = 'tool' | 'resource' | 'prompt';

/**
 * The runtime read model of one invocable tool version (collection `tool_descriptors`): identity, schemas (as
 * JSON text), declared side-effect and risk class, authorization and secret requirements, limits, sandbox and
 * server binding. The adapter validates and governs every call against it.
 */
export const ToolDescriptor = z.object({
  tenant: TenantId,
  workspace: WorkspaceId,
  toolId: ToolId,
  toolVersion: ToolVersion,
  kind: ToolKind,
  releaseId: ExternalId.optional(),
  /** The tool's name at its provider (the MCP tool name, or the ToolDefinition's MCP name). */
  providerToolName: McpToolName,
  title: z.string().max(256).optional(),
  description: z.string().max(16_384),
  /** The input JSON Schema as JSON text; arguments are validated against it. */
  inputSchemaJson: z.string().max(262_144),
  outputSchemaJson: z.string().max(262_144).optional(),
  /** The provider definition this binding approved; a different one suspends the descriptor. */
  definitionHash: Sha256Hex,
  /** Declared by the tool owner; the executor never lowers it. */
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  /** Every call of this tool waits for a human approval, whatever policy says (a ToolDefinition's approval intent). */
  approvalRequired: z.boolean().optional(),
  idempotency: IdempotencySemantics,
  /** Permissions and roles the calling agent or principal must hold. */
  authorization: z.object({ permissions: z.array(Name).max(64), roles: z.array(Name).max(64) }),
  /** Connections whose credentials are leased at call time. */
  secretDependencies: z.array(ConnectionRef).max(16),
  timeoutMs: z.number().int().positive(),
  retryPolicy: RetryPolicy,
  rateLimits: z.array(RateLimit).max(8),
  /** What the receipt and events must capture beyond ids. */
  auditRequirements: z.object({ argumentsHash: z.boolean(), resultHash: z.boolean() }),
  sandboxKind: SandboxKind,
  /** For shell-like tools: patterns (regular-expression sources) a command must match, and must not match. */
  commandPolicy: z
    .object({
      /** Which argument holds the command line (a top-level property name). */
      argument: z.string().min(1).max(128),
      allow: z.array(z.string().min(1).max(1024)).max(256),
      block: z.array(z.string().min(1).max(1024)).max(256),
    })
    .optional(),
  mcpServerId: Uuid.optional(),
  /** Present when this descriptor is a bound resource, read with resources/read (always READ). */
  resource: ResourceBinding.optional(),
  /** Present when this descriptor is a bound prompt, fetched with prompts/get (always READ). */
  prompt: PromptBinding.optional(),
  healthy: z.boolean(),
  active: z.boolean(),
  /** Why the descriptor is not active, when it is not. */
  inactiveReason: DescriptorRetirementReason.optional(),
  /** The in-flight policy of the release change that retired it (ReleaseDeprecated, ReleaseRevoked). */
  inFlight: InFlightPolicy.optional(),
  /** When it stopped being active (its first retirement): a call received before then is one the in-flight policy lets finish. */
  retiredAt: IsoDateTime.optional(),
  boundBy: PrincipalId,
  boundAt: IsoDateTime,
  updatedAt: IsoDateTime,
  /** Incremented by every change; the compare-and-set guard. */
  version: z.number().int().positive(),
});
export type ToolDescriptor = z.infer<typeof ToolDescriptor>;

/** What a descriptor governs: a resource or a prompt when it binds one, a tool otherwise. */
export function mcpCapabilityOf(descriptor: Pick<ToolDescriptor, 'resource' | 'prompt'>): McpCapability {
  return descriptor.resource !== undefined ? 'resource' : descriptor.prompt !== undefined ? 'prompt' : 'tool';
}
