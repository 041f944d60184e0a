import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { jsonProblem } from './json.js';
import { JsonObject, ToolId, ToolVersion } from './primitives.js';

// The body of a Flow version: what a flow-backed tool does, as data. Steps call governed tools in sequence or in
// parallel groups; every value a step passes on is computed by a JSONata expression over
// `{ input: <flow input>, steps: { <stepId>: <that step's output object> } }`. FlowRunner's core interprets it
// deterministically (no clock, no randomness in expressions), so a resumed run plans exactly what the first did.

/** The most steps a flow may have at its top level. */
export const MAX_FLOW_STEPS = 32;
/** The fewest and most calls a parallel group may run together. */
export const MIN_PARALLEL_STEPS = 2;
export const MAX_PARALLEL_STEPS = 8;
/** The longest JSONata source an expression may have. */
export const MAX_FLOW_EXPRESSION_LENGTH = 4096;
/** The largest canonical JSON text an input or output schema of a flow may have (as a descriptor's schema). */
export const MAX_FLOW_SCHEMA_BYTES = 262_144;

/** A step's id, unique across its flow: it names the step's output for later expressions (`steps.<id>`). */
export const FlowStepId = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/)
  .meta({ description: 'Flow step id: a lowercase letter, then [a-z0-9_], at most 64 characters.' });
export type FlowStepId = z.infer<typeof FlowStepId>;

/** A JSONata expression's source, evaluated over `{ input, steps }`. */
export const FlowExpression = z
  .string()
  .min(1)
  .max(MAX_FLOW_EXPRESSION_LENGTH)
  .meta({ description: 'A JSONata expression over { input, steps }, at most 4096 characters.' });
export type FlowExpression = z.infer<typeof FlowExpression>;

/** How often a READ step is tried on a retryable failure, and the wait before the first retry (doubled after). */
export const FlowStepRetry = z.strictObject({
  maxAttempts: z.number().int().min(2).max(5),
  backoffMs: z.number().int().min(0).max(60_000),
});
export type FlowStepRetry = z.infer<typeof FlowStepRetry>;

/** One governed tool call: its arguments computed from the flow's input and earlier steps' outputs. */
export const FlowCallStep = z.strictObject({
  id: FlowStepId,
  kind: z.literal('call'),
  tool: ToolId,
  /** Pins an exact descriptor version; without it the tool's active version is called. */
  toolVersion: ToolVersion.optional(),
  title: z.string().min(1).max(200).optional(),
  /** Must evaluate to a JSON object: the call's arguments. */
  arguments: FlowExpression,
  /** When given and falsy, the step is skipped and has no output. */
  when: FlowExpression.optional(),
  /** Only on READ tools, and only retryable failures are retried. */
  retry: FlowStepRetry.optional(),
});
export type FlowCallStep = z.infer<typeof FlowCallStep>;

/** Calls that run together; the group settles when all of them have. */
export const FlowParallelStep = z.strictObject({
  id: FlowStepId,
  kind: z.literal('parallel'),
  steps: z.array(FlowCallStep).min(MIN_PARALLEL_STEPS).max(MAX_PARALLEL_STEPS),
  /** When given and falsy, the whole group is skipped. */
  when: FlowExpression.optional(),
});
export type FlowParallelStep = z.infer<typeof FlowParallelStep>;

/** A step of a flow: a call, or a parallel group of calls. */
export const FlowStep = z.discriminatedUnion('kind', [FlowCallStep, FlowParallelStep]);
export type FlowStep = z.infer<typeof FlowStep>;

// A JSON Schema of type "object" (checked by the refinement below), with the check spelled for JSON Schema validators
// in other languages.
const ObjectSchema = JsonObject.meta({ properties: { type: { const: 'object' } }, required: ['type'] });

/** The body of one Flow version: its input/output JSON Schemas, its steps, and the mapping to its output. */
export const FlowDefinitionBody = z
  .strictObject({
    title: z.string().min(1).max(200).optional(),
    description: z.string().min(1).max(4096).optional(),
    inputSchema: ObjectSchema.meta({ description: 'The JSON Schema (type "object") of the flow input: the tool\'s arguments.' }),
    outputSchema: ObjectSchema.meta({ description: 'The JSON Schema (type "object") of the flow output: the tool\'s structured result.' }),
    steps: z.array(FlowStep).min(1).max(MAX_FLOW_STEPS),
    /** Must evaluate to a JSON object valid against `outputSchema`. */
    output: FlowExpression,
  })
  .superRefine((body, ctx) => {
    for (const key of ['inputSchema', 'outputSchema'] as const) {
      const schema = body[key];
      if (schema.type !== 'object') {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} must be a JSON Schema of type "object"` });
      } else if (jsonProblem(schema) === undefined && new TextEncoder().encode(canonicalJson(schema)).length > MAX_FLOW_SCHEMA_BYTES) {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} is larger than ${MAX_FLOW_SCHEMA_BYTES} bytes` });
      }
    }
    const seen = new Set<string>();
    const claim = (id: string, path: (string | number)[]) => {
      if (seen.has(id)) ctx.addIssue({ code: 'custom', path, message: `step id ${JSON.stringify(id)} appears more than once in the flow` });
      seen.add(id);
    };
    body.steps.forEach((step, i) => {
      claim(step.id, ['steps', i, 'id']);
      if (step.kind === 'parallel') step.steps.forEach((child, j) => claim(child.id, ['steps', i, 'steps', j, 'id']));
    });
  })
  .meta({ description: 'The body of a Flow version: input/output JSON Schemas, steps (calls and parallel groups), output mapping.' });
export type FlowDefinitionBody = z.infer<typeof FlowDefinitionBody>;
