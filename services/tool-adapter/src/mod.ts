export { collections } from './collections.js';
export { toolAdapterConfig, toolAdapterService } from './service.js';
