export { collections } from './collections.js';
export { secretBrokerConfig, secretBrokerService } from './service.js';
