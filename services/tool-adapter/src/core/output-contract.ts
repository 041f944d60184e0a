import { mcpCapabilityOf, type ToolDescriptor, type ToolFailure } from '@toolplane/contracts';
import type { OutputSchemaSource, OutputValidator } from './argument-validation.js';
import type { SanitizedResult } from './result-sanitizer.js';

// A tool that declares an output schema promises structured content matching it (MCP: "servers MUST provide
// structured results that conform to this schema"). Its result is checked once it is sanitized (secrets removed, so
// the content checked is the content a caller would get) and before it is bounded (a result cut to the size bound is
// not the tool's fault). A result that breaks the promise is not passed on as a success: the call ends Failed with
// CONFLICT (the tool's behaviour conflicts with the definition it was bound with; not retryable), the message naming
// the first violations and saying that the tool ran, so its effect, if any, has happened. The receipt records that
// failure; the result itself is withheld.

/** What a result that breaks its output schema is reported as, beside the code (`ToolFailure.providerErrorType`). */
export const OUTPUT_SCHEMA_VIOLATION = 'OutputSchemaViolation';

/** The output schema a call's result must match: a tool's (or flow's) declared one; resources and prompts have none. */
export function outputSchemaOf(descriptor: ToolDescriptor | undefined): OutputSchemaSource | undefined {
  if (descriptor?.outputSchemaJson === undefined || mcpCapabilityOf(descriptor) !== 'tool') return undefined;
  const { toolId, toolVersion, definitionHash, outputSchemaJson } = descriptor;
  return { toolId, toolVersion, definitionHash, outputSchemaJson };
}

/** The failure a result that breaks its tool's output schema ends the call with; undefined when it keeps it. */
export function outputContractFailure(
  source: OutputSchemaSource,
  result: SanitizedResult,
  validator: OutputValidator,
): ToolFailure | undefined {
  const check = validator.validateOutput(source, result.sanitizedStructuredContent);
  if (check.valid) return undefined;
  const tool = `${source.toolId}@${source.toolVersion}`;
  const effect = "The result is withheld; the tool's effect, if any, has happened: do not retry blindly";
  const message = `${tool} ran, but ${check.problem}. ${effect}`;
  return {
    code: 'CONFLICT',
    message: message.length <= 4096 ? message : `${message.slice(0, 4095)}…`,
    retryable: false,
    providerErrorType: OUTPUT_SCHEMA_VIOLATION,
  };
}
