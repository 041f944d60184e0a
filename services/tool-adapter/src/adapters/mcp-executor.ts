import { hasErrorCode, isRetryable, mcpCapabilityOf, sleep, ToolplaneError, type InvocationCompletion, type ToolDescriptor, type ToolFailure } from '@toolplane/contracts';
import { toToolFailure, toolResultError, type McpCompletionRef, type McpPool, type McpRequestOptions, type McpTarget } from '@toolplane/mcp';
import { CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen, isBrokenCircuitError, type CircuitBreakerPolicy } from 'cockatiel';
import { boundCompletion, completionOutput } from '../core/completion.js';
import { retryDecision, type ExecutionResult } from '../core/execution-outcome.js';
import { resourceUriOf } from '../core/resource-uri.js';

// Execution of MCP tools: one pooled session per target (@toolplane/mcp), a circuit breaker per server (cockatiel),
// and retries only where the core's retryDecision allows them. Each provider outcome is mapped to the core's
// ExecutionResult, including whether the request may have left, which decides between Failed and Uncertain.

/** What one execution needs. */
export interface McpExecution {
  readonly target: McpTarget;
  readonly serverKey: string;
  readonly descriptor: ToolDescriptor;
  readonly effectiveClass: NonNullable<ToolDescriptor['sideEffectClass']>;
  readonly args: Record<string, unknown>;
  /** Present for a completion: `completion/complete` of this argument instead of the descriptor's own request (`args` are the others). */
  readonly completion?: InvocationCompletion | undefined;
  readonly deadline: Date;
  readonly signal: AbortSignal;
  readonly now: () => Date;
  readonly jitter?: () => number;
}

/** Whether a failure proves the provider may have been reached (then a retry is a repeat). */
function outcomeOf(error: unknown): ExecutionResult {
  if (isBrokenCircuitError(error)) {
    return { result: 'failed', failure: { code: 'TEMPORARY_UNAVAILABLE', message: 'the server’s circuit is open after repeated failures', retryable: true }, effect: 'none' };
  }
  if (!hasErrorCode(error)) return { result: 'failed', failure: { code: 'INTERNAL', message: 'the call failed unexpectedly', retryable: false }, effect: 'possible' };
  const details = error instanceof ToolplaneError ? error.details : undefined;
  const underlying = details?.['underlyingCode'];
  switch (error.code) {
    case 'UNKNOWN_OUTCOME':
      if (underlying === 'TIMEOUT') return { result: 'timed_out', requestSent: true };
      if (underlying === 'CANCELLED') return { result: 'cancelled', requestSent: true };
      return {
        result: 'failed',
        failure: { ...toToolFailure(error), code: typeof underlying === 'string' && underlying === 'TEMPORARY_UNAVAILABLE' ? 'TEMPORARY_UNAVAILABLE' : 'UNKNOWN_OUTCOME', retryable: underlying === 'TEMPORARY_UNAVAILABLE' },
        effect: 'possible',
      };
    case 'TIMEOUT':
      return { result: 'timed_out', requestSent: false };
    case 'CANCELLED':
      return { result: 'cancelled', requestSent: false };
    default:
      return { result: 'failed', failure: toToolFailure(error), effect: 'none' };
  }
}

function failureOf(outcome: ExecutionResult): { failure: ToolFailure; requestSent: boolean } | undefined {
  switch (outcome.result) {
    case 'returned':
    case 'cancelled':
      return undefined;
    case 'timed_out':
      return { failure: { code: 'TIMEOUT', message: 'no answer within the deadline', retryable: isRetryable('TIMEOUT') }, requestSent: outcome.requestSent };
    case 'failed':
      return { failure: outcome.failure, requestSent: outcome.effect === 'possible' };
  }
}

/** Where a server's circuit is: calls flow, one trial call is let through, or calls are refused. */
export type CircuitPosition = 'closed' | 'half-open' | 'open';

function circuitPositionOf(state: CircuitState): CircuitPosition {
  switch (state) {
    case CircuitState.Closed:
      return 'closed';
    case CircuitState.HalfOpen:
      return 'half-open';
    case CircuitState.Open:
    case CircuitState.Isolated:
      return 'open';
  }
}

/** Runs MCP tool calls through a pool, with a circuit breaker per server. */
export class McpExecutor {
  readonly #pool: McpPool;
  readonly #breakers = new Map<string, CircuitBreakerPolicy>();

  constructor(pool: McpPool) {
    this.#pool = pool;
  }

  #breaker(serverKey: string): CircuitBreakerPolicy {
    let breaker = this.#breakers.get(serverKey);
    if (breaker === undefined) {
      // Only failures that say the server is unwell open the circuit; a tool's own error or bad arguments do not.
      const unwell = handleWhen((error) => hasErrorCode(error) && (error.code === 'TEMPORARY_UNAVAILABLE' || error.code === 'TIMEOUT' || error.code === 'UNKNOWN_OUTCOME'));
      breaker = circuitBreaker(unwell, { halfOpenAfter: 5_000, breaker: new ConsecutiveBreaker(5) });
      this.#breakers.set(serverKey, breaker);
    }
    return breaker;
  }

  /** The state of each server's circuit this executor has used, by server key: for the circuit_breaker_state gauge. */
  *circuits(): Iterable<{ readonly server: string; readonly state: CircuitPosition }> {
    for (const [server, breaker] of this.#breakers) yield { server, state: circuitPositionOf(breaker.state) };
  }

  /**
   * One request for the descriptor's capability: tools/call, resources/read or prompts/get. A read's contents and a
   * prompt's messages come back as structured content (what the MCP endpoint answers with) and as content blocks
   * (their text, which stays when the structured form is over the size bound).
   */
  async #send(execution: McpExecution, options: McpRequestOptions): Promise<ExecutionResult> {
    const { descriptor, target } = execution;
    if (execution.completion !== undefined) return this.#complete(execution, execution.completion, options);
    switch (mcpCapabilityOf(descriptor)) {
      case 'resource': {
        // A bound template is read at the URI it expands to with the call's arguments.
        const read = await this.#pool.readResource(target, resourceUriOf(descriptor, execution.args), options);
        return { result: 'returned', output: { content: read.contents.map((resource) => ({ type: 'resource', resource })), structuredContent: { contents: read.contents } } };
      }
      case 'prompt': {
        const prompt = await this.#pool.getPrompt(target, descriptor.providerToolName, promptArguments(execution.args), options);
        return { result: 'returned', output: { content: prompt.messages.map((message) => message.content), structuredContent: { ...prompt } } };
      }
      case 'tool': {
        const result = await this.#pool.callTool(target, descriptor.providerToolName, execution.args, options);
        const toolError = toolResultError(result);
        return toolError === undefined
          ? { result: 'returned', output: { content: result.content, ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }) } }
          : { result: 'failed', failure: toToolFailure(toolError), effect: 'none' };
      }
    }
  }

  /**
   * A completion: `completion/complete` of the prompt (or resource template) the descriptor binds, the arguments already
   * chosen as its context. A server that offers no completions answers with no values (@toolplane/mcp); what one offers
   * is bounded (core/completion.ts) before the pipeline sanitizes it.
   */
  async #complete(execution: McpExecution, completion: InvocationCompletion, options: McpRequestOptions): Promise<ExecutionResult> {
    const ref = completionRefOf(execution.descriptor);
    if (ref === undefined) {
      return { result: 'failed', failure: { code: 'INVALID_ARGUMENT', message: `${execution.descriptor.toolId} has no arguments to complete`, retryable: false }, effect: 'none' };
    }
    const offered = await this.#pool.complete(execution.target, { ref, argument: completion.argument, context: promptArguments(execution.args) }, options);
    return { result: 'returned', output: completionOutput(boundCompletion(offered)) };
  }

  /** Calls the tool, retrying as the core allows, within the call's deadline. */
  async execute(execution: McpExecution): Promise<ExecutionResult> {
    const { descriptor } = execution;
    const breaker = this.#breaker(execution.serverKey);
    for (let tries = 1; ; tries += 1) {
      const remaining = execution.deadline.getTime() - execution.now().getTime();
      if (remaining <= 0) return { result: 'timed_out', requestSent: tries > 1 };
      let outcome: ExecutionResult;
      try {
        outcome = await breaker.execute(() => this.#send(execution, { signal: execution.signal, timeoutMs: Math.min(remaining, descriptor.timeoutMs) }), execution.signal);
      } catch (error) {
        outcome = outcomeOf(error);
      }
      const failed = failureOf(outcome);
      if (failed === undefined) return outcome;
      const decision = retryDecision({
        effectiveClass: execution.effectiveClass,
        idempotency: descriptor.idempotency,
        retryPolicy: descriptor.retryPolicy,
        failure: failed.failure,
        requestSent: failed.requestSent,
        tries,
        now: execution.now().toISOString(),
        deadline: execution.deadline.toISOString(),
        jitter: execution.jitter?.() ?? Math.random(),
      });
      if (!decision.retry) return outcome;
      try {
        await sleep(decision.delayMs, execution.signal, 'waiting to retry the tool call');
      } catch {
        return outcome;
      }
    }
  }
}

/**
 * What the server knows a completed item by: a prompt by its name, a bound resource template by its URI template. A
 * tool, or a resource of one fixed URI, has no arguments to complete.
 */
function completionRefOf(descriptor: ToolDescriptor): McpCompletionRef | undefined {
  switch (mcpCapabilityOf(descriptor)) {
    case 'prompt':
      return { type: 'ref/prompt', name: descriptor.providerToolName };
    case 'resource': {
      const template = descriptor.resource?.uriTemplate;
      return template === undefined ? undefined : { type: 'ref/resource', uri: template };
    }
    case 'tool':
      return undefined;
  }
}

/** A prompt's arguments as MCP sends them: strings (the bound schema admits only string properties). */
function promptArguments(args: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(args).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]));
}
