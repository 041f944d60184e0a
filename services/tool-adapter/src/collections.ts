import type { AgentProfile, ApprovalRequested, TenantPolicy, ToolInvocation } from '@toolplane/contracts';
import { defineCollection } from '@toolplane/store';

/**
 * A stored ToolInvocation. `_id` is derived from (tenant, workspace, idempotencyKey), so one logical call keeps one
 * document across its attempts. `leaseUntil` is the processing lease: while it lies in the future, the handler that
 * last wrote the document may still be working on it (a redelivery joins instead of taking over). `outbox` holds the
 * ApprovalRequested event of a parked call, written with the parking, so a redelivery after a crash can publish it.
 */
export type StoredInvocation = ToolInvocation & { _id: string; leaseUntil?: string; outbox?: ApprovalRequested[] };

/** The `tool_invocations` collection and the indexes its queries and invariants need. */
export const toolInvocations = defineCollection<StoredInvocation>({
  name: 'tool_invocations',
  indexes: [
    // One ToolInvocation per idempotency key in a scope: the authority behind "never executed twice".
    { name: 'tenant_workspace_idempotency_key', key: { tenant: 1, workspace: 1, idempotencyKey: 1 }, unique: true },
    { name: 'invocation', key: { invocationId: 1 }, unique: true },
    { name: 'tenant_workspace_tool_call', key: { tenant: 1, workspace: 1, toolCallId: 1 } },
    { name: 'state_updated', key: { state: 1, updatedAt: 1 } },
    { name: 'tenant_workspace_approval', key: { tenant: 1, workspace: 1, approvalId: 1 } },
  ],
});

/**
 * A stored agent profile; `_id` is `{tenant}/{workspace}/{agentId}`. A deleted profile stays as a tombstone with
 * `deletedAt` (and keeps counting versions), which every reader treats as no profile.
 */
export type StoredAgentProfile = AgentProfile & { _id: string; deletedAt?: string };

/** Agent profiles (allowed tools, maximum risk, permissions), one per agent in a workspace. */
export const agentProfiles = defineCollection<StoredAgentProfile>({
  name: 'agent_profiles',
  indexes: [{ name: 'tenant_workspace_agent', key: { tenant: 1, workspace: 1, agentId: 1 }, unique: true }],
});

/** A stored tenant policy; `_id` is the tenant. */
export type StoredTenantPolicy = TenantPolicy & { _id: string };

/** Tenant policies (denied classes, approvals, rate limits, kill switches, environments), one per tenant. */
export const tenantPolicies = defineCollection<StoredTenantPolicy>({
  name: 'tenant_policies',
  indexes: [{ name: 'tenant', key: { tenant: 1 }, unique: true }],
});

/** One admitted call of a rate-limit counter's window: `_id` is `{key}|{windowStart}|{n}` (insert-only). */
export interface StoredRateSlot {
  _id: string;
  key: string;
  windowStart: number;
  n: number;
  /** When the window ends; swept after that. */
  expiresAt: string;
}

/** Rate-limit slots (see adapters/rate-counters.ts). */
export const rateSlots = defineCollection<StoredRateSlot>({
  name: 'rate_limit_slots',
  indexes: [
    { name: 'key_window', key: { key: 1, windowStart: 1 } },
    { name: 'expires', key: { expiresAt: 1 } },
  ],
});

/** The id of an agent profile document. */
export function agentProfileId(tenant: string, workspace: string, agentId: string): string {
  return `${tenant}/${workspace}/${agentId}`;
}

/** Every collection the tool-adapter service owns. */
export const collections = [toolInvocations, agentProfiles, tenantPolicies, rateSlots];
