import type { CommandGroup } from './command-group.js';
import { approvalsCommands } from './commands/approvals.js';
import { auditCommands } from './commands/audit.js';
import { callsCommands } from './commands/calls.js';
import { connectionsCommands } from './commands/connections.js';
import { definitionsCommands } from './commands/definitions.js';
import { flowsCommands } from './commands/flows.js';
import { invokeCommands } from './commands/invoke.js';
import { policiesCommands } from './commands/policies.js';
import { projectorCommands } from './commands/projector.js';
import { readsCommands } from './commands/reads.js';
import { receiptsCommands } from './commands/receipts.js';
import { releasesCommands } from './commands/releases.js';
import { runsCommands } from './commands/runs.js';
import { serversCommands } from './commands/servers.js';
import { toolsCommands } from './commands/tools.js';

/** The command groups of `toolplane`, in help order: each area (commands/<area>.ts) is listed here. */
export const commandGroups: readonly CommandGroup[] = [
  approvalsCommands,
  auditCommands,
  callsCommands,
  connectionsCommands,
  definitionsCommands,
  flowsCommands,
  policiesCommands,
  projectorCommands,
  readsCommands,
  receiptsCommands,
  releasesCommands,
  runsCommands,
  serversCommands,
  toolsCommands,
  invokeCommands,
];
