import { descriptorBucketSettings } from '@toolplane/contracts';
import type { KvBucketSpec } from '@toolplane/messaging';

/** The descriptor read model's bucket, opened with the contract's settings by the registry and by every reader. */
export const descriptorBucket: KvBucketSpec = descriptorBucketSettings;
