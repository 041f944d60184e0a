import { isTerminalInvocationState, type InspectInvocationReply, type JsonObject, type ToolInvocation } from '@toolplane/contracts';
import { argumentPreview } from './argument-preview.js';
import { invocationResultOf } from './invocation-pipeline.js';

/** What an inspection is shown with besides the call: the tool's input schema (undefined once its descriptor is gone) and the tenant's sensitive field names. */
export interface InspectionContext {
  readonly inputSchema: unknown;
  readonly sensitiveArgumentFields: readonly string[];
}

/**
 * One call as an operator inspects it: its latest attempt's ids and state, its arguments redacted (argumentPreview)
 * and, once it ended, the same result and receipt its reply carried.
 */
export function invocationInspection(invocation: ToolInvocation, context: InspectionContext): InspectInvocationReply {
  const args = JSON.parse(invocation.argumentsJson) as JsonObject;
  const ended = isTerminalInvocationState(invocation.state) && invocation.receipt !== undefined;
  return {
    toolCallId: invocation.toolCallId,
    invocationId: invocation.invocationId,
    attempt: invocation.attempt,
    state: invocation.state,
    toolId: invocation.toolId,
    ...(invocation.toolVersion === undefined ? {} : { toolVersion: invocation.toolVersion }),
    ...(invocation.approvalId === undefined ? {} : { approvalId: invocation.approvalId }),
    arguments: argumentPreview(args, context.inputSchema, context.sensitiveArgumentFields),
    ...(ended ? { result: invocationResultOf(invocation) } : {}),
  };
}

/** A descriptor's input schema as stored (JSON text), undefined when there is none or it does not parse. */
export function parsedInputSchema(inputSchemaJson: string | undefined): unknown {
  if (inputSchemaJson === undefined) return undefined;
  try {
    return JSON.parse(inputSchemaJson) as unknown;
  } catch {
    return undefined;
  }
}
