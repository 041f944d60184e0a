export { collections, type StoredApproval } from './collections.js';
export { approvalConfig, approvalConsumers, approvalService } from './service.js';
