// The tool-adapter service's composition root: the only place that reads the process environment.
import { armFailpoints, runService } from '@toolplane/service-kit';
import { adapterFailpoints } from './app/invocation-handler.js';
import { toolAdapterService } from './service.js';

// Fault tests only (off unless set): kill or freeze this process at a named pipeline step.
try {
  armFailpoints(process.env['TOOLPLANE_FAILPOINTS'], Object.values(adapterFailpoints));
} catch (error) {
  process.stderr.write(`tool-adapter: invalid configuration: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
await runService(toolAdapterService, process.env);
