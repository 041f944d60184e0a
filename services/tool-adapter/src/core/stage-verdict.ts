import type { ErrorCode, SideEffectClass } from '@toolplane/contracts';
import type { ExecutionResult } from './execution-outcome.js';
import type { PipelineState, StageOutcome } from './invocation-pipeline.js';

// What a stage's trace span says the core decided: a word from a closed set and, when the stage failed the call, the
// taxonomy code. Derived from the outcome the I/O layer reported and the state the core moved to, so it can name
// nothing the call carried (no argument, result or secret can reach a span through here).

/** What the core decided at a stage. */
export type StageDecision =
  | 'deny'
  | 'resolved'
  | 'valid'
  | 'allow'
  | 'approval_required'
  | 'not_required'
  | 'park'
  | 'previously_granted'
  | 'granted'
  | 'rejected'
  | 'expired'
  | 'voided'
  | 'leased'
  | 'not_needed'
  | 'execute'
  | 'returned'
  | 'failed'
  | 'timed_out'
  | 'cancelled'
  | 'observed'
  | 'uncertain'
  | 'recorded'
  | 'published'
  | 'replied';

/** A stage's decision, the code of the failure it ended the call with (if it did), and the call's class once known. */
export interface StageVerdict {
  readonly decision: StageDecision;
  readonly errorCode: ErrorCode | undefined;
  readonly sideEffectClass: SideEffectClass | undefined;
}

/** The verdict of the stage that reported `outcome`, given the state the core moved to (`next`). */
export function stageVerdictOf(outcome: StageOutcome, next: PipelineState): StageVerdict {
  const { invocation } = next;
  const sideEffectClass = invocation.effectiveClass ?? invocation.declaredClass;
  // Every refusal before execution jumps to FINISH with a Denied ending (see `deny` in the pipeline).
  if (next.step === 'FINISH' && next.ending?.state === 'Denied') return { decision: 'deny', errorCode: next.ending.failure?.code, sideEffectClass };
  return { ...decisionOf(outcome, next), sideEffectClass };
}

function decisionOf(outcome: StageOutcome, next: PipelineState): { readonly decision: StageDecision; readonly errorCode: ErrorCode | undefined } {
  switch (outcome.step) {
    case 'TOOL_RESOLUTION':
      return passed('resolved');
    case 'SCHEMA_VALIDATION':
      return passed('valid');
    case 'AGENT_PERMISSION':
    case 'TENANT_POLICY':
      return passed('allow');
    case 'SIDE_EFFECT_CLASSIFICATION':
      return passed(outcome.decision.effect === 'approval_required' ? 'approval_required' : 'allow');
    case 'APPROVAL':
      return passed(outcome.result === 'requested' ? 'park' : outcome.result);
    case 'APPROVAL_DECISION':
      return passed(outcome.result);
    case 'CREDENTIAL_BROKER':
    case 'SANDBOX':
      // A denial is the FINISH jump above; what is left is the stage's own result.
      return passed(outcome.result === 'denied' ? 'deny' : outcome.result);
    case 'START':
      return passed('execute');
    case 'EXECUTE':
      return executionDecision(outcome.execution);
    case 'SANITIZE': {
      const ending = next.ending;
      if (ending === undefined || ending.state === 'Observed') return passed('observed');
      return { decision: ending.state === 'Uncertain' ? 'uncertain' : ending.state === 'Cancelled' ? 'cancelled' : 'failed', errorCode: ending.failure?.code };
    }
    case 'FINISH':
      return passed('recorded');
    case 'PUBLISH_TERMINAL':
      return passed('published');
    case 'REPLY':
      return passed('replied');
  }
}

/** How the provider call ended, with the code of its failure (SANITIZE then decides the call's ending from it). */
function executionDecision(execution: ExecutionResult): { readonly decision: StageDecision; readonly errorCode: ErrorCode | undefined } {
  switch (execution.result) {
    case 'returned':
      return passed('returned');
    case 'failed':
      return { decision: 'failed', errorCode: execution.failure.code };
    case 'timed_out':
      return { decision: 'timed_out', errorCode: 'TIMEOUT' };
    case 'cancelled':
      return { decision: 'cancelled', errorCode: 'CANCELLED' };
  }
}

function passed(decision: StageDecision): { readonly decision: StageDecision; readonly errorCode: undefined } {
  return { decision, errorCode: undefined };
}
