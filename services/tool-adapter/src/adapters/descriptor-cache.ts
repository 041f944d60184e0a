import { DESCRIPTOR_BUCKET, ToolDescriptor, descriptorKey, type Scope } from '@toolplane/contracts';
import { openKv, type KvBucketSpec, type Messaging } from '@toolplane/messaging';

// The descriptor read model as the adapter sees it: a local copy of the registry's KV bucket, kept current by a
// watch, so resolving a tool is a map lookup. The bucket settings must equal the registry's (a bucket opened with
// other settings is refused), which is why they are spelled exactly as the registry spells them.

/** The registry's descriptor bucket (see services/registry read-model/descriptor-bucket.ts). */
export const descriptorBucket: KvBucketSpec = {
  name: DESCRIPTOR_BUCKET,
  description: 'ToolDescriptor versions by tenant, workspace, tool id and version; written by the registry.',
  history: 1,
  storage: 'file',
};

/** A local, continuously updated copy of every ToolDescriptor version. */
export interface DescriptorCache {
  /** Resolves once the copy holds every descriptor that existed when the cache started. */
  readonly ready: Promise<void>;
  /** An exact version, or without one the newest active version (the newest at all when none is active). */
  resolve(scope: Scope, toolId: string, toolVersion?: string): ToolDescriptor | undefined;
  /** Every descriptor of a scope (for the effective tool set). */
  list(scope: Scope): ToolDescriptor[];
  close(): void;
}

function byToolVersion(a: ToolDescriptor, b: ToolDescriptor): number {
  const numeric = (v: string) => (/^\d{1,9}$/.test(v) ? Number(v) : -1);
  return numeric(a.toolVersion) - numeric(b.toolVersion) || a.toolVersion.localeCompare(b.toolVersion);
}

/** Opens the bucket and keeps a local copy of it. */
export async function createDescriptorCache(
  messaging: Messaging,
  options: { readonly signal?: AbortSignal; readonly onProblem?: (problem: { readonly key?: string; readonly message: string }) => void } = {},
): Promise<DescriptorCache> {
  const signalOption = options.signal ? { signal: options.signal } : {};
  const kv = await openKv(messaging, descriptorBucket, ToolDescriptor, signalOption);
  const byKey = new Map<string, ToolDescriptor>();
  const watch = await kv.watch(signalOption);
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  void (async () => {
    try {
      for await (const change of watch) {
        if (change.kind === 'ready') markReady();
        else if (change.kind === 'delete') byKey.delete(change.key);
        else if (change.kind === 'invalid') {
          byKey.delete(change.key);
          options.onProblem?.({ key: change.key, message: change.reason.message });
        } else if (change.key !== descriptorKey(change.value, change.value.toolId, change.value.toolVersion)) {
          options.onProblem?.({ key: change.key, message: 'the entry does not describe the descriptor its key names' });
        } else byKey.set(change.key, change.value);
      }
    } catch (error) {
      options.onProblem?.({ message: `the descriptor watch ended: ${error instanceof Error ? error.message : String(error)}` });
    }
  })();

  const list = (scope: Scope) => [...byKey.values()].filter((d) => d.tenant === scope.tenant && d.workspace === scope.workspace);
  return {
    ready,
    resolve(scope, toolId, toolVersion) {
      if (toolVersion !== undefined) return byKey.get(descriptorKey(scope, toolId, toolVersion));
      const versions = list(scope)
        .filter((d) => d.toolId === toolId)
        .sort(byToolVersion);
      return versions.filter((d) => d.active).at(-1) ?? versions.at(-1);
    },
    list,
    close: () => watch.stop(),
  };
}
