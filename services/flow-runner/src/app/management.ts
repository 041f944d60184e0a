import type { z } from 'zod';
import {
  FlowRecord,
  POLICY_ADMIN_ROLE,
  ToolDefinitionRecord,
  commandFilter,
  flowCommandSchemas,
  flowOperations,
  flowRunnerFilter,
  flowRunnerStream,
  flowRunnerSubject,
  scopeOfSubject,
  type Scope,
} from '@toolplane/contracts';
import { bearerTokenOf, verifyOperator, type OperatorRequirement, type TokenVerifier } from '@toolplane/auth';
import { jetStreamEventStore, readAppendsMatching, type EventStore } from '@toolplane/event-store';
import { serve, type MessageHeaders, type Messaging, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { registryGateway, type RegistryGateway } from '../adapters/registry-gateway.js';
import { openToolLookup, type ToolLookup } from '../adapters/tool-lookup.js';
import { validateFlowBody } from '../core/flow-validation.js';
import { createDefinition, deleteDefinition, getDefinition, listDefinitions, updateDefinition } from './definition-commands.js';
import { activateFlow, getFlow, listFlows, publishFlow, saveFlowDraft } from './flow-commands.js';
import type { ManagementContext, Operator } from './management-context.js';

// FlowRunner's management operations, served on `tp.v1.cmd.{tenant}.{workspace}.flows.{operation}` in one queue group
// across replicas. Every one is a human operator's: the bearer token of the subject's scope is verified first and its
// principal is what the change records (a body names no actor); changes need the policy-admin role (a definition
// materializes a governed tool, like binding one in the registry), reads any operator of the workspace. The same token
// asks the registry to publish or retire the definition's tool, so the registry checks the same operator.

/** The queue group every FlowRunner replica answers management operations in. */
export const FLOW_MANAGEMENT_QUEUE = 'flow-runner-management';

/** The default deadline of one request to the registry (publishFlowTool, retireFlowTool). */
export const DEFAULT_REGISTRY_TIMEOUT_MS = 10_000;

/** FlowRunner's Flow and ToolDefinition records: event stores on their subjects of FlowRunner's private stream. */
export interface FlowRunnerRecords {
  readonly flows: EventStore<FlowRecord>;
  readonly definitions: EventStore<ToolDefinitionRecord>;
}

/** The Flow and ToolDefinition event stores (for the management operations, and for runs that resolve a definition). */
export function flowRunnerRecords(messaging: Messaging): FlowRunnerRecords {
  return {
    flows: jetStreamEventStore(messaging, { stream: flowRunnerStream.name, subjectOf: (id) => flowRunnerSubject('flow', id), schema: FlowRecord }),
    definitions: jetStreamEventStore(messaging, { stream: flowRunnerStream.name, subjectOf: (id) => flowRunnerSubject('definition', id), schema: ToolDefinitionRecord }),
  };
}

/** What the management operations are served with. The stream `flowRunnerStream` must have been declared. */
export interface ManagementDeps {
  readonly messaging: Messaging;
  /** Verifies operator tokens against the tenants' trusted keys. */
  readonly verifier: TokenVerifier;
  /** Now, as an ISO instant (default: the system clock). */
  readonly now?: () => string;
  /** Deadline of one request to the registry (default DEFAULT_REGISTRY_TIMEOUT_MS). */
  readonly registryTimeoutMs?: number;
  /** The registry as FlowRunner calls it (default: over `messaging`). */
  readonly registry?: RegistryGateway;
  /** Hears what the responders did that a service may log (failed handlers, invalid requests). */
  readonly onDiagnostic?: (diagnostic: ServeDiagnostic) => void;
  /** Aborting it stops the responders. */
  readonly signal?: AbortSignal;
}

/** The management use cases' context on a NATS connection. */
export function managementContext(deps: ManagementDeps, lookupTool: ToolLookup): ManagementContext {
  const { messaging } = deps;
  const records = flowRunnerRecords(messaging);
  const readAll = <S extends z.ZodType>(kind: 'flow' | 'definition', schema: S) => (scope: Scope, signal?: AbortSignal) =>
    readAppendsMatching(messaging, { stream: flowRunnerStream.name, filter: flowRunnerFilter(kind, scope), schema, ...(signal === undefined ? {} : { signal }) });
  return {
    ...records,
    readAllFlows: readAll('flow', FlowRecord),
    readAllDefinitions: readAll('definition', ToolDefinitionRecord),
    // Publishing checks each step's tool as an active descriptor of the workspace the flow belongs to.
    validateBody: (scope, body, signal) =>
      validateFlowBody(body, (toolId, toolVersion) => lookupTool(scope, toolId, toolVersion, signal), signal === undefined ? {} : { signal }),
    registry: deps.registry ?? registryGateway(messaging, { timeoutMs: deps.registryTimeoutMs ?? DEFAULT_REGISTRY_TIMEOUT_MS }),
    now: deps.now ?? (() => new Date().toISOString()),
  };
}

interface Operation {
  readonly operation: string;
  readonly schemas: { readonly request: z.ZodType; readonly reply: z.ZodType };
  readonly requirement: OperatorRequirement;
  readonly handle: (context: ManagementContext, scope: Scope, request: never, operator: Operator, signal: AbortSignal) => Promise<unknown>;
}

function operation<K extends keyof typeof flowCommandSchemas>(
  name: K,
  requirement: OperatorRequirement,
  handle: (context: ManagementContext, scope: Scope, request: z.output<(typeof flowCommandSchemas)[K]['request']>, operator: Operator, signal: AbortSignal) => Promise<z.input<(typeof flowCommandSchemas)[K]['reply']>>,
): Operation {
  return { operation: flowOperations[name], schemas: flowCommandSchemas[name], requirement, handle };
}

const policyAdmin: OperatorRequirement = { role: POLICY_ADMIN_ROLE };
const anyOperator: OperatorRequirement = {};

/** Every management operation, with who may ask. */
const managementOperations: readonly Operation[] = [
  operation('saveFlowDraft', policyAdmin, saveFlowDraft),
  operation('publishFlow', policyAdmin, publishFlow),
  operation('activateFlow', policyAdmin, activateFlow),
  operation('getFlow', anyOperator, (c, s, r, _operator, signal) => getFlow(c, s, r, signal)),
  operation('listFlows', anyOperator, (c, s, r, _operator, signal) => listFlows(c, s, r, signal)),
  operation('createDefinition', policyAdmin, createDefinition),
  operation('getDefinition', anyOperator, (c, s, r, _operator, signal) => getDefinition(c, s, r, signal)),
  operation('updateDefinition', policyAdmin, updateDefinition),
  operation('deleteDefinition', policyAdmin, deleteDefinition),
  operation('listDefinitions', anyOperator, (c, s, r, _operator, signal) => listDefinitions(c, s, r, signal)),
];

async function verify(verifier: TokenVerifier, scope: Scope, headers: MessageHeaders, requirement: OperatorRequirement): Promise<Operator> {
  const claims = await verifyOperator(verifier, scope, headers, requirement);
  // verifyOperator found exactly one bearer token: the one just verified.
  return { principal: claims.principal, token: bearerTokenOf(headers) ?? '' };
}

/**
 * Serves every operation of `flowCommandSchemas` on `commandSubject(scope, 'flows', operation)` in the queue group
 * FLOW_MANAGEMENT_QUEUE; the scope of each request is taken from its subject. Resolves once every responder is
 * subscribed; stop them with the handles (or `deps.signal`, or by draining the connection).
 */
export async function serveManagement(deps: ManagementDeps): Promise<ServeHandle[]> {
  const lookupTool = await openToolLookup(deps.messaging, deps.signal);
  const context = managementContext(deps, lookupTool);
  const handles: ServeHandle[] = [];
  for (const definition of managementOperations) {
    handles.push(
      await serve(deps.messaging, {
        subject: commandFilter('flows', { operation: definition.operation }),
        queue: FLOW_MANAGEMENT_QUEUE,
        requestSchema: definition.schemas.request,
        replySchema: definition.schemas.reply,
        handler: async (request, { subject, headers, signal }) => {
          const scope = scopeOfSubject(subject);
          const operator = await verify(deps.verifier, scope, headers, definition.requirement);
          return definition.handle(context, scope, request as never, operator, signal);
        },
        ...(deps.onDiagnostic === undefined ? {} : { onDiagnostic: deps.onDiagnostic }),
        ...(deps.signal === undefined ? {} : { signal: deps.signal }),
      }),
    );
  }
  return handles;
}
