import { DEFAULT_POLICY_BUNDLE, raceAbort, type AgentProfile, type PolicyBundle, type Scope, type TenantPolicy } from '@toolplane/contracts';
import type { TypedKv } from '@toolplane/messaging';
import { defaultTenantPolicy, type ServerPolicyBundle } from '../core/policy-evaluator.js';
import { agentProfileKey, liveBundle, liveProfile, policyBundleKey, tenantPolicyKey, type PolicyBuckets, type StoredAgentProfile, type StoredPolicyBundle } from './policy-buckets.js';

// Agent profiles, tenant policies and policy bundles as every replica sees them: the buckets watched into memory, so a call's
// policy inputs are map lookups (no I/O on the hot path), and a write (a kill switch above all) is in force on a
// replica as soon as its watch delivers it, milliseconds after the write. A replica serves only once each watch has
// delivered the whole bucket (`ready`), never from a partial copy. A watch that ends (NATS restarted, the consumer
// lost) is started again; until the new one is ready the replica keeps the copy it had, then swaps in the new one,
// which also drops whatever was deleted in between. A tenant without a stored policy gets the default one; an agent
// without a profile (or with a tombstone) has none, which the evaluator denies. A server naming `default` with no
// bundle stored under it gets no extra rules; any other name with nothing (readable) stored is missing, which the
// evaluator denies. A bundle change bites like a policy change: on the next call after the watch delivers it.

/** The policy documents a decision depends on. */
export interface PolicySource {
  agentProfile(tenant: string, workspace: string, agentId: string | undefined, signal?: AbortSignal): Promise<AgentProfile | undefined>;
  tenantPolicy(tenant: string, now: Date, signal?: AbortSignal): Promise<TenantPolicy>;
  /** The bundle a server's governancePolicyRef names: `none` for `default` with none stored, else the bundle or `missing`. */
  policyBundle(tenant: string, name: string, signal?: AbortSignal): Promise<ServerPolicyBundle>;
}

/** Which bucket a revision belongs to. */
export type PolicyBucketName = 'profiles' | 'policies' | 'bundles';

/** A PolicySource answered from watched copies of the buckets. */
export interface WatchedPolicies extends PolicySource {
  /** Resolves once both copies hold every entry that existed when the watches started. */
  readonly ready: Promise<void>;
  /** Resolves once this copy of `bucket` has applied every change up to `revision` (or the deadline passed: false). */
  caughtUp(bucket: PolicyBucketName, revision: number, options?: { readonly timeoutMs?: number; readonly signal?: AbortSignal }): Promise<boolean>;
  /** The live profiles of a workspace, by agent id. */
  profilesOf(scope: Scope): AgentProfile[];
  /** The live (readable) policy bundles of a tenant, by name. */
  bundlesOf(tenant: string): PolicyBundle[];
  /** Stops watching. */
  close(): void;
}

/** What a watched copy reports besides its contents. */
export interface PolicyWatchOptions {
  readonly signal?: AbortSignal;
  /** Hears about entries that break their contract and about watches that ended and are started again. */
  readonly onProblem?: (problem: { readonly bucket: string; readonly key?: string; readonly message: string }) => void;
  /** How long to wait before starting an ended watch again (default 250 ms, doubling to 5 s). */
  readonly restartDelayMs?: number;
}

/** An entry the watch delivered: a value, or one that broke its contract (kept so readers can fail closed). */
type Entry<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/** One bucket kept in memory by a watch that is started again whenever it ends. */
class Mirror<T> {
  #entries = new Map<string, Entry<T>>();
  #revision = 0;
  #waiters = new Set<{ readonly revision: number; readonly resolve: (caught: boolean) => void }>();
  #closed = false;
  #stop: (() => void) | undefined;
  readonly ready: Promise<void>;
  #markReady: () => void = () => undefined;

  constructor(
    readonly kv: TypedKv<T>,
    readonly options: PolicyWatchOptions,
  ) {
    this.ready = new Promise<void>((resolve) => (this.#markReady = resolve));
    void this.#run();
  }

  get(key: string): Entry<T> | undefined {
    return this.#entries.get(key);
  }

  entries(): IterableIterator<[string, Entry<T>]> {
    return this.#entries.entries();
  }

  caughtUp(revision: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    if (this.#revision >= revision) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter = {
        revision,
        resolve: (caught: boolean) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.#waiters.delete(waiter);
          resolve(caught);
        },
      };
      const onAbort = () => waiter.resolve(false);
      const timer = setTimeout(onAbort, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }

  close(): void {
    this.#closed = true;
    this.#stop?.();
    for (const waiter of [...this.#waiters]) waiter.resolve(false);
  }

  #applied(revision: number): void {
    this.#revision = Math.max(this.#revision, revision);
    for (const waiter of [...this.#waiters]) if (waiter.revision <= this.#revision) waiter.resolve(true);
  }

  async #run(): Promise<void> {
    const { signal, onProblem } = this.options;
    const baseDelay = this.options.restartDelayMs ?? 250;
    let delay = baseDelay;
    const ended = () => this.#closed || signal?.aborted === true;
    while (!ended()) {
      // A restarted watch fills a copy of its own; the one in use keeps serving until the new one is complete.
      let building: Map<string, Entry<T>> | undefined = new Map();
      let buildingRevision = 0;
      try {
        const watch = await this.kv.watch(signal ? { signal } : {});
        this.#stop = () => watch.stop();
        if (this.#closed) watch.stop();
        for await (const change of watch) {
          if (change.kind === 'ready') {
            if (building !== undefined) {
              this.#entries = building;
              building = undefined;
              this.#applied(buildingRevision);
              this.#markReady();
              delay = baseDelay;
            }
            continue;
          }
          const target = building ?? this.#entries;
          if (change.kind === 'delete') target.delete(change.key);
          else if (change.kind === 'put') target.set(change.key, { ok: true, value: change.value });
          else {
            target.set(change.key, { ok: false, reason: change.reason.message });
            onProblem?.({ bucket: this.kv.bucket, key: change.key, message: change.reason.message });
          }
          if (building === undefined) this.#applied(change.revision);
          else buildingRevision = Math.max(buildingRevision, change.revision);
        }
      } catch (error) {
        if (ended()) break;
        onProblem?.({ bucket: this.kv.bucket, message: `the watch failed: ${error instanceof Error ? error.message : String(error)}` });
      }
      if (ended()) break;
      onProblem?.({ bucket: this.kv.bucket, message: `the watch ended; starting it again in ${delay} ms` });
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 5_000);
    }
  }
}

/**
 * A tenant policy that could not be read denies every call of the tenant (a kill switch of its own) rather than
 * falling back to the default, which would silently release the kill switches the stored one engages.
 */
function unreadablePolicy(tenant: string, now: Date, reason: string): TenantPolicy {
  const at = now.toISOString();
  const policy = defaultTenantPolicy(tenant, at);
  return { ...policy, killSwitches: [{ target: 'TENANT', reason: `the stored tenant policy cannot be read: ${reason}`.slice(0, 500), engagedBy: 'svc:tool-adapter', engagedAt: at }] };
}

/** Watches both buckets into memory; wait for `ready` before answering calls with it. */
export function watchPolicies(buckets: PolicyBuckets, options: PolicyWatchOptions = {}): WatchedPolicies {
  const profiles = new Mirror<StoredAgentProfile>(buckets.profiles, options);
  const policies = new Mirror<TenantPolicy>(buckets.policies, options);
  const bundles = new Mirror<StoredPolicyBundle>(buckets.bundles, options);
  const mirrors = { profiles, policies, bundles } as const;
  const ready = Promise.all([profiles.ready, policies.ready, bundles.ready]).then(() => undefined);
  return {
    ready,
    agentProfile(tenant, workspace, agentId) {
      if (agentId === undefined) return Promise.resolve(undefined);
      const entry = profiles.get(agentProfileKey(tenant, workspace, agentId));
      // An unreadable profile is no profile: the evaluator denies the agent.
      return Promise.resolve(entry?.ok === true ? liveProfile(entry.value) : undefined);
    },
    tenantPolicy(tenant, now) {
      const entry = policies.get(tenantPolicyKey(tenant));
      if (entry === undefined) return Promise.resolve(defaultTenantPolicy(tenant, now.toISOString()));
      return Promise.resolve(entry.ok ? entry.value : unreadablePolicy(tenant, now, entry.reason));
    },
    policyBundle(tenant, name) {
      const entry = bundles.get(policyBundleKey(tenant, name));
      if (entry?.ok === false) return Promise.resolve({ kind: 'missing', name, problem: entry.reason });
      const bundle = liveBundle(entry?.value);
      if (bundle !== undefined) return Promise.resolve({ kind: 'bundle', bundle });
      return Promise.resolve(name === DEFAULT_POLICY_BUNDLE ? { kind: 'none' } : { kind: 'missing', name });
    },
    async caughtUp(bucket, revision, { timeoutMs = 5_000, signal } = {}) {
      return raceAbort(mirrors[bucket].caughtUp(revision, timeoutMs, signal), signal, `waiting for the ${bucket} copy to reach revision ${revision}`);
    },
    profilesOf(scope) {
      const prefix = `${scope.tenant}.${scope.workspace}.`;
      const found: AgentProfile[] = [];
      for (const [key, entry] of profiles.entries()) {
        if (!key.startsWith(prefix) || !entry.ok) continue;
        const profile = liveProfile(entry.value);
        if (profile !== undefined) found.push(profile);
      }
      return found.sort((a, b) => (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0));
    },
    bundlesOf(tenant) {
      const prefix = `${tenant}.`;
      const found: PolicyBundle[] = [];
      for (const [key, entry] of bundles.entries()) {
        if (!key.startsWith(prefix) || !entry.ok) continue;
        const bundle = liveBundle(entry.value);
        if (bundle !== undefined && bundle.tenant === tenant) found.push(bundle);
      }
      return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    close() {
      profiles.close();
      policies.close();
      bundles.close();
    },
  };
}
