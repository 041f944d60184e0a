import { streams } from '@toolplane/contracts';
import { baseServiceConfig, type ServiceDefinition } from '@toolplane/service-kit';
import { collections } from './collections.js';

/** The secret-broker service's settings. */
export const secretBrokerConfig = baseServiceConfig({ httpPort: 7104 });

/** SecretBroker: keeps connection credentials encrypted at rest and leases them to the tool adapter for one invocation. */
export const secretBrokerService: ServiceDefinition<ReturnType<typeof secretBrokerConfig.parse>> = {
  name: 'secret-broker',
  config: secretBrokerConfig,
  streams: [streams.events],
  collections,
  start: () => Promise.resolve(),
};
