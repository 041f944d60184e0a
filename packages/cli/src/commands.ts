import type { CommandGroup } from './command-group.js';
import { approvalsCommands } from './commands/approvals.js';
import { connectionsCommands } from './commands/connections.js';
import { serversCommands } from './commands/servers.js';
import { toolsCommands } from './commands/tools.js';

/** The command groups of `toolplane`, in help order: each area (commands/<area>.ts) is listed here. */
export const commandGroups: readonly CommandGroup[] = [
  approvalsCommands,
  connectionsCommands,
  serversCommands,
  toolsCommands,
];
