import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { FlowDefinitionBody, ToolplaneError, auditCommandSchemas, flowCommandSchemas, flowOperations, type FlowSummary, type FlowVersion, type FlowVersionSummary } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { parseLimit } from './calls.js';

// `toolplane flows …`: versioned Flows of the workspace (drafted, published, activated; changes need the policy-admin
// role) and the journals of their runs, as an operator (token in $TOOLPLANE_TOKEN or --token-file). A Flow's body is
// a JSON file: input and output JSON Schemas, steps, and the output mapping.

/**
 * A JSON document read from `file` (`-` for standard input) and checked against `schema`: INVALID_ARGUMENT naming the
 * first problem and where it is when the file cannot be read, is not JSON or breaks the contract.
 */
export async function readJsonFile<S extends z.ZodType>(ctx: CliContext, file: string, schema: S, what: string): Promise<z.output<S>> {
  let text: string;
  if (file === '-') {
    text = await ctx.io.readStdin();
  } else {
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw new ToolplaneError('INVALID_ARGUMENT', `cannot read ${file}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${file === '-' ? 'standard input' : file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
    throw new ToolplaneError('INVALID_ARGUMENT', `the ${what} is invalid${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/**
 * `--flow-version N`: a Flow version number. (Not `--version`: the program's own --version option takes that flag
 * wherever it appears on the command line.)
 */
export function parseVersion(value: string): number {
  const version = Number(value);
  if (!Number.isInteger(version) || version < 1 || version > 1_000_000) throw new ToolplaneError('INVALID_ARGUMENT', '--flow-version must be a whole number from 1');
  return version;
}

function parseListLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 500');
  return limit;
}

/** One Flow version as aligned `label: value` lines (its steps by id and tool, not its whole body). */
export function flowFields(flow: FlowVersion): string {
  const steps = flow.body.steps.map((step) => (step.kind === 'call' ? `${step.id}→${step.tool}` : `${step.id}[${step.steps.map((child) => `${child.id}→${child.tool}`).join(' ')}]`));
  return formatFields([
    ['flow', flow.flowId],
    ['version', flow.version],
    ['status', flow.status],
    ['active', flow.active ? 'yes' : 'no'],
    ['title', flow.body.title],
    ['steps', steps],
    ['body hash', flow.bodyHash],
    ['created', `${flow.createdAt} by ${flow.createdBy}`],
    ['updated', `${flow.updatedAt} by ${flow.updatedBy}`],
    ['published', flow.publishedAt === undefined ? undefined : `${flow.publishedAt} by ${flow.publishedBy ?? '-'}`],
    ['activated', flow.activatedAt === undefined ? undefined : `${flow.activatedAt} by ${flow.activatedBy ?? '-'}`],
  ]);
}

function versionsTable(versions: readonly FlowVersionSummary[]): string {
  return formatTable(
    ['VERSION', 'STATUS', 'ACTIVE', 'UPDATED', 'PUBLISHED'],
    versions.map((version) => [version.version, version.status, version.active ? 'yes' : '', version.updatedAt, version.publishedAt]),
  );
}

function flowsTable(flows: readonly FlowSummary[]): string {
  return formatTable(
    ['FLOW', 'LATEST', 'ACTIVE', 'DRAFT', 'PUBLISHED', 'UPDATED', 'TITLE'],
    flows.map((flow) => [flow.flowId, flow.latestVersion, flow.activeVersion, flow.draftVersion, flow.publishedVersions, flow.updatedAt, flow.title]),
  );
}

/** `toolplane flows draft|publish|activate|get|list|journal`: Flows of the workspace and their runs' journals. */
export const flowsCommands: CommandGroup = (program, context) => {
  const flows = program.command('flows').description('Draft, publish, activate and inspect Flows of the workspace, and read FlowRun journals (operator token required; changes need the policy-admin role).');

  withToken(flows.command('draft'))
    .description("save a Flow's draft from a JSON body: the current draft, or a new version after the newest (a published version never changes)")
    .argument('<flowId>', 'the Flow id')
    .requiredOption('--file <path>', 'the body as JSON: inputSchema, outputSchema, steps, output (- for standard input)')
    .option('--flow-version <n>', 'the draft to save (default: the current draft, else a new one)', parseVersion)
    .action(async (flowId: string, options: TokenOptions & { file: string; flowVersion?: number }) => {
      const ctx = context();
      const body = await readJsonFile(ctx, options.file, FlowDefinitionBody, 'flow body');
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.saveFlowDraft, flowCommandSchemas.saveFlowDraft, { flowId, body, ...(options.flowVersion === undefined ? {} : { version: options.flowVersion }) }, auth);
      ctx.print(reply, () => `${reply.saved ? 'saved' : 'unchanged'}\n${flowFields(reply.flow)}`);
    });

  withToken(flows.command('publish'))
    .description('validate a draft (schemas, every step\'s tool, mappings) and publish it: it never changes again')
    .argument('<flowId>', 'the Flow id')
    .option('--flow-version <n>', 'the version to publish (default: the current draft)', parseVersion)
    .action(async (flowId: string, options: TokenOptions & { flowVersion?: number }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.publishFlow, flowCommandSchemas.publishFlow, { flowId, ...(options.flowVersion === undefined ? {} : { version: options.flowVersion }) }, auth);
      ctx.print(reply, () => `${reply.published ? 'published' : 'already published'}\n${flowFields(reply.flow)}`);
    });

  withToken(flows.command('activate'))
    .description('make a published version the active one (refused while it would break an enabled definition that follows the active version)')
    .argument('<flowId>', 'the Flow id')
    .requiredOption('--flow-version <n>', 'the published version to activate', parseVersion)
    .action(async (flowId: string, options: TokenOptions & { flowVersion: number }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.activateFlow, flowCommandSchemas.activateFlow, { flowId, version: options.flowVersion }, auth);
      const previous = reply.previousVersion === undefined ? '' : ` (was version ${reply.previousVersion})`;
      ctx.print(reply, () => `${reply.activated ? `activated${previous}` : 'already active'}\n${flowFields(reply.flow)}`);
    });

  withToken(flows.command('get'))
    .description('show a Flow version (default: the active one, else the newest) and the list of its versions; --json prints the body too')
    .argument('<flowId>', 'the Flow id')
    .option('--flow-version <n>', 'the version to show', parseVersion)
    .action(async (flowId: string, options: TokenOptions & { flowVersion?: number }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('flows', flowOperations.getFlow, flowCommandSchemas.getFlow, { flowId, ...(options.flowVersion === undefined ? {} : { version: options.flowVersion }) }, auth);
      ctx.print(reply, () => `${flowFields(reply.flow)}\n${versionsTable(reply.versions)}`);
    });

  withToken(flows.command('list'))
    .description('list the Flows of the workspace by id')
    .option('--limit <n>', 'at most this many (1-500, default 100)', parseListLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { limit?: number; after?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call(
        'flows',
        flowOperations.listFlows,
        flowCommandSchemas.listFlows,
        { ...(options.limit === undefined ? {} : { limit: options.limit }), ...(options.after === undefined ? {} : { after: options.after }) },
        auth,
      );
      // The same page shape as every other list (`items`, `next`).
      ctx.print({ items: reply.flows, next: reply.next }, () => {
        const table = flowsTable(reply.flows);
        return reply.next === null ? table : `${table}more: --after ${reply.next}\n`;
      });
    });

  withToken(flows.command('journal'))
    .description("show a FlowRun's tool-call journal: each call's start and end, once each, in event order")
    .argument('<flowRunId>', 'the FlowRun id')
    .option('--limit <n>', 'at most this many entries (1-200, default 50)', parseLimit)
    .option('--cursor <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (flowRunId: string, options: TokenOptions & { limit?: number; cursor?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const page = await ctx.call('audit', 'flowJournal', auditCommandSchemas.flowJournal, {
        flowRunId,
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.cursor === undefined ? {} : { after: options.cursor }),
      }, auth);
      ctx.print(page, () => {
        const table = formatTable(
          ['AT', 'ENTRY', 'TOOL CALL', 'ATTEMPT', 'SEQ', 'TOOL', 'MS', 'OUTCOME'],
          page.entries.map((entry) => [
            entry.occurredAt,
            entry.type,
            entry.toolCallId,
            entry.attempt,
            entry.sequence,
            entry.toolVersion === undefined ? entry.toolId : `${entry.toolId}@${entry.toolVersion}`,
            entry.durationMs,
            entry.failure === undefined ? (entry.eventType === entry.type ? undefined : entry.eventType) : `${entry.failure.code}${entry.eventType === entry.type ? '' : ` (${entry.eventType})`}`,
          ]),
        );
        return page.next === null ? table : `${table}more: --cursor ${page.next}\n`;
      });
    });
};
