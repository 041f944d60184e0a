export { collections } from './collections.js';
export { auditProjectorConfig, auditProjectorService } from './service.js';
