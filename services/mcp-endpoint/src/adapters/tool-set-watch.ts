import { z } from 'zod';
import { agentProfileBucketSettings, policyBundleBucketSettings, tenantPolicyBucketSettings } from '@toolplane/contracts';
import { descriptorBucket, openKv, type KvBucketSpec, type Messaging } from '@toolplane/messaging';
import { toolSetChangeOf, type ToolSetChange, type ToolSetSource } from '../core/tool-set-change.js';

// One watch per replica over the read models the adapter computes effective tool sets from: the registry's
// descriptor bucket (bindings, versions, activation) and the adapter's agent-profile, tenant-policy (kill switches
// included) and policy-bundle buckets. Only keys matter here (which scope changed); the values are read as opaque JSON, so
// the endpoint depends on none of their contracts and never decides anything from them. A watch that ends (NATS
// restarted, the bucket not created yet) is started again; once a restarted one is complete, every stream looks
// again, since changes made while it was down were not seen one by one.

// The endpoint only reads these; opening an existing bucket with its writer's settings changes nothing about it.
const buckets: Readonly<Record<ToolSetSource, KvBucketSpec>> = {
  descriptors: descriptorBucket,
  profiles: agentProfileBucketSettings,
  policies: tenantPolicyBucketSettings,
  bundles: policyBundleBucketSettings,
};

export interface ToolSetWatchOptions {
  /** A change that may alter the tool sets of its scope; undefined: of any scope (a watch restarted). */
  readonly onChange: (change: ToolSetChange | undefined) => void;
  readonly onProblem: (problem: { readonly bucket: string; readonly message: string }) => void;
  /** The first delay before a watch is started again (doubling to 5 s). */
  readonly restartDelayMs?: number;
}

/** A running watch of the buckets; `ready` resolves once each has delivered its current entries. */
export interface ToolSetWatch {
  readonly ready: Promise<void>;
  close(): void;
}

/** Starts watching; changes are reported only after each bucket's current entries (which change nothing). */
export function watchToolSetSources(messaging: Messaging, options: ToolSetWatchOptions): ToolSetWatch {
  const controller = new AbortController();
  const readies = (Object.keys(buckets) as ToolSetSource[]).map((source) => watchOne(messaging, source, controller.signal, options));
  return {
    ready: Promise.all(readies).then(() => undefined),
    close: () => controller.abort(),
  };
}

function watchOne(messaging: Messaging, source: ToolSetSource, signal: AbortSignal, options: ToolSetWatchOptions): Promise<void> {
  const spec = buckets[source];
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const baseDelay = options.restartDelayMs ?? 250;
  void (async () => {
    let delay = baseDelay;
    let restarted = false;
    while (!signal.aborted) {
      try {
        const kv = await openKv(messaging, spec, z.unknown(), { signal });
        const watch = await kv.watch({ signal });
        let live = false;
        for await (const change of watch) {
          if (change.kind === 'ready') {
            live = true;
            delay = baseDelay;
            markReady();
            if (restarted) options.onChange(undefined);
            continue;
          }
          if (!live) continue;
          const scope = toolSetChangeOf(source, change.key);
          if (scope !== undefined) options.onChange(scope);
        }
      } catch (error) {
        if (signal.aborted) break;
        options.onProblem({ bucket: spec.name, message: `the watch failed: ${error instanceof Error ? error.message : String(error)}` });
      }
      if (signal.aborted) break;
      restarted = true;
      options.onProblem({ bucket: spec.name, message: `the watch ended; starting it again in ${delay} ms` });
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      delay = Math.min(delay * 2, 5_000);
    }
    markReady();
  })();
  return ready;
}
