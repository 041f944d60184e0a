// The audit-projector service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { auditProjectorService } from './service.js';

await runService(auditProjectorService, process.env);
