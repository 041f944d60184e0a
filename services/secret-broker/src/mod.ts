export { createBroker, type Broker, type BrokerDependencies } from './broker.js';
export { collections, connections, secretLeases } from './collections.js';
export { secretBrokerConfig, type RecipientKeys, type SecretBrokerConfig } from './config.js';
export { secretBrokerRedactedPaths, secretBrokerService } from './service.js';
export { sweepOnce, type SweepReport } from './sweeper.js';
