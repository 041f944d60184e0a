import { createToolplaneClient } from '@toolplane/client';
import {
  InvocationState,
  ToolplaneError,
  adapterCommandSchemas,
  hasErrorCode,
  auditCommandSchemas,
  type InspectInvocationReply,
  type InvocationResult,
  type RuntimeToolCallSummary,
  type RuntimeToolCallView,
} from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { agentToken, contentBlocksText, parseTimeoutMs, printOutcome, resultText, withAgentToken, type AgentTokenOptions } from './invoke.js';

// `toolplane calls …`: the RuntimeToolCall projection, one document per logical tool call, in the caller's
// scope. It holds ids, states, times and hashes; never arguments or results. `calls inspect` asks the tool adapter
// for one call's arguments (sensitive fields redacted) and, once it ended, its result and receipt; `calls reconcile`
// settles an Uncertain call in the tool adapter. All of them act as an operator (token in --token-file or $TOOLPLANE_TOKEN), except
// `calls wait`, which re-attaches to the agent's own call by its idempotency key as the agent (like `invoke`).

/** `--state executing|observed|failed|…`, any case. */
export function parseState(value: string): InvocationState {
  const state = InvocationState.options.find((option) => option.toLowerCase() === value.trim().toLowerCase());
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--state must be one of ${InvocationState.options.map((option) => option.toLowerCase()).join(', ')}`);
  return state;
}

/** `--limit 1..200`. */
export function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 200');
  return limit;
}

const units: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since` as an ISO 8601 time or an age such as `15m`, `2h` or `7d` (before now). */
export function parseSince(value: string, now: () => number = Date.now): string {
  const age = /^(\d+)([smhd])$/.exec(value.trim());
  if (age) return new Date(now() - Number(age[1]) * (units[age[2] as string] as number)).toISOString();
  const at = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at)) throw new ToolplaneError('INVALID_ARGUMENT', '--since must be an ISO 8601 time (2026-03-01T10:00:00Z) or an age such as 15m, 2h, 7d');
  return new Date(at).toISOString();
}

function tool(call: Pick<RuntimeToolCallSummary, 'toolId' | 'toolVersion'>): string {
  return call.toolVersion === undefined ? call.toolId : `${call.toolId}@${call.toolVersion}`;
}

function failureText(failure: RuntimeToolCallSummary['failure']): string | undefined {
  if (failure === undefined) return undefined;
  return `${failure.code}${failure.providerErrorType === undefined ? '' : ` (${failure.providerErrorType})`}: ${failure.message}`;
}

function callFields(call: RuntimeToolCallView): string {
  const fields = formatFields([
    ['tool call', call.toolCallId],
    ['state', call.state],
    ['tool', tool(call)],
    ['attempts', call.attemptCount],
    ['invocation', call.invocationId],
    ['principal', call.principal],
    ['agent', call.agentId === undefined ? undefined : `${call.agentId}${call.agentRevision === undefined ? '' : `@${call.agentRevision}`}`],
    ['started at', call.startedAt],
    ['ended at', call.endedAt],
    ['duration ms', call.durationMs],
    ['failure', failureText(call.failure)],
    ['side effect', call.sideEffectClass],
    ['risk', call.riskClass],
    ['approval', call.approvalId],
    ['policy decision', call.policyDecisionId],
    ['flow run', call.flowRunId],
    ['work item', call.workItemId],
    ['correlation', call.correlationId],
    ['causation', call.causationId],
    ['request hash', call.requestHash],
    ['arguments hash', call.argumentsHash],
    ['result hash', call.resultHash],
    ['first event', call.firstEventAt],
    ['last event', call.lastEventAt],
  ]);
  const attempts = formatTable(
    ['ATTEMPT', 'INVOCATION', 'STATE', 'SEQ', 'STARTED', 'ENDED', 'MS', 'FAILURE'],
    call.attempts.map((attempt) => [attempt.attempt, attempt.invocationId, attempt.state, attempt.highestSequence, attempt.startedAt, attempt.endedAt, attempt.durationMs, attempt.failure?.code]),
  );
  return `${fields}\n${attempts}`;
}

/** `--outcome observed|failed`, any case. */
export function parseOutcome(value: string): 'observed' | 'failed' {
  const outcome = value.trim().toLowerCase();
  if (outcome !== 'observed' && outcome !== 'failed') throw new ToolplaneError('INVALID_ARGUMENT', '--outcome must be observed (the effect happened) or failed (it did not)');
  return outcome;
}

function resultFields(result: InvocationResult): string {
  const { receipt } = result;
  return formatFields([
    ['tool call', receipt.toolCallId],
    ['invocation', receipt.invocationId],
    ['status', result.status],
    ['state', receipt.state],
    ['tool', `${receipt.toolId}@${receipt.toolVersion}`],
    ['failure', receipt.failure === undefined ? undefined : `${receipt.failure.code}: ${receipt.failure.message}`],
    ['result', result.content === undefined ? result.textContent : contentBlocksText(result.content)],
    ['receipt key', receipt.signature.keyId],
  ]);
}

/** C0 and C1 control characters but newline and tab: a terminal acts on them (escape sequences, title changes, bells). */
function isControl(code: number): boolean {
  return (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
}

/** Untrusted text (tool output, model-written arguments) made safe to print on a terminal: control characters shown as `\u` escapes. */
export function printable(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.charCodeAt(0);
    out += isControl(code) ? `\\u${code.toString(16).padStart(4, '0')}` : char;
  }
  return out;
}

/** What `calls inspect` prints: the call, its redacted arguments and, once it ended, its result and receipt. */
export function inspectionText(reply: InspectInvocationReply): string {
  const preview = reply.arguments;
  const fields = formatFields([
    ['tool call', reply.toolCallId],
    ['state', reply.state],
    ['tool', tool(reply)],
    ['invocation', `${reply.invocationId} (attempt ${reply.attempt})`],
    ['approval', reply.approvalId],
    ['redacted', preview.redacted],
  ]);
  const cut = preview.truncated ? `, cut at ${preview.text.length} characters` : '';
  const args = `--- arguments (untrusted, sensitive fields redacted${cut}) ---\n${preview.text}\n`;
  const { result } = reply;
  const rest = result === undefined ? `--- no result yet: the call is ${reply.state} ---\n` : `${resultText(result)}--- receipt ---\n${JSON.stringify(result.receipt, null, 2)}\n`;
  return printable(`${fields}${args}${rest}`);
}

/** `toolplane calls show|list|inspect|reconcile|wait`: logical tool calls of the workspace. */
export const callsCommands: CommandGroup = (program, context) => {
  const calls = program.command('calls').description('Inspect tool calls of the workspace (one record per logical call, across its attempts).');

  withToken(calls.command('show'))
    .description('show one tool call: state, attempts, times, failure, ids and hashes')
    .argument('<toolCallId>', 'the logical tool call id')
    .action(async (toolCallId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId }, await operatorHeaders(ctx, options));
      ctx.print(reply.call, () => callFields(reply.call));
    });

  withToken(calls.command('list'))
    .description('list tool calls of the workspace, latest activity first')
    .option('--run <id>', 'only calls of this FlowRun')
    .option('--agent <id>', 'only calls made by this agent')
    .option('--tool <id>', 'only calls of this tool')
    .option('--state <state>', `only calls whose latest attempt is in this state (${InvocationState.options.map((option) => option.toLowerCase()).join(', ')})`, parseState)
    .option('--correlation <id>', 'only calls with this correlation id')
    .option('--key <key>', 'only the call made with this idempotency key')
    .option('--since <time>', 'only calls active since this time (ISO 8601, or an age such as 15m, 2h, 7d)', (value: string) => parseSince(value))
    .option('--limit <n>', 'at most this many (1-200, default 50)', parseLimit)
    .option('--cursor <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { run?: string; agent?: string; tool?: string; state?: InvocationState; correlation?: string; key?: string; since?: string; limit?: number; cursor?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const page = await ctx.call('audit', 'listCalls', auditCommandSchemas.listCalls, {
        ...(options.run === undefined ? {} : { flowRunId: options.run }),
        ...(options.agent === undefined ? {} : { agentId: options.agent }),
        ...(options.tool === undefined ? {} : { toolId: options.tool }),
        ...(options.state === undefined ? {} : { state: options.state }),
        ...(options.correlation === undefined ? {} : { correlationId: options.correlation }),
        ...(options.key === undefined ? {} : { idempotencyKey: options.key }),
        ...(options.since === undefined ? {} : { since: options.since }),
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.cursor === undefined ? {} : { after: options.cursor }),
      }, auth);
      ctx.print(page, () => {
        const table = formatTable(
          ['TOOL CALL', 'STATE', 'TOOL', 'ATTEMPTS', 'AGENT', 'DURATION MS', 'LAST EVENT', 'FAILURE'],
          page.items.map((item) => [item.toolCallId, item.state, tool(item), item.attemptCount, item.agentId, item.durationMs, item.lastEventAt, item.failure?.code]),
        );
        return page.next === null ? table : `${table}more: --cursor ${page.next}\n`;
      });
    });

  withAgentToken(calls.command('wait'))
    .description('wait for the outcome of the agent’s call under an idempotency key (one that ended APPROVAL_PENDING or TIMEOUT); prints it like invoke (exit 1 unless SUCCESS, except with --json)')
    .requiredOption('--key <key>', 'the idempotency key the call was made with')
    .option('--timeout-ms <n>', 'how long to wait for the outcome (default 60000); APPROVAL_PENDING when it still waits for a human', parseTimeoutMs)
    .action(async (options: AgentTokenOptions & { key: string; timeoutMs?: number }) => {
      const ctx = context();
      const contextToken = await agentToken(ctx, options);
      const client = await createToolplaneClient({ messaging: await ctx.messaging(), scope: ctx.scope(), contextToken });
      try {
        printOutcome(ctx, await client.await(options.key, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }));
      } finally {
        await client.close();
      }
    });

  withToken(calls.command('inspect'))
    .description('show what one call was asked to do (arguments, sensitive fields redacted) and, once it ended, its result and signed receipt')
    .argument('<toolCallId>', 'the logical tool call id')
    .option('--key <idempotencyKey>', 'the call\'s idempotency key (default: from the call\'s record)')
    .action(async (toolCallId: string, options: TokenOptions & { key?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      // The adapter reads a call directly by its key; by ToolCallId alone it finds only a parked or Uncertain one.
      let idempotencyKey = options.key;
      if (idempotencyKey === undefined) {
        try {
          idempotencyKey = (await ctx.call('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId }, auth)).call.idempotencyKey;
        } catch (error) {
          // Not projected yet: the adapter may still find it by its ToolCallId.
          if (!hasErrorCode(error) || error.code !== 'NOT_FOUND') throw error;
        }
      }
      const reply = await ctx.call('adapter', 'inspectInvocation', adapterCommandSchemas.inspectInvocation, { toolCallId, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) }, auth);
      ctx.print(reply, () => inspectionText(reply));
    });

  withToken(calls.command('reconcile'))
    .description('settle an Uncertain call after checking the provider: observed (it took effect) or failed (it did not); needs policy-admin')
    .argument('<toolCallId>', 'the logical tool call id')
    .requiredOption('--outcome <outcome>', 'observed or failed', parseOutcome)
    .requiredOption('--reason <text>', 'what was checked (recorded with your principal in the call and its receipt)')
    .action(async (toolCallId: string, options: TokenOptions & { outcome: 'observed' | 'failed'; reason: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const reply = await ctx.call('adapter', 'reconcile', adapterCommandSchemas.reconcile, { toolCallId, outcome: options.outcome, reason: options.reason }, auth);
      ctx.print(reply.result, () => resultFields(reply.result));
    });
};
