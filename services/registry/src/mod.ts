export { collections } from './collections.js';
export { registryConfig, registryService, type RegistryConfig } from './service.js';
