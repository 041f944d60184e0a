import { streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The flow-runner service's settings. */
export const flowRunnerConfig = baseServiceConfig({ httpPort: 7106 });

/** FlowRunner: publishes versioned Flows as MCP tools through ToolDefinitions and runs them through the governed pipeline. */
export const flowRunnerService: ServiceDefinition<ReturnType<typeof flowRunnerConfig.parse>> = {
  name: 'flow-runner',
  config: flowRunnerConfig,
  streams: [streams.events],
  collections,
  start: () => Promise.resolve(),
};
