export { collections } from './collections.js';
export { descriptorBucket } from './read-model/descriptor-bucket.js';
export { createDescriptorCache, type DescriptorCache, type DescriptorCacheOptions } from './read-model/descriptor-cache.js';
export { registryConfig, registryService, type RegistryConfig } from './service.js';
