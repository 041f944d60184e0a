import type { z } from 'zod';
import {
  PLATFORM_ADMIN_ROLE,
  POLICY_ADMIN_ROLE,
  commandFilter,
  registryCommandSchemas,
  registryOperations,
  scopeOfSubject,
  type Scope,
} from '@toolplane/contracts';
import { verifyOperator, type OperatorRequirement, type TokenVerifier } from '@toolplane/auth';
import { serve, type MessageHeaders, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { getDescriptor, listServers, listTools } from './app/queries.js';
import type { RegistryContext } from './app/registry-context.js';
import { discoverServer, getServer, grantAuthenticationException, registerServer, retireServer } from './app/server-commands.js';
import { publishFlowTool, retireFlowTool } from './app/flow-tool-commands.js';
import { bindPrompt, bindResource, bindTool, unbindTool } from './app/tool-commands.js';
import { deprecateRelease, getRelease, listReleases, publishRelease, revokeRelease } from './app/release-commands.js';

// Humans authenticate with an operator token of the subject's scope (`Authorization: Bearer …`, never logged); the
// token's principal is what the registry records, whatever a body says. `getServer` is the tool adapter's: NATS
// permissions decide who may publish on its subject, as for `approval.consume` and `secrets.leaseSecret`.

/** The queue group every registry replica answers commands in: each request goes to one of them. */
export const REGISTRY_QUEUE = 'registry';

/** Who may ask: a service (no token; NATS permissions decide), or an operator with a token of the scope (and a role, when named). */
export type RegistryAccess = { readonly kind: 'service' } | ({ readonly kind: 'operator' } & OperatorRequirement);

interface Operation<Req extends z.ZodType, Res extends z.ZodType> {
  readonly operation: string;
  readonly request: Req;
  readonly reply: Res;
  readonly access: RegistryAccess;
  readonly answer: (context: RegistryContext, verifier: TokenVerifier, scope: Scope, request: z.output<Req>, headers: MessageHeaders, signal: AbortSignal) => Promise<z.input<Res>>;
}

type OperatorHandle<Req extends z.ZodType, Res extends z.ZodType> = (context: RegistryContext, scope: Scope, request: z.output<Req>, actor: string, signal: AbortSignal) => Promise<z.input<Res>>;

/** An operation of human operators: the token is verified first, and its principal is the actor of what follows. */
function forOperators<Req extends z.ZodType, Res extends z.ZodType>(
  operation: string,
  schemas: { readonly request: Req; readonly reply: Res },
  requirement: OperatorRequirement,
  handle: OperatorHandle<Req, Res>,
): Operation<Req, Res> {
  return {
    operation,
    ...schemas,
    access: { kind: 'operator', ...requirement },
    answer: async (context, verifier, scope, request, headers, signal) => {
      const operator = await verifyOperator(verifier, scope, headers, requirement);
      return handle(context, scope, request, operator.principal, signal);
    },
  };
}

/** An operation of services: no token; NATS permissions decide who may publish on its subject. */
function forServices<Req extends z.ZodType, Res extends z.ZodType>(
  operation: string,
  schemas: { readonly request: Req; readonly reply: Res },
  handle: (context: RegistryContext, scope: Scope, request: z.output<Req>, signal: AbortSignal) => Promise<z.input<Res>>,
): Operation<Req, Res> {
  return { operation, ...schemas, access: { kind: 'service' }, answer: (context, _verifier, scope, request, _headers, signal) => handle(context, scope, request, signal) };
}

// Changing servers and bindings is policy administration (the seeds name no narrower role); an authentication
// exception for a remote server is a platform admin's (seed 003: "a recorded Platform-admin approval").
const policyAdmin: OperatorRequirement = { role: POLICY_ADMIN_ROLE };
const platformAdmin: OperatorRequirement = { role: PLATFORM_ADMIN_ROLE };
const anyOperator: OperatorRequirement = {};

/** Every request/reply operation of the registry, with its contracts and who may ask. */
export const registryHandlers = [
  forOperators(registryOperations.register, registryCommandSchemas.register, policyAdmin, registerServer),
  forOperators(registryOperations.discover, registryCommandSchemas.discover, policyAdmin, (c, s, r, actor, signal) => discoverServer(c, s, r.serverId, actor, signal)),
  forOperators(registryOperations.bind, registryCommandSchemas.bind, policyAdmin, bindTool),
  forOperators(registryOperations.bindResource, registryCommandSchemas.bindResource, policyAdmin, bindResource),
  forOperators(registryOperations.bindPrompt, registryCommandSchemas.bindPrompt, policyAdmin, bindPrompt),
  forOperators(registryOperations.unbind, registryCommandSchemas.unbind, policyAdmin, unbindTool),
  forOperators(registryOperations.retire, registryCommandSchemas.retire, policyAdmin, (c, s, r, actor, signal) => retireServer(c, s, r.serverId, r.reason, actor, signal)),
  forOperators(registryOperations.grantException, registryCommandSchemas.grantException, platformAdmin, async (c, s, r, actor, signal) => ({
    server: await grantAuthenticationException(c, s, r, actor, signal),
  })),
  // FlowRunner's materialization of ToolDefinitions, with the operator token of whoever saved the definition.
  forOperators(registryOperations.publishFlowTool, registryCommandSchemas.publishFlowTool, policyAdmin, publishFlowTool),
  forOperators(registryOperations.retireFlowTool, registryCommandSchemas.retireFlowTool, policyAdmin, retireFlowTool),
  forServices(registryOperations.getServer, registryCommandSchemas.getServer, async (c, s, r, signal) => ({ server: await getServer(c, s, r.serverId, signal) })),
  forOperators(registryOperations.listServers, registryCommandSchemas.listServers, anyOperator, (c, s, r, _actor, signal) => listServers(c, s, r, signal)),
  forOperators(registryOperations.listTools, registryCommandSchemas.listTools, anyOperator, (c, s, r, _actor, signal) => listTools(c, s, r.serverId, signal)),
  forOperators(registryOperations.getDescriptor, registryCommandSchemas.getDescriptor, anyOperator, async (c, s, r, _actor, signal) => ({
    descriptor: await getDescriptor(c, s, r, signal),
  })),
  // Releases gate which servers' tools are usable: publishing, deprecating and revoking them is policy administration.
  forOperators(registryOperations.publishRelease, registryCommandSchemas.publishRelease, policyAdmin, publishRelease),
  forOperators(registryOperations.deprecateRelease, registryCommandSchemas.deprecateRelease, policyAdmin, deprecateRelease),
  forOperators(registryOperations.revokeRelease, registryCommandSchemas.revokeRelease, policyAdmin, revokeRelease),
  forOperators(registryOperations.getRelease, registryCommandSchemas.getRelease, anyOperator, async (c, s, r, _actor, signal) => ({ release: await getRelease(c, s, r.releaseId, signal) })),
  forOperators(registryOperations.listReleases, registryCommandSchemas.listReleases, anyOperator, (c, s, r, _actor, signal) => listReleases(c, s, r, signal)),
] as const;

/** Serves every operation in the registry's queue group; the scope of each request is taken from its subject. */
export async function serveRegistry(messaging: Messaging, context: RegistryContext, verifier: TokenVerifier, onDiagnostic: (diagnostic: ServeDiagnostic) => void): Promise<ServeHandle[]> {
  const handles: ServeHandle[] = [];
  for (const definition of registryHandlers as readonly Operation<z.ZodType, z.ZodType>[]) {
    handles.push(
      await serve(messaging, {
        subject: commandFilter('registry', { operation: definition.operation }),
        queue: REGISTRY_QUEUE,
        requestSchema: definition.request,
        replySchema: definition.reply,
        handler: (request, { subject, headers, signal }) => definition.answer(context, verifier, scopeOfSubject(subject), request, headers, signal),
        onDiagnostic,
      }),
    );
  }
  return handles;
}
