// The public entry of @toolplane/client, the agent-runtime SDK: invoke governed tools (recovering lost replies by
// idempotency key), list the effective tool set, follow lifecycle events, and verify receipts offline.
export { eventMatches, eventSubjects, lifecycleEvents, type EventFilter, type EventStream } from './event-stream.js';
export { defaultInboxPrefix } from './inbox-prefix.js';
export { boundedTimeoutMs, prepareInvocation, type InvocationEnvelope, type InvokeOptions, type KeySource, type PreparedInvocation } from './invocation-request.js';
export { defaultRecoveryBackoff, recoveryDelayMs, unsettledError, type RecoveryBackoff } from './reply-recovery.js';
export { completionValues, promptMessages, requireSuccess, resourceContents, resultContent, type SuccessfulResult } from './results.js';
export {
  createToolplaneClient,
  type AwaitOptions,
  type ClientConnectionOptions,
  type ClientDiagnostic,
  type CompleteOptions,
  type CompletionArgument,
  type ContextTokenSource,
  type EffectiveToolsQuery,
  type LookedUpRequest,
  type LookupOptions,
  type OwnConnectionOptions,
  type ReadResourceOptions,
  type ReplyLossReason,
  type RequestCallOptions,
  type ToolplaneClient,
  type ToolplaneClientOptions,
} from './toolplane-client.js';
export { workspaceClients, type WorkspaceClients } from './workspace-clients.js';
// Receipts are verifiable offline with the adapter's public key alone; the verifier lives beside the receipt schema.
export { verifyReceipt, type ReceiptKeyResolver, type ReceiptVerification } from '@toolplane/contracts';
