import type { ToolInvocation } from '@toolplane/contracts';
import type { PipelineStep } from '../core/invocation-pipeline.js';

/**
 * What the pipeline driver reports as it runs a call, for the adapter's metrics. Each report is synchronous and cheap
 * (an increment or an observation): it is made on the hot path, between a stage and the next, and must never fail or
 * delay the call it describes.
 */
export interface InvocationObserver {
  /** A stage was performed: its I/O, the core's decision on its outcome and the append it required, in `seconds`. */
  stagePerformed(step: PipelineStep, seconds: number): void;
  /** A call parked for a human approval (its ApprovalRequested is recorded). */
  parked(invocation: ToolInvocation): void;
  /** A call's terminal state is recorded: once per call, by the run that ended it. */
  ended(invocation: ToolInvocation): void;
}

/** An observer that records nothing: for runtimes whose metrics nobody reads. */
export const unobservedInvocations: InvocationObserver = {
  stagePerformed: () => undefined,
  parked: () => undefined,
  ended: () => undefined,
};
