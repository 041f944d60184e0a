import { createToolplaneClient, type EffectiveToolsQuery } from '@toolplane/client';
import { JsonObject, ToolplaneError, contentBlockSummary, type EffectiveToolSet, type InvocationResult, type ToolContentBlock } from '@toolplane/contracts';
import type { Command } from 'commander';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { readToken } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { parseEffect } from './tools.js';

// `toolplane invoke` and `toolplane tools effective`: calls made as an agent, with an agent context token, through
// the agent-runtime SDK, exactly as a runtime makes them (same pipeline, same receipt, same lost-reply recovery).

/** The agent token flags, for commands that act as an agent. */
export interface AgentTokenOptions {
  readonly tokenFile?: string;
  readonly agent?: string;
}

interface InvokeFlags extends AgentTokenOptions {
  readonly args: string;
  readonly key?: string;
  readonly timeoutMs?: number;
  readonly toolVersion?: string;
  readonly callId?: string;
  readonly correlationId?: string;
}

/** Reads `--args`: a JSON object, or `-` for a JSON object on standard input. */
export async function parseArguments(text: string, readStdin: () => Promise<string>): Promise<JsonObject> {
  const source = text.trim() === '-' ? await readStdin() : text;
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', '--args must be a JSON object, e.g. --args \'{"text":"hi"}\'');
  }
  const parsed = JsonObject.safeParse(value);
  if (!parsed.success || typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `--args must be a JSON object${parsed.success ? '' : `: ${parsed.error.issues[0]?.message ?? 'invalid'}`}`);
  }
  return parsed.data;
}

/** `--timeout-ms`: a whole number of milliseconds from 1 to 900 000. */
export function parseTimeoutMs(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 900_000) throw new ToolplaneError('INVALID_ARGUMENT', '--timeout-ms must be a whole number from 1 to 900000');
  return number;
}

/**
 * The agent the token names, read without verifying it (only the adapter verifies tokens): `--agent` uses it to refuse
 * a token of another agent before anything is sent. Undefined when the token is not a readable JWS.
 */
export function agentOfToken(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const agentId = typeof claims === 'object' && claims !== null ? (claims as { agentId?: unknown }).agentId : undefined;
    return typeof agentId === 'string' ? agentId : undefined;
  } catch {
    return undefined;
  }
}

/** The agent context token: the file named by --token-file, else $TOOLPLANE_AGENT_TOKEN; checked against --agent. */
export async function agentToken(context: CliContext, options: AgentTokenOptions): Promise<string> {
  const token = await readToken(context, options.tokenFile, { envVar: 'TOOLPLANE_AGENT_TOKEN', kind: 'agent context token' });
  if (options.agent !== undefined) {
    const named = agentOfToken(token);
    if (named !== options.agent) throw new ToolplaneError('INVALID_ARGUMENT', `the token is ${named === undefined ? 'not an agent context token' : `agent ${named}'s`}, not agent ${options.agent}'s`);
  }
  return token;
}

/** The text a block shows verbatim (a text block, a text resource), or undefined for a block shown as one line. */
function blockText(block: ToolContentBlock): string | undefined {
  if (block.type === 'text') return block.text;
  return block.type === 'resource' && 'text' in block.resource ? block.resource.text : undefined;
}

/** Content blocks as text: text blocks and text resources verbatim, every other block as one line, in order. */
export function contentBlocksText(content: readonly ToolContentBlock[]): string {
  return content.map((block) => blockText(block) ?? contentBlockSummary(block)).join('\n');
}

/**
 * A successful result's content as text: the structured content as JSON when there is some, else the text of its
 * blocks; each other block (image, audio, resource link, binary resource) as one line naming its type, media type,
 * size and URI, in its place. A result without blocks (recorded before the adapter kept them) shows its text.
 */
export function resultContentText(result: InvocationResult): string | undefined {
  const { content, structuredContent } = result;
  const structured = structuredContent === undefined ? undefined : JSON.stringify(structuredContent, null, 2);
  if (content === undefined) return structured ?? result.textContent;
  if (structured !== undefined) return [structured, ...content.filter((block) => blockText(block) === undefined).map(contentBlockSummary)].join('\n');
  return contentBlocksText(content);
}

/** A result as the receipt's fields, then the content, marked as untrusted tool data. */
export function resultText(result: InvocationResult): string {
  const { receipt } = result;
  const fields = formatFields([
    ['status', result.status],
    ['tool', `${receipt.toolId}@${receipt.toolVersion}`],
    ['tool call', receipt.toolCallId],
    ['invocation', `${receipt.invocationId} (attempt ${receipt.attempt})`],
    ['idempotency key', receipt.idempotencyKey],
    ['state', receipt.state],
    ['principal', receipt.principal],
    ['agent', receipt.agentId === undefined ? undefined : `${receipt.agentId}${receipt.agentRevision === undefined ? '' : ` rev ${receipt.agentRevision}`}`],
    ['side effect', receipt.sideEffectClass],
    ['policy decision', receipt.policyDecisionId],
    ['approval', receipt.approvalId],
    ['failure', receipt.failure === undefined ? undefined : `${receipt.failure.code}: ${receipt.failure.message}`],
    ['received', receipt.receivedAt],
    ['started', receipt.startedAt],
    ['ended', receipt.endedAt],
    ['request hash', receipt.requestHash],
    ['result hash', receipt.resultHash],
    ['signature', `${receipt.signature.alg} by key ${receipt.signature.keyId}`],
  ]);
  if (result.status !== 'SUCCESS') return fields;
  const content = resultContentText(result) ?? '';
  return `${fields}--- result (untrusted tool data${result.truncated ? ', truncated' : ''}) ---\n${content}\n`;
}

/** The effective tool set as a table, with the hidden tools and their reasons when explained. */
export function effectiveToolsText(set: EffectiveToolSet): string {
  const visible = formatTable(
    ['TOOL ID', 'VERSION', 'EFFECT', 'RISK', 'APPROVAL', 'DESCRIPTION'],
    set.tools.map((tool) => [tool.toolId, tool.toolVersion, tool.sideEffectClass, tool.riskClass, tool.requiresApproval ? 'required' : 'no', tool.description]),
  );
  if (set.hidden === undefined) return visible;
  const hidden = formatTable(
    ['HIDDEN TOOL', 'REASONS'],
    set.hidden.map((tool) => [tool.toolId, tool.reasons.map((reason) => reason.code)]),
  );
  return `${visible}\n${hidden}`;
}

/**
 * Prints a call's outcome; in text mode a call that did not succeed then fails the command (exit 1, after its receipt
 * was printed); with --json the document says how it ended. Shared by `invoke` and `calls wait`.
 */
export function printOutcome(ctx: CliContext, result: InvocationResult): void {
  ctx.print(result, () => resultText(result));
  if (!ctx.json && result.status !== 'SUCCESS') {
    const failure = result.receipt.failure;
    throw new ToolplaneError(failure?.code ?? 'INTERNAL', `the call ended ${result.status}${failure === undefined ? '' : `: ${failure.message}`}`);
  }
}

/** Adds the agent token flags (`--token-file`, `--agent`) of commands that act as an agent. */
export function withAgentToken(command: Command): Command {
  return command
    .option('--token-file <path>', 'file holding the agent context token (default: $TOOLPLANE_AGENT_TOKEN)')
    .option('--agent <id>', 'refuse to run unless the token is this agent’s');
}

/** `toolplane invoke` and `toolplane tools effective`: as an agent, through the SDK. */
export const invokeCommands: CommandGroup = (program, context) => {
  withAgentToken(program.command('invoke'))
    .description('call a tool as an agent through the governed pipeline; prints the signed receipt and the result (exit 1 unless SUCCESS, except with --json)')
    .argument('<toolId>', 'governed tool id')
    .requiredOption('--args <json>', 'the arguments as a JSON object, or - to read them from standard input')
    .option('--key <key>', 'idempotency key: the same key is the same call, never run twice (default: generated)')
    .option('--timeout-ms <n>', 'how long to wait for the outcome, also the call’s deadline (default 60000)', parseTimeoutMs)
    .option('--tool-version <version>', 'an exact tool version (default: the active one)')
    .option('--call-id <id>', 'the logical tool call id')
    .option('--correlation-id <id>', 'ties the call to a run')
    .action(async (toolId: string, flags: InvokeFlags) => {
      const ctx = context();
      const args = await parseArguments(flags.args, ctx.io.readStdin);
      const contextToken = await agentToken(ctx, flags);
      const client = await createToolplaneClient({ messaging: await ctx.messaging(), scope: ctx.scope(), contextToken });
      try {
        const result = await client.invoke(toolId, args, {
          ...(flags.key === undefined ? {} : { idempotencyKey: flags.key }),
          ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
          ...(flags.toolVersion === undefined ? {} : { toolVersion: flags.toolVersion }),
          ...(flags.callId === undefined ? {} : { toolCallId: flags.callId }),
          ...(flags.correlationId === undefined ? {} : { correlationId: flags.correlationId }),
        });
        printOutcome(ctx, result);
      } finally {
        await client.close();
      }
    });

  // `tools` is another area's group; `effective` joins it (made here when that group is not loaded).
  const tools = program.commands.find((command) => command.name() === 'tools') ?? program.command('tools').description('Tools.');
  withAgentToken(tools.command('effective'))
    .description('list the tools the agent’s model may see (registered ∩ agent ∩ tenant policy ∩ restrictions); --explain adds why the others are hidden')
    .option('--explain', 'also list every hidden tool with its reasons')
    .option('--max-effect <class>', 'hide tools whose side-effect class is above this one (read, write, destructive, …)', parseEffect)
    .action(async (flags: AgentTokenOptions & { explain?: boolean; maxEffect?: ReturnType<typeof parseEffect> }) => {
      const ctx = context();
      const contextToken = await agentToken(ctx, flags);
      const client = await createToolplaneClient({ messaging: await ctx.messaging(), scope: ctx.scope(), contextToken });
      try {
        const query: EffectiveToolsQuery = {
          ...(flags.explain === true ? { explain: true } : {}),
          ...(flags.maxEffect === undefined ? {} : { restrictions: { maxSideEffectClass: flags.maxEffect } }),
        };
        const set = await client.effectiveTools(query);
        ctx.print(set, () => effectiveToolsText(set));
      } finally {
        await client.close();
      }
    });
};
