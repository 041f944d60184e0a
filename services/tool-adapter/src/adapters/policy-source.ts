import {
  ToolplaneError,
  canonicalJson,
  type AgentProfile,
  type AgentProfileInput,
  type KillSwitch,
  type Scope,
  type TenantPolicy,
  type TenantPolicyInput,
} from '@toolplane/contracts';
import { compareAndSet, findPage, insertIfAbsent, type StoreCollection, type WithId } from '@toolplane/store';
import { agentProfileId, type StoredAgentProfile, type StoredTenantPolicy } from '../collections.js';
import { compileLinearRegExp } from '../core/linear-regexp.js';
import { defaultTenantPolicy } from '../core/policy-evaluator.js';

// Agent profiles and tenant policies, read per call from the adapter's own collections (nothing is cached, so a
// write is in force for the next call on every replica). A tenant without a stored policy gets the default one
// (nothing denied, everything beyond WRITE gated); an agent without a profile is denied by the evaluator. A deleted
// profile stays as a tombstone (`deletedAt`) that keeps its version, so a put or delete guarded by a version it read
// never races a delete and a re-create; readers treat a tombstone as no profile.

/** Loads the policy documents a decision depends on. */
export interface PolicySource {
  agentProfile(tenant: string, workspace: string, agentId: string | undefined, signal?: AbortSignal): Promise<AgentProfile | undefined>;
  tenantPolicy(tenant: string, now: Date, signal?: AbortSignal): Promise<TenantPolicy>;
}

function profileOf(stored: StoredAgentProfile): AgentProfile {
  const { _id: _ignored, deletedAt: _deletedAt, ...profile } = stored;
  return profile;
}

function policyOf(stored: StoredTenantPolicy): TenantPolicy {
  const { _id: _ignored, ...policy } = stored;
  return policy;
}

/** A PolicySource over the stored documents. */
export function storedPolicySource(profiles: StoreCollection<StoredAgentProfile>, policies: StoreCollection<StoredTenantPolicy>): PolicySource {
  return {
    async agentProfile(tenant, workspace, agentId, signal) {
      if (agentId === undefined) return undefined;
      const found = await profiles.raw.findOne({ _id: agentProfileId(tenant, workspace, agentId) }, signal ? { signal } : {});
      return found === null || found.deletedAt !== undefined ? undefined : profileOf(found);
    },
    async tenantPolicy(tenant, now, signal) {
      const found = await policies.raw.findOne({ _id: tenant }, signal ? { signal } : {});
      return found === null ? defaultTenantPolicy(tenant, now.toISOString()) : policyOf(found);
    },
  };
}

/** Who writes, when, and which version the writer last saw (see the contracts' ExpectedVersion). */
export interface PolicyWrite {
  readonly by: string;
  readonly now: Date;
  readonly expectedVersion?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

// An unguarded write (no expectedVersion) that keeps losing races gives up after this many tries.
const overwriteAttempts = 5;

function conflict(what: string, expected: number | undefined, found: number | undefined): ToolplaneError {
  const wanted = expected === 0 ? 'none to exist' : `version ${String(expected)}`;
  return new ToolplaneError('CONFLICT', `${what}: expected ${wanted}, found ${found === undefined ? 'none' : `version ${found}`}`);
}

/** The version a live document has for a guard (undefined when there is none, or only a tombstone). */
function liveVersion(stored: { version: number; deletedAt?: string } | null): number | undefined {
  return stored === null || stored.deletedAt !== undefined ? undefined : stored.version;
}

function checkExpectation(what: string, expected: number | undefined, live: number | undefined): void {
  if (expected === undefined) return;
  if (expected === 0 ? live !== undefined : live !== expected) throw conflict(what, expected, live);
}

/** The fields of `previous` that `next` no longer has (optional fields an operator left out). */
function removedFields(previous: object, next: object): string[] {
  const kept = new Set([...Object.keys(next), '_id', 'version']);
  return Object.keys(previous).filter((key) => !kept.has(key));
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

/** Reads and writes agent profiles and tenant policies for the operator commands, each write version-guarded. */
export class PolicyDocuments {
  readonly #profiles: StoreCollection<StoredAgentProfile>;
  readonly #policies: StoreCollection<StoredTenantPolicy>;

  constructor(profiles: StoreCollection<StoredAgentProfile>, policies: StoreCollection<StoredTenantPolicy>) {
    this.#profiles = profiles;
    this.#policies = policies;
  }

  /** The agent's profile, or NOT_FOUND. */
  async getAgentProfile(scope: Scope, agentId: string, signal?: AbortSignal): Promise<AgentProfile> {
    const found = await this.#profiles.raw.findOne({ _id: agentProfileId(scope.tenant, scope.workspace, agentId) }, signal ? { signal } : {});
    if (found === null || found.deletedAt !== undefined) throw new ToolplaneError('NOT_FOUND', `no agent profile ${agentId} in ${scope.tenant}/${scope.workspace}`);
    return profileOf(found);
  }

  /** One page of the workspace's profiles, by agent id. */
  async listAgentProfiles(scope: Scope, page: { readonly limit: number; readonly after?: string | undefined }, signal?: AbortSignal): Promise<{ items: AgentProfile[]; next: string | null }> {
    const found = await findPage(this.#profiles, {
      filter: { tenant: scope.tenant, workspace: scope.workspace, deletedAt: { $exists: false } },
      sortBy: 'agentId',
      limit: page.limit,
      ...(page.after === undefined ? {} : { after: page.after }),
      ...(signal ? { signal } : {}),
    });
    return { items: found.items.map((stored) => profileOf(stored)), next: found.next };
  }

  /** Creates or replaces an agent profile (guarded by expectedVersion); the stored profile. */
  async putAgentProfile(scope: Scope, input: AgentProfileInput, write: PolicyWrite): Promise<AgentProfile> {
    const id = agentProfileId(scope.tenant, scope.workspace, input.agentId);
    const what = `agent profile ${input.agentId}`;
    const fields = { ...input, tenant: scope.tenant, workspace: scope.workspace, updatedBy: write.by, updatedAt: write.now.toISOString() };
    return this.#write(this.#profiles, id, what, write, fields, (created) => profileOf(created));
  }

  /** Deletes an agent profile (guarded by expectedVersion); whether one was there. */
  async deleteAgentProfile(scope: Scope, agentId: string, write: PolicyWrite): Promise<boolean> {
    const id = agentProfileId(scope.tenant, scope.workspace, agentId);
    const what = `agent profile ${agentId}`;
    for (let attempt = 1; ; attempt += 1) {
      const current = await this.#profiles.raw.findOne({ _id: id }, write.signal ? { signal: write.signal } : {});
      const live = liveVersion(current);
      checkExpectation(what, write.expectedVersion, live);
      if (current === null || live === undefined) return false;
      const now = write.now.toISOString();
      const result = await compareAndSet(
        this.#profiles,
        { id, expect: { version: current.version }, set: { deletedAt: now, updatedBy: write.by, updatedAt: now } },
        write.signal ? { signal: write.signal } : {},
      );
      if (result.ok) return true;
      if (write.expectedVersion !== undefined || attempt >= overwriteAttempts) throw conflict(what, write.expectedVersion ?? current.version, liveVersion(result.current));
    }
  }

  /** The tenant's stored policy, or the default one (`isDefault`). */
  async getTenantPolicy(tenant: string, now: Date, signal?: AbortSignal): Promise<{ policy: TenantPolicy; isDefault: boolean }> {
    const found = await this.#policies.raw.findOne({ _id: tenant }, signal ? { signal } : {});
    return found === null ? { policy: defaultTenantPolicy(tenant, now.toISOString()), isDefault: true } : { policy: policyOf(found), isDefault: false };
  }

  /** Creates or replaces the tenant's policy (guarded by expectedVersion; 0 when the default is in force). */
  async putTenantPolicy(tenant: string, input: TenantPolicyInput, write: PolicyWrite): Promise<TenantPolicy> {
    checkTenantPolicy(input);
    const what = `the policy of tenant ${tenant}`;
    const at = write.now.toISOString();
    return this.#write(
      this.#policies,
      tenant,
      what,
      write,
      (previous: StoredTenantPolicy | null) => ({ ...input, killSwitches: stampKillSwitches(input.killSwitches, previous?.killSwitches ?? [], write.by, at), tenant, updatedBy: write.by, updatedAt: at }),
      (created) => policyOf(created),
    );
  }

  /**
   * The guarded write shared by profiles and policies: insert when nothing (not even a tombstone) is stored, else
   * compare-and-set from the version read (which also revives a tombstone). Without expectedVersion a lost race is
   * retried against what the winner left; with one it is CONFLICT.
   */
  async #write<TDoc extends (StoredAgentProfile | StoredTenantPolicy) & { deletedAt?: string }, TOut>(
    collection: StoreCollection<TDoc>,
    id: string,
    what: string,
    write: PolicyWrite,
    fieldsFor: Omit<TDoc, '_id' | 'version'> | ((previous: TDoc | null) => Omit<TDoc, '_id' | 'version'>),
    output: (stored: WithId<TDoc>) => TOut,
  ): Promise<TOut> {
    const options = write.signal ? { signal: write.signal } : {};
    for (let attempt = 1; ; attempt += 1) {
      const current = await collection.raw.findOne<WithId<TDoc>>({ _id: id } as never, options);
      const live = liveVersion(current);
      checkExpectation(what, write.expectedVersion, live);
      const fields = typeof fieldsFor === 'function' ? fieldsFor(current as TDoc | null) : fieldsFor;
      if (current === null) {
        const created = await insertIfAbsent(collection, { ...fields, _id: id, version: 1 } as never, options);
        if (created.created) return output(created.document);
        if (write.expectedVersion !== undefined || attempt >= overwriteAttempts) throw conflict(what, write.expectedVersion, liveVersion(created.existing));
        continue;
      }
      const unset = removedFields(current, fields);
      const result = await compareAndSet(
        collection,
        { id, expect: { version: current.version }, set: fields, ...(unset.length === 0 ? {} : { unset: unset as never }) },
        options,
      );
      if (result.ok) return output(result.document);
      if (write.expectedVersion !== undefined || attempt >= overwriteAttempts) throw conflict(what, write.expectedVersion ?? current.version, liveVersion(result.current));
    }
  }
}
