import { streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The registry service's settings. */
export const registryConfig = baseServiceConfig({ httpPort: 7101 });

/** McpServerRegistry: registers, discovers, binds and watches MCP servers; owns the McpServer and ToolDescriptor aggregates. */
export const registryService: ServiceDefinition<ReturnType<typeof registryConfig.parse>> = {
  name: 'registry',
  config: registryConfig,
  streams: [streams.events],
  collections,
  start: () => Promise.resolve(),
};
