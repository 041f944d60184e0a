// The MCP endpoint's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { mcpEndpointService } from './service.js';

await runService(mcpEndpointService(), process.env);
