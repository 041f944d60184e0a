// The tool adapter's operator commands (`tp.v1.cmd.{tenant}.{workspace}.adapter.{operation}`): reconcile an
// Uncertain call, inspect a call, and read and write agent profiles, the tenant policy and policy bundles; and the
// registry's checks (whether a bundle exists, which agent profiles a published tool conflicts with), which are
// service to service like the registry's getServer for the adapter. One queue group across
// replicas. Scope is the subject's; the operator is the verified bearer token in the Authorization header, which is
// never logged. Reads (an inspection included) need an operator token of the scope, writes and reconcile the
// POLICY_ADMIN_ROLE as well. An inspection's arguments and result are in its reply only, never in a log line. receiptKeys answers
// anyone with the public keys receipts verify with: they are public, and a verifier needs nothing else.
import { createPublicKey } from 'node:crypto';
import {
  DEFAULT_POLICY_BUNDLE,
  POLICY_ADMIN_ROLE,
  ReceiptPublicJwk,
  ToolplaneError,
  adapterCommandSchemas,
  adapterOperations,
  commandFilter,
  scopeOfSubject,
  type OperatorClaims,
  type ReceiptKeySet,
  type Scope,
} from '@toolplane/contracts';
import { verifyOperator } from '@toolplane/auth';
import { serve, type RequestContext, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import type { z } from 'zod';
import type { PolicyDocuments } from '../adapters/policy-documents.js';
import { reconcileInvocation } from '../core/invocation-attempts.js';
import type { ReceiptSigningKey } from '../core/receipts.js';
import { invocationResultOf } from '../core/invocation-pipeline.js';
import { invocationInspection, parsedInputSchema } from '../core/invocation-inspection.js';
import { publicationConflicts } from '../core/publication-check.js';
import { descriptorFor } from './invocation-handler.js';
import type { InvocationRuntime } from './invocation-runtime.js';
import { publishEvents } from './publishing.js';

/** The operations served here (effectiveTools and lookupInvocation answer agent runtimes elsewhere). */
const servedOperations = [
  adapterOperations.reconcile,
  adapterOperations.getAgentProfile,
  adapterOperations.listAgentProfiles,
  adapterOperations.putAgentProfile,
  adapterOperations.deleteAgentProfile,
  adapterOperations.getTenantPolicy,
  adapterOperations.putTenantPolicy,
  adapterOperations.receiptKeys,
  adapterOperations.inspectInvocation,
  adapterOperations.getPolicyBundle,
  adapterOperations.listPolicyBundles,
  adapterOperations.putPolicyBundle,
  adapterOperations.deletePolicyBundle,
  adapterOperations.checkPolicyBundle,
  adapterOperations.checkToolPublication,
] as const;
type Operation = (typeof servedOperations)[number];
type Request<O extends Operation> = z.output<(typeof adapterCommandSchemas)[O]['request']>;
type Reply<O extends Operation> = z.input<(typeof adapterCommandSchemas)[O]['reply']>;
type Handler<O extends Operation> = (request: Request<O>, scope: Scope, context: RequestContext) => Promise<Reply<O>>;

/** What the commands serve besides the runtime's ports and the policy documents. */
export interface AdapterCommandOptions {
  /** The public keys receipts verify with (receiptKeySetOf the signing key). */
  readonly receiptKeys: ReceiptKeySet;
  readonly signal?: AbortSignal;
}

/** The JWKS of a receipt-signing key: its public half only, named by the key id receipts carry. */
export function receiptKeySetOf(key: ReceiptSigningKey): ReceiptKeySet {
  const { x } = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return { keys: [ReceiptPublicJwk.parse({ kty: 'OKP', crv: 'Ed25519', x, kid: key.keyId, alg: 'Ed25519', use: 'sig' })] };
}

/** The handlers of each operation, given the scope of the subject they were asked on. */
function handlers(runtime: InvocationRuntime, documents: PolicyDocuments, receiptKeys: ReceiptKeySet): { [O in Operation]: Handler<O> } {
  const reader = (scope: Scope, context: RequestContext): Promise<OperatorClaims> => verifyOperator(runtime.verifier, scope, context.headers);
  const admin = (scope: Scope, context: RequestContext): Promise<OperatorClaims> => verifyOperator(runtime.verifier, scope, context.headers, { role: POLICY_ADMIN_ROLE });
  return {
    reconcile: async (request, scope, context) => {
      const operator = await admin(scope, context);
      // Calls that ended Uncertain (the only ones a reconcile settles) are indexed by ToolCallId.
      const found = await runtime.calls.findByToolCallId(scope, request.toolCallId, context.signal);
      const invocation = found?.state.invocation;
      if (found === undefined || invocation === undefined) throw new ToolplaneError('NOT_FOUND', `no call ${request.toolCallId} in ${scope.tenant}/${scope.workspace}`);
      const now = runtime.clock();
      const settled = reconcileInvocation(invocation, { outcome: request.outcome, operator: operator.principal, reason: request.reason }, { now: now.toISOString(), signReceipt: runtime.signReceipt });
      if (!settled.accepted) throw new ToolplaneError(settled.failure.code, settled.failure.message);
      // The settled call appended first (at the version read), then its events: an event is never published for a
      // write that did not happen; a lost publish is repeated when the call's request is.
      await runtime.calls.record(found, { invocation: settled.invocation, events: settled.events, settled: true, now }, context.signal);
      const persisted = settled.invocation;
      await publishEvents(runtime.messaging, settled.events);
      runtime.logger.info({ toolCallId: persisted.toolCallId, invocationId: persisted.invocationId, state: persisted.state, reconciledBy: operator.principal }, 'call reconciled');
      return { result: invocationResultOf(persisted) };
    },
    inspectInvocation: async (request, scope, context) => {
      await reader(scope, context);
      // By its key the call is one direct read; by ToolCallId alone only a parked or Uncertain call is indexed. The
      // call's record holds its latest attempt, and a key that holds another call does not answer for this one.
      const found =
        request.idempotencyKey === undefined ? await runtime.calls.findByToolCallId(scope, request.toolCallId, context.signal) : await runtime.calls.read(scope, request.idempotencyKey, context.signal);
      const invocation = found?.state.invocation;
      if (invocation?.toolCallId !== request.toolCallId) {
        const hint = request.idempotencyKey === undefined ? ' parked for an approval or ended Uncertain (name its idempotency key to inspect any other)' : ' under that idempotency key';
        throw new ToolplaneError('NOT_FOUND', `no call ${request.toolCallId}${hint} in ${scope.tenant}/${scope.workspace}`);
      }
      const policy = await runtime.policies.tenantPolicy(scope.tenant, runtime.clock(), context.signal);
      // A retired descriptor leaves the names to decide what is redacted.
      const inputSchema = parsedInputSchema(descriptorFor(runtime, scope, invocation)?.inputSchemaJson);
      return invocationInspection(invocation, { inputSchema, sensitiveArgumentFields: policy.sensitiveArgumentFields });
    },
    getAgentProfile: async (request, scope, context) => {
      await reader(scope, context);
      return { profile: await documents.getAgentProfile(scope, request.agentId, context.signal) };
    },
    listAgentProfiles: async (request, scope, context) => {
      await reader(scope, context);
      return documents.listAgentProfiles(scope, request, context.signal);
    },
    putAgentProfile: async (request, scope, context) => {
      const operator = await admin(scope, context);
      const profile = await documents.putAgentProfile(scope, request.profile, { by: operator.principal, now: runtime.clock(), expectedVersion: request.expectedVersion, signal: context.signal });
      runtime.logger.info({ agentId: profile.agentId, version: profile.version, updatedBy: operator.principal }, 'agent profile written');
      return { profile };
    },
    deleteAgentProfile: async (request, scope, context) => {
      const operator = await admin(scope, context);
      const deleted = await documents.deleteAgentProfile(scope, request.agentId, { by: operator.principal, now: runtime.clock(), expectedVersion: request.expectedVersion, signal: context.signal });
      if (deleted) runtime.logger.info({ agentId: request.agentId, updatedBy: operator.principal }, 'agent profile deleted');
      return { agentId: request.agentId, deleted };
    },
    getTenantPolicy: async (_request, scope, context) => {
      await reader(scope, context);
      return documents.getTenantPolicy(scope.tenant, runtime.clock(), context.signal);
    },
    putTenantPolicy: async (request, scope, context) => {
      const operator = await admin(scope, context);
      const policy = await documents.putTenantPolicy(scope.tenant, request.policy, { by: operator.principal, now: runtime.clock(), expectedVersion: request.expectedVersion, signal: context.signal });
      runtime.logger.info({ tenant: policy.tenant, version: policy.version, updatedBy: operator.principal }, 'tenant policy written');
      return { policy, isDefault: false };
    },
    getPolicyBundle: async (request, scope, context) => {
      await reader(scope, context);
      return { bundle: await documents.getPolicyBundle(scope.tenant, request.name, context.signal) };
    },
    listPolicyBundles: async (request, scope, context) => {
      await reader(scope, context);
      return documents.listPolicyBundles(scope.tenant, request, context.signal);
    },
    putPolicyBundle: async (request, scope, context) => {
      const operator = await admin(scope, context);
      const bundle = await documents.putPolicyBundle(scope.tenant, request.bundle, { by: operator.principal, now: runtime.clock(), expectedVersion: request.expectedVersion, signal: context.signal });
      runtime.logger.info({ tenant: bundle.tenant, bundle: bundle.name, version: bundle.version, updatedBy: operator.principal }, 'policy bundle written');
      return { bundle };
    },
    deletePolicyBundle: async (request, scope, context) => {
      const operator = await admin(scope, context);
      const deleted = await documents.deletePolicyBundle(scope.tenant, request.name, { by: operator.principal, now: runtime.clock(), expectedVersion: request.expectedVersion, signal: context.signal });
      if (deleted) runtime.logger.info({ tenant: scope.tenant, bundle: request.name, updatedBy: operator.principal }, 'policy bundle deleted');
      return { name: request.name, deleted };
    },
    checkPolicyBundle: async (request, scope, context) => {
      // What was last written, whichever replica wrote it: the registry asks right before it registers a server.
      const bundle = await documents.findPolicyBundle(scope.tenant, request.name, context.signal);
      return bundle === undefined ? { name: request.name, exists: request.name === DEFAULT_POLICY_BUNDLE } : { name: request.name, exists: true, version: bundle.version };
    },
    checkToolPublication: async (request, scope, context) => ({ conflicts: publicationConflicts(request, await documents.workspaceProfiles(scope, context.signal)) }),
    receiptKeys: () => Promise.resolve(receiptKeys),
  };
}

/** Starts a responder per operation in queue group `tool-adapter`; resolves once all are subscribed. */
export async function serveAdapterCommands(runtime: InvocationRuntime, documents: PolicyDocuments, options: AdapterCommandOptions): Promise<ServeHandle[]> {
  const { signal } = options;
  const log = runtime.logger;
  const onDiagnostic = (diagnostic: ServeDiagnostic) => {
    // Subjects and codes only: never the request, its headers, or the reply.
    if (diagnostic.type === 'handler_failed') {
      const level = diagnostic.reply.code === 'INTERNAL' || diagnostic.reply.code === 'TEMPORARY_UNAVAILABLE' ? 'warn' : 'info';
      log[level]({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message, ...(level === 'warn' ? { err: diagnostic.error } : {}) }, 'command refused');
    } else if (diagnostic.type === 'invalid_request' || diagnostic.type === 'invalid_reply') {
      log.info({ subject: diagnostic.subject, type: diagnostic.type, code: diagnostic.reply.code, reason: diagnostic.reply.message }, 'command refused');
    } else log.warn({ subject: diagnostic.subject, type: diagnostic.type, err: diagnostic.error }, 'command responder problem');
  };
  const all = handlers(runtime, documents, options.receiptKeys);
  const serveOne = <O extends Operation>(operation: O) => {
    const schemas = adapterCommandSchemas[operation];
    const handler = all[operation] as Handler<O>;
    return serve(runtime.messaging, {
      subject: commandFilter('adapter', { operation }),
      queue: 'tool-adapter',
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      handler: (request, context) => handler(request as Request<O>, scopeOfSubject(context.subject), context),
      ...(signal ? { signal } : {}),
      onDiagnostic,
    });
  };
  return Promise.all(servedOperations.map((operation) => serveOne(operation)));
}
