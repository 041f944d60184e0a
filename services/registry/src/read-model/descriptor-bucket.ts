import { DESCRIPTOR_BUCKET } from '@toolplane/contracts';
import type { KvBucketSpec } from '@toolplane/messaging';

/**
 * The descriptor read model's bucket. Writer and readers open it with the same settings (a bucket opened with
 * different ones is refused). One entry per descriptor version, latest value only: a deactivated version is
 * written as inactive, not deleted, so a reader can tell "suspended" from "unknown".
 */
export const descriptorBucket: KvBucketSpec = {
  name: DESCRIPTOR_BUCKET,
  description: 'ToolDescriptor versions by tenant, workspace, tool id and version; written by the registry.',
  history: 1,
  storage: 'file',
};
