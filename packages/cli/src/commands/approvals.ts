import { ApprovalState, ToolplaneError, approvalCommandSchemas, type ApprovalView } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';

function parseState(value: string): ApprovalState {
  const state = ApprovalState.options.find((option) => option.toLowerCase() === value.toLowerCase());
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--state must be one of ${ApprovalState.options.map((option) => option.toLowerCase()).join(', ')}`);
  return state;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 200');
  return limit;
}

function truncate(text: string, length: number): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length <= length ? oneLine : `${oneLine.slice(0, length - 1)}…`;
}

function approvalFields(approval: ApprovalView): string {
  return formatFields([
    ['id', approval.approvalId],
    ['state', approval.state],
    ['tool', `${approval.toolId}@${approval.toolVersion}`],
    ['side effect', approval.sideEffectClass],
    ['risk', approval.riskClass],
    ['summary', approval.summary],
    ['requested by', approval.requestedBy],
    ['agent', approval.agentId === undefined ? undefined : `${approval.agentId}${approval.agentRevision === undefined ? '' : `@${approval.agentRevision}`}`],
    ['approvers', [...approval.approvers.roles.map((role) => `role:${role}`), ...approval.approvers.principals]],
    ['requested at', approval.requestedAt],
    ['expires at', approval.expiresAt],
    ['decided by', approval.decidedBy],
    ['decided at', approval.decidedAt],
    ['reason', approval.reason],
    ['consumed at', approval.consumedAt],
    ['void reason', approval.voidReason],
    ['request hash', approval.requestHash],
    ['invocation', approval.invocationId],
    ['tool call', approval.toolCallId],
    ['correlation', approval.correlationId],
  ]);
}

/** `toolplane approvals list|show|approve|reject`: human decisions on gated invocations. */
export const approvalsCommands: CommandGroup = (program, context) => {
  const approvals = program.command('approvals').description('List, inspect and decide approvals of gated tool calls (operator token required).');

  withToken(approvals.command('list'))
    .description('list approvals of the workspace, newest first')
    .option('--state <state>', 'only approvals in this state (pending, granted, rejected, expired, consumed, voided)', parseState)
    .option('--limit <n>', 'at most this many (1-200, default 50)', parseLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { state?: ApprovalState; limit?: number; after?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const page = await ctx.call(
        'approval',
        'list',
        approvalCommandSchemas.list,
        { ...(options.state === undefined ? {} : { state: options.state }), ...(options.limit === undefined ? {} : { limit: options.limit }), ...(options.after === undefined ? {} : { after: options.after }) },
        auth,
      );
      ctx.print(page, () => {
        const table = formatTable(
          ['ID', 'STATE', 'TOOL', 'CLASS', 'REQUESTED BY', 'EXPIRES', 'SUMMARY'],
          page.items.map((item) => [item.approvalId, item.state, `${item.toolId}@${item.toolVersion}`, item.sideEffectClass, item.requestedBy, item.expiresAt, truncate(item.summary, 60)]),
        );
        return page.next === null ? table : `${table}more: --after ${page.next}\n`;
      });
    });

  withToken(approvals.command('show'))
    .description('show one approval')
    .argument('<id>', 'approval id')
    .action(async (approvalId: string, options: TokenOptions) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('approval', 'show', approvalCommandSchemas.show, { approvalId }, auth);
      ctx.print(reply.approval, () => approvalFields(reply.approval));
    });

  withToken(approvals.command('approve'))
    .description('grant a pending approval: the gated call may run, once')
    .argument('<id>', 'approval id')
    .option('--reason <text>', 'why (recorded and shown to the requester)')
    .action(async (approvalId: string, options: TokenOptions & { reason?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('approval', 'approve', approvalCommandSchemas.approve, { approvalId, ...(options.reason === undefined ? {} : { reason: options.reason }) }, auth);
      ctx.print(reply.approval, () => formatFields([['approval', reply.approval.approvalId], ['state', reply.approval.state], ['decided by', reply.approval.decidedBy]]));
    });

  withToken(approvals.command('reject'))
    .description('reject a pending approval: the gated call ends denied')
    .argument('<id>', 'approval id')
    .requiredOption('--reason <text>', 'why (required; shown to the requester)')
    .action(async (approvalId: string, options: TokenOptions & { reason: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('approval', 'reject', approvalCommandSchemas.reject, { approvalId, reason: options.reason }, auth);
      ctx.print(reply.approval, () =>
        formatFields([['approval', reply.approval.approvalId], ['state', reply.approval.state], ['decided by', reply.approval.decidedBy], ['reason', reply.approval.reason]]),
      );
    });
};
