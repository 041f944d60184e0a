// The agent-profile and tenant-policy buckets: the tool adapter's own state of who may call what (written only by
// it, with compare-and-set on the entry's revision), watched into memory by every adapter replica and by the MCP
// endpoint, which only learns from their keys which scope changed.

/** One entry per agent in a workspace, `{tenant}.{workspace}.{b64url(agentId)}`. */
export const agentProfileBucketSettings = {
  name: 'TOOL_ADAPTER_AGENT_PROFILES',
  description: 'Agent profiles by tenant, workspace and agent; written by the tool adapter.',
  history: 1,
  storage: 'file',
} as const;

/** One entry per tenant, keyed by the tenant id; kill switches are in it. */
export const tenantPolicyBucketSettings = {
  name: 'TOOL_ADAPTER_TENANT_POLICIES',
  description: 'Tenant policies (kill switches included) by tenant; written by the tool adapter.',
  history: 1,
  storage: 'file',
} as const;

/** One entry per policy bundle of a tenant, `{tenant}.{b64url(name)}`; applied to calls through the servers naming it. */
export const policyBundleBucketSettings = {
  name: 'TOOL_ADAPTER_POLICY_BUNDLES',
  description: 'Policy bundles by tenant and name, applied to calls through servers naming them; written by the tool adapter.',
  history: 1,
  storage: 'file',
} as const;
