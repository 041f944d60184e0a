import { streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The tool-adapter service's settings. */
export const toolAdapterConfig = baseServiceConfig({ httpPort: 7102 });

/** ToolAdapter: runs every invocation request through the governed pipeline; owns the ToolInvocation aggregate and its receipts. */
export const toolAdapterService: ServiceDefinition<ReturnType<typeof toolAdapterConfig.parse>> = {
  name: 'tool-adapter',
  config: toolAdapterConfig,
  streams: [streams.invocations, streams.events, streams.deadLetters],
  consumers: [
    {
      stream: streams.invocations.name,
      consumer: { durableName: 'tool-adapter', description: 'Invocation requests for the governed pipeline.', ackWaitMs: 30_000 },
    },
  ],
  collections,
  start: () => Promise.resolve(),
};
