import { ToolDescriptor, descriptorKey, hasErrorCode } from '@toolplane/contracts';
import { descriptorBucket, openKv, type Messaging } from '@toolplane/messaging';

/** Writes descriptors to the read model; resolves once the bucket holds this version of the document or a newer one. */
export type DescriptorPublisher = (descriptor: ToolDescriptor, signal?: AbortSignal) => Promise<void>;

const attempts = 8;

/**
 * Opens the descriptor bucket for writing. Each write is a compare-and-set on the entry's revision that only goes
 * ahead when the stored document's `version` is older, so two writers (replicas, a retry, the sweeper) can never
 * put an older state of a descriptor over a newer one.
 */
export async function createDescriptorPublisher(messaging: Messaging, signal?: AbortSignal): Promise<DescriptorPublisher> {
  const kv = await openKv(messaging, descriptorBucket, ToolDescriptor, signal ? { signal } : {});
  return async (descriptor, callSignal) => {
    const value = ToolDescriptor.parse(descriptor);
    const key = descriptorKey(value, value.toolId, value.toolVersion);
    const options = callSignal ? { signal: callSignal } : {};
    for (let attempt = 0; attempt < attempts; attempt++) {
      const current = await kv.get(key, options);
      if (current !== undefined && current.value.version >= value.version) return;
      try {
        if (current === undefined) await kv.create(key, value, options);
        else await kv.update(key, value, current.revision, options);
        return;
      } catch (error) {
        // Another writer got there first: look again.
        if (!(hasErrorCode(error) && error.code === 'CONFLICT')) throw error;
      }
    }
  };
}
