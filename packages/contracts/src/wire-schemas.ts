import type { z } from 'zod';
import {
  ApprovalReply,
  ApproveApprovalRequest,
  ConsumeApprovalRequest,
  ListApprovalsReply,
  ListApprovalsRequest,
  RejectApprovalRequest,
  ShowApprovalRequest,
} from './approval-commands.js';
import { ApprovalConsumed, ApprovalExpired, ApprovalGranted, ApprovalRejected, ApprovalRequested, ApprovalVoided } from './approval-events.js';
import { DeadLetter } from './dead-letter.js';
import { WireError } from './errors.js';
import {
  InvocationDenied,
  InvocationReceived,
  SandboxLeased,
  SandboxReleased,
  ToolCallCancelled,
  ToolCallCompleted,
  ToolCallFailed,
  ToolCallStarted,
  ToolEffectUncertain,
} from './invocation-events.js';
import { InvocationReceipt } from './invocation-receipt.js';
import { InvocationRequest } from './invocation-request.js';
import { InvocationReply } from './invocation-result.js';
import { LifecycleEvent } from './lifecycle-event.js';
import {
  McpCapabilitiesDiscovered,
  McpServerRegistered,
  McpServerStateChanged,
  McpToolDefinitionChanged,
  ToolDescriptorActivated,
  ToolDescriptorRetired,
} from './registry-events.js';
import {
  BindToolReply,
  BindToolRequest,
  DiscoverServerReply,
  GetDescriptorReply,
  GetDescriptorRequest,
  GrantAuthenticationExceptionRequest,
  ListServersReply,
  ListServersRequest,
  ListToolsReply,
  ListToolsRequest,
  RegisterServerReply,
  RegisterServerRequest,
  RetireServerReply,
  RetireServerRequest,
  ServerReply,
  ServerRequest,
  UnbindToolReply,
  UnbindToolRequest,
} from './registry-commands.js';
import { EffectiveToolSet, EffectiveToolSetRequest } from './policy.js';
import { SecretLeaseDenied, SecretLeased } from './secret-events.js';
import {
  ConnectionView,
  CreateConnectionRequest,
  LeasedCredential,
  ListConnectionsReply,
  ListConnectionsRequest,
  RevokeConnectionRequest,
  RotateConnectionRequest,
  SecretLeaseReply,
  SecretLeaseRequest,
  ShowConnectionRequest,
} from './secret-broker-commands.js';
import { SealedBox } from './sealed-secrets.js';

/**
 * Every v1 wire message by name: the one list the JSON Schema export (generated/json-schema/<Name>.schema.json)
 * and its staleness test iterate. A new message is added here; each event is listed under its type.
 */
export const wireSchemas = {
  InvocationRequest,
  InvocationReply,
  InvocationReceipt,
  WireError,
  DeadLetter,
  LifecycleEvent,
  InvocationReceived,
  InvocationDenied,
  ToolCallStarted,
  ToolCallCompleted,
  ToolCallFailed,
  ToolCallCancelled,
  ToolEffectUncertain,
  SandboxLeased,
  SandboxReleased,
  ApprovalRequested,
  ApprovalGranted,
  ApprovalRejected,
  ApprovalExpired,
  ApprovalConsumed,
  ApprovalVoided,
  ListApprovalsRequest,
  ListApprovalsReply,
  ShowApprovalRequest,
  ApproveApprovalRequest,
  RejectApprovalRequest,
  ConsumeApprovalRequest,
  ApprovalReply,
  McpServerRegistered,
  McpServerStateChanged,
  McpCapabilitiesDiscovered,
  McpToolDefinitionChanged,
  ToolDescriptorActivated,
  ToolDescriptorRetired,
  SecretLeased,
  SecretLeaseDenied,
  EffectiveToolSetRequest,
  EffectiveToolSet,
  CreateConnectionRequest,
  RotateConnectionRequest,
  RevokeConnectionRequest,
  ShowConnectionRequest,
  ListConnectionsRequest,
  ListConnectionsReply,
  ConnectionView,
  SecretLeaseRequest,
  SecretLeaseReply,
  SealedBox,
  LeasedCredential,
  RegisterServerRequest,
  RegisterServerReply,
  ServerRequest,
  ServerReply,
  DiscoverServerReply,
  BindToolRequest,
  BindToolReply,
  UnbindToolRequest,
  UnbindToolReply,
  RetireServerRequest,
  RetireServerReply,
  GrantAuthenticationExceptionRequest,
  ListServersRequest,
  ListServersReply,
  ListToolsRequest,
  ListToolsReply,
  GetDescriptorRequest,
  GetDescriptorReply,
} as const satisfies Record<string, z.ZodType>;

/** The name of a v1 wire message. */
export type WireMessageName = keyof typeof wireSchemas;
