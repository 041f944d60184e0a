// The flow-runner service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { flowRunnerService } from './service.js';

await runService(flowRunnerService, process.env);
