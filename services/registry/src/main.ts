// The registry service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { registryService } from './service.js';

await runService(registryService, process.env);
