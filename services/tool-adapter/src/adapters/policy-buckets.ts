import {
  AgentProfile,
  IsoDateTime,
  PolicyBundle,
  TenantPolicy,
  agentProfileBucketSettings,
  kvKeyToken,
  policyBundleBucketSettings,
  tenantPolicyBucketSettings,
  type Scope,
} from '@toolplane/contracts';
import { openKv, type KvBucketSpec, type Messaging, type TypedKv } from '@toolplane/messaging';
import type { z } from 'zod';

// Agent profiles, tenant policies and policy bundles live in three JetStream KV buckets that only the tool adapter writes: every
// replica watches them into memory (policy-source.ts) and the operator commands write them with compare-and-set on
// the entry's revision (policy-documents.ts). The version operators see (`expectedVersion`) stays a counter in the
// value, so it keeps counting across a delete and a re-create.

/** The agent-profile bucket: one entry per agent in a workspace, `{tenant}.{workspace}.{b64url(agentId)}`. */
export const agentProfileBucket: KvBucketSpec = agentProfileBucketSettings;

/** The tenant-policy bucket: one entry per tenant, keyed by the tenant id. */
export const tenantPolicyBucket: KvBucketSpec = tenantPolicyBucketSettings;

/** The policy-bundle bucket: one entry per bundle of a tenant, `{tenant}.{b64url(name)}`. */
export const policyBundleBucket: KvBucketSpec = policyBundleBucketSettings;

/**
 * A stored agent profile. A deleted profile stays as a tombstone (`deletedAt`) that keeps its version, so a write
 * guarded by a version it read never races a delete and a re-create; every reader treats a tombstone as no profile.
 */
export const StoredAgentProfile = AgentProfile.extend({ deletedAt: IsoDateTime.optional() });
export type StoredAgentProfile = z.infer<typeof StoredAgentProfile>;

/** A stored policy bundle; a deleted one is a tombstone that keeps its version, as a profile's does. */
export const StoredPolicyBundle = PolicyBundle.extend({ deletedAt: IsoDateTime.optional() });
export type StoredPolicyBundle = z.infer<typeof StoredPolicyBundle>;

/** The three buckets, typed. */
export interface PolicyBuckets {
  readonly profiles: TypedKv<StoredAgentProfile>;
  readonly policies: TypedKv<TenantPolicy>;
  readonly bundles: TypedKv<StoredPolicyBundle>;
}

/** Opens (creating when missing) the agent-profile, tenant-policy and policy-bundle buckets. */
export async function openPolicyBuckets(messaging: Messaging, options: { readonly signal?: AbortSignal } = {}): Promise<PolicyBuckets> {
  const [profiles, policies, bundles] = await Promise.all([
    openKv(messaging, agentProfileBucket, StoredAgentProfile, options),
    openKv(messaging, tenantPolicyBucket, TenantPolicy, options),
    openKv(messaging, policyBundleBucket, StoredPolicyBundle, options),
  ]);
  return { profiles, policies, bundles };
}

/** The key of an agent's profile. */
export function agentProfileKey(tenant: string, workspace: string, agentId: string): string {
  return `${tenant}.${workspace}.${kvKeyToken(agentId)}`;
}

/** The key filter of a workspace's profiles. */
export function agentProfileKeyFilter(scope: Scope): string {
  return `${scope.tenant}.${scope.workspace}.>`;
}

/** The key of a tenant's policy (tenant ids are subject tokens, which keys allow). */
export function tenantPolicyKey(tenant: string): string {
  return tenant;
}

/** The profile a stored entry holds, or undefined for a tombstone. */
export function liveProfile(stored: StoredAgentProfile | undefined): AgentProfile | undefined {
  if (stored === undefined || stored.deletedAt !== undefined) return undefined;
  const { deletedAt: _deletedAt, ...profile } = stored;
  return profile;
}

/** The key of a tenant's policy bundle. */
export function policyBundleKey(tenant: string, name: string): string {
  return `${tenant}.${kvKeyToken(name)}`;
}

/** The bundle a stored entry holds, or undefined for a tombstone. */
export function liveBundle(stored: StoredPolicyBundle | undefined): PolicyBundle | undefined {
  if (stored === undefined || stored.deletedAt !== undefined) return undefined;
  const { deletedAt: _deletedAt, ...bundle } = stored;
  return bundle;
}
