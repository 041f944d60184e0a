import { streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The audit-projector service's settings. */
export const auditProjectorConfig = baseServiceConfig({ httpPort: 7105 });

/** AuditProjector: folds lifecycle events into RuntimeToolCall records, flow journals and the per-tenant audit chain. */
export const auditProjectorService: ServiceDefinition<ReturnType<typeof auditProjectorConfig.parse>> = {
  name: 'audit-projector',
  config: auditProjectorConfig,
  streams: [streams.events, streams.deadLetters],
  consumers: [
    {
      stream: streams.events.name,
      consumer: {
        durableName: 'audit-projector',
        description: 'Every lifecycle event, folded into the audit projections.',
      },
    },
  ],
  collections,
  start: () => Promise.resolve(),
};
