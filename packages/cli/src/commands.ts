import type { CommandGroup } from './command-group.js';

/** The command groups of `toolplane`, in help order: each area (commands/<area>.ts) is listed here. */
export const commandGroups: readonly CommandGroup[] = [];
