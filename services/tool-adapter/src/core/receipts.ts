import { ReceiptSignature, UnsignedInvocationReceipt, type InvocationReceipt, isTerminalInvocationState, receiptSigningInput, type ToolInvocation } from '@toolplane/contracts';
import { sign, type KeyObject } from 'node:crypto';

// Receipts are signed with Ed25519 over the canonical JSON of the unsigned receipt. Ed25519 signatures are
// deterministic (RFC 8032), so signing is a pure function of key and receipt and may live in the core; anyone with
// the adapter's public key can verify a receipt offline.

/** The version recorded for a call whose tool could not be resolved (receipts and request hashes need one). */
export const UNRESOLVED_TOOL_VERSION = 'unresolved';

/** The adapter's receipt-signing key and the id verifiers look it up by. */
export interface ReceiptSigningKey {
  readonly keyId: string;
  /** An Ed25519 private key. */
  readonly privateKey: KeyObject;
}

/** Signs an unsigned receipt; the pipeline takes one as its signer. */
export type ReceiptSigner = (unsigned: UnsignedInvocationReceipt) => InvocationReceipt;

/** The unsigned receipt of a terminal invocation: exactly the fields the signature covers. */
export function unsignedReceiptOf(invocation: ToolInvocation): UnsignedInvocationReceipt {
  const { state } = invocation;
  if (!isTerminalInvocationState(state)) throw new RangeError(`an invocation in state ${state} has no receipt yet`);
  if (invocation.endedAt === undefined) throw new RangeError('a terminal invocation has an end time');
  const receipt: UnsignedInvocationReceipt = {
    tenant: invocation.tenant,
    workspace: invocation.workspace,
    invocationId: invocation.invocationId,
    toolCallId: invocation.toolCallId,
    attempt: invocation.attempt,
    idempotencyKey: invocation.idempotencyKey,
    principal: invocation.principal,
    ...(invocation.agentId === undefined ? {} : { agentId: invocation.agentId }),
    ...(invocation.agentRevision === undefined ? {} : { agentRevision: invocation.agentRevision }),
    toolId: invocation.toolId,
    toolVersion: invocation.toolVersion ?? invocation.requestedToolVersion ?? UNRESOLVED_TOOL_VERSION,
    ...(invocation.completion === undefined ? {} : { operation: 'completion' as const }),
    requestHash: invocation.requestHash,
    ...(state === 'Observed' && invocation.resultHash !== undefined ? { resultHash: invocation.resultHash } : {}),
    ...(invocation.effectiveClass === undefined ? {} : { sideEffectClass: invocation.effectiveClass }),
    ...(invocation.policyDecisionId === undefined ? {} : { policyDecisionId: invocation.policyDecisionId }),
    ...(invocation.approvalId === undefined ? {} : { approvalId: invocation.approvalId }),
    state,
    ...(state !== 'Observed' && invocation.failure !== undefined ? { failure: invocation.failure } : {}),
    receivedAt: invocation.receivedAt,
    ...(invocation.startedAt === undefined ? {} : { startedAt: invocation.startedAt }),
    endedAt: invocation.endedAt,
    ...(invocation.flowRun === undefined ? {} : { flowRun: invocation.flowRun }),
    ...(invocation.sandbox === undefined ? {} : { sandbox: invocation.sandbox }),
  };
  // The schema's own rules (an Observed receipt has a result hash, every other ending a failure) are checked here,
  // so the pipeline can never sign a receipt that verifiers would reject.
  return UnsignedInvocationReceipt.parse(receipt);
}

/**
 * Signs a receipt with the adapter's Ed25519 key. `unsigned` is as {@link unsignedReceiptOf} returns it (validated,
 * its fields in the contract's order), so only the signature is checked against the contract: the signed receipt is
 * what InvocationReceipt.parse would return, field for field and in the same order.
 */
export function signReceipt(unsigned: UnsignedInvocationReceipt, key: ReceiptSigningKey): InvocationReceipt {
  if (key.privateKey.asymmetricKeyType !== 'ed25519' || key.privateKey.type !== 'private') throw new TypeError('receipts are signed with an Ed25519 private key');
  const value = sign(null, Buffer.from(receiptSigningInput(unsigned), 'utf8'), key.privateKey).toString('base64');
  return { ...unsigned, signature: ReceiptSignature.parse({ alg: 'Ed25519', keyId: key.keyId, value }) };
}

/** A signer bound to one key. */
export function receiptSigner(key: ReceiptSigningKey): ReceiptSigner {
  return (unsigned) => signReceipt(unsigned, key);
}

// Verification lives in @toolplane/contracts, beside the receipt's schema, so runtimes and auditors share it.
export { verifyReceipt, type ReceiptKeyResolver, type ReceiptVerification } from '@toolplane/contracts';
