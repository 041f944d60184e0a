import type { AgentProfile, TenantPolicy } from '@toolplane/contracts';
import type { StoreCollection } from '@toolplane/store';
import { agentProfileId, type StoredAgentProfile, type StoredTenantPolicy } from '../collections.js';
import { defaultTenantPolicy } from '../core/policy-evaluator.js';

// Agent profiles and tenant policies, read per call from the adapter's own collections. A tenant without a
// stored policy gets the default one (nothing denied, everything beyond WRITE gated); an agent without a profile
// is denied by the evaluator.

/** Loads the policy documents a decision depends on. */
export interface PolicySource {
  agentProfile(tenant: string, workspace: string, agentId: string | undefined, signal?: AbortSignal): Promise<AgentProfile | undefined>;
  tenantPolicy(tenant: string, now: Date, signal?: AbortSignal): Promise<TenantPolicy>;
}

/** A PolicySource over the stored documents. */
export function storedPolicySource(profiles: StoreCollection<StoredAgentProfile>, policies: StoreCollection<StoredTenantPolicy>): PolicySource {
  return {
    async agentProfile(tenant, workspace, agentId, signal) {
      if (agentId === undefined) return undefined;
      const found = await profiles.raw.findOne({ _id: agentProfileId(tenant, workspace, agentId) }, signal ? { signal } : {});
      if (found === null) return undefined;
      const { _id: _ignored, ...profile } = found;
      return profile;
    },
    async tenantPolicy(tenant, now, signal) {
      const found = await policies.raw.findOne({ _id: tenant }, signal ? { signal } : {});
      if (found === null) return defaultTenantPolicy(tenant, now.toISOString());
      const { _id: _ignored, ...policy } = found;
      return policy;
    },
  };
}
