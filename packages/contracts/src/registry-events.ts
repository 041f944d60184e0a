import { z } from 'zod';
import { RiskClass, SideEffectClass, ToolKind } from './classification.js';
import { EventMetadata, defineEvent } from './event-metadata.js';
import { ExternalId, Sha256Hex, ToolId, ToolVersion, Uuid, boundedText } from './primitives.js';
import { McpAuthentication, McpDirection, McpServerName, McpServerState, McpToolName, McpTransport } from './mcp.js';

/** An MCP server was registered (state Registered); nothing of it is invocable yet. */
export const McpServerRegistered = defineEvent(
  'McpServerRegistered',
  EventMetadata,
  z.strictObject({
    serverId: Uuid,
    name: McpServerName,
    direction: McpDirection,
    transport: McpTransport,
    authentication: McpAuthentication,
    governancePolicyRef: ExternalId,
  }),
  'An MCP server was registered (state Registered).',
);
export type McpServerRegistered = z.infer<typeof McpServerRegistered>;

/** An MCP server moved between states; `version` is the server document's version after the change. */
export const McpServerStateChanged = defineEvent(
  'McpServerStateChanged',
  EventMetadata,
  z.strictObject({ serverId: Uuid, from: McpServerState, to: McpServerState, reason: boundedText(1024).optional(), version: z.number().int().positive() }),
  'An MCP server moved from one state to another.',
);
export type McpServerStateChanged = z.infer<typeof McpServerStateChanged>;

/** Handshake and discovery succeeded; what was found is in the server document's capabilities snapshot. */
export const McpCapabilitiesDiscovered = defineEvent(
  'McpCapabilitiesDiscovered',
  EventMetadata,
  z.strictObject({
    serverId: Uuid,
    protocolVersion: z.string().min(1).max(32),
    /** Hash of the whole capabilities snapshot; unchanged discoveries have the same one. */
    snapshotHash: Sha256Hex,
    /** Counts only: the snapshot itself (names, schemas, definition hashes) is in the server document. */
    toolCount: z.number().int().nonnegative(),
    resourceCount: z.number().int().nonnegative(),
    promptCount: z.number().int().nonnegative(),
  }),
  'Handshake and discovery of an MCP server succeeded.',
);
export type McpCapabilitiesDiscovered = z.infer<typeof McpCapabilitiesDiscovered>;

/**
 * A bound tool's definition changed on its server, or the tool disappeared: the binding is suspended (its
 * descriptor inactive) until an operator binds it again, and pending approvals for the old version are void.
 */
export const McpToolDefinitionChanged = defineEvent(
  'McpToolDefinitionChanged',
  EventMetadata,
  z.strictObject({
    serverId: Uuid,
    toolName: McpToolName,
    /** A bound resource (toolName is its URI) or prompt changed; absent for a tool. */
    capability: z.enum(['resource', 'prompt']).optional(),
    change: z.enum(['Changed', 'Removed']),
    previousDefinitionHash: Sha256Hex,
    /** Absent when the tool was removed. */
    definitionHash: Sha256Hex.optional(),
    /** The descriptor the change suspends, if the tool was bound. */
    toolId: ToolId.optional(),
    toolVersion: ToolVersion.optional(),
  }),
  "A bound tool's definition changed or disappeared on its server; its binding is suspended.",
);
export type McpToolDefinitionChanged = z.infer<typeof McpToolDefinitionChanged>;

/** A tool version became invocable: bound, with its declared classes and pinned definition. */
export const ToolDescriptorActivated = defineEvent(
  'ToolDescriptorActivated',
  EventMetadata,
  z.strictObject({
    toolId: ToolId,
    toolVersion: ToolVersion,
    kind: ToolKind,
    /** A bound resource or prompt; absent for a tool. */
    capability: z.enum(['resource', 'prompt']).optional(),
    sideEffectClass: SideEffectClass,
    riskClass: RiskClass,
    mcpServerId: Uuid.optional(),
    definitionHash: Sha256Hex,
  }),
  'A tool version became invocable.',
);
export type ToolDescriptorActivated = z.infer<typeof ToolDescriptorActivated>;

/**
 * Why a descriptor stopped being invocable. Disabled: a flow tool published from a disabled ToolDefinition (listed,
 * not callable); Retired: a flow tool whose ToolDefinition was deleted.
 */
export const DescriptorRetirementReason = z.enum(['Unbound', 'DefinitionChanged', 'ToolRemoved', 'ServerRetired', 'Superseded', 'Disabled', 'Retired', 'ReleaseDeprecated', 'ReleaseRevoked']);
export type DescriptorRetirementReason = z.infer<typeof DescriptorRetirementReason>;

/**
 * What a release's deprecation or revocation does to the calls of its tools already accepted: FINISH lets them end
 * as they would have (a call parked for approval may still be approved and run); CANCEL_PENDING ends those not yet
 * executing (a parked call's approval is void) and lets only those already executing finish.
 */
export const InFlightPolicy = z.enum(['FINISH', 'CANCEL_PENDING']);
export type InFlightPolicy = z.infer<typeof InFlightPolicy>;

/**
 * A tool version stopped being invocable: new calls of it are refused. Calls already accepted are refused too, unless
 * a release retired it with `inFlight` FINISH. A revocation retires a version its release's deprecation retired
 * again, with the revocation's policy.
 */
export const ToolDescriptorRetired = defineEvent(
  'ToolDescriptorRetired',
  EventMetadata,
  z.strictObject({
    toolId: ToolId,
    toolVersion: ToolVersion,
    reason: DescriptorRetirementReason,
    /** The release whose deprecation or revocation retired it. */
    releaseId: ExternalId.optional(),
    /** The in-flight policy of that release change (only on ReleaseDeprecated and ReleaseRevoked). */
    inFlight: InFlightPolicy.optional(),
  }),
  'A tool version stopped being invocable.',
);
export type ToolDescriptorRetired = z.infer<typeof ToolDescriptorRetired>;

/** A release was published: servers may be registered with it, and their tools bound. */
export const ReleasePublished = defineEvent('ReleasePublished', EventMetadata, z.strictObject({ releaseId: ExternalId, version: z.number().int().positive() }), 'A release was published.');
export type ReleasePublished = z.infer<typeof ReleasePublished>;

const ReleaseChange = z.strictObject({ releaseId: ExternalId, inFlight: InFlightPolicy, reason: boundedText(1024).optional(), version: z.number().int().positive() });

/** A release was deprecated: its tools are retired (ReleaseDeprecated), with the in-flight policy named. */
export const ReleaseDeprecated = defineEvent('ReleaseDeprecated', EventMetadata, ReleaseChange, 'A release was deprecated; its tools are retired.');
export type ReleaseDeprecated = z.infer<typeof ReleaseDeprecated>;

/** A release was revoked (final): its tools are retired (ReleaseRevoked), with the in-flight policy named. */
export const ReleaseRevoked = defineEvent('ReleaseRevoked', EventMetadata, ReleaseChange, 'A release was revoked; its tools are retired.');
export type ReleaseRevoked = z.infer<typeof ReleaseRevoked>;
