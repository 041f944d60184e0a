export { collections } from './collections.js';
export { approvalConfig, approvalService } from './service.js';
