// The tool-adapter service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { toolAdapterService } from './service.js';

await runService(toolAdapterService, process.env);
