import {
  ToolplaneError,
  canonicalJson,
  hasErrorCode,
  type AgentProfile,
  type AgentProfileInput,
  type KillSwitch,
  type PolicyBundle,
  type PolicyBundleInput,
  type Scope,
  type TenantPolicy,
  type TenantPolicyInput,
} from '@toolplane/contracts';
import type { KvValue, TypedKv } from '@toolplane/messaging';
import { compileLinearRegExp } from '../core/linear-regexp.js';
import { defaultTenantPolicy } from '../core/policy-evaluator.js';
import { agentProfileKey, liveBundle, liveProfile, policyBundleKey, tenantPolicyKey, type PolicyBuckets, type StoredAgentProfile, type StoredPolicyBundle } from './policy-buckets.js';
import type { PolicyBucketName, WatchedPolicies } from './policy-source.js';

// The operator commands' reads and writes of agent profiles, tenant policies and policy bundles. Gets read the bucket itself (what
// was last written, whichever replica wrote it); writes are compare-and-set on the entry's revision, guarded by the
// version in the value, and return once this replica's watched copy has them, so the next call this replica
// governs sees them. A deleted profile is a tombstone that keeps its version (see StoredAgentProfile); writing a
// profile over a tombstone revives it with the next version.

/** Who writes, when, and which version the writer last saw (see the contracts' ExpectedVersion). */
export interface PolicyWrite {
  readonly by: string;
  readonly now: Date;
  readonly expectedVersion?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

// An unguarded write (no expectedVersion) that keeps losing races gives up after this many tries.
const overwriteAttempts = 5;
// How long a write waits for this replica's copy to have it before answering anyway (the write is durable).
const ownCopyWaitMs = 2_000;

function conflict(what: string, expected: number | undefined, found: number | undefined): ToolplaneError {
  const wanted = expected === 0 ? 'none to exist' : `version ${String(expected)}`;
  return new ToolplaneError('CONFLICT', `${what}: expected ${wanted}, found ${found === undefined ? 'none' : `version ${found}`}`);
}

/** The version a live entry has for a guard (undefined when there is none, or only a tombstone). */
function liveVersion(stored: KvValue<{ version: number; deletedAt?: string | undefined }> | undefined): number | undefined {
  return stored === undefined || stored.value.deletedAt !== undefined ? undefined : stored.value.version;
}

function checkExpectation(what: string, expected: number | undefined, live: number | undefined): void {
  if (expected === undefined) return;
  if (expected === 0 ? live !== undefined : live !== expected) throw conflict(what, expected, live);
}

/**
 * Problems the evaluator would meet in a tenant policy that its schema cannot express: command patterns that do
 * not compile for linear-time matching, a workspace with two environments. INVALID_ARGUMENT naming the first.
 */
export function checkTenantPolicy(policy: TenantPolicyInput): void {
  for (const [i, pattern] of policy.commands.block.entries()) {
    const compiled = compileLinearRegExp(pattern, { caseInsensitive: true });
    if (!compiled.ok) throw new ToolplaneError('INVALID_ARGUMENT', `commands.block[${i}] ${JSON.stringify(pattern.slice(0, 80))} cannot be used: ${compiled.problem}`);
  }
  const seen = new Set<string>();
  for (const environment of policy.environments) {
    if (seen.has(environment.workspace)) throw new ToolplaneError('INVALID_ARGUMENT', `environments names workspace ${environment.workspace} twice`);
    seen.add(environment.workspace);
  }
  if (policy.approvalTtlMs < 1_000) throw new ToolplaneError('INVALID_ARGUMENT', 'approvalTtlMs must be at least 1000 (an approval must be decidable)');
}

/** Problems the evaluator would meet in a policy bundle that its schema cannot express (as {@link checkTenantPolicy}). */
export function checkPolicyBundle(bundle: PolicyBundleInput): void {
  for (const [i, pattern] of bundle.commands.block.entries()) {
    const compiled = compileLinearRegExp(pattern, { caseInsensitive: true });
    if (!compiled.ok) throw new ToolplaneError('INVALID_ARGUMENT', `commands.block[${i}] ${JSON.stringify(pattern.slice(0, 80))} cannot be used: ${compiled.problem}`);
  }
}

/** A kill switch's identity: what it targets (who engaged it, when and why aside). */
function killSwitchKey(killSwitch: KillSwitch): string {
  return canonicalJson({ target: killSwitch.target, tools: 'tools' in killSwitch ? killSwitch.tools : null, server: 'mcpServerId' in killSwitch ? killSwitch.mcpServerId : null });
}

/**
 * The kill switches as stored: one engaged before keeps who engaged it and when; a newly engaged one is recorded as
 * engaged by the writer, now (never what a client claims).
 */
function stampKillSwitches(next: readonly KillSwitch[], previous: readonly KillSwitch[], by: string, at: string): KillSwitch[] {
  const before = new Map(previous.map((killSwitch) => [killSwitchKey(killSwitch), killSwitch]));
  return next.map((killSwitch) => {
    const earlier = before.get(killSwitchKey(killSwitch));
    return earlier === undefined ? { ...killSwitch, engagedBy: by, engagedAt: at } : { ...killSwitch, engagedBy: earlier.engagedBy, engagedAt: earlier.engagedAt };
  });
}

/** A page cursor over agent ids (opaque to clients). */
function cursorOf(agentId: string): string {
  return Buffer.from(JSON.stringify({ agentId }), 'utf8').toString('base64url');
}

function agentIdOfCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof parsed === 'object' && parsed !== null && 'agentId' in parsed && typeof parsed.agentId === 'string') return parsed.agentId;
  } catch {
    // Not a cursor this adapter made: refused below.
  }
  throw new ToolplaneError('INVALID_ARGUMENT', 'after is not a cursor of this listing (pass the `next` of the previous page)');
}

/** A page cursor over bundle names (opaque to clients). */
function bundleCursorOf(name: string): string {
  return Buffer.from(JSON.stringify({ bundle: name }), 'utf8').toString('base64url');
}

function bundleNameOfCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof parsed === 'object' && parsed !== null && 'bundle' in parsed && typeof parsed.bundle === 'string') return parsed.bundle;
  } catch {
    // Not a cursor this adapter made: refused below.
  }
  throw new ToolplaneError('INVALID_ARGUMENT', 'after is not a cursor of this listing (pass the `next` of the previous page)');
}

/** Reads and writes agent profiles, tenant policies and policy bundles for the operator commands, each write version-guarded. */
export class PolicyDocuments {
  readonly #buckets: PolicyBuckets;
  readonly #copy: WatchedPolicies;

  constructor(buckets: PolicyBuckets, copy: WatchedPolicies) {
    this.#buckets = buckets;
    this.#copy = copy;
  }

  /** The agent's profile, or NOT_FOUND. */
  async getAgentProfile(scope: Scope, agentId: string, signal?: AbortSignal): Promise<AgentProfile> {
    const found = await this.#buckets.profiles.get(agentProfileKey(scope.tenant, scope.workspace, agentId), signal ? { signal } : {});
    const profile = liveProfile(found?.value);
    if (profile === undefined) throw new ToolplaneError('NOT_FOUND', `no agent profile ${agentId} in ${scope.tenant}/${scope.workspace}`);
    return profile;
  }

  /** One page of the workspace's profiles, by agent id, from this replica's copy once it has every write made so far. */
  async listAgentProfiles(scope: Scope, page: { readonly limit: number; readonly after?: string | undefined }, signal?: AbortSignal): Promise<{ items: AgentProfile[]; next: string | null }> {
    const after = page.after === undefined ? undefined : agentIdOfCursor(page.after);
    const options = signal ? { signal } : {};
    const latest = await this.#buckets.profiles.lastRevision(options);
    if (!(await this.#copy.caughtUp('profiles', latest, options))) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the agent profiles are still being loaded on this replica; ask again');
    const all = this.#copy.profilesOf(scope).filter((profile) => after === undefined || profile.agentId > after);
    const items = all.slice(0, page.limit);
    const last = items.at(-1);
    return { items, next: all.length > page.limit && last !== undefined ? cursorOf(last.agentId) : null };
  }

  /** Every live profile of the workspace, from this replica's copy once it has every write made so far. */
  async workspaceProfiles(scope: Scope, signal?: AbortSignal): Promise<AgentProfile[]> {
    const options = signal ? { signal } : {};
    const latest = await this.#buckets.profiles.lastRevision(options);
    if (!(await this.#copy.caughtUp('profiles', latest, options))) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the agent profiles are still being loaded on this replica; ask again');
    return this.#copy.profilesOf(scope);
  }

  /** Creates or replaces an agent profile (guarded by expectedVersion); the stored profile. */
  async putAgentProfile(scope: Scope, input: AgentProfileInput, write: PolicyWrite): Promise<AgentProfile> {
    const stored = await this.#write('profiles', this.#buckets.profiles, agentProfileKey(scope.tenant, scope.workspace, input.agentId), `agent profile ${input.agentId}`, write, (_previous, version) => ({
      ...input,
      tenant: scope.tenant,
      workspace: scope.workspace,
      updatedBy: write.by,
      updatedAt: write.now.toISOString(),
      version,
    }));
    return liveProfile(stored) as AgentProfile;
  }

  /** Deletes an agent profile (guarded by expectedVersion), leaving a tombstone; whether one was there. */
  async deleteAgentProfile(scope: Scope, agentId: string, write: PolicyWrite): Promise<boolean> {
    const now = write.now.toISOString();
    let deleted = true;
    await this.#write('profiles', this.#buckets.profiles, agentProfileKey(scope.tenant, scope.workspace, agentId), `agent profile ${agentId}`, write, (previous, version) => {
      if (previous === undefined || previous.deletedAt !== undefined) {
        deleted = false;
        return undefined;
      }
      return { ...previous, deletedAt: now, updatedBy: write.by, updatedAt: now, version };
    });
    return deleted;
  }

  /** The tenant's stored policy, or the default one (`isDefault`). */
  async getTenantPolicy(tenant: string, now: Date, signal?: AbortSignal): Promise<{ policy: TenantPolicy; isDefault: boolean }> {
    const found = await this.#buckets.policies.get(tenantPolicyKey(tenant), signal ? { signal } : {});
    return found === undefined ? { policy: defaultTenantPolicy(tenant, now.toISOString()), isDefault: true } : { policy: found.value, isDefault: false };
  }

  /** Creates or replaces the tenant's policy (guarded by expectedVersion; 0 when the default is in force). */
  async putTenantPolicy(tenant: string, input: TenantPolicyInput, write: PolicyWrite): Promise<TenantPolicy> {
    checkTenantPolicy(input);
    const at = write.now.toISOString();
    const stored = await this.#write('policies', this.#buckets.policies, tenantPolicyKey(tenant), `the policy of tenant ${tenant}`, write, (previous, version) => ({
      ...input,
      killSwitches: stampKillSwitches(input.killSwitches, previous?.killSwitches ?? [], write.by, at),
      tenant,
      updatedBy: write.by,
      updatedAt: at,
      version,
    }));
    return stored as TenantPolicy;
  }

  /** The tenant's bundle of that name as last written, if there is one. */
  async findPolicyBundle(tenant: string, name: string, signal?: AbortSignal): Promise<PolicyBundle | undefined> {
    const found = await this.#buckets.bundles.get(policyBundleKey(tenant, name), signal ? { signal } : {});
    return liveBundle(found?.value);
  }

  /** The tenant's bundle of that name, or NOT_FOUND. */
  async getPolicyBundle(tenant: string, name: string, signal?: AbortSignal): Promise<PolicyBundle> {
    const bundle = await this.findPolicyBundle(tenant, name, signal);
    if (bundle === undefined) throw new ToolplaneError('NOT_FOUND', `no policy bundle ${JSON.stringify(name)} in tenant ${tenant}`);
    return bundle;
  }

  /** One page of the tenant's bundles, by name, from this replica's copy once it has every write made so far. */
  async listPolicyBundles(tenant: string, page: { readonly limit: number; readonly after?: string | undefined }, signal?: AbortSignal): Promise<{ items: PolicyBundle[]; next: string | null }> {
    const after = page.after === undefined ? undefined : bundleNameOfCursor(page.after);
    const options = signal ? { signal } : {};
    const latest = await this.#buckets.bundles.lastRevision(options);
    if (!(await this.#copy.caughtUp('bundles', latest, options))) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', 'the policy bundles are still being loaded on this replica; ask again');
    const all = this.#copy.bundlesOf(tenant).filter((bundle) => after === undefined || bundle.name > after);
    const items = all.slice(0, page.limit);
    const last = items.at(-1);
    return { items, next: all.length > page.limit && last !== undefined ? bundleCursorOf(last.name) : null };
  }

  /** Creates or replaces a bundle (guarded by expectedVersion); the stored bundle. */
  async putPolicyBundle(tenant: string, input: PolicyBundleInput, write: PolicyWrite): Promise<PolicyBundle> {
    checkPolicyBundle(input);
    const stored = await this.#write('bundles', this.#buckets.bundles, policyBundleKey(tenant, input.name), `policy bundle ${input.name}`, write, (_previous, version) => ({
      ...input,
      tenant,
      updatedBy: write.by,
      updatedAt: write.now.toISOString(),
      version,
    }));
    return liveBundle(stored) as PolicyBundle;
  }

  /**
   * Deletes a bundle (guarded by expectedVersion), leaving a tombstone; whether one was there. Calls through a server
   * that still names it are then denied (a missing bundle fails closed), `default` excepted, which then adds nothing.
   */
  async deletePolicyBundle(tenant: string, name: string, write: PolicyWrite): Promise<boolean> {
    const now = write.now.toISOString();
    let deleted = true;
    await this.#write('bundles', this.#buckets.bundles, policyBundleKey(tenant, name), `policy bundle ${name}`, write, (previous, version) => {
      if (previous === undefined || previous.deletedAt !== undefined) {
        deleted = false;
        return undefined;
      }
      return { ...previous, deletedAt: now, updatedBy: write.by, updatedAt: now, version };
    });
    return deleted;
  }

  /**
   * The guarded write shared by profiles and policies: create when nothing (not even a tombstone) is stored, else
   * update from the revision read (which also revives a tombstone), the value's version one past the one read.
   * Without expectedVersion a lost race is retried against what the winner left; with one it is CONFLICT. `next`
   * returning undefined writes nothing (the stored value, if any, is returned).
   */
  async #write<T extends TenantPolicy | StoredAgentProfile | StoredPolicyBundle>(
    bucket: PolicyBucketName,
    kv: TypedKv<T>,
    key: string,
    what: string,
    write: PolicyWrite,
    next: (previous: T | undefined, version: number) => T | undefined,
  ): Promise<T | undefined> {
    const options = write.signal ? { signal: write.signal } : {};
    for (let attempt = 1; ; attempt += 1) {
      const current = await kv.get(key, options);
      checkExpectation(what, write.expectedVersion, liveVersion(current));
      const value = next(current?.value, (current?.value.version ?? 0) + 1);
      if (value === undefined) return current?.value;
      let revision: number;
      try {
        revision = current === undefined ? await kv.create(key, value, options) : await kv.update(key, value, current.revision, options);
      } catch (error) {
        if (!hasErrorCode(error) || error.code !== 'CONFLICT') throw error;
        if (write.expectedVersion !== undefined || attempt >= overwriteAttempts) {
          const found = await kv.get(key, options);
          throw conflict(what, write.expectedVersion ?? liveVersion(current), liveVersion(found));
        }
        continue;
      }
      await this.#copy.caughtUp(bucket, revision, { timeoutMs: ownCopyWaitMs, ...options });
      return value;
    }
  }
}
