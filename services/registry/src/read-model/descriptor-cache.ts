import { ToolDescriptor, descriptorKey, type Scope } from '@toolplane/contracts';
import { openKv, type Messaging, type TypedKv } from '@toolplane/messaging';
import { byToolVersion } from '../core/tool-identity.js';
import { descriptorBucket } from './descriptor-bucket.js';

// The read model the tool adapter resolves descriptors from. Why a NATS KV bucket rather than Mongo plus an event-
// driven cache: the registry owns its collections (no other service reads them), the bucket is written after
// every committed change with a monotonic guard (a stale write never replaces a newer version), a watch gives a
// reader the whole current state and then every change in order with no polling, and a restarted reader rebuilds
// from the bucket alone without replaying the event stream. Resolution is then a local map lookup: no request
// to the registry, and no database round trip, per invocation.

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
  /** Calls `listener` with every descriptor written after the cache started (tests and reactive callers). */
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

function toolKey(scope: Scope, toolId: string): string {
  return `${scope.tenant} ${scope.workspace} ${toolId}`;
}

/** Opens the descriptor bucket and keeps a local copy of it (see DescriptorCache). */
export async function createDescriptorCache(messaging: Messaging, options: DescriptorCacheOptions = {}): Promise<DescriptorCache> {
  const kv: TypedKv<ToolDescriptor> = await openKv(messaging, descriptorBucket, ToolDescriptor, options.signal ? { signal: options.signal } : {});
  const byTool = new Map<string, Map<string, ToolDescriptor>>();
  const keys = new Map<string, { tool: string; version: string }>();
  const listeners = new Set<(descriptor: ToolDescriptor) => void>();
  const watch = await kv.watch(options.signal ? { signal: options.signal } : {});
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let isReady = false;

  const forget = (key: string) => {
    const known = keys.get(key);
    if (known === undefined) return;
    byTool.get(known.tool)?.delete(known.version);
    keys.delete(key);
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
          const tool = toolKey(descriptor, descriptor.toolId);
          // The key must be the one the descriptor's own identity gives, or the entry is not what it claims to be.
          if (change.key !== descriptorKey(descriptor, descriptor.toolId, descriptor.toolVersion)) {
            options.onProblem?.({ key: change.key, message: 'the entry does not describe the descriptor its key names' });
            continue;
          }
          const versions = byTool.get(tool) ?? new Map<string, ToolDescriptor>();
          versions.set(descriptor.toolVersion, descriptor);
          byTool.set(tool, versions);
          keys.set(change.key, { tool, version: descriptor.toolVersion });
          if (isReady) for (const listener of [...listeners]) listener(descriptor);
        }
      }
    } catch (error) {
      options.onProblem?.({ message: `the descriptor watch ended: ${error instanceof Error ? error.message : String(error)}` });
    }
  })();

  return {
    ready,
    resolve(scope, toolId, toolVersion) {
      const versions = byTool.get(toolKey(scope, toolId));
      if (versions === undefined) return undefined;
      if (toolVersion !== undefined) return versions.get(toolVersion);
      const ordered = [...versions.values()].sort(byToolVersion);
      return ordered.filter((descriptor) => descriptor.active).at(-1) ?? ordered.at(-1);
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => watch.stop(),
  };
}
