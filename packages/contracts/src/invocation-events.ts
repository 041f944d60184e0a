import { z } from 'zod';
import { RiskClass, SandboxKind, SideEffectClass } from './classification.js';
import { InvocationOperation } from './completion.js';
import { ToolFailure } from './errors.js';
import { InvocationEventMetadata, defineEvent } from './event-metadata.js';
import { SandboxLeaseInfo } from './sandbox.js';
import { DurationMs, IdempotencyKey, IsoDateTime, Sha256Hex, ToolVersion, Uuid } from './primitives.js';

// Invocation events carry ids, classes and hashes. Arguments and results never appear in them: at most their
// hashes, when a descriptor's audit requirements ask for them.

/** The pipeline stages, in their fixed order; a denial names the stage that refused. */
export const PipelineStage = z.enum([
  'TOOL_RESOLUTION',
  'SCHEMA_VALIDATION',
  'AGENT_PERMISSION',
  'TENANT_POLICY',
  'SIDE_EFFECT_CLASSIFICATION',
  'APPROVAL',
  'CREDENTIAL_BROKER',
  'SANDBOX',
]);
export type PipelineStage = z.infer<typeof PipelineStage>;

/** An invocation request was accepted for processing and recorded. */
export const InvocationReceived = defineEvent(
  'InvocationReceived',
  InvocationEventMetadata,
  z.strictObject({
    requestHash: Sha256Hex,
    idempotencyKey: IdempotencyKey,
    /** True when the key was derived from durableExecutionId, agentRevision, tool and arguments. */
    idempotencyKeyDerived: z.boolean(),
    /** The version the request asked for, if any (metadata.toolVersion is the resolved one). */
    requestedToolVersion: ToolVersion.optional(),
    /** The caller's deadline, when it gave one. */
    deadline: IsoDateTime.optional(),
    /** `completion` when the call asks for argument values instead of the descriptor's own operation. */
    operation: InvocationOperation.optional(),
  }),
  'An invocation request was accepted and recorded (state Received).',
);
export type InvocationReceived = z.infer<typeof InvocationReceived>;

/** A pre-execution stage refused the invocation; the provider was not called. */
export const InvocationDenied = defineEvent(
  'InvocationDenied',
  InvocationEventMetadata,
  z.strictObject({
    stage: PipelineStage,
    failure: ToolFailure,
    policyDecisionId: Uuid.optional(),
    approvalId: Uuid.optional(),
  }),
  'A pre-execution stage refused the invocation (state Denied); the provider was not called.',
);
export type InvocationDenied = z.infer<typeof InvocationDenied>;

/** The started fact: persisted before the provider is called, so a call without it never happened. */
export const ToolCallStarted = defineEvent(
  'ToolCallStarted',
  InvocationEventMetadata,
  z.strictObject({
    requestHash: Sha256Hex,
    idempotencyKey: IdempotencyKey,
    /** SHA-256 of the canonical arguments, when the descriptor's audit requirements ask for it. */
    argumentsHash: Sha256Hex.optional(),
    declaredSideEffectClass: SideEffectClass,
    /** The declared class raised by environment and policy; never lower than the declared one. */
    sideEffectClass: SideEffectClass,
    riskClass: RiskClass,
    policyDecisionId: Uuid,
    approvalId: Uuid.optional(),
    sandboxLeaseId: Uuid.optional(),
    secretLeaseIds: z.array(Uuid).max(16),
    mcpServerId: Uuid.optional(),
    deadline: IsoDateTime,
  }),
  'The invocation is about to call the provider (state Executing); persisted before the call.',
);
export type ToolCallStarted = z.infer<typeof ToolCallStarted>;

/** The provider answered and the sanitized result was recorded. */
export const ToolCallCompleted = defineEvent(
  'ToolCallCompleted',
  InvocationEventMetadata,
  z.strictObject({
    resultHash: Sha256Hex,
    truncated: z.boolean(),
    durationMs: DurationMs,
  }),
  'The provider answered and the sanitized result was recorded (state Observed).',
);
export type ToolCallCompleted = z.infer<typeof ToolCallCompleted>;

/** The call failed before any effect could have happened. */
export const ToolCallFailed = defineEvent(
  'ToolCallFailed',
  InvocationEventMetadata,
  z.strictObject({ failure: ToolFailure, durationMs: DurationMs }),
  'The call failed before any effect could have happened (state Failed).',
);
export type ToolCallFailed = z.infer<typeof ToolCallFailed>;

/** The call was interrupted (caller cancellation, deadline) before any effect could have happened. */
export const ToolCallCancelled = defineEvent(
  'ToolCallCancelled',
  InvocationEventMetadata,
  z.strictObject({ failure: ToolFailure, durationMs: DurationMs }),
  'The call was interrupted before any effect could have happened (state Cancelled).',
);
export type ToolCallCancelled = z.infer<typeof ToolCallCancelled>;

/** Whether the effect happened cannot be known; the call is never retried automatically, only reconciled. */
export const ToolEffectUncertain = defineEvent(
  'ToolEffectUncertain',
  InvocationEventMetadata,
  z.strictObject({
    failure: ToolFailure,
    /** Absent when the attempt was found interrupted after a crash and its end is unknown. */
    durationMs: DurationMs.optional(),
  }),
  'Whether the effect happened cannot be known (state Uncertain); reconcile before any retry.',
);
export type ToolEffectUncertain = z.infer<typeof ToolEffectUncertain>;

/** A sandbox was leased for the invocation. */
export const SandboxLeased = defineEvent(
  'SandboxLeased',
  InvocationEventMetadata,
  z.strictObject({
    sandboxLeaseId: Uuid,
    sandboxKind: SandboxKind,
    expiresAt: IsoDateTime,
    /** Which sandbox: its profile's name and hash, network mode and limits (absent for leases recorded before them). */
    sandbox: SandboxLeaseInfo.optional(),
  }),
  'A sandbox was leased for the invocation.',
);
export type SandboxLeased = z.infer<typeof SandboxLeased>;

/** The invocation's sandbox was released. */
export const SandboxReleased = defineEvent(
  'SandboxReleased',
  InvocationEventMetadata,
  z.strictObject({ sandboxLeaseId: Uuid, sandboxKind: SandboxKind }),
  "The invocation's sandbox was released.",
);
export type SandboxReleased = z.infer<typeof SandboxReleased>;
