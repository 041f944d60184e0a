import {
  McpServer,
  ToolDescriptor,
  ToolplaneError,
  type GetDescriptorRequest,
  type ListServersReply,
  type ListServersRequest,
  type ListToolsReply,
  type McpServerSummary,
  type Scope,
} from '@toolplane/contracts';
import { findPage } from '@toolplane/store';
import { readViews, toolViews } from '../core/binding-view.js';
import { descriptorVersions, descriptorsOfServer, loadServer, readDescriptor } from './aggregates.js';
import type { RegistryContext } from './registry-context.js';

// Queries of one aggregate (a server's tools, a descriptor) answer from the record, so a query right after a
// command sees it; lists across a scope read the read models the projector folds, which may lag a little.

function withoutId<T extends { _id: string }>(document: T): Omit<T, '_id'> {
  const { _id, ...rest } = document;
  return rest;
}

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
  await context.readModelsCaughtUp(signal);
  const page = await findPage(context.readModels.servers, {
    filter: { tenant: scope.tenant, workspace: scope.workspace, ...(request.state === undefined ? {} : { state: request.state }) },
    sortBy: 'registeredAt',
    limit: request.limit,
    ...(request.after === undefined ? {} : { after: request.after }),
    ...(signal ? { signal } : {}),
  });
  return { servers: page.items.map((document) => summarize(McpServer.parse(withoutId(document)))), next: page.next };
}

const maxServersListed = 500;

/** The discovered tools of one server, or of every server of the scope that is not retired, with their binding state. */
export async function listTools(context: RegistryContext, scope: Scope, serverId: string | undefined, signal?: AbortSignal): Promise<ListToolsReply> {
  if (serverId !== undefined) {
    const loaded = await loadServer(context, scope, serverId, signal);
    return viewsOf([loaded.server], await descriptorsOfServer(context, loaded, signal));
  }
  await context.readModelsCaughtUp(signal);
  const servers = (
    await context.readModels.servers.raw
      .find({ tenant: scope.tenant, workspace: scope.workspace, state: { $ne: 'Retired' } }, { signal, sort: { registeredAt: 1 }, limit: maxServersListed })
      .toArray()
  ).map((document) => McpServer.parse(withoutId(document)));
  if (servers.length === 0) return { tools: [], resources: [], resourceTemplates: [], prompts: [] };
  const descriptors = (
    await context.readModels.descriptors.raw.find({ tenant: scope.tenant, workspace: scope.workspace, mcpServerId: { $in: servers.map((server) => server.serverId) } }, { signal }).toArray()
  ).map((document) => ToolDescriptor.parse(withoutId(document)));
  return viewsOf(servers, descriptors);
}

function viewsOf(servers: readonly McpServer[], descriptors: readonly ToolDescriptor[]): ListToolsReply {
  const reads = servers.map((server) => readViews(server, descriptors));
  return {
    tools: servers.flatMap((server) => toolViews(server, descriptors)),
    resources: reads.flatMap((read) => read.resources),
    resourceTemplates: reads.flatMap((read) => read.resourceTemplates),
    prompts: reads.flatMap((read) => read.prompts),
  };
}

/** One descriptor version, or the newest active one; NOT_FOUND otherwise. */
export async function getDescriptor(context: RegistryContext, scope: Scope, request: GetDescriptorRequest, signal?: AbortSignal): Promise<ToolDescriptor> {
  const found =
    request.toolVersion === undefined
      ? (await descriptorVersions(context, scope, request.toolId, signal)).filter((descriptor) => descriptor.active).at(-1)
      : await readDescriptor(context, scope, request.toolId, request.toolVersion, signal);
  if (found === undefined) {
    throw new ToolplaneError('NOT_FOUND', request.toolVersion === undefined ? `no active version of ${request.toolId}` : `no descriptor ${request.toolId} version ${request.toolVersion}`);
  }
  return found;
}
