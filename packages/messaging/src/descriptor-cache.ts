import { ToolDescriptor, compareToolVersions, descriptorBucketSettings, descriptorKey, type Scope } from '@toolplane/contracts';
import { openKv, type KvBucketSpec, type TypedKv } from './kv.js';
import type { Messaging } from './messaging.js';

// The descriptor read model as its readers see it (the tool adapter, and the registry's own tests). Why a NATS KV
// bucket rather than Mongo plus an event-driven cache: the registry owns its collections (no other service reads
// them), the bucket is written after every committed change with a monotonic guard (a stale write never replaces a
// newer version), a watch gives a reader the whole current state and then every change in order with no polling,
// and a restarted reader rebuilds from the bucket alone without replaying the event stream. Resolution is then a
// local map lookup: no request to the registry, and no database round trip, per invocation.

/** The descriptor bucket, opened with the contract's settings by the registry (its only writer) and every reader. */
export const descriptorBucket: KvBucketSpec = descriptorBucketSettings;

/** A local, continuously updated copy of every ToolDescriptor version. */
export interface DescriptorCache {
  /** Resolves once the copy holds every descriptor that existed when the cache started. */
  readonly ready: Promise<void>;
  /**
   * The descriptor of an exact version, or without one the newest active version (the newest version at all when
   * none is active, so a caller can say why it may not be invoked). Undefined for a tool the registry never bound.
   * Invoke only when `active && healthy`.
   */
  resolve(scope: Scope, toolId: string, toolVersion?: string): ToolDescriptor | undefined;
  /** Every descriptor version of a scope, active or not (for the effective tool set). */
  list(scope: Scope): ToolDescriptor[];
  /** Calls `listener` with every descriptor written after the cache became ready. */
  onChange(listener: (descriptor: ToolDescriptor) => void): () => void;
  /** Stops watching. */
  close(): void;
}

/** Options of createDescriptorCache. */
export interface DescriptorCacheOptions {
  readonly signal?: AbortSignal;
  /** Hears about entries that break the contract (skipped) and about the watch ending unexpectedly. */
  readonly onProblem?: (problem: { readonly key?: string; readonly message: string }) => void;
}

function scopeKey(scope: Scope): string {
  return `${scope.tenant} ${scope.workspace}`;
}

/** Opens the descriptor bucket and keeps a local copy of it (see DescriptorCache). */
export async function createDescriptorCache(messaging: Messaging, options: DescriptorCacheOptions = {}): Promise<DescriptorCache> {
  const signalOption = options.signal ? { signal: options.signal } : {};
  const kv: TypedKv<ToolDescriptor> = await openKv(messaging, descriptorBucket, ToolDescriptor, signalOption);
  // scope → bucket key → descriptor: a scope's descriptors without scanning the others.
  const byScope = new Map<string, Map<string, ToolDescriptor>>();
  const scopeOfKey = new Map<string, string>();
  const listeners = new Set<(descriptor: ToolDescriptor) => void>();
  const watch = await kv.watch(signalOption);
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let isReady = false;

  const forget = (key: string) => {
    const scope = scopeOfKey.get(key);
    if (scope === undefined) return;
    byScope.get(scope)?.delete(key);
    scopeOfKey.delete(key);
  };

  void (async () => {
    try {
      for await (const change of watch) {
        if (change.kind === 'ready') {
          isReady = true;
          markReady();
        } else if (change.kind === 'delete') {
          forget(change.key);
        } else if (change.kind === 'invalid') {
          forget(change.key);
          options.onProblem?.({ key: change.key, message: change.reason.message });
        } else {
          const descriptor = change.value;
          // The key must be the one the descriptor's own identity gives, or the entry is not what it claims to be.
          if (change.key !== descriptorKey(descriptor, descriptor.toolId, descriptor.toolVersion)) {
            options.onProblem?.({ key: change.key, message: 'the entry does not describe the descriptor its key names' });
            continue;
          }
          const scope = scopeKey(descriptor);
          const entries = byScope.get(scope) ?? new Map<string, ToolDescriptor>();
          entries.set(change.key, descriptor);
          byScope.set(scope, entries);
          scopeOfKey.set(change.key, scope);
          if (isReady) for (const listener of [...listeners]) listener(descriptor);
        }
      }
    } catch (error) {
      options.onProblem?.({ message: `the descriptor watch ended: ${error instanceof Error ? error.message : String(error)}` });
    }
  })();

  const list = (scope: Scope): ToolDescriptor[] => [...(byScope.get(scopeKey(scope))?.values() ?? [])];
  return {
    ready,
    resolve(scope, toolId, toolVersion) {
      if (toolVersion !== undefined) return byScope.get(scopeKey(scope))?.get(descriptorKey(scope, toolId, toolVersion));
      const versions = list(scope)
        .filter((descriptor) => descriptor.toolId === toolId)
        .sort(compareToolVersions);
      return versions.filter((descriptor) => descriptor.active).at(-1) ?? versions.at(-1);
    },
    list,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => watch.stop(),
  };
}
