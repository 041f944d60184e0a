export type { CommandGroup } from './command-group.js';
export { commandGroups } from './commands.js';
export { createContext, type CallOptions, type CliContext, type GlobalOptions } from './context.js';
export { formatFields, formatTable, type CliIo } from './output.js';
export { runCli } from './program.js';
