import { auditCommandSchemas } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatTable } from '../output.js';
import { parseLimit } from './calls.js';

/** `toolplane flows journal`: a FlowRun's tool-call journal (started, completed, failed), in event order. */
export const flowsCommands: CommandGroup = (program, context) => {
  const flows = program.command('flows').description('Inspect FlowRuns of the workspace.');

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
