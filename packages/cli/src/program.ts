import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { hasErrorCode } from '@toolplane/contracts';
import type { CommandGroup } from './command-group.js';
import { commandGroups } from './commands.js';
import { createContext, type CliContext, type GlobalOptions } from './context.js';
import type { CliIo } from './output.js';

/** The CLI package's version (`toolplane --version`); package.json is one folder up from both src/ and dist/. */
export const cliVersion = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/**
 * Runs `toolplane` with the given arguments (without `node` and the script) and resolves with the exit code.
 * Errors print as `CODE: reason` on one line; with --json, as one JSON document on stdout.
 */
export async function runCli(argv: readonly string[], io: CliIo, groups: readonly CommandGroup[] = commandGroups): Promise<number> {
  const program = new Command('toolplane')
    .description('Operate Toolplane: MCP servers, tool bindings, approvals, connections, calls and audit.')
    .version(cliVersion, '-V, --version', 'print the version of the toolplane CLI')
    // Set before the groups add their commands, which inherit it: every subcommand's help lists the global flags.
    .configureHelp({ showGlobalOptions: true })
    .option('--nats <url>', 'NATS server URL (default: $TOOLPLANE_NATS_URL, $NATS_URL, nats://127.0.0.1:4222)')
    .option('--tenant <id>', 'tenant (default: $TOOLPLANE_TENANT, else the one the token names)')
    .option('--workspace <id>', 'workspace (default: $TOOLPLANE_WORKSPACE, else the one the token names)')
    .option('--json', 'print one JSON document instead of text')
    .option('--timeout <ms>', 'how long to wait for a service to answer (default: 10000)')
    .option('--inbox-prefix <prefix>', 'subject prefix replies arrive under (default: $TOOLPLANE_INBOX_PREFIX, else _INBOX_<tenant>.<workspace>)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  let context: CliContext | undefined;
  const getContext = () => (context ??= createContext(io, program.opts<GlobalOptions>()));
  for (const group of groups) group(program, getContext);

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    const wire = hasErrorCode(error) ? { code: error.code, message: error.message } : { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
    if (program.opts<GlobalOptions>().json === true) io.stdout(`${JSON.stringify({ error: wire }, null, 2)}\n`);
    else io.stderr(`${wire.code}: ${wire.message}\n`);
    return 1;
  } finally {
    await context?.close();
  }
}
