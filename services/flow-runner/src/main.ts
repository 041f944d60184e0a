// The flow-runner service's composition root: the only place that reads the process environment.
import { armFailpoints, parseFailpoints, runService } from '@toolplane/service-kit';
import { flowFailpoints } from './app/run-flow.js';
import { flowRunnerService } from './service.js';

// Fault tests only (off unless set): kill or freeze this process at a step of a run, at any step
// (`flow.after-step-recorded=kill`) or at a named one (`flow.after-step-recorded.lookup=kill`).
const failpointName = new RegExp(`^(?:${Object.values(flowFailpoints).map((name) => name.replaceAll('.', '\\.')).join('|')})(?:\\.[a-z][a-z0-9_]{0,63})?$`);
try {
  const spec = process.env['TOOLPLANE_FAILPOINTS'];
  const unknown = [...parseFailpoints(spec).keys()].find((name) => !failpointName.test(name));
  if (unknown !== undefined) throw new Error(`TOOLPLANE_FAILPOINTS: no failpoint is named ${unknown} (known: ${Object.values(flowFailpoints).join(', ')}, each optionally .<stepId>)`);
  armFailpoints(spec);
} catch (error) {
  process.stderr.write(`flow-runner: invalid configuration: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
await runService(flowRunnerService, process.env);
