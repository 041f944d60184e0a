export { collections } from './collections.js';
export { registryConfig, registryService } from './service.js';
