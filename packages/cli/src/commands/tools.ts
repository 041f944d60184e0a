import type {
  BindToolRequest} from '@toolplane/contracts';
import {
  IdempotencySemantics,
  RiskClass,
  SandboxKind,
  SideEffectClass,
  ToolplaneError,
  registryOperations,
  type BindToolReply,
  type ToolDescriptor,
  registryCommandSchemas,
} from '@toolplane/contracts';
import type { z } from 'zod';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { collect } from './servers.js';

// `toolplane tools …`: discovered tools and their bindings, as an operator (token in $TOOLPLANE_TOKEN or
// --token-file). Binding is the approval: it declares how the tool is governed and pins the definition the operator
// saw; until then a tool is listed but never invocable. The registry records the token's principal as the binder.

function enumOption<T extends string>(flag: string, options: readonly T[], aliases: Readonly<Record<string, T>> = {}) {
  return (value: string): T => {
    const normalized = value.trim().toUpperCase().replace(/-/g, '_');
    const found = aliases[value.trim().toLowerCase()] ?? options.find((option) => option.toUpperCase() === normalized);
    if (found === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `${flag} must be one of ${[...options.map((option) => option.toLowerCase()), ...Object.keys(aliases)].join(', ')}`);
    return found;
  };
}

/** `--effect read|write|destructive|external_communication|code_execution|privileged`. */
export const parseEffect = enumOption('--effect', SideEffectClass.options, { external: 'EXTERNAL_COMMUNICATION', code: 'CODE_EXECUTION' });
/** `--risk low|medium|high|critical`. */
export const parseRisk = enumOption('--risk', RiskClass.options);
/** `--idempotency none|key|natural`. */
export const parseIdempotency = enumOption('--idempotency', IdempotencySemantics.options, { key: 'SUPPORTED_WITH_KEY' });
/** `--sandbox none|process`. */
export const parseSandbox = enumOption('--sandbox', SandboxKind.options);

function positiveInteger(flag: string, max: number) {
  return (value: string): number => {
    const number = Number(value);
    if (!Number.isInteger(number) || number < 1 || number > max) throw new ToolplaneError('INVALID_ARGUMENT', `${flag} must be a whole number from 1 to ${max}`);
    return number;
  };
}

interface BindOptions extends TokenOptions {
  readonly effect: z.infer<typeof SideEffectClass>;
  readonly risk: z.infer<typeof RiskClass>;
  readonly permission: readonly string[];
  readonly role: readonly string[];
  readonly secret: readonly string[];
  readonly timeoutMs?: number;
  readonly idempotency?: z.infer<typeof IdempotencySemantics>;
  readonly sandbox?: z.infer<typeof SandboxKind>;
  readonly toolId?: string;
  readonly expectHash?: string;
  readonly maxAttempts?: number;
}

/** The bind request the arguments and flags describe. */
export function bindRequest(serverId: string, toolName: string, options: BindOptions): z.input<typeof BindToolRequest> {
  return {
    serverId,
    toolName,
    sideEffectClass: options.effect,
    riskClass: options.risk,
    permissions: [...options.permission],
    roles: [...options.role],
    secretDependencies: [...options.secret],
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.idempotency === undefined ? {} : { idempotency: options.idempotency }),
    ...(options.sandbox === undefined ? {} : { sandboxKind: options.sandbox }),
    ...(options.toolId === undefined ? {} : { toolId: options.toolId }),
    ...(options.expectHash === undefined ? {} : { expectedDefinitionHash: options.expectHash }),
    ...(options.maxAttempts === undefined ? {} : { retryPolicy: { maxAttempts: options.maxAttempts, initialBackoffMs: 200, maxBackoffMs: 5_000 } }),
  };
}

/**
 * What a bind answers an operator: the outcome, the descriptor, and the agents that list the tool but may not use it
 * at its class or risk (model rule D21), or why they could not be checked.
 */
export function bindSummary(reply: BindToolReply): string {
  const head = `${reply.created ? 'bound' : 'already bound'} (server ${reply.serverState})\n${descriptorFields(reply.descriptor)}`;
  if (reply.conflictsUnknown !== undefined) return `${head}agent conflicts: not checked (${reply.conflictsUnknown})\n`;
  const conflicts = reply.conflicts ?? [];
  if (conflicts.length === 0) return `${head}agent conflicts: none\n`;
  const lines = conflicts.map((conflict) => `  ${conflict.agentId}: ${conflict.reason}`);
  return `${head}agent conflicts: ${conflicts.length} agent profile${conflicts.length === 1 ? '' : 's'} list the tool but will be denied it\n${lines.join('\n')}\n`;
}

/** A descriptor as aligned `label: value` lines. */
export function descriptorFields(descriptor: ToolDescriptor): string {
  return formatFields([
    ['tool', `${descriptor.toolId}@${descriptor.toolVersion}`],
    ['state', descriptor.active ? (descriptor.healthy ? 'active' : 'active, unhealthy') : `inactive (${descriptor.inactiveReason ?? 'unknown'})`],
    ['provider tool', descriptor.providerToolName],
    ['server', descriptor.mcpServerId],
    ['side effect', descriptor.sideEffectClass],
    ['risk', descriptor.riskClass],
    ['idempotency', descriptor.idempotency],
    ['permissions', descriptor.authorization.permissions],
    ['roles', descriptor.authorization.roles],
    ['secrets', descriptor.secretDependencies],
    ['timeout', `${descriptor.timeoutMs} ms`],
    ['retries', `${descriptor.retryPolicy.maxAttempts} attempts`],
    ['sandbox', descriptor.sandboxKind],
    ['definition', descriptor.definitionHash],
    ['bound', `${descriptor.boundAt} by ${descriptor.boundBy}`],
  ]);
}

const schemas = {
  list: registryCommandSchemas.listTools,
  bind: registryCommandSchemas.bind,
  unbind: registryCommandSchemas.unbind,
  show: registryCommandSchemas.getDescriptor,
};

/** `toolplane tools list|bind|unbind|show`: discovered tools and their bindings to governed descriptors. */
export const toolsCommands: CommandGroup = (program, context) => {
  const tools = program.command('tools').description('List discovered tools, bind them to governed descriptors, unbind them (operator token required; changes need the policy-admin role).');

  withToken(tools.command('list'))
    .description('list discovered tools with their binding state (unbound tools are listed but never invocable)')
    .option('--server <id>', 'only the tools of this server')
    .action(async (options: TokenOptions & { server?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('registry', registryOperations.listTools, schemas.list, options.server === undefined ? {} : { serverId: options.server }, auth);
      ctx.print(reply, () =>
        formatTable(
          ['SERVER', 'TOOL', 'BINDING', 'INVOCABLE', 'TOOL ID', 'VERSION', 'EFFECT', 'RISK'],
          reply.tools.map((tool) => [tool.serverName, tool.toolName, tool.binding, tool.invocable ? 'yes' : 'no', tool.toolId, tool.toolVersion, tool.sideEffectClass, tool.riskClass]),
        ),
      );
    });

  withToken(tools.command('bind'))
    .description('bind a discovered tool: declare how it is governed and pin its current definition (a new descriptor version)')
    .argument('<serverId>', 'server id')
    .argument('<toolName>', "the tool's name on the server")
    .requiredOption('--effect <class>', 'declared side-effect class: read, write, destructive, external_communication, code_execution, privileged', parseEffect)
    .requiredOption('--risk <class>', 'risk class: low, medium, high, critical', parseRisk)
    .option('--permission <name>', 'a permission the caller must hold (repeatable)', collect, [])
    .option('--role <name>', 'a role the caller must hold (repeatable)', collect, [])
    .option('--secret <connection>', 'a connection whose credential is leased at call time (repeatable)', collect, [])
    .option('--timeout-ms <n>', 'the deadline of one call (default 30000)', positiveInteger('--timeout-ms', 900_000))
    .option('--idempotency <kind>', 'none (default), key (the provider dedupes by our key), natural', parseIdempotency)
    .option('--sandbox <kind>', 'none or process (default follows the transport)', parseSandbox)
    .option('--max-attempts <n>', 'attempts an executor may make (only where a retry is safe)', positiveInteger('--max-attempts', 10))
    .option('--tool-id <id>', 'the governed id (default {server}.{tool})')
    .option('--expect-hash <sha256>', 'the definition hash you reviewed; refused if the server now reports another')
    .action(async (serverId: string, toolName: string, options: BindOptions) => {
      const ctx = context();
      const request = bindRequest(serverId, toolName, options);
      const reply = await ctx.call('registry', registryOperations.bind, schemas.bind, request, await operatorHeaders(ctx, options));
      ctx.print(reply, () => bindSummary(reply));
    });

  withToken(tools.command('unbind'))
    .description('unbind a tool: its descriptor is retired and calls of it are refused')
    .argument('<serverId>', 'server id')
    .argument('<toolName>', "the tool's name on the server")
    .action(async (serverId: string, toolName: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.unbind, schemas.unbind, { serverId, toolName }, await operatorHeaders(ctx, options));
      ctx.print(reply.descriptor, () => descriptorFields(reply.descriptor));
    });

  withToken(tools.command('show'))
    .description('show a descriptor: an exact version, or the newest active one')
    .argument('<toolId>', 'governed tool id')
    // Not --version: the program's own --version flag is taken wherever it appears.
    .option('--tool-version <version>', 'an exact version')
    .action(async (toolId: string, options: TokenOptions & { toolVersion?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('registry', registryOperations.getDescriptor, schemas.show, { toolId, ...(options.toolVersion === undefined ? {} : { toolVersion: options.toolVersion }) }, auth);
      ctx.print(reply.descriptor, () => descriptorFields(reply.descriptor));
    });
};
