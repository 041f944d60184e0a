import { z } from 'zod';
import { InvocationResult } from './invocation-result.js';
import { InvocationCompletion } from './completion.js';
import { DataClassification, RiskClass, SideEffectClass } from './classification.js';
import { AgentProfile, EffectiveToolSet, EffectiveToolSetRequest, PolicyBundle, PolicyBundleName, PublicationConflict, TenantPolicy } from './policy.js';
import { ExternalId, IdempotencyKey, InvocationId, JsonObject, ToolCallId, ToolId, ToolVersion, Uuid, boundedText } from './primitives.js';
import { InvocationState } from './states.js';

// Request/reply contracts of the tool adapter (`tp.v1.cmd.{tenant}.{workspace}.adapter.{operation}`). Scope comes
// from the subject, never from a body. Agent runtimes (effectiveTools, lookupInvocation) send their signed context
// token in the body, as they do with invocation requests; humans (reconcile and the policy operations) send an
// operator token in the AUTHORIZATION_HEADER (`Bearer <token>`). checkPolicyBundle and checkToolPublication answer
// the registry (service to service, like its getServer for the adapter).

/** The tool adapter's request/reply operations, as they appear in command subjects. */
export const adapterOperations = {
  effectiveTools: 'effectiveTools',
  lookupInvocation: 'lookupInvocation',
  reconcile: 'reconcile',
  getAgentProfile: 'getAgentProfile',
  listAgentProfiles: 'listAgentProfiles',
  putAgentProfile: 'putAgentProfile',
  deleteAgentProfile: 'deleteAgentProfile',
  getTenantPolicy: 'getTenantPolicy',
  putTenantPolicy: 'putTenantPolicy',
  receiptKeys: 'receiptKeys',
  inspectInvocation: 'inspectInvocation',
  getPolicyBundle: 'getPolicyBundle',
  listPolicyBundles: 'listPolicyBundles',
  putPolicyBundle: 'putPolicyBundle',
  deletePolicyBundle: 'deletePolicyBundle',
  checkPolicyBundle: 'checkPolicyBundle',
  checkToolPublication: 'checkToolPublication',
} as const;

/** The role an operator token must carry to change agent profiles, the tenant policy and policy bundles, and to reconcile calls. */
export const POLICY_ADMIN_ROLE = 'policy-admin';

const contextToken = z
  .string()
  .max(16_384)
  .regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*){2,4}$/);

/**
 * `expectedVersion` of a put or delete: absent writes whatever is stored, 0 only creates (CONFLICT when a document
 * exists), n only replaces version n (CONFLICT otherwise), so two operators never overwrite each other unseen.
 */
const ExpectedVersion = z.number().int().nonnegative();

/**
 * The request a lookup means: the tool, the version if one was named, the arguments, and the completion asked for if
 * it is one. A lookup that names it is answered CONFLICT when the key holds another request, exactly as invoking would
 * be, so a caller recovering a lost reply never takes another request's result for its own.
 */
const LookedUpRequest = z.strictObject({ toolId: ToolId, toolVersion: ToolVersion.optional(), arguments: JsonObject, completion: InvocationCompletion.optional() });

/**
 * Asks for an invocation by its idempotency key, as the agent runtime that sent it: how a runtime whose reply was
 * lost recovers the receipt instead of invoking again. Answered only to a token of the same principal and agent.
 */
export const LookupInvocationRequest = z
  .strictObject({ contextToken, idempotencyKey: IdempotencyKey, request: LookedUpRequest.optional() })
  .meta({ description: 'Looks up an invocation by idempotency key; the reply carries its result once it is terminal.' });
export type LookupInvocationRequest = z.infer<typeof LookupInvocationRequest>;

/**
 * Where an invocation is: its ids and state, the approval it waits for or waited for, and once terminal the same
 * result (and receipt) its reply carried.
 */
export const LookupInvocationReply = z
  .strictObject({
    toolCallId: ToolCallId,
    invocationId: InvocationId,
    attempt: z.number().int().positive(),
    state: InvocationState,
    approvalId: Uuid.optional(),
    result: InvocationResult.optional(),
  })
  .meta({ description: 'An invocation found by idempotency key: state, and the result with its receipt when terminal.' });
export type LookupInvocationReply = z.infer<typeof LookupInvocationReply>;

/**
 * Settles an Uncertain call after an operator checked the provider: the effect was observed (Observed) or did not
 * happen (Failed). The operator (from the token) and the reason are recorded in the invocation and its receipt.
 */
export const ReconcileInvocationRequest = z
  .strictObject({ toolCallId: ToolCallId, outcome: z.enum(['observed', 'failed']), reason: boundedText(1024) })
  .meta({ description: 'Settles an Uncertain invocation as observed or failed, with the operator and reason recorded.' });
export type ReconcileInvocationRequest = z.infer<typeof ReconcileInvocationRequest>;

/** The settled invocation's result with its newly signed receipt. */
export const ReconcileInvocationReply = z.strictObject({ result: InvocationResult });
export type ReconcileInvocationReply = z.infer<typeof ReconcileInvocationReply>;

/** What an operator writes of an agent profile; scope, author, time and version are the adapter's. */
export const AgentProfileInput = AgentProfile.omit({ tenant: true, workspace: true, updatedBy: true, updatedAt: true, version: true }).strict();
export type AgentProfileInput = z.infer<typeof AgentProfileInput>;

export const GetAgentProfileRequest = z.strictObject({ agentId: ExternalId });
export type GetAgentProfileRequest = z.infer<typeof GetAgentProfileRequest>;

export const AgentProfileReply = z.strictObject({ profile: AgentProfile });
export type AgentProfileReply = z.infer<typeof AgentProfileReply>;

export const ListAgentProfilesRequest = z.strictObject({
  limit: z.number().int().min(1).max(200).default(50),
  /** The `next` of the previous page. */
  after: z.string().min(1).max(2048).optional(),
});
export type ListAgentProfilesRequest = z.infer<typeof ListAgentProfilesRequest>;

export const ListAgentProfilesReply = z.strictObject({ items: z.array(AgentProfile), next: z.string().nullable() });
export type ListAgentProfilesReply = z.infer<typeof ListAgentProfilesReply>;

export const PutAgentProfileRequest = z
  .strictObject({ profile: AgentProfileInput, expectedVersion: ExpectedVersion.optional() })
  .meta({ description: 'Creates or replaces the agent profile of one agent in the subject’s workspace.' });
export type PutAgentProfileRequest = z.infer<typeof PutAgentProfileRequest>;

export const DeleteAgentProfileRequest = z.strictObject({ agentId: ExternalId, expectedVersion: ExpectedVersion.optional() });
export type DeleteAgentProfileRequest = z.infer<typeof DeleteAgentProfileRequest>;

export const DeleteAgentProfileReply = z.strictObject({ agentId: ExternalId, deleted: z.boolean() });
export type DeleteAgentProfileReply = z.infer<typeof DeleteAgentProfileReply>;

/** What an operator writes of the tenant policy; the tenant, author, time and version are the adapter's. */
export const TenantPolicyInput = TenantPolicy.omit({ tenant: true, updatedBy: true, updatedAt: true, version: true }).strict();
export type TenantPolicyInput = z.infer<typeof TenantPolicyInput>;

export const GetTenantPolicyRequest = z.strictObject({});
export type GetTenantPolicyRequest = z.infer<typeof GetTenantPolicyRequest>;

/** The tenant's policy; `isDefault` when none was written and the adapter applies its default. */
export const TenantPolicyReply = z.strictObject({ policy: TenantPolicy, isDefault: z.boolean() });
export type TenantPolicyReply = z.infer<typeof TenantPolicyReply>;

export const PutTenantPolicyRequest = z
  .strictObject({ policy: TenantPolicyInput, expectedVersion: ExpectedVersion.optional() })
  .meta({ description: 'Creates or replaces the policy of the subject’s tenant (all its workspaces).' });
export type PutTenantPolicyRequest = z.infer<typeof PutTenantPolicyRequest>;

/** What an operator writes of a policy bundle; the tenant, author, time and version are the adapter's. */
export const PolicyBundleInput = PolicyBundle.omit({ tenant: true, updatedBy: true, updatedAt: true, version: true }).strict();
export type PolicyBundleInput = z.infer<typeof PolicyBundleInput>;

export const GetPolicyBundleRequest = z.strictObject({ name: PolicyBundleName });
export type GetPolicyBundleRequest = z.infer<typeof GetPolicyBundleRequest>;

export const PolicyBundleReply = z.strictObject({ bundle: PolicyBundle });
export type PolicyBundleReply = z.infer<typeof PolicyBundleReply>;

export const ListPolicyBundlesRequest = z.strictObject({
  limit: z.number().int().min(1).max(200).default(50),
  /** The `next` of the previous page. */
  after: z.string().min(1).max(2048).optional(),
});
export type ListPolicyBundlesRequest = z.infer<typeof ListPolicyBundlesRequest>;

export const ListPolicyBundlesReply = z.strictObject({ items: z.array(PolicyBundle), next: z.string().nullable() });
export type ListPolicyBundlesReply = z.infer<typeof ListPolicyBundlesReply>;

export const PutPolicyBundleRequest = z
  .strictObject({ bundle: PolicyBundleInput, expectedVersion: ExpectedVersion.optional() })
  .meta({ description: 'Creates or replaces a policy bundle of the subject’s tenant, applied to calls through every server naming it.' });
export type PutPolicyBundleRequest = z.infer<typeof PutPolicyBundleRequest>;

export const DeletePolicyBundleRequest = z.strictObject({ name: PolicyBundleName, expectedVersion: ExpectedVersion.optional() });
export type DeletePolicyBundleRequest = z.infer<typeof DeletePolicyBundleRequest>;

export const DeletePolicyBundleReply = z.strictObject({ name: PolicyBundleName, deleted: z.boolean() });
export type DeletePolicyBundleReply = z.infer<typeof DeletePolicyBundleReply>;

/**
 * Service to service (the registry, before it registers a server): whether calls through a server naming this bundle
 * could be governed. `default` always can (no stored bundle adds no rules); any other name only while it is stored.
 */
export const CheckPolicyBundleRequest = z.strictObject({ name: PolicyBundleName });
export type CheckPolicyBundleRequest = z.infer<typeof CheckPolicyBundleRequest>;

export const CheckPolicyBundleReply = z.strictObject({ name: PolicyBundleName, exists: z.boolean(), version: z.number().int().positive().optional() });
export type CheckPolicyBundleReply = z.infer<typeof CheckPolicyBundleReply>;

/**
 * Service to service (the registry, after a bind): the agent profiles of the subject's workspace that list the tool
 * (allowedTools matches it, deniedTools does not) but may not use it at this class and risk (model rule D21).
 */
export const CheckToolPublicationRequest = z
  .strictObject({
    toolId: ToolId,
    sideEffectClass: SideEffectClass,
    riskClass: RiskClass,
    /** A resource's data classification, checked against each listing agent's clearance. */
    classification: DataClassification.optional(),
  })
  .meta({ description: 'Finds the agent profiles that list a tool but whose class or risk ceiling (or, for a resource, clearance) it exceeds.' });
export type CheckToolPublicationRequest = z.infer<typeof CheckToolPublicationRequest>;

export const CheckToolPublicationReply = z.strictObject({ conflicts: z.array(PublicationConflict).max(4096) });
export type CheckToolPublicationReply = z.infer<typeof CheckToolPublicationReply>;

/** The most characters of an argument preview (`InspectInvocationReply.arguments.text`); longer previews are cut. */
export const ARGUMENT_PREVIEW_MAX_CHARS = 8192;

/** What replaces the value of a redacted argument field in a preview. */
export const ARGUMENT_REDACTION_MARKER = '[REDACTED]';

/**
 * Asks, as an operator of the scope (any role), what one logical call was asked to do and what it answered: the
 * latest attempt's arguments with sensitive fields redacted and, once it is terminal, its result and signed receipt.
 * What an approver looks at before deciding, and what the console shows of a call. NOT_FOUND for an unknown call,
 * and for a key that holds another call.
 */
export const InspectInvocationRequest = z
  .strictObject({
    toolCallId: ToolCallId,
    /**
     * The call's idempotency key (its RuntimeToolCall record has it): the call is then read directly. Without it only
     * the calls an approval or a reconcile must find by ToolCallId (parked for an approval, ended Uncertain) are
     * found, since a call's hot path indexes nothing more.
     */
    idempotencyKey: IdempotencyKey.optional(),
  })
  .meta({ description: 'Shows one call to an operator: redacted arguments, and its result and receipt once terminal.' });
export type InspectInvocationRequest = z.infer<typeof InspectInvocationRequest>;

/**
 * A call's arguments as an operator may see them: canonical JSON text in which the value of every sensitive field (a
 * field the tool's input schema marks `writeOnly` or `format: password`, a name in the tenant policy's
 * `sensitiveArgumentFields`, or a well-known credential name such as `password` or `apiKey`) is the
 * ARGUMENT_REDACTION_MARKER, cut at ARGUMENT_PREVIEW_MAX_CHARS. Leased secrets never reach arguments: the broker's
 * lease goes to the transport after the approval, so an approver never sees one.
 */
export const ArgumentPreview = z.strictObject({
  text: z.string().max(ARGUMENT_PREVIEW_MAX_CHARS),
  /** JSON pointers (RFC 6901) of the redacted fields. */
  redacted: z.array(z.string().max(1024)).max(256),
  /** True when the text was cut to ARGUMENT_PREVIEW_MAX_CHARS. */
  truncated: z.boolean(),
});
export type ArgumentPreview = z.infer<typeof ArgumentPreview>;

/** One call as an operator inspects it. `result` (sanitized tool output, untrusted data) only once terminal. */
export const InspectInvocationReply = z.strictObject({
  toolCallId: ToolCallId,
  invocationId: InvocationId,
  attempt: z.number().int().positive(),
  state: InvocationState,
  toolId: ToolId,
  toolVersion: ToolVersion.optional(),
  approvalId: Uuid.optional(),
  arguments: ArgumentPreview,
  result: InvocationResult.optional(),
});
export type InspectInvocationReply = z.infer<typeof InspectInvocationReply>;

/** Asks for the public keys the adapter's receipts verify with; public, so no token is needed. */
export const ReceiptKeysRequest = z.strictObject({}).meta({ description: 'Asks for the public keys receipts are verified with (no token needed).' });
export type ReceiptKeysRequest = z.infer<typeof ReceiptKeysRequest>;

/** A receipt verification key: an Ed25519 public key as a JWK (RFC 8037) named by the `keyId` receipts carry. */
export const ReceiptPublicJwk = z.strictObject({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  /** The public key, base64url (32 bytes). */
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  /** The `signature.keyId` of the receipts this key verifies. */
  kid: z.string().regex(/^[!-~]{1,128}$/),
  alg: z.literal('Ed25519'),
  use: z.literal('sig'),
});
export type ReceiptPublicJwk = z.infer<typeof ReceiptPublicJwk>;

/** The adapter's receipt verification keys as a JWKS, for verifying receipts offline (`verifyReceipt`). */
export const ReceiptKeySet = z
  .strictObject({ keys: z.array(ReceiptPublicJwk).min(1).max(16) })
  .meta({ description: 'The public keys the tool adapter signs receipts with, as a JSON Web Key Set.' });
export type ReceiptKeySet = z.infer<typeof ReceiptKeySet>;

/** Each operation's request and reply contract, for callers (`call(service, operation, schemas, body)`). */
export const adapterCommandSchemas = {
  effectiveTools: { request: EffectiveToolSetRequest, reply: EffectiveToolSet },
  lookupInvocation: { request: LookupInvocationRequest, reply: LookupInvocationReply },
  reconcile: { request: ReconcileInvocationRequest, reply: ReconcileInvocationReply },
  getAgentProfile: { request: GetAgentProfileRequest, reply: AgentProfileReply },
  listAgentProfiles: { request: ListAgentProfilesRequest, reply: ListAgentProfilesReply },
  putAgentProfile: { request: PutAgentProfileRequest, reply: AgentProfileReply },
  deleteAgentProfile: { request: DeleteAgentProfileRequest, reply: DeleteAgentProfileReply },
  getTenantPolicy: { request: GetTenantPolicyRequest, reply: TenantPolicyReply },
  putTenantPolicy: { request: PutTenantPolicyRequest, reply: TenantPolicyReply },
  receiptKeys: { request: ReceiptKeysRequest, reply: ReceiptKeySet },
  inspectInvocation: { request: InspectInvocationRequest, reply: InspectInvocationReply },
  getPolicyBundle: { request: GetPolicyBundleRequest, reply: PolicyBundleReply },
  listPolicyBundles: { request: ListPolicyBundlesRequest, reply: ListPolicyBundlesReply },
  putPolicyBundle: { request: PutPolicyBundleRequest, reply: PolicyBundleReply },
  deletePolicyBundle: { request: DeletePolicyBundleRequest, reply: DeletePolicyBundleReply },
  checkPolicyBundle: { request: CheckPolicyBundleRequest, reply: CheckPolicyBundleReply },
  checkToolPublication: { request: CheckToolPublicationRequest, reply: CheckToolPublicationReply },
} as const satisfies Record<keyof typeof adapterOperations, { request: z.ZodType; reply: z.ZodType }>;
