import {
  ToolplaneError,
  compareToolVersions,
  type GetDescriptorRequest,
  type ListServersReply,
  type ListServersRequest,
  type ListToolsReply,
  type McpServer,
  type McpServerSummary,
  type Scope,
  type ToolDescriptor,
} from '@toolplane/contracts';
import { findPage } from '@toolplane/store';
import type { StoredDescriptor, StoredServer } from '../collections.js';
import { toolViews } from '../core/binding-view.js';
import { toDescriptor, toServer, type RegistryContext } from './registry-context.js';
import { loadServer } from './server-commands.js';

/** How a server is listed. */
export function summarize(server: McpServer): McpServerSummary {
  const target = server.transport === 'Stdio' ? [server.command?.executable ?? '', ...(server.command?.args ?? [])].join(' ') : (server.endpointUrl ?? '');
  return {
    serverId: server.serverId,
    name: server.name,
    direction: server.direction,
    transport: server.transport,
    target: target.slice(0, 8192),
    authentication: server.authentication,
    state: server.state,
    toolCount: server.capabilities?.tools.length ?? 0,
    resourceCount: server.capabilities?.resources.length ?? 0,
    promptCount: server.capabilities?.prompts.length ?? 0,
    consecutiveFailures: server.health.consecutiveFailures,
    ...(server.lastHandshakeAt === undefined ? {} : { lastHandshakeAt: server.lastHandshakeAt }),
    version: server.version,
  };
}

/** A page of the scope's servers, oldest registration first. */
export async function listServers(context: RegistryContext, scope: Scope, request: ListServersRequest, signal?: AbortSignal): Promise<ListServersReply> {
  const page = await findPage(context.servers, {
    filter: { tenant: scope.tenant, workspace: scope.workspace, ...(request.state === undefined ? {} : { state: request.state }) },
    sortBy: 'registeredAt',
    limit: request.limit,
    ...(request.after === undefined ? {} : { after: request.after }),
    ...(signal ? { signal } : {}),
  });
  return { servers: page.items.map((document) => summarize(toServer(document as StoredServer))), next: page.next };
}

const maxServersListed = 500;

/** The discovered tools of one server, or of every server of the scope that is not retired, with their binding state. */
export async function listTools(context: RegistryContext, scope: Scope, serverId: string | undefined, signal?: AbortSignal): Promise<ListToolsReply> {
  const servers =
    serverId === undefined
      ? (await context.servers.raw
          .find({ tenant: scope.tenant, workspace: scope.workspace, state: { $ne: 'Retired' } }, { signal, sort: { registeredAt: 1 }, limit: maxServersListed })
          .toArray()).map((document) => toServer(document as StoredServer))
      : [await loadServer(context, scope, serverId, signal)];
  if (servers.length === 0) return { tools: [] };
  const descriptors = (
    await context.descriptors.raw.find({ tenant: scope.tenant, workspace: scope.workspace, mcpServerId: { $in: servers.map((server) => server.serverId) } }, { signal }).toArray()
  ).map((document) => toDescriptor(document as StoredDescriptor));
  return { tools: servers.flatMap((server) => toolViews(server, descriptors)) };
}

/** One descriptor version, or the newest active one; NOT_FOUND otherwise. */
export async function getDescriptor(context: RegistryContext, scope: Scope, request: GetDescriptorRequest, signal?: AbortSignal): Promise<ToolDescriptor> {
  const filter = { tenant: scope.tenant, workspace: scope.workspace, toolId: request.toolId, ...(request.toolVersion === undefined ? { active: true } : { toolVersion: request.toolVersion }) };
  const found = (await context.descriptors.raw.find(filter, { signal }).toArray()).map((document) => toDescriptor(document as StoredDescriptor)).sort(compareToolVersions).at(-1);
  if (found === undefined) {
    throw new ToolplaneError('NOT_FOUND', request.toolVersion === undefined ? `no active version of ${request.toolId}` : `no descriptor ${request.toolId} version ${request.toolVersion}`);
  }
  return found;
}
