export { collections, type StoredApproval } from './adapters/collections.js';
export { approvalConfig, approvalConsumers, approvalService } from './service.js';
