export { toolAdapterConfig, toolAdapterConsumers, toolAdapterService, type ToolAdapterConfig } from './service.js';
export { collections } from './collections.js';
export { agentProfileBucket, agentProfileKey, tenantPolicyBucket, tenantPolicyKey, type StoredAgentProfile } from './adapters/policy-buckets.js';
export { rateCounterBucket } from './adapters/rate-counters.js';
export { callStreamId, invocationDocumentId, storedInvocationOf, type StoredInvocation } from './adapters/invocation-store.js';
export { invocationDecider, leaseAlive, type InvocationCallState, type InvocationCommand } from './core/invocation-decider.js';
export { descriptorBucket } from '@toolplane/messaging';
// The pure core of the governed pipeline (no I/O; clock, ids, keys and secrets come in as arguments).
export {
  ArgumentValidators,
  type ArgumentCheck,
  type ArgumentValidatorOptions,
  type InputSchemaSource,
  type OutputCheck,
  type OutputSchemaSource,
  type OutputValidator,
  type SchemaStatus,
  type SchemaViolation,
} from './core/argument-validation.js';
export { DEFAULT_BLOCKED_COMMAND_PATTERNS, checkCommand, commandOf, type CommandVerdict } from './core/command-policy.js';
export { derivedToolCallId, invocationEventId } from './core/deterministic-ids.js';
export { effectiveTools, type EffectiveToolsInput } from './core/effective-tools.js';
export { executionEnding, retryDecision, type ExecutionEnding, type ExecutionResult, type RetryDecision, type RetryInput } from './core/execution-outcome.js';
export {
  decideIdempotency,
  isSafeToRepeat,
  markInterruptedUncertain,
  reconcileInvocation,
  startNextAttempt,
  type IdempotencyDecision,
  type IncomingRequest,
  type Reconciliation,
  type ReconcileResult,
} from './core/invocation-attempts.js';
export { appendEvent, invocationEvent, invocationEventMetadata, type PipelineEvent, type PipelineEventType } from './core/invocation-event-log.js';
export {
  PIPELINE_STEPS,
  advancePipeline,
  idempotencyKeyOf,
  invocationResultOf,
  receiveInvocation,
  requestHashOf,
  resumePipeline,
  terminalEventsOf,
  type InvocationArrival,
  type PendingEnding,
  type PipelineContext,
  type PipelineState,
  type PipelineStep,
  type PipelineTransition,
  type ResumePoint,
  type StageOutcome,
} from './core/invocation-pipeline.js';
export { LinearRegExpCache, compileLinearRegExp, type LinearRegExp, type LinearRegExpResult } from './core/linear-regexp.js';
export {
  assessTool,
  defaultTenantPolicy,
  evaluatePolicy,
  rateLimitChecksFor,
  type CallerIdentity,
  type PolicyEvaluation,
  type PolicyInput,
  type PolicySubject,
  type RateCounterUpdate,
  type StaticAssessment,
} from './core/policy-evaluator.js';
export { RATE_LOG_SLOTS, applicableRateLimits, rateSlotMs, slidingWindowDecision, type RateLimitCheck, type RateLimitVerdict, type RateLog } from './core/rate-limit.js';
export {
  UNRESOLVED_TOOL_VERSION,
  receiptSigner,
  signReceipt,
  unsignedReceiptOf,
  verifyReceipt,
  type ReceiptKeyResolver,
  type ReceiptSigner,
  type ReceiptSigningKey,
  type ReceiptVerification,
} from './core/receipts.js';
export { OUTPUT_SCHEMA_VIOLATION, outputContractFailure, outputSchemaOf } from './core/output-contract.js';
export {
  contentText,
  sanitizeFailure,
  sanitizeResult,
  storedResultContent,
  type ProviderOutput,
  type SanitizedResult,
  type SanitizeOptions,
  type StoredResultContent,
} from './core/result-sanitizer.js';
export { inspectInputSchema, defaultSchemaLimits, type SchemaLimits } from './core/schema-guard.js';
export { REDACTION_MARKER, SecretRedactor } from './core/secret-redaction.js';
export { toolPatternMatches, firstMatchingToolPattern } from './core/tool-patterns.js';
