import { ToolDescriptor, compareToolVersions, descriptorBucketSettings, descriptorKey, kvKeyToken, type Scope, type SideEffectClass } from '@toolplane/contracts';
import { openKv, type Messaging, type TypedKv } from '@toolplane/messaging';

// What publishing a Flow needs to know of the tools its steps call: the active descriptor of each, read from the
// registry's descriptor read model (the KV bucket the registry alone writes; FlowRunner only reads it). Read when a
// Flow is published, never on a run's path: a run's steps are governed by the adapter, which resolves them itself.

/** What validation needs of a step's tool. */
export interface LookedUpTool {
  readonly sideEffectClass: SideEffectClass;
  readonly inputSchemaJson: string;
}

/** The active descriptor of a tool of the scope (an exact version, or the newest active one); undefined when there is none. */
export type ToolLookup = (scope: Scope, toolId: string, toolVersion?: string, signal?: AbortSignal) => Promise<LookedUpTool | undefined>;

function looked(descriptor: ToolDescriptor): LookedUpTool {
  return { sideEffectClass: descriptor.sideEffectClass, inputSchemaJson: descriptor.inputSchemaJson };
}

/** Every version of a tool in the bucket: the values its key filter holds now (a watch read up to `ready`, then stopped). */
async function versionsOf(kv: TypedKv<ToolDescriptor>, scope: Scope, toolId: string, signal?: AbortSignal): Promise<ToolDescriptor[]> {
  const watch = await kv.watch({ key: `${scope.tenant}.${scope.workspace}.${kvKeyToken(toolId)}.>`, ...(signal === undefined ? {} : { signal }) });
  const versions: ToolDescriptor[] = [];
  try {
    for await (const change of watch) {
      if (change.kind === 'ready') break;
      if (change.kind === 'put' && change.key === descriptorKey(change.value, change.value.toolId, change.value.toolVersion)) versions.push(change.value);
    }
  } finally {
    watch.stop();
  }
  return versions;
}

/** Opens the descriptor bucket (read only) and looks tools up in it. */
export async function openToolLookup(messaging: Messaging, signal?: AbortSignal): Promise<ToolLookup> {
  const kv = await openKv(messaging, descriptorBucketSettings, ToolDescriptor, signal === undefined ? {} : { signal });
  return async (scope, toolId, toolVersion, lookupSignal) => {
    const options = lookupSignal === undefined ? {} : { signal: lookupSignal };
    if (toolVersion !== undefined) {
      const entry = await kv.get(descriptorKey(scope, toolId, toolVersion), options);
      return entry?.value.active === true ? looked(entry.value) : undefined;
    }
    const newest = (await versionsOf(kv, scope, toolId, lookupSignal)).filter((descriptor) => descriptor.active).sort(compareToolVersions).at(-1);
    return newest === undefined ? undefined : looked(newest);
  };
}
