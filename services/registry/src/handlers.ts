import type { z } from 'zod';
import {
  BindToolReply,
  BindToolRequest,
  DiscoverServerReply,
  GetDescriptorReply,
  GetDescriptorRequest,
  GrantAuthenticationExceptionRequest,
  ListServersReply,
  ListServersRequest,
  ListToolsReply,
  ListToolsRequest,
  RegisterServerReply,
  RegisterServerRequest,
  RetireServerReply,
  RetireServerRequest,
  ServerReply,
  ServerRequest,
  UnbindToolReply,
  UnbindToolRequest,
  commandFilter,
  registryOperations,
  scopeOfSubject,
  type Scope,
} from '@toolplane/contracts';
import { serve, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { getDescriptor, listServers, listTools } from './app/queries.js';
import type { RegistryContext } from './app/registry-context.js';
import { discoverServer, grantAuthenticationException, loadServer, registerServer, retireServer } from './app/server-commands.js';
import { bindTool, unbindTool } from './app/tool-commands.js';

/** The queue group every registry replica answers commands in: each request goes to one of them. */
export const REGISTRY_QUEUE = 'registry';

interface Operation<Req extends z.ZodType, Res extends z.ZodType> {
  readonly operation: string;
  readonly request: Req;
  readonly reply: Res;
  readonly handle: (context: RegistryContext, scope: Scope, request: z.output<Req>, signal: AbortSignal) => Promise<z.input<Res>>;
}

function operation<Req extends z.ZodType, Res extends z.ZodType>(definition: Operation<Req, Res>): Operation<Req, Res> {
  return definition;
}

/** Every request/reply operation of the registry, with its contracts. */
export const registryHandlers = [
  operation({ operation: registryOperations.register, request: RegisterServerRequest, reply: RegisterServerReply, handle: registerServer }),
  operation({ operation: registryOperations.discover, request: ServerRequest, reply: DiscoverServerReply, handle: (c, s, r, signal) => discoverServer(c, s, r.serverId, r.actor, signal) }),
  operation({ operation: registryOperations.bind, request: BindToolRequest, reply: BindToolReply, handle: bindTool }),
  operation({ operation: registryOperations.unbind, request: UnbindToolRequest, reply: UnbindToolReply, handle: unbindTool }),
  operation({ operation: registryOperations.retire, request: RetireServerRequest, reply: RetireServerReply, handle: (c, s, r, signal) => retireServer(c, s, r.serverId, r.reason, r.actor, signal) }),
  operation({
    operation: registryOperations.grantException,
    request: GrantAuthenticationExceptionRequest,
    reply: ServerReply,
    handle: async (c, s, r, signal) => ({ server: await grantAuthenticationException(c, s, r, signal) }),
  }),
  operation({ operation: registryOperations.getServer, request: ServerRequest, reply: ServerReply, handle: async (c, s, r, signal) => ({ server: await loadServer(c, s, r.serverId, signal) }) }),
  operation({ operation: registryOperations.listServers, request: ListServersRequest, reply: ListServersReply, handle: listServers }),
  operation({ operation: registryOperations.listTools, request: ListToolsRequest, reply: ListToolsReply, handle: (c, s, r, signal) => listTools(c, s, r.serverId, signal) }),
  operation({ operation: registryOperations.getDescriptor, request: GetDescriptorRequest, reply: GetDescriptorReply, handle: async (c, s, r, signal) => ({ descriptor: await getDescriptor(c, s, r, signal) }) }),
] as const;

/** Serves every operation in the registry's queue group; the scope of each request is taken from its subject. */
export async function serveRegistry(messaging: Messaging, context: RegistryContext, onDiagnostic: (diagnostic: ServeDiagnostic) => void): Promise<ServeHandle[]> {
  const handles: ServeHandle[] = [];
  for (const definition of registryHandlers as readonly Operation<z.ZodType, z.ZodType>[]) {
    handles.push(
      await serve(messaging, {
        subject: commandFilter('registry', { operation: definition.operation }),
        queue: REGISTRY_QUEUE,
        requestSchema: definition.request,
        replySchema: definition.reply,
        handler: (request, { subject, signal }) => definition.handle(context, scopeOfSubject(subject), request, signal),
        onDiagnostic,
      }),
    );
  }
  return handles;
}
