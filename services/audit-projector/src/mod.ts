export { collections } from './collections.js';
export { PROJECTOR_CONSUMER, auditProjectorConfig, auditProjectorService, projectorConsumerSpec, type AuditProjectorConfig } from './service.js';
