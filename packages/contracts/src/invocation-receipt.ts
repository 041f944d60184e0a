import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { InvocationOperation } from './completion.js';
import { SideEffectClass } from './classification.js';
import { ToolFailure } from './errors.js';
import { FlowRunReceipt } from './flow-run-work.js';
import { SandboxLeaseRecord } from './sandbox.js';
import {
  AgentRevision,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  PrincipalId,
  Sha256Hex,
  TenantId,
  ToolCallId,
  ToolId,
  ToolVersion,
  Uuid,
  WorkspaceId,
} from './primitives.js';
import { TerminalInvocationState } from './states.js';

const receiptFields = {
  tenant: TenantId,
  workspace: WorkspaceId,
  invocationId: InvocationId,
  toolCallId: ToolCallId,
  attempt: z.number().int().positive(),
  idempotencyKey: IdempotencyKey,
  principal: PrincipalId,
  agentId: ExternalId.optional(),
  agentRevision: AgentRevision.optional(),
  toolId: ToolId,
  toolVersion: ToolVersion,
  /** `completion` when the call asked for argument values; absent for the descriptor's own operation (signed as before). */
  operation: InvocationOperation.optional(),
  requestHash: Sha256Hex,
  /** SHA-256 of the canonical JSON of the sanitized result; only for Observed. */
  resultHash: Sha256Hex.optional(),
  /** The effective side-effect class, once classification ran. */
  sideEffectClass: SideEffectClass.optional(),
  policyDecisionId: Uuid.optional(),
  approvalId: Uuid.optional(),
  state: TerminalInvocationState,
  failure: ToolFailure.optional(),
  receivedAt: IsoDateTime,
  /** When the provider was called; absent when the call never started. */
  startedAt: IsoDateTime.optional(),
  endedAt: IsoDateTime,
  /**
   * For a flow-backed tool: the run that executed the call (WorkItem, FlowRun, effective Flow version, correlation).
   * Absent otherwise, so receipts without it sign exactly as before.
   */
  flowRun: FlowRunReceipt.optional(),
  /** The sandbox the call ran in (kind, profile, network mode, limits); absent when it needed none. */
  sandbox: SandboxLeaseRecord.optional(),
};

/** Observed has a result hash and no failure; every other ending has a failure and no result hash. */
function checkOutcome(receipt: { state: TerminalInvocationState; failure?: ToolFailure | undefined; resultHash?: string | undefined }, ctx: z.RefinementCtx): void {
  const observed = receipt.state === 'Observed';
  if (observed && receipt.failure !== undefined) ctx.addIssue({ code: 'custom', path: ['failure'], message: 'an Observed invocation has no failure' });
  if (observed && receipt.resultHash === undefined) ctx.addIssue({ code: 'custom', path: ['resultHash'], message: 'an Observed invocation has a result hash' });
  if (!observed && receipt.failure === undefined) ctx.addIssue({ code: 'custom', path: ['failure'], message: `a ${receipt.state} invocation has a failure` });
  if (!observed && receipt.resultHash !== undefined) ctx.addIssue({ code: 'custom', path: ['resultHash'], message: `a ${receipt.state} invocation has no result hash` });
}

/** A receipt before it is signed: exactly the fields the signature covers. */
export const UnsignedInvocationReceipt = z.strictObject(receiptFields).superRefine(checkOutcome);
export type UnsignedInvocationReceipt = z.infer<typeof UnsignedInvocationReceipt>;

/** The adapter's Ed25519 signature over {@link receiptSigningInput} of the receipt. */
export const ReceiptSignature = z.strictObject({
  alg: z.literal('Ed25519'),
  /** Names the adapter key, so verifiers pick the right public key and keys can rotate. */
  keyId: z.string().regex(/^[!-~]{1,128}$/),
  /** The 64-byte signature, base64 with padding. */
  value: z.string().regex(/^[A-Za-z0-9+/]{86}==$/),
});
export type ReceiptSignature = z.infer<typeof ReceiptSignature>;

/**
 * The signed record of how one invocation ended, verifiable offline: ids, tool version, request and result
 * hashes, policy decision, approval, attempt, state, timestamps and failure. Never holds arguments or results.
 */
export const InvocationReceipt = z
  .strictObject({ ...receiptFields, signature: ReceiptSignature })
  .superRefine(checkOutcome)
  .meta({
    description: 'The signed receipt of one tool invocation (one physical attempt).',
    // checkOutcome, spelled for JSON Schema validators in other languages.
    if: { properties: { state: { const: 'Observed' } } },
    then: { required: ['resultHash'], not: { required: ['failure'] } },
    else: { required: ['failure'], not: { required: ['resultHash'] } },
  });
export type InvocationReceipt = z.infer<typeof InvocationReceipt>;

/** The exact text a receipt signature is made and checked over: the canonical JSON of the receipt without `signature`. */
export function receiptSigningInput(receipt: UnsignedInvocationReceipt | InvocationReceipt): string {
  const { signature: _signature, ...unsigned } = receipt as InvocationReceipt;
  return canonicalJson(unsigned);
}
