export { collections } from './collections.js';
export { flowRunnerConfig, flowRunnerService } from './service.js';
