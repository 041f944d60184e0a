import { ROOT_CONTEXT, SpanStatusCode, context, isSpanContextValid, propagation, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import { hasErrorCode, type ToolInvocation } from '@toolplane/contracts';
import { traceHeaders } from '@toolplane/messaging';
import { PIPELINE_STEPS, type PipelineState, type PipelineStep, type StageOutcome } from '../core/invocation-pipeline.js';
import { stageVerdictOf } from '../core/stage-verdict.js';
import type { TraceContext } from '../core/invocation-decider.js';

// The adapter's trace spans, through the OpenTelemetry API only: with tracing off (no provider registered by the
// composition root) every span here is the API's non-recording span, and nothing else is built. A stage span is a
// child of the active context (the messaging span of the request or decision being handled); what a recording stage
// does runs with its span active, so its requests, its appends and the events it publishes name it as their parent.
// Span attributes name the call and what the core decided, never its arguments, results or secrets.

// A proxy that forwards to whichever provider is registered, before or after this module loads.
const tracer = trace.getTracer('@toolplane/tool-adapter');

// One name per stage, built once: a stage span costs no string with tracing off.
const stageSpanNames = Object.fromEntries(PIPELINE_STEPS.map((step) => [step, `toolplane.stage ${step}`])) as Readonly<Record<PipelineStep, string>>;

/** The name of a stage's span: `toolplane.stage <STAGE>`. */
export function stageSpanName(step: PipelineStep): string {
  return stageSpanNames[step];
}

/** The name of the span of a parked call's wait for a human decision. */
export const approvalWaitSpanName = 'approval wait';

/** Starts the span of one pipeline stage of `invocation`, a child of the active context. */
export function startStageSpan(step: PipelineStep, invocation: ToolInvocation): Span {
  const span = tracer.startSpan(stageSpanNames[step]);
  if (span.isRecording()) {
    span.setAttributes({
      'toolplane.stage': step,
      'toolplane.tenant': invocation.tenant,
      'toolplane.workspace': invocation.workspace,
      'toolplane.tool_call_id': invocation.toolCallId,
    });
  }
  return span;
}

/** The context that makes a recording span the parent of what runs in it; undefined for a span that records nothing. */
export function activeWith(span: Span): Context | undefined {
  return span.isRecording() ? trace.setSpan(context.active(), span) : undefined;
}

/** Records on a stage's span what the core decided there (`next`: the state it moved to), and whether that failed the call. */
export function traceStageOutcome(span: Span, outcome: StageOutcome, next: PipelineState): void {
  if (!span.isRecording()) return;
  const verdict = stageVerdictOf(outcome, next);
  span.setAttribute('toolplane.decision', verdict.decision);
  if (verdict.sideEffectClass !== undefined) span.setAttribute('toolplane.side_effect_class', verdict.sideEffectClass);
  if (verdict.errorCode !== undefined) {
    span.setAttribute('toolplane.error_code', verdict.errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}

/** Marks the span of a stage that threw (its request is retried, or decided again): the taxonomy code only, never the message. */
export function traceStageError(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  span.setAttribute('error.type', hasErrorCode(error) ? error.code : 'INTERNAL');
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The active trace context, to keep with a call that parks (undefined when nothing is traced). */
export function activeTraceContext(): TraceContext | undefined {
  const { traceparent, tracestate } = traceHeaders();
  if (traceparent === undefined) return undefined;
  return tracestate === undefined || tracestate === '' ? { traceparent } : { traceparent, tracestate };
}

/** What a resumed call's spans hang off, and how long it waited. */
export interface ApprovalWait {
  /** When the call parked (its record's time). */
  readonly parkedAt: Date;
  /** When the decision resumed it. */
  readonly resumedAt: Date;
  /** The trace context kept with the parked call, if it was traced: the resumed stages continue that trace. */
  readonly parkedTrace: TraceContext | undefined;
  readonly invocation: ToolInvocation;
}

/**
 * Records the `approval wait` span (from parking to resumption) in the call's trace, linked to the decision's trace
 * (the active context), and returns the call's context for the resumed stages to run in, so a call that waited hours
 * for a human is still one trace. Without a kept context (the call was not traced when it parked) the span is in the
 * decision's trace and the result is undefined: the resumed stages stay in the active context.
 */
export function traceApprovalWait(wait: ApprovalWait): Context | undefined {
  const decision = context.active();
  const extracted = wait.parkedTrace === undefined ? undefined : propagation.extract(ROOT_CONTEXT, { ...wait.parkedTrace });
  const callSpan = extracted === undefined ? undefined : trace.getSpanContext(extracted);
  const callContext = callSpan !== undefined && isSpanContextValid(callSpan) ? extracted : undefined;
  const decisionSpan = trace.getSpanContext(decision);
  const links: Link[] | undefined = callContext !== undefined && decisionSpan !== undefined && isSpanContextValid(decisionSpan) ? [{ context: decisionSpan }] : undefined;
  const span = tracer.startSpan(approvalWaitSpanName, { startTime: wait.parkedAt, ...(links === undefined ? {} : { links }) }, callContext ?? decision);
  if (span.isRecording()) {
    span.setAttributes({
      'toolplane.tenant': wait.invocation.tenant,
      'toolplane.workspace': wait.invocation.workspace,
      'toolplane.tool_call_id': wait.invocation.toolCallId,
      ...(wait.invocation.approvalId === undefined ? {} : { 'toolplane.approval_id': wait.invocation.approvalId }),
    });
  }
  span.end(wait.resumedAt);
  return callContext;
}
