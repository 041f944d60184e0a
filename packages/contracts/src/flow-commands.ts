import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { RiskClass, SideEffectClass } from './classification.js';
import { FlowDefinitionBody, MAX_FLOW_SCHEMA_BYTES } from './flow-definition.js';
import { jsonProblem } from './json.js';
import { McpToolName } from './mcp.js';
import { IsoDateTime, JsonObject, PrincipalId, Sha256Hex, TenantId, ToolId, ToolVersion, WorkspaceId } from './primitives.js';

// FlowRunner's management resources and their request/reply operations (`tp.v1.cmd.{tenant}.{workspace}.flows.{op}`):
// Flows (versioned bodies: Draft → Published, immutable; one Published version Active) and ToolDefinitions (a Flow
// published as a governed tool, ETag CRUD). Scope comes from the subject, never from a body; who asks comes from the
// operator token in the Authorization header. The records are what FlowRunner appends to a Flow's and a
// definition's own subject of its private stream (`flowRunnerSubject('flow'|'definition', …)`).

/** A Flow's id, unique in its workspace; its steps run as the agent `flow.<flowId>`. */
export const FlowId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/)
  .meta({ description: 'Flow id: a letter or digit, then [A-Za-z0-9_.-], at most 100 characters.' });
export type FlowId = z.infer<typeof FlowId>;

/** A version number of a Flow: 1, 2, 3 … in the order they were drafted. */
export const FlowVersionNumber = z.number().int().positive().max(1_000_000);
export type FlowVersionNumber = z.infer<typeof FlowVersionNumber>;

/** Draft: editable; Published: immutable (and callable once Active). */
export const FlowVersionStatus = z.enum(['Draft', 'Published']);
export type FlowVersionStatus = z.infer<typeof FlowVersionStatus>;

/** One version of a Flow, as stored and read back. */
export const FlowVersion = z.strictObject({
  tenant: TenantId,
  workspace: WorkspaceId,
  flowId: FlowId,
  version: FlowVersionNumber,
  status: FlowVersionStatus,
  /** Whether this is the Flow's one Active version (only a Published version can be). */
  active: z.boolean(),
  body: FlowDefinitionBody,
  /** The SHA-256 of the body's canonical JSON. */
  bodyHash: Sha256Hex,
  createdBy: PrincipalId,
  createdAt: IsoDateTime,
  /** The last save of the draft. */
  updatedBy: PrincipalId,
  updatedAt: IsoDateTime,
  publishedBy: PrincipalId.optional(),
  publishedAt: IsoDateTime.optional(),
  /** When it last became the Active version. */
  activatedBy: PrincipalId.optional(),
  activatedAt: IsoDateTime.optional(),
});
export type FlowVersion = z.infer<typeof FlowVersion>;

/** A version in a Flow's version list: no body. */
export const FlowVersionSummary = FlowVersion.pick({ version: true, status: true, active: true, bodyHash: true, createdAt: true, updatedAt: true, publishedAt: true });
export type FlowVersionSummary = z.infer<typeof FlowVersionSummary>;

/** A Flow in a workspace listing. */
export const FlowSummary = z.strictObject({
  flowId: FlowId,
  /** The title of its newest version's body. */
  title: z.string().max(200).optional(),
  latestVersion: FlowVersionNumber,
  activeVersion: FlowVersionNumber.optional(),
  draftVersion: FlowVersionNumber.optional(),
  publishedVersions: z.number().int().nonnegative(),
  updatedAt: IsoDateTime,
});
export type FlowSummary = z.infer<typeof FlowSummary>;

/** Who recorded a change and when. */
const recorded = { actor: PrincipalId, at: IsoDateTime };

/** What happened to a Flow, as FlowRunner records it on the Flow's subject. Every record names its flow. */
export const FlowRecord = z.discriminatedUnion('type', [
  /** A draft version was created (the next version number) or its body replaced. */
  z.strictObject({ type: z.literal('FlowDraftSaved'), flowId: FlowId, version: FlowVersionNumber, body: FlowDefinitionBody, bodyHash: Sha256Hex, ...recorded }),
  /** A draft was validated and became immutable. */
  z.strictObject({ type: z.literal('FlowVersionPublished'), flowId: FlowId, version: FlowVersionNumber, bodyHash: Sha256Hex, ...recorded }),
  /** A Published version became the Active one (the previous Active version, if any, is no longer). */
  z.strictObject({ type: z.literal('FlowVersionActivated'), flowId: FlowId, version: FlowVersionNumber, previousVersion: FlowVersionNumber.optional(), ...recorded }),
]);
export type FlowRecord = z.infer<typeof FlowRecord>;

/**
 * A ToolDefinition's name: namespaced like a tool id (`orders.refund`), unique in its workspace; it materializes as the
 * tool `flows.<name>`.
 */
export const ToolDefinitionName = z
  .string()
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$/)
  .meta({ description: 'Definition name: at least two dot-separated segments of [A-Za-z0-9_-] starting with a letter or digit, at most 128 characters.' });
export type ToolDefinitionName = z.infer<typeof ToolDefinitionName>;

/** Approval intent: Required makes every call wait for a human approval; Policy leaves it to the tenant policy. */
export const ToolDefinitionApproval = z.enum(['Policy', 'Required']);
export type ToolDefinitionApproval = z.infer<typeof ToolDefinitionApproval>;

/** Which Flow version a definition runs: an exact Published one, or whichever is Active when a call starts. */
export const ToolDefinitionFlowRef = z.union([
  z.strictObject({ flowId: FlowId, version: FlowVersionNumber }),
  z.strictObject({ flowId: FlowId, follow: z.literal('active') }),
]);
export type ToolDefinitionFlowRef = z.infer<typeof ToolDefinitionFlowRef>;

/** The shortest and longest invocation timeout a definition may set. */
export const MIN_DEFINITION_TIMEOUT_MS = 1_000;
export const MAX_DEFINITION_TIMEOUT_MS = 900_000;

/** A public JSON Schema of a definition: an object, bounded like a Flow's. */
const PublicSchema = JsonObject.superRefine((schema, ctx) => {
  if (jsonProblem(schema) === undefined && new TextEncoder().encode(canonicalJson(schema)).length > MAX_FLOW_SCHEMA_BYTES) {
    ctx.addIssue({ code: 'custom', message: `the schema is larger than ${MAX_FLOW_SCHEMA_BYTES} bytes` });
  }
});

/** What an operator writes of a ToolDefinition (create and update send it whole). */
export const ToolDefinitionSpec = z.strictObject({
  name: ToolDefinitionName,
  /** The tool's name on MCP (`tools/list`), unique among the workspace's definitions. */
  mcpName: McpToolName,
  title: z.string().min(1).max(256).optional(),
  description: z.string().min(1).max(16_384),
  /** A disabled definition stays editable and is listed as a disabled tool; calls of it are refused. */
  enabled: z.boolean().default(true),
  approval: ToolDefinitionApproval.default('Policy'),
  /** The strongest effect a call may have (the highest of its steps' classes is what an operator should declare). */
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  /** Must equal the Flow version's input and output schema (canonical JSON) whenever the definition is enabled. */
  inputSchema: PublicSchema,
  outputSchema: PublicSchema,
  timeoutMs: z.number().int().min(MIN_DEFINITION_TIMEOUT_MS).max(MAX_DEFINITION_TIMEOUT_MS).default(30_000),
  flow: ToolDefinitionFlowRef,
});
export type ToolDefinitionSpec = z.infer<typeof ToolDefinitionSpec>;

/**
 * An entity tag: the definition's version in double quotes (`"3"`). Opaque to callers: send back what a read
 * returned; the quotes may be left out (shells strip them).
 */
export const ETag = z.string().regex(/^"?[1-9][0-9]{0,15}"?$/).meta({ description: 'Entity tag as returned by a read, e.g. "3".' });
export type ETag = z.infer<typeof ETag>;

/** A ToolDefinition as stored and read back, with its version and entity tag. */
export const ToolDefinition = ToolDefinitionSpec.extend({
  tenant: TenantId,
  workspace: WorkspaceId,
  /** The aggregate's version: it grows with every change (and is the materialized tool's version). */
  version: z.number().int().positive(),
  etag: ETag,
  createdBy: PrincipalId,
  createdAt: IsoDateTime,
  updatedBy: PrincipalId,
  updatedAt: IsoDateTime,
  /** Set on the reply of a delete: the definition no longer exists (a create may use its name again). */
  deleted: z.literal(true).optional(),
});
export type ToolDefinition = z.infer<typeof ToolDefinition>;

/** What happened to a ToolDefinition, as FlowRunner records it on the definition's subject. Every record names it. */
export const ToolDefinitionRecord = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ToolDefinitionCreated'), name: ToolDefinitionName, definition: ToolDefinitionSpec, ...recorded }),
  z.strictObject({ type: z.literal('ToolDefinitionUpdated'), name: ToolDefinitionName, definition: ToolDefinitionSpec, ...recorded }),
  z.strictObject({ type: z.literal('ToolDefinitionDeleted'), name: ToolDefinitionName, ...recorded }),
]);
export type ToolDefinitionRecord = z.infer<typeof ToolDefinitionRecord>;

/** The tool a definition materialized as in the registry, as the change left it. */
export const MaterializedTool = z.strictObject({
  toolId: ToolId,
  toolVersion: ToolVersion,
  active: z.boolean(),
  /** Why it is not active (Disabled, Retired …). */
  inactiveReason: z.string().max(64).optional(),
});
export type MaterializedTool = z.infer<typeof MaterializedTool>;

/** FlowRunner's management operations, as they appear in command subjects. */
export const flowOperations = {
  saveFlowDraft: 'saveFlowDraft',
  publishFlow: 'publishFlow',
  activateFlow: 'activateFlow',
  getFlow: 'getFlow',
  listFlows: 'listFlows',
  createDefinition: 'createDefinition',
  getDefinition: 'getDefinition',
  updateDefinition: 'updateDefinition',
  deleteDefinition: 'deleteDefinition',
  listDefinitions: 'listDefinitions',
} as const;

/**
 * Saves a Flow's draft: without `version`, the current draft (or, when there is none, a new draft numbered after the
 * newest version); with it, that draft. A Published version is never changed (CONFLICT).
 */
export const SaveFlowDraftRequest = z.strictObject({ flowId: FlowId, body: FlowDefinitionBody, version: FlowVersionNumber.optional() });
export type SaveFlowDraftRequest = z.infer<typeof SaveFlowDraftRequest>;

/** The draft as saved; `saved` is false when its body was already this one. */
export const SaveFlowDraftReply = z.strictObject({ flow: FlowVersion, saved: z.boolean() });
export type SaveFlowDraftReply = z.infer<typeof SaveFlowDraftReply>;

/**
 * Publishes a draft (default: the current one) after validating its whole body: schemas, every step's tool as an
 * active descriptor of the workspace, the mappings, retries on READ steps only. Publishing a Published version again
 * changes nothing.
 */
export const PublishFlowRequest = z.strictObject({ flowId: FlowId, version: FlowVersionNumber.optional() });
export type PublishFlowRequest = z.infer<typeof PublishFlowRequest>;

/** The published version; `published` is false when it already was. */
export const PublishFlowReply = z.strictObject({ flow: FlowVersion, published: z.boolean() });
export type PublishFlowReply = z.infer<typeof PublishFlowReply>;

/**
 * Makes a Published version the Active one. Refused (CONFLICT, naming the definition) while an enabled definition
 * following the active version has schemas that would not equal the version's.
 */
export const ActivateFlowRequest = z.strictObject({ flowId: FlowId, version: FlowVersionNumber });
export type ActivateFlowRequest = z.infer<typeof ActivateFlowRequest>;

/** The now Active version and the one it replaced; `activated` is false when it already was Active. */
export const ActivateFlowReply = z.strictObject({ flow: FlowVersion, previousVersion: FlowVersionNumber.optional(), activated: z.boolean() });
export type ActivateFlowReply = z.infer<typeof ActivateFlowReply>;

/** Reads one version of a Flow: the given one, else the Active one, else the newest. */
export const GetFlowRequest = z.strictObject({ flowId: FlowId, version: FlowVersionNumber.optional() });
export type GetFlowRequest = z.infer<typeof GetFlowRequest>;

/** The version read and every version of the Flow, oldest first. */
export const GetFlowReply = z.strictObject({ flow: FlowVersion, versions: z.array(FlowVersionSummary) });
export type GetFlowReply = z.infer<typeof GetFlowReply>;

/** Lists the workspace's Flows by id, a page at a time. */
export const ListFlowsRequest = z.strictObject({ limit: z.number().int().min(1).max(500).default(100), after: FlowId.optional() });
export type ListFlowsRequest = z.infer<typeof ListFlowsRequest>;

/** A page of Flows and the cursor of the next one. */
export const ListFlowsReply = z.strictObject({ flows: z.array(FlowSummary), next: FlowId.nullable() });
export type ListFlowsReply = z.infer<typeof ListFlowsReply>;

/**
 * Creates a definition if none of its name exists (CONFLICT, naming its entity tag, otherwise; the same definition
 * again is answered with the existing one). Saving it enabled resolves its Flow and requires equal schemas.
 */
export const CreateDefinitionRequest = z.strictObject({ definition: ToolDefinitionSpec });
export type CreateDefinitionRequest = z.infer<typeof CreateDefinitionRequest>;

/** A definition after a change, the entity tag to send with the next one, and the tool it materialized as. */
export const DefinitionReply = z.strictObject({ definition: ToolDefinition, etag: ETag, tool: MaterializedTool.optional() });
export type DefinitionReply = z.infer<typeof DefinitionReply>;

/** The created definition; `created` is false when the same definition already existed. */
export const CreateDefinitionReply = DefinitionReply.extend({ created: z.boolean() });
export type CreateDefinitionReply = z.infer<typeof CreateDefinitionReply>;

/** Names one definition of the workspace. */
export const GetDefinitionRequest = z.strictObject({ name: ToolDefinitionName });
export type GetDefinitionRequest = z.infer<typeof GetDefinitionRequest>;

/** One definition and its entity tag. */
export const GetDefinitionReply = z.strictObject({ definition: ToolDefinition, etag: ETag });
export type GetDefinitionReply = z.infer<typeof GetDefinitionReply>;

/**
 * Replaces a definition whole, only if `ifMatch` is its current entity tag (CONFLICT, naming the current one,
 * otherwise). Its name cannot change. Enabling it, or saving it enabled, requires equal schemas.
 */
export const UpdateDefinitionRequest = z.strictObject({ name: ToolDefinitionName, ifMatch: ETag, definition: ToolDefinitionSpec });
export type UpdateDefinitionRequest = z.infer<typeof UpdateDefinitionRequest>;

/** Deletes a definition, only if `ifMatch` is its current entity tag; its tool is retired. */
export const DeleteDefinitionRequest = z.strictObject({ name: ToolDefinitionName, ifMatch: ETag });
export type DeleteDefinitionRequest = z.infer<typeof DeleteDefinitionRequest>;

/** The definition as it was, marked deleted, and its retired tool (absent when none was published). */
export const DeleteDefinitionReply = DefinitionReply;
export type DeleteDefinitionReply = z.infer<typeof DeleteDefinitionReply>;

/** Lists the workspace's definitions by name, a page at a time; optionally those of one Flow, or only enabled ones. */
export const ListDefinitionsRequest = z.strictObject({
  flowId: FlowId.optional(),
  enabled: z.boolean().optional(),
  limit: z.number().int().min(1).max(500).default(100),
  after: ToolDefinitionName.optional(),
});
export type ListDefinitionsRequest = z.infer<typeof ListDefinitionsRequest>;

/** A page of definitions and the cursor of the next one. */
export const ListDefinitionsReply = z.strictObject({ definitions: z.array(ToolDefinition), next: ToolDefinitionName.nullable() });
export type ListDefinitionsReply = z.infer<typeof ListDefinitionsReply>;

/** Each operation's request and reply contract, for callers (`call(service, operation, schemas, body)`) and FlowRunner. */
export const flowCommandSchemas = {
  saveFlowDraft: { request: SaveFlowDraftRequest, reply: SaveFlowDraftReply },
  publishFlow: { request: PublishFlowRequest, reply: PublishFlowReply },
  activateFlow: { request: ActivateFlowRequest, reply: ActivateFlowReply },
  getFlow: { request: GetFlowRequest, reply: GetFlowReply },
  listFlows: { request: ListFlowsRequest, reply: ListFlowsReply },
  createDefinition: { request: CreateDefinitionRequest, reply: CreateDefinitionReply },
  getDefinition: { request: GetDefinitionRequest, reply: GetDefinitionReply },
  updateDefinition: { request: UpdateDefinitionRequest, reply: DefinitionReply },
  deleteDefinition: { request: DeleteDefinitionRequest, reply: DeleteDefinitionReply },
  listDefinitions: { request: ListDefinitionsRequest, reply: ListDefinitionsReply },
} as const satisfies Record<keyof typeof flowOperations, { request: z.ZodType; reply: z.ZodType }>;
