// The console's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { consoleService } from './service.js';

await runService(consoleService(), process.env);
