import { z } from 'zod';
import { canonicalHash } from './canonical-json.js';
import { InvocationCompletion } from './completion.js';
import { MAX_INVOCATION_TIMEOUT_MS } from './limits.js';
import {
  AgentRevision,
  ExternalId,
  IdempotencyKey,
  IsoDateTime,
  JsonObject,
  SUBJECT_TOKEN_PATTERN,
  type Scope,
  ToolCallId,
  ToolId,
  ToolVersion,
} from './primitives.js';

/**
 * What an agent runtime publishes to `tp.v1.inv.{tenant}.{workspace}.request` to call a tool. The body names no
 * tenant, workspace or principal: scope comes from the subject (which NATS permissions pin to the publisher's
 * credential) and identity from the verified context token, so nothing the model writes can change either.
 * A `tenant` or `workspace` in the body is tolerated and ignored (runtimes that echo their scope are not refused);
 * every other unknown key, a `principal` included, makes the whole request invalid.
 */
export const InvocationRequest = z
  .strictObject({
    toolId: ToolId,
    /** An exact version; when absent, the tool's active version at validation time. */
    toolVersion: ToolVersion.optional(),
    arguments: JsonObject,
    /**
     * What the caller means to use: a tool (tools/call), a bound resource (resources/read) or prompt (prompts/get). A
     * descriptor of another kind is not found, so reading a resource never runs a tool. Absent: whatever the id binds.
     */
    capability: z.enum(['tool', 'resource', 'prompt']).optional(),
    /**
     * Present when the call asks for completion values (`completion/complete`) instead of fetching the prompt or reading
     * the resource: the same descriptor, permission and policy, always a READ that needs no approval. Only with
     * `capability` prompt or resource, and string `arguments` (the arguments already chosen).
     */
    completion: InvocationCompletion.optional(),
    /** Unique per (tenant, workspace); when absent it is derived from durableExecutionId, agentRevision, toolId and arguments. */
    idempotencyKey: IdempotencyKey.optional(),
    /** The runtime's durable execution (run, step) the call belongs to; an input of the derived idempotency key. */
    durableExecutionId: ExternalId.optional(),
    /** The agent definition's revision; an input of the derived idempotency key. */
    agentRevision: AgentRevision.optional(),
    /** The logical call, kept across attempts; the provider's call id when the model API gives one. */
    toolCallId: ToolCallId.optional(),
    correlationId: ExternalId,
    causationId: ExternalId.optional(),
    flowRunId: ExternalId.optional(),
    workItemId: ExternalId.optional(),
    /** The signed context token (compact JWS) naming principal and agent; verified, never trusted as-is. */
    contextToken: z
      .string()
      .max(16_384)
      .regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*){2,4}$/),
    /** Relative deadline; when both this and `deadline` are given the earlier one wins. */
    timeoutMs: z.number().int().positive().max(MAX_INVOCATION_TIMEOUT_MS).optional(),
    deadline: IsoDateTime.optional(),
    /** A token the runtime listens on: the reply goes to `tp.v1.rpl.{tenant}.{workspace}.{replyInbox}`. */
    replyInbox: z.string().regex(SUBJECT_TOKEN_PATTERN).optional(),
    /** Ignored: the scope is the subject's. Accepted so that a body naming a scope is not refused, never read. */
    tenant: z.string().max(256).optional().meta({ description: 'Ignored: the tenant is always the subject’s.' }),
    /** Ignored: the scope is the subject's. */
    workspace: z.string().max(256).optional().meta({ description: 'Ignored: the workspace is always the subject’s.' }),
  })
  .superRefine((request, ctx) => {
    completionProblems(request, ctx);
    if (request.idempotencyKey === undefined && (request.durableExecutionId === undefined || request.agentRevision === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['idempotencyKey'],
        message: 'give an idempotencyKey, or durableExecutionId and agentRevision to derive one',
      });
    }
  })
  .meta({
    description: 'A tool call request, published by an agent runtime to tp.v1.inv.{tenant}.{workspace}.request.',
    // The refinement above, spelled for JSON Schema validators in other languages.
    anyOf: [{ required: ['idempotencyKey'] }, { required: ['durableExecutionId', 'agentRevision'] }],
  });
export type InvocationRequest = z.infer<typeof InvocationRequest>;

/** A completion completes a prompt's or resource template's argument, given the others as strings (as MCP sends them). */
function completionProblems(request: { capability?: string | undefined; completion?: InvocationCompletion | undefined; arguments: Record<string, unknown> }, ctx: z.RefinementCtx): void {
  if (request.completion === undefined) return;
  if (request.capability !== 'prompt' && request.capability !== 'resource') {
    ctx.addIssue({ code: 'custom', path: ['capability'], message: 'a completion names what it completes: capability prompt or resource' });
  }
  for (const [name, value] of Object.entries(request.arguments)) {
    if (typeof value !== 'string') ctx.addIssue({ code: 'custom', path: ['arguments', name], message: 'the arguments of a completion are strings' });
  }
}

/**
 * The Nats-Msg-Id a runtime publishes a request with, so JetStream drops a re-sent copy: a hash of the scope,
 * the idempotency key (or its derivation inputs), the tool, the arguments and the completion asked for. A retry with a fresh context token
 * or deadline is the same message; the same key with other arguments is not, so it reaches the adapter, which
 * answers CONFLICT instead of the request silently vanishing.
 */
export function invocationRequestMsgId(scope: Scope, request: InvocationRequest): string {
  const { toolId, toolVersion, arguments: args, completion, idempotencyKey, durableExecutionId, agentRevision } = request;
  return canonicalHash({ purpose: 'toolplane/v1/request-msg-id', ...scope, toolId, toolVersion, arguments: args, completion, idempotencyKey, durableExecutionId, agentRevision });
}
