import { ETag, ToolDefinitionSpec, ToolplaneError, flowCommandSchemas, flowOperations, type MaterializedTool, type ToolDefinition } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { readJsonFile } from './flows.js';

// `toolplane definitions …`: ToolDefinitions of the workspace (a published Flow as a governed MCP tool), under ETag
// CRUD: `get` prints the etag, and update, delete, enable and disable need it back as --if-match (CONFLICT, naming the
// current etag, when it changed since). Changes need the policy-admin role; the token's principal is recorded.

/** `--if-match ETAG`: the etag a read printed, with or without its quotes. */
export function parseIfMatch(value: string): string {
  const parsed = ETag.safeParse(value.trim());
  if (!parsed.success) throw new ToolplaneError('INVALID_ARGUMENT', '--if-match takes the etag a read printed, e.g. "3"');
  return parsed.data;
}

function parseListLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 500');
  return limit;
}

/** What an operator writes of a definition, taken out of the document a read returned. */
export function specOf(definition: ToolDefinition): ToolDefinitionSpec {
  const fields = Object.fromEntries(Object.entries(definition).filter(([key]) => Object.hasOwn(ToolDefinitionSpec.shape, key)));
  return ToolDefinitionSpec.parse(fields);
}

function flowRef(definition: Pick<ToolDefinition, 'flow'>): string {
  return 'follow' in definition.flow ? `${definition.flow.flowId}@active` : `${definition.flow.flowId}@${definition.flow.version}`;
}

function toolText(tool: MaterializedTool | undefined): string | undefined {
  if (tool === undefined) return undefined;
  return `${tool.toolId}@${tool.toolVersion} ${tool.active ? 'active' : `inactive (${tool.inactiveReason ?? 'unknown'})`}`;
}

/** A definition as aligned `label: value` lines, its etag among them. */
export function definitionFields(definition: ToolDefinition, tool?: MaterializedTool): string {
  return formatFields([
    ['name', definition.name],
    ['etag', definition.etag],
    ['mcp name', definition.mcpName],
    ['title', definition.title],
    ['description', definition.description],
    ['enabled', definition.enabled ? 'yes' : 'no'],
    ['approval', definition.approval],
    ['side effect', definition.sideEffectClass],
    ['risk', definition.riskClass],
    ['flow', flowRef(definition)],
    ['timeout ms', definition.timeoutMs],
    ['tool', toolText(tool)],
    ['created', `${definition.createdAt} by ${definition.createdBy}`],
    ['updated', `${definition.updatedAt} by ${definition.updatedBy}`],
    ...(definition.deleted === true ? [['deleted', 'yes'] as const] : []),
  ]);
}

function definitionsTable(definitions: readonly ToolDefinition[]): string {
  return formatTable(
    ['NAME', 'MCP NAME', 'ENABLED', 'FLOW', 'EFFECT', 'APPROVAL', 'ETAG'],
    definitions.map((definition) => [definition.name, definition.mcpName, definition.enabled ? 'yes' : 'no', flowRef(definition), definition.sideEffectClass, definition.approval, definition.etag]),
  );
}

/** Enables or disables a definition: the current one is read, and sent back with `enabled` changed at the given etag. */
async function setEnabled(ctx: CliContext, name: string, enabled: boolean, options: TokenOptions & { ifMatch: string }): Promise<void> {
  const auth = await operatorHeaders(ctx, options);
  const current = await ctx.call('flows', flowOperations.getDefinition, flowCommandSchemas.getDefinition, { name }, auth);
  // The definition read may be newer than the etag given: the update is refused then, naming the current etag.
  const reply = await ctx.call('flows', flowOperations.updateDefinition, flowCommandSchemas.updateDefinition, { name, ifMatch: options.ifMatch, definition: { ...specOf(current.definition), enabled } }, auth);
  ctx.print(reply, () => definitionFields(reply.definition, reply.tool));
}

/** `toolplane definitions create|get|update|delete|enable|disable|list`: ToolDefinitions of the workspace. */
export const definitionsCommands: CommandGroup = (program, context) => {
  const definitions = program
    .command('definitions')
    .description('Publish Flows as governed MCP tools: ToolDefinitions with ETag CRUD (operator token required; changes need the policy-admin role).');

  withToken(definitions.command('create'))
    .description('create a definition from a JSON file (CONFLICT if its name exists); saved enabled, its schemas must equal its Flow version\'s')
    .requiredOption('--file <path>', 'the definition as JSON: name, mcpName, description, sideEffectClass, riskClass, inputSchema, outputSchema, flow … (- for standard input)')
    .action(async (options: TokenOptions & { file: string }) => {
      const ctx = context();
      const definition = await readJsonFile(ctx, options.file, ToolDefinitionSpec, 'definition');
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.createDefinition, flowCommandSchemas.createDefinition, { definition }, auth);
      ctx.print(reply, () => `${reply.created ? 'created' : 'already exists'}\n${definitionFields(reply.definition, reply.tool)}`);
    });

  withToken(definitions.command('get'))
    .description('show a definition and its etag (what update, delete, enable and disable take as --if-match)')
    .argument('<name>', 'the definition name, e.g. orders.refund')
    .action(async (name: string, options: TokenOptions) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.getDefinition, flowCommandSchemas.getDefinition, { name }, auth);
      ctx.print(reply, () => definitionFields(reply.definition));
    });

  withToken(definitions.command('update'))
    .description('replace a definition with a JSON file, if it is still at the etag given')
    .argument('<name>', 'the definition name')
    .requiredOption('--file <path>', 'the whole definition as JSON (- for standard input)')
    .requiredOption('--if-match <etag>', 'the etag `definitions get` printed', parseIfMatch)
    .action(async (name: string, options: TokenOptions & { file: string; ifMatch: string }) => {
      const ctx = context();
      const definition = await readJsonFile(ctx, options.file, ToolDefinitionSpec, 'definition');
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.updateDefinition, flowCommandSchemas.updateDefinition, { name, ifMatch: options.ifMatch, definition }, auth);
      ctx.print(reply, () => definitionFields(reply.definition, reply.tool));
    });

  withToken(definitions.command('delete'))
    .description('delete a definition, if it is still at the etag given; its tool is retired')
    .argument('<name>', 'the definition name')
    .requiredOption('--if-match <etag>', 'the etag `definitions get` printed', parseIfMatch)
    .action(async (name: string, options: TokenOptions & { ifMatch: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.deleteDefinition, flowCommandSchemas.deleteDefinition, { name, ifMatch: options.ifMatch }, auth);
      ctx.print(reply, () => `deleted\n${definitionFields(reply.definition, reply.tool)}`);
    });

  withToken(definitions.command('enable'))
    .description('enable a definition at the etag given (its Flow must resolve and its schemas equal the Flow version\'s)')
    .argument('<name>', 'the definition name')
    .requiredOption('--if-match <etag>', 'the etag `definitions get` printed', parseIfMatch)
    .action((name: string, options: TokenOptions & { ifMatch: string }) => setEnabled(context(), name, true, options));

  withToken(definitions.command('disable'))
    .description('disable a definition at the etag given: it stays editable and is listed as a disabled tool; calls are refused')
    .argument('<name>', 'the definition name')
    .requiredOption('--if-match <etag>', 'the etag `definitions get` printed', parseIfMatch)
    .action((name: string, options: TokenOptions & { ifMatch: string }) => setEnabled(context(), name, false, options));

  withToken(definitions.command('list'))
    .description('list the definitions of the workspace by name')
    .option('--flow <flowId>', 'only those of this Flow')
    .option('--enabled', 'only enabled ones')
    .option('--disabled', 'only disabled ones')
    .option('--limit <n>', 'at most this many (1-500, default 100)', parseListLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { flow?: string; enabled?: boolean; disabled?: boolean; limit?: number; after?: string }) => {
      if (options.enabled === true && options.disabled === true) throw new ToolplaneError('INVALID_ARGUMENT', 'give at most one of --enabled and --disabled');
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const enabled = options.enabled === true ? true : options.disabled === true ? false : undefined;
      const reply = await ctx.call(
        'flows',
        flowOperations.listDefinitions,
        flowCommandSchemas.listDefinitions,
        {
          ...(options.flow === undefined ? {} : { flowId: options.flow }),
          ...(enabled === undefined ? {} : { enabled }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          ...(options.after === undefined ? {} : { after: options.after }),
        },
        auth,
      );
      ctx.print({ items: reply.definitions, next: reply.next }, () => {
        const table = definitionsTable(reply.definitions);
        return reply.next === null ? table : `${table}more: --after ${reply.next}\n`;
      });
    });
};
