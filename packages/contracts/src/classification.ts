import { z } from 'zod';

/**
 * What a tool call may do to the world, in increasing order of power: each class may do what the ones before
 * it may, so the effective class of a call is the highest of its declared class and whatever environment or
 * policy adds. It can be raised, never lowered.
 */
export const SideEffectClass = z.enum(['READ', 'WRITE', 'DESTRUCTIVE', 'EXTERNAL_COMMUNICATION', 'CODE_EXECUTION', 'PRIVILEGED']);
export type SideEffectClass = z.infer<typeof SideEffectClass>;

/** Orders two side-effect classes: negative when `a` is weaker than `b`, zero when equal, positive when stronger. */
export function compareSideEffectClasses(a: SideEffectClass, b: SideEffectClass): number {
  return SideEffectClass.options.indexOf(a) - SideEffectClass.options.indexOf(b);
}

/** The effective class: the strongest of the declared class and every raise; never weaker than `declared`. */
export function raiseSideEffectClass(declared: SideEffectClass, ...raises: readonly (SideEffectClass | undefined)[]): SideEffectClass {
  let effective = declared;
  for (const raise of raises) {
    if (raise !== undefined && compareSideEffectClasses(raise, effective) > 0) effective = raise;
  }
  return effective;
}

/** How bad a wrong call of the tool would be, in increasing order. */
export const RiskClass = z.enum(['LOW', 'MEDIUM', 'HIGH', 'CRITICAL']);
export type RiskClass = z.infer<typeof RiskClass>;

/** Orders two risk classes like {@link compareSideEffectClasses}. */
export function compareRiskClasses(a: RiskClass, b: RiskClass): number {
  return RiskClass.options.indexOf(a) - RiskClass.options.indexOf(b);
}

/**
 * Whether repeating a call is safe: NONE (reconcile before any retry), SUPPORTED_WITH_KEY (the provider
 * dedupes by the idempotency key we pass), NATURAL (repeating has no further effect, like a read or a PUT).
 */
export const IdempotencySemantics = z.enum(['NONE', 'SUPPORTED_WITH_KEY', 'NATURAL']);
export type IdempotencySemantics = z.infer<typeof IdempotencySemantics>;

/** How a tool is executed: through an MCP server, or as a Flow published as a tool (a ToolDefinition). */
export const ToolKind = z.enum(['Mcp', 'Flow']);
export type ToolKind = z.infer<typeof ToolKind>;

/**
 * Where a tool call runs: `None` when the effect happens at a remote server Toolplane does not host, `Process`
 * for a local child process (a descriptor's requirement; a lease says which sandbox it got), `Bubblewrap` for a
 * local child process in bubblewrap's namespaces with a read-only view of only what it needs and resource limits.
 * A lease of kind `Process` is a child process with a scrubbed environment and its own process group only (the
 * adapter's sandbox is switched off).
 */
export const SandboxKind = z.enum(['None', 'Process', 'Bubblewrap']);
export type SandboxKind = z.infer<typeof SandboxKind>;

/**
 * How sensitive a bound resource's content is, in increasing order. An agent reads a resource only up to its
 * clearance (an agent profile's `clearance`, INTERNAL when the profile names none).
 */
export const DataClassification = z.enum(['PUBLIC', 'INTERNAL', 'CONFIDENTIAL', 'RESTRICTED']);
export type DataClassification = z.infer<typeof DataClassification>;

/** The clearance of an agent whose profile names none: what any member of the tenant may read. */
export const DEFAULT_CLEARANCE: DataClassification = 'INTERNAL';

/** Orders two data classifications like {@link compareSideEffectClasses}. */
export function compareDataClassifications(a: DataClassification, b: DataClassification): number {
  return DataClassification.options.indexOf(a) - DataClassification.options.indexOf(b);
}
