// The secret-broker service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { secretBrokerService } from './service.js';

await runService(secretBrokerService, process.env);
