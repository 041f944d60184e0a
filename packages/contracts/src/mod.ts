// The public entry of @toolplane/contracts: every v1 wire message and stored document, the subject map, the
// stream definitions, canonical JSON and hashing, and the error taxonomy.
export { abortError, raceAbort, sleep, throwIfAborted, withDeadline } from './abort.js';
export {
  AgentProfileInput,
  AgentProfileReply,
  DeleteAgentProfileReply,
  DeleteAgentProfileRequest,
  GetAgentProfileRequest,
  GetTenantPolicyRequest,
  ListAgentProfilesReply,
  ListAgentProfilesRequest,
  LookupInvocationReply,
  LookupInvocationRequest,
  POLICY_ADMIN_ROLE,
  PutAgentProfileRequest,
  PutTenantPolicyRequest,
  ReceiptKeySet,
  ReceiptKeysRequest,
  ReceiptPublicJwk,
  ReconcileInvocationReply,
  ReconcileInvocationRequest,
  TenantPolicyInput,
  TenantPolicyReply,
  adapterCommandSchemas,
  adapterOperations,
} from './adapter-commands.js';
export {
  ApprovalConsumed,
  ApprovalExpired,
  ApprovalGranted,
  ApprovalOutcomeEvent,
  ApprovalRejected,
  ApprovalRequested,
  ApprovalVoided,
  Approvers,
} from './approval-events.js';
export { Approval } from './approval-document.js';
export { ApprovalOpened, ApprovalStreamEvent, approvalStream, approvalStreamSubject } from './approval-stream.js';
export {
  AuditChainBreak,
  AuditChainBreakKind,
  AuditChainEntry,
  CallAttemptIdentity,
  CallAttemptState,
  CallEventSummary,
  CallEventType,
  FlowJournalEntry,
  FlowJournalEntryType,
  NumberKey,
  ProjectionGenerations,
  ProjectionRebuild,
  ProjectionRebuildState,
  RuntimeToolCall,
  RuntimeToolCallDocument,
} from './audit-projections.js';
export {
  FlowJournalReply,
  FlowJournalRequest,
  GetCallReply,
  GetCallRequest,
  ListCallsReply,
  ListCallsRequest,
  ProjectionStatusReply,
  ProjectionStatusRequest,
  RebuildProjectionsRequest,
  RuntimeToolCallAttemptView,
  RuntimeToolCallSummary,
  RuntimeToolCallView,
  VerifyChainReply,
  VerifyChainRequest,
  auditCommandSchemas,
  auditOperations,
} from './audit-commands.js';
export {
  ApprovalReply,
  ApprovalView,
  ApproveApprovalRequest,
  ConsumeApprovalRequest,
  ListApprovalsReply,
  ListApprovalsRequest,
  RejectApprovalRequest,
  ShowApprovalRequest,
  approvalCommandSchemas,
  approvalOperations,
} from './approval-commands.js';
export {
  AUTHORIZATION_HEADER,
  AgentContextClaims,
  OperatorClaims,
  PLATFORM_ADMIN_ROLE,
  RoleName,
  TOKEN_AUDIENCE,
  TokenAlgorithm,
  TokenClaims,
  TokenKind,
  TrustedKeys,
  TrustedKeysSetting,
  TrustedPublicJwk,
} from './auth-tokens.js';
export { deterministicUuid, uuidFromDigest } from './deterministic-ids.js';
export { canonicalHash, canonicalJson, deriveIdempotencyKey, requestHash, requestHashAndArgumentsJson, sha256Hex, type IdempotencyKeyInput, type RequestHashInput } from './canonical-json.js';
export {
  IdempotencySemantics,
  RiskClass,
  SandboxKind,
  SideEffectClass,
  ToolKind,
  compareRiskClasses,
  compareSideEffectClasses,
  raiseSideEffectClass,
} from './classification.js';
export { DeadLetter } from './dead-letter.js';
export { DESCRIPTOR_BUCKET, compareToolVersions, descriptorBucketSettings, descriptorKey, descriptorKeyFilter, kvKeyToken } from './descriptor-read-model.js';
export { agentProfileBucketSettings, tenantPolicyBucketSettings } from './policy-read-model.js';
export {
  COMMAND_PATTERN_OPTIONS,
  DEFAULT_MAX_PATTERN_LENGTH,
  compileCommandPattern,
  compileLinearRegExp,
  type LinearRegExp,
  type LinearRegExpOptions,
  type LinearRegExpResult,
} from './linear-regexp.js';
export { ErrorCode, ToolFailure, ToolplaneError, WireError, errorCatalog, fromWireError, hasErrorCode, isRetryable, toWireError } from './errors.js';
export { ApprovalEventMetadata, EventMetadata, InvocationEventMetadata } from './event-metadata.js';
export {
  InvocationDenied,
  InvocationReceived,
  PipelineStage,
  SandboxLeased,
  SandboxReleased,
  ToolCallCancelled,
  ToolCallCompleted,
  ToolCallFailed,
  ToolCallStarted,
  ToolEffectUncertain,
} from './invocation-events.js';
export { InvocationReceipt, ReceiptSignature, UnsignedInvocationReceipt, receiptSigningInput } from './invocation-receipt.js';
export { verifyReceipt, type ReceiptKeyResolver, type ReceiptVerification } from './receipt-verification.js';
export { InvocationRequest, invocationRequestMsgId } from './invocation-request.js';
export { InvocationReply, InvocationResult, InvocationStatus, invocationStatusByState } from './invocation-result.js';
export { jsonProblem } from './json.js';
export {
  ApprovalEvent,
  EventFamily,
  InvocationEvent,
  LifecycleEvent,
  RegistryEvent,
  SecretEvent,
  eventFamilyOf,
  eventMsgId,
  eventTypesByFamily,
  isEventType,
  type EventType,
} from './lifecycle-event.js';
export {
  HEADER_ALLOWANCE_BYTES,
  MAX_EVENT_BYTES,
  MAX_INVOCATION_TIMEOUT_MS,
  MAX_JSON_DEPTH,
  MAX_MESSAGE_BYTES,
  MAX_REQUEST_BYTES,
  MAX_RESULT_BYTES,
} from './limits.js';
export { McpAuthentication, McpDirection, McpServerName, McpServerState, McpToolName, McpTransport } from './mcp.js';
export { McpCapabilitiesSnapshot, McpDiscoveredTool, McpServer, McpServerSetting } from './mcp-server-document.js';
export {
  MCP_META_PREFIX,
  MCP_TIMEOUT_HEADER,
  McpApprovalMeta,
  McpCallMeta,
  McpCallRequestMeta,
  McpCallResultMeta,
  McpErrorMeta,
  McpToolMeta,
  mcpMetaKeys,
} from './mcp-endpoint.js';
export {
  AgentProfile,
  BlockedCommandAction,
  ClassRaise,
  CommandPattern,
  CommandRules,
  EffectiveTool,
  EffectiveToolSet,
  EffectiveToolSetRequest,
  EnvironmentClass,
  HiddenTool,
  KillSwitch,
  PermissionName,
  PolicyDecision,
  PolicyEffect,
  PolicyReason,
  PolicyReasonCode,
  RateLimitRule,
  RiskRestrictions,
  RunPolicy,
  TaskScope,
  TenantPolicy,
  ToolPattern,
  WorkspaceEnvironment,
} from './policy.js';
export {
  AgentRevision,
  ConnectionRef,
  DurationMs,
  EventId,
  ExternalId,
  IdempotencyKey,
  InvocationId,
  IsoDateTime,
  JsonObject,
  PrincipalId,
  SUBJECT_TOKEN_PATTERN,
  Scope,
  Sha256Hex,
  TenantId,
  ToolCallId,
  ToolId,
  ToolVersion,
  Uuid,
  WorkspaceId,
  boundedText,
} from './primitives.js';
export {
  DescriptorRetirementReason,
  McpCapabilitiesDiscovered,
  McpServerRegistered,
  McpServerStateChanged,
  McpToolDefinitionChanged,
  ToolDescriptorActivated,
  ToolDescriptorRetired,
} from './registry-events.js';
export {
  BindToolReply,
  BindToolRequest,
  DiscoverServerReply,
  DiscoveredToolView,
  GetDescriptorReply,
  GetDescriptorRequest,
  GrantAuthenticationExceptionRequest,
  ListServersReply,
  ListServersRequest,
  ListToolsReply,
  ListToolsRequest,
  McpServerSummary,
  PublishFlowToolReply,
  PublishFlowToolRequest,
  RegisterServerReply,
  RegisterServerRequest,
  RetireFlowToolReply,
  RetireFlowToolRequest,
  RetireServerReply,
  RetireServerRequest,
  ServerReply,
  ServerRequest,
  ToolBindingState,
  ToolDefinitionChange,
  UnbindToolReply,
  UnbindToolRequest,
  registryCommandSchemas,
  registryOperations,
} from './registry-commands.js';
export { replyEnvelope, type ReplyEnvelope } from './reply.js';
export { McpServerRecord, RegistryAggregateKind, ServerNameRecord, ToolDescriptorRecord, WatchLease, descriptorStreamId, parseRegistrySubject, registryStream, registrySubject, registryWatchBucket, serverNameStreamId, serverStreamId } from './registry-stream.js';
export { SecretLeaseDenied, SecretLeased } from './secret-events.js';
export { EncryptedEnvelope, SealedBox, SealingKeyId } from './sealed-secrets.js';
export {
  ConnectionView,
  CreateConnectionRequest,
  CredentialInput,
  LeasedCredential,
  ListConnectionsReply,
  ListConnectionsRequest,
  RevokeConnectionRequest,
  RotateConnectionRequest,
  SecretLeaseReply,
  SecretLeaseRequest,
  ShowConnectionRequest,
  secretBrokerContracts,
  secretBrokerOperations,
} from './secret-broker-commands.js';
export {
  CachedAccessToken,
  Connection,
  ConnectionKind,
  ConnectionName,
  ConnectionState,
  OAuth2ClientSettings,
  OAuthScope,
  SecretLease,
  SecretLeaseState,
} from './secret-broker-documents.js';
export { ConnectionCreated, ConnectionEvent, ConnectionRevoked, ConnectionRotated, ConnectionSecretRewrapped, ConnectionSummary, LeaseEnded, LeaseEvent, LeaseGranted, SecretBrokerRecord, connectionSubject, leaseSubject, secretBrokerAggregateFilters, secretBrokerDeadLetterSubject, secretBrokerStream, secretBrokerTokenBucket } from './secret-broker-stream.js';
export { ApprovalState, InvocationState, TerminalApprovalState, TerminalInvocationState, isTerminalInvocationState } from './states.js';
export {
  FlowCallStep,
  FlowDefinitionBody,
  FlowExpression,
  FlowParallelStep,
  FlowStep,
  FlowStepId,
  FlowStepRetry,
  MAX_FLOW_EXPRESSION_LENGTH,
  MAX_FLOW_SCHEMA_BYTES,
  MAX_FLOW_STEPS,
  MAX_PARALLEL_STEPS,
  MIN_PARALLEL_STEPS,
} from './flow-definition.js';
export {
  ActivateFlowReply,
  ActivateFlowRequest,
  CreateDefinitionReply,
  CreateDefinitionRequest,
  DefinitionReply,
  DeleteDefinitionReply,
  DeleteDefinitionRequest,
  ETag,
  FlowId,
  FlowRecord,
  FlowSummary,
  FlowVersion,
  FlowVersionNumber,
  FlowVersionStatus,
  FlowVersionSummary,
  GetDefinitionReply,
  GetDefinitionRequest,
  GetFlowReply,
  GetFlowRequest,
  ListDefinitionsReply,
  ListDefinitionsRequest,
  ListFlowsReply,
  ListFlowsRequest,
  MAX_DEFINITION_TIMEOUT_MS,
  MIN_DEFINITION_TIMEOUT_MS,
  MaterializedTool,
  PublishFlowReply,
  PublishFlowRequest,
  SaveFlowDraftReply,
  SaveFlowDraftRequest,
  ToolDefinition,
  ToolDefinitionApproval,
  ToolDefinitionFlowRef,
  ToolDefinitionName,
  ToolDefinitionRecord,
  ToolDefinitionSpec,
  UpdateDefinitionRequest,
  flowCommandSchemas,
  flowOperations,
} from './flow-commands.js';
export { FLOW_PROVIDER_NAME, FLOW_TOOL_NAMESPACE, flowDefinitionNameOf, flowProviderId, flowToolId, isFlowToolId } from './flow-tools.js';
export { FlowRunReceipt, RunFlowOutcome, RunFlowReply, RunFlowRequest, flowRunIdentity, flowStepIdempotencyKey } from './flow-run-work.js';
export { flowRunStreamId, flowRunnerAggregateKinds, flowRunnerFilter, flowRunnerStream, flowRunnerSubject, flowStreamId, flowWorkFilter, flowWorkStream, flowWorkSubject, toolDefinitionStreamId, type FlowRunnerAggregateKind } from './flow-runner-stream.js';
export { streams, type StreamDefinition } from './streams.js';
export { InvocationCallId, InvocationLeaseRenewed, InvocationRecorded, InvocationStateEvent, ToolCallIndexed, invocationStateFilter, invocationStateStream, invocationStateSubject, toolCallIndexSubject } from './invocation-state.js';
export {
  CommandService,
  SUBJECT_PREFIX,
  commandFilter,
  commandSubject,
  deadLetterFilter,
  deadLetterSubject,
  eventFilter,
  eventSubject,
  invocationReplySubject,
  invocationRequestFilter,
  invocationRequestSubject,
  parseSubject,
  scopeOfSubject,
  subjectFiltersOverlap,
  subjectOfEvent,
  type ParsedSubject,
  type ScopeFilter,
} from './subjects.js';
export { RateLimit, RetryPolicy, ToolDescriptor } from './tool-descriptor-document.js';
export { ToolInvocation } from './tool-invocation-document.js';
export { wireSchemas, type WireMessageName } from './wire-schemas.js';
