import { z } from 'zod';
import { kvKeyToken, descriptorKey } from './descriptor-read-model.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { McpServerState, McpToolName } from './mcp.js';
import { McpCapabilitiesSnapshot, McpServer } from './mcp-server-document.js';
import { ExternalId, PrincipalId, IsoDateTime, Sha256Hex, ToolId, ToolVersion, Uuid, type Scope } from './primitives.js';
import { DescriptorRetirementReason, InFlightPolicy } from './registry-events.js';
import { Release } from './release-document.js';
import type { StreamDefinition } from './streams.js';
import { ToolDescriptor } from './tool-descriptor-document.js';

// The registry's own record: the McpServer, ToolDescriptor and server-name aggregates as event streams, one subject
// per aggregate, in a stream only the registry reads and writes. Server records hold what only operators should see
// (commands, environment names, headers), so the public lifecycle events are derived from them and published apart.
//
//   tp.v1.registry.server.{tenant}.{workspace}.{serverId}
//   tp.v1.registry.descriptor.{tenant}.{workspace}.{b64url(toolId)}.{b64url(toolVersion)}
//   tp.v1.registry.name.{tenant}.{workspace}.{b64url(name)}
//   tp.v1.registry.release.{tenant}.{workspace}.{b64url(releaseId)}

const REGISTRY_SUBJECT_PREFIX = 'tp.v1.registry';

/** The registry's private stream (direct gets allowed: an aggregate is read in one round trip). */
export const registryStream = {
  name: 'TOOLPLANE_REGISTRY',
  description: 'McpServer, ToolDescriptor and server-name aggregates of the registry; private to the registry.',
  subjects: [`${REGISTRY_SUBJECT_PREFIX}.>`],
  retention: 'limits',
  storage: 'file',
  duplicateWindowMs: 2 * 60_000,
  maxMsgSize: MAX_MESSAGE_BYTES,
  // The record itself: kept until an operator sets a limit.
  maxAgeMs: 0,
  maxBytes: -1,
  allowDirect: true,
} as const satisfies StreamDefinition;

/** The kinds of aggregate the registry stream holds, as the second token of their subjects. */
export const RegistryAggregateKind = z.enum(['server', 'descriptor', 'name', 'release']);
export type RegistryAggregateKind = z.infer<typeof RegistryAggregateKind>;

/** The stream id (subject tail) of a server aggregate. */
export function serverStreamId(scope: Scope, serverId: string): string {
  return `${scope.tenant}.${scope.workspace}.${serverId}`;
}

/** The stream id (subject tail) of a descriptor version aggregate: the same as its read-model key. */
export function descriptorStreamId(scope: Scope, toolId: string, toolVersion: string): string {
  return descriptorKey(scope, toolId, toolVersion);
}

/** The stream id (subject tail) of the aggregate that keeps a live server name unique in its workspace. */
export function serverNameStreamId(scope: Scope, name: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(name)}`;
}

/** The stream id (subject tail) of a release aggregate. */
export function releaseStreamId(scope: Scope, releaseId: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(releaseId)}`;
}

/** The subject of a registry aggregate. */
export function registrySubject(kind: RegistryAggregateKind, streamId: string): string {
  return `${REGISTRY_SUBJECT_PREFIX}.${kind}.${streamId}`;
}

/** The kind and stream id of a registry subject; undefined for a subject outside the registry stream. */
export function parseRegistrySubject(subject: string): { readonly kind: RegistryAggregateKind; readonly streamId: string } | undefined {
  const [tp, v1, registry, kind, ...rest] = subject.split('.');
  if (`${tp}.${v1}.${registry}` !== REGISTRY_SUBJECT_PREFIX || rest.length === 0) return undefined;
  const parsed = RegistryAggregateKind.safeParse(kind);
  return parsed.success ? { kind: parsed.data, streamId: rest.join('.') } : undefined;
}

/** Who made a recorded change (absent on records of the registry's own watch before it named itself). */
const recordedBy = { actor: PrincipalId.optional() };

const Health = McpServer.shape.health;
const Exception = McpServer.shape.authenticationException.unwrap();

/** What happened to an McpServer, as the registry records it (the public events are derived from these). */
export const McpServerRecord = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ServerRegistered'), server: McpServer, ...recordedBy }),
  z.object({ type: z.literal('CapabilitiesDiscovered'), snapshot: McpCapabilitiesSnapshot, at: IsoDateTime, ...recordedBy }),
  z.object({
    type: z.literal('ServerStateChanged'),
    from: McpServerState,
    to: McpServerState,
    trigger: z.enum(['HandshakeAndDiscoverySucceeded', 'BindingsApproved', 'HandshakeFailed', 'HandshakeRecovered', 'Retire']),
    reason: z.string().max(1024).optional(),
    at: IsoDateTime,
    ...recordedBy,
  }),
  z.object({ type: z.literal('HealthRecorded'), health: Health, at: IsoDateTime, ...recordedBy }),
  z.object({ type: z.literal('AuthenticationExceptionGranted'), exception: Exception, at: IsoDateTime, ...recordedBy }),
  /**
   * A tool of the server was bound under a tool id: where the server's effects find its descriptor versions. On the
   * reserved provider of flow-backed tools, whose versions follow their ToolDefinitions' (not 1, 2, 3…), each
   * published version is recorded with its `toolVersion`.
   */
  z.object({ type: z.literal('ToolBindingRecorded'), toolName: McpToolName, toolId: ToolId, toolVersion: ToolVersion.optional(), at: IsoDateTime, ...recordedBy }),
]);
export type McpServerRecord = z.infer<typeof McpServerRecord>;

/** What happened to one ToolDescriptor version, as the registry records it. */
export const ToolDescriptorRecord = z.discriminatedUnion('type', [
  z.object({ type: z.literal('DescriptorBound'), descriptor: ToolDescriptor, ...recordedBy }),
  z.object({
    type: z.literal('DescriptorSuspended'),
    change: z.enum(['Changed', 'Removed']),
    previousDefinitionHash: Sha256Hex,
    definitionHash: Sha256Hex.optional(),
    at: IsoDateTime,
    ...recordedBy,
  }),
  z.object({ type: z.literal('DescriptorRetired'), reason: DescriptorRetirementReason, inFlight: InFlightPolicy.optional(), at: IsoDateTime, ...recordedBy }),
  z.object({ type: z.literal('DescriptorHealthChanged'), healthy: z.boolean(), at: IsoDateTime, ...recordedBy }),
]);
export type ToolDescriptorRecord = z.infer<typeof ToolDescriptorRecord>;

/** Who holds a live server name: the server registered under it and what its registration was (a retried register is the same one). */
export const ServerNameRecord = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ServerNameClaimed'), serverId: Uuid, registrationHash: Sha256Hex, at: IsoDateTime, ...recordedBy }),
]);
export type ServerNameRecord = z.infer<typeof ServerNameRecord>;

/**
 * What happened to a release, as the registry records it. `ReleaseServerRecorded`: a server was registered with it,
 * recorded before the server is: where a deprecation or revocation finds every descriptor of the release. Every
 * event names its release, so a listing folds a workspace's releases from their appends alone.
 */
export const ReleaseRecord = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ReleasePublished'), release: Release, ...recordedBy }),
  z.object({ type: z.literal('ReleaseServerRecorded'), releaseId: ExternalId, serverId: Uuid, at: IsoDateTime, ...recordedBy }),
  z.object({ type: z.literal('ReleaseDeprecated'), releaseId: ExternalId, inFlight: InFlightPolicy, reason: z.string().max(1024).optional(), at: IsoDateTime, ...recordedBy }),
  z.object({ type: z.literal('ReleaseRevoked'), releaseId: ExternalId, inFlight: InFlightPolicy, reason: z.string().max(1024).optional(), at: IsoDateTime, ...recordedBy }),
]);
export type ReleaseRecord = z.infer<typeof ReleaseRecord>;

/** The KV bucket of watch leases: which registry replica health-checks which server, until when. */
export const registryWatchBucket = {
  name: 'TOOLPLANE_REGISTRY_WATCH',
  description: 'Which registry replica watches which MCP server; a lease lapses at expiresAt.',
  history: 1,
  storage: 'file',
} as const;

/** A watch lease: its holder and the epoch milliseconds after which another replica may take it over. */
export const WatchLease = z.object({ holder: z.string().min(1).max(256), expiresAt: z.number().int().nonnegative() });
export type WatchLease = z.infer<typeof WatchLease>;
