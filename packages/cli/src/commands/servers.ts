import {
  McpServerState,
  SandboxLimits,
  ToolplaneError,
  registryOperations,
  type McpAuthentication,
  type McpServer,
  type McpServerSetting,
  type McpServerSummary,
  type RegisterServerRequest,
  registryCommandSchemas,
} from '@toolplane/contracts';
import type { z } from 'zod';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';

// `toolplane servers …`: MCP servers in the registry, as an operator (token in $TOOLPLANE_TOKEN or --token-file; the
// registry records the token's principal as who acted). Credentials are never given here: a header or environment
// variable that needs one names a secret-broker connection (`--env-connection NAME=CONNECTION`).

/** Splits a command line the way a POSIX shell splits words: whitespace, single and double quotes, backslash escapes. */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1] as string)) word += line[++i];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--stdio: unterminated ${quote === '"' ? 'double' : 'single'} quote`);
  if (inWord) words.push(word);
  return words;
}

/** Parses `NAME=VALUE` (the value may contain `=`). */
export function parseAssignment(flag: string, text: string): { name: string; value: string } {
  const at = text.indexOf('=');
  if (at <= 0) throw new ToolplaneError('INVALID_ARGUMENT', `${flag} takes NAME=VALUE, not ${JSON.stringify(text.slice(0, 60))}`);
  return { name: text.slice(0, at), value: text.slice(at + 1) };
}

/** Settings from `--env K=V` (plain values) and `--env-connection K=CONNECTION` (brokered secrets). */
export function parseSettings(flag: string, values: readonly string[], connections: readonly string[]): McpServerSetting[] | undefined {
  const settings: McpServerSetting[] = [
    ...values.map((text) => parseAssignment(flag, text)),
    ...connections.map((text) => {
      const { name, value } = parseAssignment(`${flag}-connection`, text);
      return { name, connectionRef: value };
    }),
  ];
  return settings.length === 0 ? undefined : settings;
}

const authentications: Readonly<Record<string, McpAuthentication>> = { none: 'None', oauth2: 'OAuth2ProtectedResource', workload: 'WorkloadIdentity' };

/** `--auth none|oauth2|workload` as the contract names it. */
export function parseAuthentication(value: string): McpAuthentication {
  const authentication = authentications[value.toLowerCase()];
  if (authentication === undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--auth must be one of none, oauth2, workload');
  return authentication;
}

function parseState(value: string): McpServerState {
  const state = McpServerState.options.find((option) => option.toLowerCase() === value.toLowerCase());
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--state must be one of ${McpServerState.options.map((option) => option.toLowerCase()).join(', ')}`);
  return state;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 500');
  return limit;
}

/** Collects a repeatable option's values. */
export function collect(value: string, previous: readonly string[] = []): string[] {
  return [...previous, value];
}

interface RegisterOptions extends TokenOptions {
  readonly name: string;
  readonly stdio?: string;
  readonly url?: string;
  readonly auth?: McpAuthentication;
  readonly env: readonly string[];
  readonly envConnection: readonly string[];
  readonly header: readonly string[];
  readonly headerConnection: readonly string[];
  readonly connection?: string;
  readonly policy?: string;
  readonly release?: string;
  readonly published?: boolean;
  readonly sandboxNetwork?: string;
  readonly sandboxMount?: readonly string[];
  readonly sandboxWritable?: readonly string[];
  readonly sandboxLimit?: readonly string[];
}

const SANDBOX_LIMIT_NAMES: readonly string[] = SandboxLimits.keyof().options;

/** The sandbox profile the `--sandbox-*` flags describe, or undefined when none was given (the default profile). */
export function sandboxRequest(options: Pick<RegisterOptions, 'sandboxNetwork' | 'sandboxMount' | 'sandboxWritable' | 'sandboxLimit'>): Record<string, unknown> | undefined {
  const mounts = options.sandboxMount ?? [];
  const writable = options.sandboxWritable ?? [];
  const limitFlags = options.sandboxLimit ?? [];
  if (options.sandboxNetwork === undefined && mounts.length === 0 && writable.length === 0 && limitFlags.length === 0) return undefined;
  const limits: Record<string, number> = {};
  for (const flag of limitFlags) {
    const [name, value, ...rest] = flag.split('=');
    if (name === undefined || value === undefined || rest.length > 0 || !SANDBOX_LIMIT_NAMES.includes(name) || !/^\d+$/.test(value)) {
      throw new ToolplaneError('INVALID_ARGUMENT', `--sandbox-limit ${JSON.stringify(flag)}: give NAME=NUMBER with NAME one of ${SANDBOX_LIMIT_NAMES.join(', ')}`);
    }
    limits[name] = Number(value);
  }
  return {
    ...(options.sandboxNetwork === undefined ? {} : { network: options.sandboxNetwork }),
    ...(mounts.length === 0 ? {} : { readOnlyMounts: [...mounts] }),
    ...(writable.length === 0 ? {} : { writablePaths: [...writable] }),
    ...(Object.keys(limits).length === 0 ? {} : { limits }),
  };
}

/** The register request the flags describe. */
export function registerRequest(options: RegisterOptions): z.input<typeof RegisterServerRequest> {
  if ((options.stdio === undefined) === (options.url === undefined)) throw new ToolplaneError('INVALID_ARGUMENT', 'give exactly one of --stdio "COMMAND ARGS" and --url URL');
  const env = parseSettings('--env', options.env, options.envConnection);
  const headers = parseSettings('--header', options.header, options.headerConnection);
  let stdio: z.input<typeof RegisterServerRequest>['stdio'];
  if (options.stdio !== undefined) {
    const [executable, ...args] = splitCommandLine(options.stdio);
    if (executable === undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--stdio needs a command');
    stdio = { executable, args, ...(env === undefined ? {} : { env }) };
  } else if (env !== undefined) {
    throw new ToolplaneError('INVALID_ARGUMENT', '--env applies to --stdio servers; an HTTP server takes --header');
  }
  if (options.stdio !== undefined && headers !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--header applies to --url servers');
  const sandbox = sandboxRequest(options);
  if (sandbox !== undefined && options.stdio === undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--sandbox-* flags apply to --stdio servers');
  return {
    name: options.name,
    ...(options.published === true ? { direction: 'Published' as const } : {}),
    ...(stdio === undefined ? {} : { stdio }),
    ...(sandbox === undefined ? {} : { sandbox }),
    ...(options.url === undefined ? {} : { endpointUrl: options.url }),
    ...(headers === undefined ? {} : { headers }),
    ...(options.auth === undefined ? {} : { authentication: options.auth }),
    ...(options.connection === undefined ? {} : { connectionRef: options.connection }),
    ...(options.policy === undefined ? {} : { governancePolicyRef: options.policy }),
    ...(options.release === undefined ? {} : { releaseId: options.release }),
  };
}

function target(server: McpServer): string {
  return server.transport === 'Stdio' ? [server.command?.executable, ...(server.command?.args ?? [])].join(' ') : (server.endpointUrl ?? '');
}

/** A server as aligned `label: value` lines. */
export function serverFields(server: McpServer): string {
  const capabilities = server.capabilities;
  return formatFields([
    ['id', server.serverId],
    ['name', server.name],
    ['state', server.state],
    ['direction', server.direction],
    ['transport', server.transport],
    ['target', target(server)],
    ['settings', [...(server.command?.env ?? []), ...(server.headers ?? [])].map((setting) => ('value' in setting ? setting.name : `${setting.name}←${setting.connectionRef}`))],
    ['authentication', server.authentication],
    ['connection', server.connectionRef],
    ['exception', server.authenticationException === undefined ? undefined : `until ${server.authenticationException.expiresAt} by ${server.authenticationException.grantedBy}`],
    ['policy', server.governancePolicyRef],
    ['release', server.releaseId],
    [
      'sandbox',
      server.transport !== 'Stdio'
        ? undefined
        : server.sandbox === undefined
          ? 'default'
          : `${server.sandbox.name}, network ${server.sandbox.network}${server.sandbox.networkHostApprovedBy === undefined ? '' : ` (approved by ${server.sandbox.networkHostApprovedBy})`}, ${server.sandbox.writablePaths.length} writable, ${server.sandbox.readOnlyMounts.length} mounted`,
    ],
    ['protocol', server.protocolVersion],
    ['server info', capabilities === undefined ? undefined : `${capabilities.serverInfo.name} ${capabilities.serverInfo.version}`],
    ['tools', capabilities?.tools.map((tool) => tool.name)],
    ['resources', capabilities?.resources.length],
    ['prompts', capabilities?.prompts.map((prompt) => prompt.name)],
    ['failures', server.health.consecutiveFailures],
    ['last error', server.health.lastError],
    ['last handshake', server.lastHandshakeAt],
    ['registered', `${server.registeredAt} by ${server.registeredBy}`],
    ['version', server.version],
  ]);
}

function summaryTable(servers: readonly McpServerSummary[]): string {
  return formatTable(
    ['ID', 'NAME', 'STATE', 'TRANSPORT', 'AUTH', 'TOOLS', 'RESOURCES', 'PROMPTS', 'TARGET'],
    servers.map((server) => [server.serverId, server.name, server.state, server.transport, server.authentication, server.toolCount, server.resourceCount, server.promptCount, server.target]),
  );
}

const schemas = {
  register: registryCommandSchemas.register,
  list: registryCommandSchemas.listServers,
  show: registryCommandSchemas.getServer,
  discover: registryCommandSchemas.discover,
  retire: registryCommandSchemas.retire,
  grant: registryCommandSchemas.grantException,
};

/** `toolplane servers register|list|show|discover|retire|grant-exception`: MCP servers in the registry. */
export const serversCommands: CommandGroup = (program, context) => {
  const servers = program.command('servers').description('Register, discover, inspect and retire MCP servers (operator token required; changes need the policy-admin role).');

  withToken(servers.command('register'))
    .description('register an MCP server (state Registered); nothing of it is invocable until discovered and bound')
    .requiredOption('--name <name>', 'unique name in the workspace ([A-Za-z0-9_-], the first segment of its tool ids)')
    .option('--stdio <command>', 'a command to spawn, with its arguments, e.g. "/usr/bin/node server.js --flag"')
    .option('--url <url>', 'a Streamable HTTP endpoint')
    .option('--auth <kind>', 'how Toolplane authenticates to it: none (default), oauth2, workload', parseAuthentication)
    .option('--env <NAME=VALUE>', 'an environment variable of a stdio server (repeatable; never a secret)', collect, [])
    .option('--env-connection <NAME=CONNECTION>', 'an environment variable whose value a connection supplies (repeatable)', collect, [])
    .option('--header <NAME=VALUE>', 'a request header of an HTTP server (repeatable; never a secret)', collect, [])
    .option('--header-connection <NAME=CONNECTION>', 'a request header whose value a connection supplies (repeatable)', collect, [])
    .option('--connection <ref>', 'the connection holding the credential for oauth2 or workload authentication')
    .option('--policy <ref>', 'the governance policy applied to every call through it (default: default)')
    .option('--release <id>', 'the Published release the server belongs to (toolplane releases publish); its tools are usable only while it is Published')
    .option('--published', 'the server publishes Toolplane tools (default: consumed)')
    .option('--sandbox-network <mode>', 'a stdio server\'s network: none (default: loopback only) or host (recorded as approved by you)')
    .option('--sandbox-mount <PATH>', 'a host path a stdio server may read (repeatable)', collect, [])
    .option('--sandbox-writable <PATH>', 'a host path a stdio server may write, e.g. its data directory (repeatable)', collect, [])
    .option('--sandbox-limit <NAME=N>', `a limit of a stdio server's sandbox (repeatable): ${SANDBOX_LIMIT_NAMES.join(', ')}`, collect, [])
    .action(async (options: RegisterOptions) => {
      const ctx = context();
      const request = registerRequest(options);
      const reply = await ctx.call('registry', registryOperations.register, schemas.register, request, await operatorHeaders(ctx, options));
      ctx.print(reply, () => `${reply.created ? 'registered' : 'already registered'}\n${serverFields(reply.server)}`);
    });

  withToken(servers.command('list'))
    .description('list the servers of the workspace, oldest first')
    .option('--state <state>', 'only servers in this state (registered, verified, active, degraded, retired)', parseState)
    .option('--limit <n>', 'at most this many (1-500, default 100)', parseLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { state?: McpServerState; limit?: number; after?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call(
        'registry',
        registryOperations.listServers,
        schemas.list,
        {
          ...(options.state === undefined ? {} : { state: options.state }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          ...(options.after === undefined ? {} : { after: options.after }),
        },
        auth,
      );
      // The same page shape as every other list (`items`, `next`).
      ctx.print({ items: reply.servers, next: reply.next }, () => {
        const table = summaryTable(reply.servers);
        return reply.next === null ? table : `${table}more: --after ${reply.next}\n`;
      });
    });

  withToken(servers.command('show'))
    .description('show one server: reachability, authentication, state, capabilities and health')
    .argument('<id>', 'server id')
    .action(async (serverId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.getServer, schemas.show, { serverId }, await operatorHeaders(ctx, options));
      ctx.print(reply.server, () => serverFields(reply.server));
    });

  withToken(servers.command('discover'))
    .description('handshake with the server and discover its tools, resources and prompts (Registered → Verified)')
    .argument('<id>', 'server id')
    .action(async (serverId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.discover, schemas.discover, { serverId }, await operatorHeaders(ctx, options));
      ctx.print(reply, () => {
        const changes = reply.changes.map((change) => `${change.change === 'Changed' ? 'suspended' : 'retired'}: ${change.toolId}@${change.toolVersion} (${change.toolName} ${change.change.toLowerCase()})`);
        return `${serverFields(reply.server)}${changes.length === 0 ? '' : `${changes.join('\n')}\n`}`;
      });
    });

  withToken(servers.command('retire'))
    .description('retire a server in any state (its name can then be registered anew) and every tool bound to it')
    .argument('<id>', 'server id')
    .option('--reason <text>', 'why (recorded with the state change)')
    .action(async (serverId: string, options: TokenOptions & { reason?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('registry', registryOperations.retire, schemas.retire, { serverId, ...(options.reason === undefined ? {} : { reason: options.reason }) }, auth);
      ctx.print(reply, () => `${serverFields(reply.server)}retired descriptors: ${reply.retiredDescriptors}\n`);
    });

  withToken(servers.command('grant-exception'))
    .description("record a platform admin's expiring exception letting a remote server without OAuth2 or workload authentication be Active (the platform-admin role; the token's principal is recorded as the grantor)")
    .argument('<id>', 'server id')
    .requiredOption('--expires-at <time>', 'when it ends (ISO 8601, at most 90 days ahead)')
    .requiredOption('--reason <text>', 'why the exception is acceptable')
    .action(async (serverId: string, options: TokenOptions & { expiresAt: string; reason: string }) => {
      const ctx = context();
      const expires = new Date(options.expiresAt);
      if (Number.isNaN(expires.getTime())) throw new ToolplaneError('INVALID_ARGUMENT', '--expires-at must be a date and time, e.g. 2026-12-31T00:00:00Z');
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('registry', registryOperations.grantException, schemas.grant, { serverId, reason: options.reason, expiresAt: expires.toISOString() }, auth);
      ctx.print(reply.server, () => serverFields(reply.server));
    });
};
