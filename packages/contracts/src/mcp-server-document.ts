import { z } from 'zod';
import { McpAuthentication, McpDirection, McpServerName, McpServerState, McpToolName, McpTransport } from './mcp.js';
import { SandboxProfile } from './sandbox.js';
import { ConnectionRef, ExternalId, IsoDateTime, PrincipalId, Sha256Hex, TenantId, Uuid, WorkspaceId, boundedText } from './primitives.js';

// Stored documents are non-strict (unknown keys such as `_id` are stripped when read) and contain no free-form
// maps: MongoDB and FerretDB both refuse some `$`-prefixed or dotted keys, so free-form JSON is kept as JSON text.

/** JSON text of a free-form JSON value (a JSON Schema, annotations) as the server sent it, bounded. */
const JsonText = z.string().max(262_144);

/** A tool as discovered on a server, with the hash of its definition (name, description, schemas, annotations). */
export const McpDiscoveredTool = z.object({
  name: McpToolName,
  title: z.string().max(256).optional(),
  description: z.string().max(16_384).optional(),
  inputSchemaJson: JsonText,
  outputSchemaJson: JsonText.optional(),
  annotationsJson: JsonText.optional(),
  /** What a binding pins: if it changes, the binding is suspended until re-approved. */
  definitionHash: Sha256Hex,
});
export type McpDiscoveredTool = z.infer<typeof McpDiscoveredTool>;

/**
 * A resource as discovered on a server. `definitionHash` (over uri, name, title, description and MIME type) is what a
 * resource binding pins; a snapshot recorded before resources were bindable has none, and its resources are bound
 * only after the next discovery.
 */
export const McpDiscoveredResource = z.object({
  uri: z.string().min(1).max(2048),
  name: z.string().max(256),
  title: z.string().max(256).optional(),
  mimeType: z.string().max(256).optional(),
  description: z.string().max(4096).optional(),
  definitionHash: Sha256Hex.optional(),
});
export type McpDiscoveredResource = z.infer<typeof McpDiscoveredResource>;

/**
 * A resource template (RFC 6570 `uriTemplate`) as discovered on a server. `definitionHash` (over uriTemplate, name,
 * title, description and MIME type) is what a binding of the template pins, as for a resource.
 */
export const McpDiscoveredResourceTemplate = z.object({
  uriTemplate: z.string().min(1).max(2048),
  name: z.string().max(256),
  title: z.string().max(256).optional(),
  mimeType: z.string().max(256).optional(),
  description: z.string().max(4096).optional(),
  definitionHash: Sha256Hex,
});
export type McpDiscoveredResourceTemplate = z.infer<typeof McpDiscoveredResourceTemplate>;

/** A prompt as discovered on a server, with its arguments; `definitionHash` (over all of it) as for resources. */
export const McpDiscoveredPrompt = z.object({
  name: z.string().min(1).max(256),
  title: z.string().max(256).optional(),
  description: z.string().max(4096).optional(),
  arguments: z.array(z.object({ name: z.string().min(1).max(128), description: z.string().max(1024).optional(), required: z.boolean().optional() })).max(64).optional(),
  definitionHash: Sha256Hex.optional(),
});
export type McpDiscoveredPrompt = z.infer<typeof McpDiscoveredPrompt>;

/**
 * A setting passed to a server (an environment variable of a stdio command, a header of HTTP requests): either
 * a plain value, which must not be a credential, or a connection whose secret the broker supplies at connect time.
 */
export const McpServerSetting = z.union([
  z.strictObject({ name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,127}$/), value: z.string().max(4096) }),
  z.strictObject({ name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,127}$/), connectionRef: ConnectionRef }),
]);
export type McpServerSetting = z.infer<typeof McpServerSetting>;

/** What handshake and discovery found on a server. */
export const McpCapabilitiesSnapshot = z.object({
  protocolVersion: z.string().min(1).max(32),
  serverInfo: z.object({ name: z.string().max(256), version: z.string().max(64) }),
  tools: z.array(McpDiscoveredTool).max(1000),
  /**
   * Tools the server lists whose definitions the registry cannot store or pin (nested deeper than the JSON depth
   * bound, a field over its size bound): left out of `tools`, so they can never be bound, with the reason. One
   * unusable tool does not make the rest of the server unusable.
   */
  refusedTools: z.array(z.object({ name: z.string().max(256), reason: z.string().max(1024) })).max(1000).optional(),
  resources: z.array(McpDiscoveredResource).max(1000),
  /** The server's resource templates; absent from a snapshot recorded before templates were discovered. */
  resourceTemplates: z.array(McpDiscoveredResourceTemplate).max(1000).optional(),
  prompts: z.array(McpDiscoveredPrompt).max(1000),
  snapshotHash: Sha256Hex,
  discoveredAt: IsoDateTime,
});
export type McpCapabilitiesSnapshot = z.infer<typeof McpCapabilitiesSnapshot>;

/**
 * One registered MCP server (collection `mcp_servers`): how to reach it, how it authenticates, its state,
 * discovered capabilities and health. It holds connection references, never a secret.
 */
export const McpServer = z
  .object({
    serverId: Uuid,
    tenant: TenantId,
    workspace: WorkspaceId,
    name: McpServerName,
    direction: McpDirection,
    transport: McpTransport,
    /** The Streamable HTTP endpoint (transport StreamableHttp). */
    endpointUrl: z.url().max(2048).optional(),
    /** The command spawned in a sandbox (transport Stdio). */
    command: z
      .object({
        executable: z.string().min(1).max(1024),
        args: z.array(z.string().max(4096)).max(64),
        /** The only environment the process gets besides a minimal base (no secret values: connections only). */
        env: z.array(McpServerSetting).max(64).optional(),
      })
      .optional(),
    /** The sandbox a stdio server runs in (transport Stdio); absent: DEFAULT_SANDBOX_PROFILE. */
    sandbox: SandboxProfile.optional(),
    /** Extra headers of every HTTP request to the endpoint (transport StreamableHttp); credentials only as connections. */
    headers: z.array(McpServerSetting).max(32).optional(),
    /** The connection whose credential the secret broker leases to authenticate to the server. */
    connectionRef: ConnectionRef.optional(),
    authentication: McpAuthentication,
    /** A platform admin's expiring permission for a remote server without authentication to become Active. */
    authenticationException: z.object({ grantedBy: PrincipalId, reason: boundedText(1024), grantedAt: IsoDateTime, expiresAt: IsoDateTime }).optional(),
    /** The policy bundle applied to every call through this server. */
    governancePolicyRef: ExternalId,
    state: McpServerState,
    /** Published asset release, when the server is a released asset. */
    releaseId: ExternalId.optional(),
    protocolVersion: z.string().min(1).max(32).optional(),
    lastHandshakeAt: IsoDateTime.optional(),
    capabilities: McpCapabilitiesSnapshot.optional(),
    health: z.object({ consecutiveFailures: z.number().int().nonnegative(), lastCheckedAt: IsoDateTime.optional(), lastError: boundedText(1024).optional() }),
    registeredBy: PrincipalId,
    registeredAt: IsoDateTime,
    updatedAt: IsoDateTime,
    /** Incremented by every change; the compare-and-set guard. */
    version: z.number().int().positive(),
  })
  .superRefine((server, ctx) => {
    if (server.transport === 'Stdio' && server.command === undefined) ctx.addIssue({ code: 'custom', path: ['command'], message: 'a Stdio server has a command' });
    if (server.transport !== 'Stdio' && server.sandbox !== undefined) ctx.addIssue({ code: 'custom', path: ['sandbox'], message: 'a sandbox applies to Stdio servers only' });
    if (server.transport === 'StreamableHttp' && server.endpointUrl === undefined) {
      ctx.addIssue({ code: 'custom', path: ['endpointUrl'], message: 'a StreamableHttp server has an endpoint URL' });
    }
  });
export type McpServer = z.infer<typeof McpServer>;
