// The approval service's composition root: the only place that reads the process environment.
import { runService } from '@toolplane/service-kit';
import { approvalService } from './service.js';

await runService(approvalService, process.env);
