import { z } from 'zod';
import { DataClassification, IdempotencySemantics, RiskClass, SandboxKind, SideEffectClass } from './classification.js';
import { McpAuthentication, McpDirection, McpServerName, McpServerState, McpToolName, McpTransport } from './mcp.js';
import { McpServer, McpServerSetting } from './mcp-server-document.js';
import { PublicationConflict } from './policy.js';
import { ConnectionRef, ExternalId, IsoDateTime, PrincipalId, Sha256Hex, ToolId, ToolVersion, Uuid, boundedText } from './primitives.js';
import { DescriptorRetirementReason, InFlightPolicy } from './registry-events.js';
import { Release, ReleaseState } from './release-document.js';
import { SandboxProfileRequest } from './sandbox.js';
import { KnowledgeScope, PromptTarget, RateLimit, RetryPolicy, ToolDescriptor } from './tool-descriptor-document.js';

// Request/reply contracts of the registry (`tp.v1.cmd.{tenant}.{workspace}.registry.{operation}`). Scope comes from
// the subject, never from a body. Who asks comes from the operator token in the Authorization header: a body's
// `actor` (or `grantedBy`) is accepted so that older clients are not refused, and ignored.

const PermissionName = z.string().regex(/^[!-~]{1,128}$/);
const Actor = PrincipalId.optional().meta({ description: "Ignored: the operator token's principal is recorded." });

/** The registry's request/reply operations, as they appear in command subjects. */
export const registryOperations = {
  register: 'register',
  discover: 'discover',
  bind: 'bind',
  bindResource: 'bindResource',
  bindPrompt: 'bindPrompt',
  unbind: 'unbind',
  retire: 'retire',
  grantException: 'grantException',
  getServer: 'getServer',
  listServers: 'listServers',
  listTools: 'listTools',
  getDescriptor: 'getDescriptor',
  publishFlowTool: 'publishFlowTool',
  retireFlowTool: 'retireFlowTool',
  publishRelease: 'publishRelease',
  deprecateRelease: 'deprecateRelease',
  revokeRelease: 'revokeRelease',
  getRelease: 'getRelease',
  listReleases: 'listReleases',
} as const;

/** Registers an MCP server (state Registered): exactly one of `stdio` and `endpointUrl`. */
export const RegisterServerRequest = z
  .strictObject({
    name: McpServerName,
    direction: McpDirection.default('Consumed'),
    stdio: z
      .strictObject({
        executable: z.string().min(1).max(1024),
        args: z.array(z.string().max(4096)).max(64).default([]),
        env: z.array(McpServerSetting).max(64).optional(),
      })
      .optional(),
    /**
     * The sandbox of a stdio server (default: no network, no mounts, default limits). Network `host` is recorded
     * with the operator who registers it.
     */
    sandbox: SandboxProfileRequest.optional(),
    endpointUrl: z.url({ protocol: /^https?$/ }).max(2048).optional(),
    headers: z.array(McpServerSetting).max(32).optional(),
    authentication: McpAuthentication.default('None'),
    /** The connection whose credential authenticates Toolplane to the server (OAuth2 client, workload identity). */
    connectionRef: ConnectionRef.optional(),
    governancePolicyRef: ExternalId.default('default'),
    /** The release the server belongs to: it must be Published (toolplane releases publish). */
    releaseId: ExternalId.optional(),
    actor: Actor,
  })
  .superRefine((request, ctx) => {
    if ((request.stdio === undefined) === (request.endpointUrl === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['stdio'], message: 'give exactly one of stdio and endpointUrl' });
    }
    if (request.stdio !== undefined && request.headers !== undefined) ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers apply to endpointUrl only' });
    if (request.stdio === undefined && request.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['sandbox'], message: 'a sandbox applies to stdio servers only' });
  });
export type RegisterServerRequest = z.infer<typeof RegisterServerRequest>;

/** A registered server: `created` is false when an identical registration of the name already existed. */
export const RegisterServerReply = z.strictObject({ server: McpServer, created: z.boolean() });
export type RegisterServerReply = z.infer<typeof RegisterServerReply>;

/** Names one server of the scope. */
export const ServerRequest = z.strictObject({ serverId: Uuid, actor: Actor });
export type ServerRequest = z.infer<typeof ServerRequest>;

/** A bound tool whose definition changed or disappeared during a discovery, and what that did to its descriptor. */
export const ToolDefinitionChange = z.strictObject({
  toolName: McpToolName,
  /** A bound resource (toolName is its URI) or prompt; absent for a tool. */
  capability: z.enum(['resource', 'prompt']).optional(),
  change: z.enum(['Changed', 'Removed']),
  previousDefinitionHash: Sha256Hex,
  definitionHash: Sha256Hex.optional(),
  toolId: ToolId,
  toolVersion: ToolVersion,
  /** DefinitionChanged: suspended until bound again; ToolRemoved: retired. */
  descriptorNow: DescriptorRetirementReason,
});
export type ToolDefinitionChange = z.infer<typeof ToolDefinitionChange>;

/** The server after discovery, and the bound tools whose definitions changed. */
export const DiscoverServerReply = z.strictObject({ server: McpServer, changes: z.array(ToolDefinitionChange) });
export type DiscoverServerReply = z.infer<typeof DiscoverServerReply>;

/**
 * Binds a discovered tool to a new ToolDescriptor version, pinning its current definition hash. The first
 * binding of a Verified server approves its bindings and makes it Active.
 */
export const BindToolRequest = z.strictObject({
  serverId: Uuid,
  toolName: McpToolName,
  /** The governed id; default `{server name}.{tool name}` with characters outside [A-Za-z0-9_-] replaced by `_`. */
  toolId: ToolId.optional(),
  /** The definition the operator reviewed: CONFLICT if the server now reports another one. */
  expectedDefinitionHash: Sha256Hex.optional(),
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  idempotency: IdempotencySemantics.default('NONE'),
  permissions: z.array(PermissionName).max(64).default([]),
  roles: z.array(PermissionName).max(64).default([]),
  secretDependencies: z.array(ConnectionRef).max(16).default([]),
  timeoutMs: z.number().int().positive().max(900_000).default(30_000),
  retryPolicy: RetryPolicy.optional(),
  rateLimits: z.array(RateLimit).max(8).default([]),
  auditRequirements: z.strictObject({ argumentsHash: z.boolean(), resultHash: z.boolean() }).default({ argumentsHash: true, resultHash: true }),
  /** Default from the transport: Process for stdio servers, None for remote endpoints. */
  sandboxKind: SandboxKind.optional(),
  commandPolicy: ToolDescriptor.shape.commandPolicy,
  actor: Actor,
});
export type BindToolRequest = z.infer<typeof BindToolRequest>;

/**
 * The descriptor a bind made (or the identical one that was already active: `created` false), and the agent profiles
 * of the workspace that list the tool but may not use it at its class or risk (model rule D21), as the tool adapter
 * found them after the bind; `conflictsUnknown` says why they could not be checked (the bind stands either way).
 */
export const BindToolReply = z.strictObject({
  descriptor: ToolDescriptor,
  created: z.boolean(),
  serverState: McpServerState,
  conflicts: z.array(PublicationConflict).max(4096).optional(),
  conflictsUnknown: boundedText(1024).optional(),
});
export type BindToolReply = z.infer<typeof BindToolReply>;

/** What every read binding (a resource or a prompt) may declare besides its own fields; the class is always READ. */
const readBindingFields = {
  serverId: Uuid,
  /** The definition the operator reviewed: CONFLICT if the server now reports another one. */
  expectedDefinitionHash: Sha256Hex.optional(),
  riskClass: RiskClass.default('LOW'),
  permissions: z.array(PermissionName).max(64).default([]),
  roles: z.array(PermissionName).max(64).default([]),
  secretDependencies: z.array(ConnectionRef).max(16).default([]),
  timeoutMs: z.number().int().positive().max(900_000).default(30_000),
  rateLimits: z.array(RateLimit).max(8).default([]),
  auditRequirements: z.strictObject({ argumentsHash: z.boolean(), resultHash: z.boolean() }).default({ argumentsHash: true, resultHash: true }),
  actor: Actor,
};

/**
 * Binds a discovered resource, or resource template, to a descriptor (read through the pipeline with resources/read),
 * pinning its definition hash: it maps the resource to a knowledge source with a scope and a data classification.
 */
export const BindResourceRequest = z
  .strictObject({
    /** The resource's URI as discovered (at most 256 characters can be bound); or else `uriTemplate`. */
    uri: McpToolName.optional(),
    /**
     * A discovered resource template's RFC 6570 `uriTemplate`, as the server lists it (at most 256 characters): the
     * descriptor's arguments are the template's variables, and a read expands the template with them.
     */
    uriTemplate: McpToolName.optional(),
    /** The governed id; default `{server name}.{resource name}` with characters outside [A-Za-z0-9_-] replaced by `_`. */
    resourceId: ToolId.optional(),
    knowledgeSource: ExternalId,
    scope: KnowledgeScope.default('WORKSPACE'),
    classification: DataClassification,
    ...readBindingFields,
  })
  .refine((request) => (request.uri === undefined) !== (request.uriTemplate === undefined), {
    message: 'a resource binding names either a uri or a uriTemplate, not both',
    path: ['uri'],
  });
export type BindResourceRequest = z.infer<typeof BindResourceRequest>;

/** Binds a discovered prompt to a descriptor (fetched through the pipeline with prompts/get), mapped to a skill or a workflow step. */
export const BindPromptRequest = z.strictObject({
  promptName: McpToolName,
  /** The governed id; default `{server name}.{prompt name}` like a tool's. */
  promptId: ToolId.optional(),
  target: PromptTarget,
  ...readBindingFields,
});
export type BindPromptRequest = z.infer<typeof BindPromptRequest>;

/** Unbinds a tool, resource (by URI) or prompt: its active descriptor is retired (reason Unbound). */
export const UnbindToolRequest = z.strictObject({ serverId: Uuid, toolName: McpToolName, capability: z.enum(['tool', 'resource', 'prompt']).default('tool'), actor: Actor });
export type UnbindToolRequest = z.infer<typeof UnbindToolRequest>;

/** The descriptor as the unbind left it (inactive). */
export const UnbindToolReply = z.strictObject({ descriptor: ToolDescriptor });
export type UnbindToolReply = z.infer<typeof UnbindToolReply>;

/** Retires a server (from Active or Degraded); every descriptor bound to it is retired with it. */
export const RetireServerRequest = z.strictObject({ serverId: Uuid, reason: boundedText(1024).optional(), actor: Actor });
export type RetireServerRequest = z.infer<typeof RetireServerRequest>;

/** The retired server and how many descriptors retired with it. */
export const RetireServerReply = z.strictObject({ server: McpServer, retiredDescriptors: z.number().int().nonnegative() });
export type RetireServerReply = z.infer<typeof RetireServerReply>;

/**
 * Records a platform admin's exception letting a remote server without acceptable authentication become (or
 * stay) Active until `expiresAt`.
 */
export const GrantAuthenticationExceptionRequest = z.strictObject({
  serverId: Uuid,
  reason: boundedText(1024),
  expiresAt: IsoDateTime,
  /** Ignored: the platform admin whose operator token asks is recorded as the grantor. */
  grantedBy: PrincipalId.optional().meta({ description: "Ignored: the operator token's principal is recorded." }),
});
export type GrantAuthenticationExceptionRequest = z.infer<typeof GrantAuthenticationExceptionRequest>;

/** One server's document. */
export const ServerReply = z.strictObject({ server: McpServer });
export type ServerReply = z.infer<typeof ServerReply>;

/** A server in a listing: identity, reachability, state, capability counts and health. */
export const McpServerSummary = z.strictObject({
  serverId: Uuid,
  name: McpServerName,
  direction: McpDirection,
  transport: McpTransport,
  /** The endpoint URL, or the command line of a stdio server. */
  target: z.string().max(8192),
  authentication: McpAuthentication,
  state: McpServerState,
  toolCount: z.number().int().nonnegative(),
  resourceCount: z.number().int().nonnegative(),
  promptCount: z.number().int().nonnegative(),
  consecutiveFailures: z.number().int().nonnegative(),
  lastHandshakeAt: IsoDateTime.optional(),
  version: z.number().int().positive(),
});
export type McpServerSummary = z.infer<typeof McpServerSummary>;

/** Lists the scope's servers, oldest first, a page at a time. */
export const ListServersRequest = z.strictObject({
  state: McpServerState.optional(),
  limit: z.number().int().min(1).max(500).default(100),
  after: z.string().max(1024).optional(),
});
export type ListServersRequest = z.infer<typeof ListServersRequest>;

/** A page of servers and the cursor of the next one. */
export const ListServersReply = z.strictObject({ servers: z.array(McpServerSummary), next: z.string().nullable() });
export type ListServersReply = z.infer<typeof ListServersReply>;

/**
 * Where a discovered tool stands: Unbound (listed, not invocable), Bound (invocable), Unhealthy (bound, but
 * its server is Degraded), Suspended (its definition changed after binding; invocable again only once re-bound).
 */
export const ToolBindingState = z.enum(['Unbound', 'Bound', 'Unhealthy', 'Suspended']);
export type ToolBindingState = z.infer<typeof ToolBindingState>;

/** A discovered tool with its binding. */
export const DiscoveredToolView = z.strictObject({
  serverId: Uuid,
  serverName: McpServerName,
  serverState: McpServerState,
  toolName: McpToolName,
  title: z.string().max(256).optional(),
  description: z.string().max(16_384).optional(),
  definitionHash: Sha256Hex,
  binding: ToolBindingState,
  /** Whether a call of it would be accepted now: bound, active, healthy, on an Active server. */
  invocable: z.boolean(),
  toolId: ToolId.optional(),
  toolVersion: ToolVersion.optional(),
  sideEffectClass: SideEffectClass.optional(),
  riskClass: RiskClass.optional(),
  /** The definition the binding pinned, when it differs from the discovered one (a suspended binding). */
  boundDefinitionHash: Sha256Hex.optional(),
});
export type DiscoveredToolView = z.infer<typeof DiscoveredToolView>;

/**
 * A discovered resource (named by its URI), resource template (by its uriTemplate) or prompt (by its name) with its
 * binding, like a discovered tool's: listed whether bound or not, readable only when bound. `definitionHash` is absent
 * for an item discovered before resources and prompts were bindable (discover the server again).
 */
export const DiscoveredReadView = z.strictObject({
  serverId: Uuid,
  serverName: McpServerName,
  serverState: McpServerState,
  capability: z.enum(['resource', 'prompt']),
  name: z.string().min(1).max(2048),
  title: z.string().max(256).optional(),
  description: z.string().max(16_384).optional(),
  definitionHash: Sha256Hex.optional(),
  binding: ToolBindingState,
  /** Whether a read of it would be accepted now: bound, active, healthy, on an Active server. */
  invocable: z.boolean(),
  /** The governed id it is read under (a resource id or prompt id). */
  toolId: ToolId.optional(),
  toolVersion: ToolVersion.optional(),
  /** A bound resource's classification, and a bound prompt's target. */
  classification: DataClassification.optional(),
  target: PromptTarget.optional(),
  boundDefinitionHash: Sha256Hex.optional(),
});
export type DiscoveredReadView = z.infer<typeof DiscoveredReadView>;

/** Lists discovered tools of one server, or of every server of the scope that is not retired. */
export const ListToolsRequest = z.strictObject({ serverId: Uuid.optional() });
export type ListToolsRequest = z.infer<typeof ListToolsRequest>;

/** Discovered tools, resources, resource templates (capability `resource`, named by their uriTemplate) and prompts with their binding state. */
export const ListToolsReply = z.strictObject({
  tools: z.array(DiscoveredToolView),
  resources: z.array(DiscoveredReadView),
  resourceTemplates: z.array(DiscoveredReadView).optional(),
  prompts: z.array(DiscoveredReadView),
});
export type ListToolsReply = z.infer<typeof ListToolsReply>;

/** Reads one descriptor: an exact version, or (without one) the newest active version. */
export const GetDescriptorRequest = z.strictObject({ toolId: ToolId, toolVersion: ToolVersion.optional() });
export type GetDescriptorRequest = z.infer<typeof GetDescriptorRequest>;

/** One descriptor. */
export const GetDescriptorReply = z.strictObject({ descriptor: ToolDescriptor });
export type GetDescriptorReply = z.infer<typeof GetDescriptorReply>;

/**
 * Publishes a ToolDefinition as the flow-backed tool `flows.<definitionName>` (FlowRunner's materialization of a
 * saved, enabled or disabled definition): descriptor version `String(definitionVersion)` of the workspace's reserved
 * provider (created on the first publication), superseding an older active version. The same version with the same
 * fields again changes nothing (`created` false); `enabled` false publishes it inactive, reason Disabled.
 */
export const PublishFlowToolRequest = z.strictObject({
  definitionName: ExternalId,
  mcpName: McpToolName,
  title: z.string().max(256).optional(),
  description: z.string().max(16_384),
  inputSchemaJson: z.string().max(262_144),
  outputSchemaJson: z.string().max(262_144),
  sideEffectClass: SideEffectClass,
  riskClass: RiskClass,
  /** Every call waits for a human approval, whatever the tenant policy says. */
  approvalRequired: z.boolean(),
  timeoutMs: z.number().int().min(1_000).max(900_000),
  enabled: z.boolean(),
  /** The ToolDefinition's version: the descriptor's tool version, so a newer definition supersedes an older one. */
  definitionVersion: z.number().int().positive(),
});
export type PublishFlowToolRequest = z.infer<typeof PublishFlowToolRequest>;

/** The flow tool's descriptor as published (or as it was already: `created` false). */
export const PublishFlowToolReply = z.strictObject({ descriptor: ToolDescriptor, created: z.boolean() });
export type PublishFlowToolReply = z.infer<typeof PublishFlowToolReply>;

/** Retires a flow-backed tool (its ToolDefinition was deleted): its active or disabled version ends, reason Retired. */
export const RetireFlowToolRequest = z.strictObject({ definitionName: ExternalId });
export type RetireFlowToolRequest = z.infer<typeof RetireFlowToolRequest>;

/** The retired descriptor; absent when nothing was ever published for the definition. */
export const RetireFlowToolReply = z.strictObject({ descriptor: ToolDescriptor.optional() });
export type RetireFlowToolReply = z.infer<typeof RetireFlowToolReply>;

/** Publishes a release of the workspace (Published); publishing a Published release again changes nothing. */
export const PublishReleaseRequest = z.strictObject({ releaseId: ExternalId, actor: Actor });
export type PublishReleaseRequest = z.infer<typeof PublishReleaseRequest>;

/** The release as published (or as it was already: `created` false). */
export const PublishReleaseReply = z.strictObject({ release: Release, created: z.boolean() });
export type PublishReleaseReply = z.infer<typeof PublishReleaseReply>;

/**
 * Deprecates (from Published) or revokes (from Published or Deprecated) a release: every active descriptor of it in
 * the workspace is retired (ReleaseDeprecated, ReleaseRevoked). `inFlight` defaults to FINISH for a deprecation and
 * CANCEL_PENDING for a revocation. The same change again completes a retirement that was interrupted.
 */
export const ChangeReleaseRequest = z.strictObject({ releaseId: ExternalId, inFlight: InFlightPolicy.optional(), reason: boundedText(1024).optional(), actor: Actor });
export type ChangeReleaseRequest = z.infer<typeof ChangeReleaseRequest>;

/** The release after the change, and how many descriptors this change retired. */
export const ChangeReleaseReply = z.strictObject({ release: Release, retiredDescriptors: z.number().int().nonnegative() });
export type ChangeReleaseReply = z.infer<typeof ChangeReleaseReply>;

/** Names one release of the workspace. */
export const GetReleaseRequest = z.strictObject({ releaseId: ExternalId });
export type GetReleaseRequest = z.infer<typeof GetReleaseRequest>;

/** One release. */
export const ReleaseReply = z.strictObject({ release: Release });
export type ReleaseReply = z.infer<typeof ReleaseReply>;

/** Lists the workspace's releases by id, a page at a time. */
export const ListReleasesRequest = z.strictObject({
  state: ReleaseState.optional(),
  limit: z.number().int().min(1).max(500).default(100),
  after: z.string().max(1024).optional(),
});
export type ListReleasesRequest = z.infer<typeof ListReleasesRequest>;

/** A page of releases and the cursor of the next one. */
export const ListReleasesReply = z.strictObject({ releases: z.array(Release), next: z.string().nullable() });
export type ListReleasesReply = z.infer<typeof ListReleasesReply>;

/** Each operation's request and reply contract, for callers (`call(service, operation, schemas, body)`) and the registry. */
export const registryCommandSchemas = {
  register: { request: RegisterServerRequest, reply: RegisterServerReply },
  discover: { request: ServerRequest, reply: DiscoverServerReply },
  bind: { request: BindToolRequest, reply: BindToolReply },
  bindResource: { request: BindResourceRequest, reply: BindToolReply },
  bindPrompt: { request: BindPromptRequest, reply: BindToolReply },
  unbind: { request: UnbindToolRequest, reply: UnbindToolReply },
  retire: { request: RetireServerRequest, reply: RetireServerReply },
  grantException: { request: GrantAuthenticationExceptionRequest, reply: ServerReply },
  getServer: { request: ServerRequest, reply: ServerReply },
  listServers: { request: ListServersRequest, reply: ListServersReply },
  listTools: { request: ListToolsRequest, reply: ListToolsReply },
  getDescriptor: { request: GetDescriptorRequest, reply: GetDescriptorReply },
  publishFlowTool: { request: PublishFlowToolRequest, reply: PublishFlowToolReply },
  retireFlowTool: { request: RetireFlowToolRequest, reply: RetireFlowToolReply },
  publishRelease: { request: PublishReleaseRequest, reply: PublishReleaseReply },
  deprecateRelease: { request: ChangeReleaseRequest, reply: ChangeReleaseReply },
  revokeRelease: { request: ChangeReleaseRequest, reply: ChangeReleaseReply },
  getRelease: { request: GetReleaseRequest, reply: ReleaseReply },
  listReleases: { request: ListReleasesRequest, reply: ListReleasesReply },
} as const satisfies Record<keyof typeof registryOperations, { request: z.ZodType; reply: z.ZodType }>;
