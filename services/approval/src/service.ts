import { eventFilter, streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The approval service's settings. */
export const approvalConfig = baseServiceConfig({ httpPort: 7103 });

/** ApprovalService: holds gated invocations for a human decision; owns the Approval aggregate. */
export const approvalService: ServiceDefinition<ReturnType<typeof approvalConfig.parse>> = {
  name: 'approval',
  config: approvalConfig,
  streams: [streams.events, streams.deadLetters],
  consumers: [
    {
      stream: streams.events.name,
      consumer: {
        durableName: 'approval',
        description: 'ApprovalRequested events from the tool adapter.',
        filterSubject: eventFilter({ type: 'ApprovalRequested' }),
      },
    },
  ],
  collections,
  start: () => Promise.resolve(),
};
