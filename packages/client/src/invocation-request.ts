import {
  InvocationRequest,
  type InvocationCompletion,
  MAX_INVOCATION_TIMEOUT_MS,
  MAX_REQUEST_BYTES,
  ToolplaneError,
  deriveIdempotencyKey,
  type JsonObject,
} from '@toolplane/contracts';

/** What a runtime may say about one call besides the tool and its arguments. */
export interface InvokeOptions {
  /**
   * The call's idempotency key, unique in the workspace: the same key always means the same call (one execution).
   * When absent it is derived from `durableExecutionId` and `agentRevision` exactly as the adapter derives it, or,
   * without those, generated; the client always knows the key, so a lost reply can be recovered by lookup.
   */
  readonly idempotencyKey?: string;
  /** The runtime's durable execution (run, step); with `agentRevision`, the inputs of a derived key. */
  readonly durableExecutionId?: string;
  /** The agent definition's revision; with `durableExecutionId`, the inputs of a derived key. */
  readonly agentRevision?: string;
  /** An exact tool version; absent means the tool's active version. */
  readonly toolVersion?: string;
  /** What the id must bind (readResource and getPrompt set it): another kind is NOT_FOUND. Absent: whatever it binds. */
  readonly capability?: 'tool' | 'resource' | 'prompt';
  /** The argument values are asked for instead of the call itself (`complete` sets it, with `capability`). */
  readonly completion?: InvocationCompletion;
  /** The logical call id (the model API's tool call id when it gives one). */
  readonly toolCallId?: string;
  /** Ties the call to the runtime's run; generated when absent. */
  readonly correlationId?: string;
  readonly causationId?: string;
  readonly flowRunId?: string;
  readonly workItemId?: string;
  /** How long to wait for the outcome; also the call's deadline at the adapter. Default: the client's. */
  readonly timeoutMs?: number;
  /** Aborts the wait (CANCELLED). It cannot unsend the request: the call may still run, and `lookup` finds it. */
  readonly signal?: AbortSignal;
  /**
   * The context token of this call instead of the client's (an entry serving many agents over one client, such as
   * the MCP endpoint); also used by the lookups that recover its reply.
   */
  readonly contextToken?: string;
}

/** Where the idempotency key of a call came from. */
export type KeySource = 'given' | 'derived' | 'generated';

/** A request ready to publish, and the key it will be known by. */
export interface PreparedInvocation {
  readonly request: InvocationRequest;
  readonly idempotencyKey: string;
  readonly keySource: KeySource;
}

/** What the client adds to a call: the token, the reply inbox, the deadline, and ids for what the caller left out. */
export interface InvocationEnvelope {
  readonly contextToken: string;
  readonly replyInbox: string;
  readonly timeoutMs: number;
  readonly newId: () => string;
}

/**
 * Builds the InvocationRequest of a call and names its idempotency key. A derived key is not put in the request:
 * the adapter derives the same one from the same inputs, and the request stays what the caller asked for. A
 * generated key is put in. A durable execution id without an agent revision is refused (INVALID_ARGUMENT): it
 * would silently give every replay a fresh key, the opposite of what naming the execution is for. So is a request
 * whose JSON body is over MAX_REQUEST_BYTES, before anything is sent.
 */
export function prepareInvocation(toolId: string, args: JsonObject, options: InvokeOptions, envelope: InvocationEnvelope): PreparedInvocation {
  if (options.idempotencyKey === undefined && options.durableExecutionId !== undefined && options.agentRevision === undefined) {
    throw new ToolplaneError('INVALID_ARGUMENT', 'a durableExecutionId derives an idempotency key only together with an agentRevision');
  }
  let idempotencyKey: string;
  let keySource: KeySource;
  if (options.idempotencyKey !== undefined) {
    idempotencyKey = options.idempotencyKey;
    keySource = 'given';
  } else if (options.durableExecutionId !== undefined && options.agentRevision !== undefined) {
    idempotencyKey = deriveIdempotencyKey({ durableExecutionId: options.durableExecutionId, agentRevision: options.agentRevision, toolId, arguments: args, completion: options.completion });
    keySource = 'derived';
  } else {
    idempotencyKey = `rt-${envelope.newId()}`;
    keySource = 'generated';
  }
  const candidate = {
    toolId,
    ...(options.toolVersion === undefined ? {} : { toolVersion: options.toolVersion }),
    arguments: args,
    ...(options.capability === undefined ? {} : { capability: options.capability }),
    ...(options.completion === undefined ? {} : { completion: options.completion }),
    ...(keySource === 'derived' ? {} : { idempotencyKey }),
    ...(options.durableExecutionId === undefined ? {} : { durableExecutionId: options.durableExecutionId }),
    ...(options.agentRevision === undefined ? {} : { agentRevision: options.agentRevision }),
    ...(options.toolCallId === undefined ? {} : { toolCallId: options.toolCallId }),
    correlationId: options.correlationId ?? envelope.newId(),
    ...(options.causationId === undefined ? {} : { causationId: options.causationId }),
    ...(options.flowRunId === undefined ? {} : { flowRunId: options.flowRunId }),
    ...(options.workItemId === undefined ? {} : { workItemId: options.workItemId }),
    contextToken: envelope.contextToken,
    timeoutMs: envelope.timeoutMs,
    replyInbox: envelope.replyInbox,
  };
  const parsed = InvocationRequest.safeParse(candidate);
  if (!parsed.success) {
    // Paths and messages only: the issues could echo argument values.
    const issues = parsed.error.issues.slice(0, 10).map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
    const summary = issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
    throw new ToolplaneError('INVALID_ARGUMENT', `the invocation request is invalid: ${summary}`.slice(0, 1000), { details: { issues } });
  }
  // Refused here rather than by NATS: a body over the contract's limit never reaches the adapter whole.
  const bytes = Buffer.byteLength(JSON.stringify(parsed.data));
  if (bytes > MAX_REQUEST_BYTES) {
    throw new ToolplaneError('INVALID_ARGUMENT', `the invocation request is ${bytes} bytes, over the limit of ${MAX_REQUEST_BYTES} bytes; send smaller arguments`, {
      details: { bytes, maxBytes: MAX_REQUEST_BYTES },
    });
  }
  return { request: parsed.data, idempotencyKey, keySource };
}

/** A timeout the adapter accepts: a whole number of milliseconds between 1 and the longest allowed. */
export function boundedTimeoutMs(timeoutMs: number): number {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new ToolplaneError('INVALID_ARGUMENT', `timeoutMs must be a positive number of milliseconds, not ${timeoutMs}`);
  return Math.min(Math.ceil(timeoutMs), MAX_INVOCATION_TIMEOUT_MS);
}
