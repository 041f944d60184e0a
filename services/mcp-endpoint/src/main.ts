// The MCP endpoint's composition root: the only place that reads the process environment.
import { StartupError } from '@toolplane/service-kit';
import { startMcpEndpoint, type RunningEndpoint } from './service.js';

let endpoint: RunningEndpoint;
try {
  endpoint = await startMcpEndpoint(process.env);
} catch (error) {
  process.stderr.write(`mcp-endpoint: ${error instanceof StartupError ? error.message : `start-up failed: ${error instanceof Error ? error.message : String(error)}`}\n`);
  process.exit(1);
}

// SIGTERM or SIGINT drains and exits 0 (1 when something did not close cleanly); a second signal exits at once.
let stopping = false;
const onSignal = (signal: NodeJS.Signals) => {
  if (stopping) {
    endpoint.logger.warn({ signal }, 'second signal: exiting now');
    process.exit(1);
  }
  stopping = true;
  endpoint.logger.info({ signal }, 'shutting down');
  endpoint.stop().then(
    (clean) => {
      endpoint.logger.info({ clean }, 'stopped');
      endpoint.logger.flush();
      process.exit(clean ? 0 : 1);
    },
    (err: unknown) => {
      endpoint.logger.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);
