import type { Command } from 'commander';
import type { CliContext } from './context.js';

/** Adds one area's commands (servers, tools, approvals …) to the program; the context is made on first use. */
export type CommandGroup = (program: Command, context: () => CliContext) => void;
