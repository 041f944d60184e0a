import { ToolplaneError } from '@toolplane/contracts';

/**
 * Encodes free-form JSON (a JSON Schema, tool arguments) as a string for storage: such values may hold
 * `$`-prefixed or dotted keys (`$ref`, `$schema`, `"a.b"`), which FerretDB refuses and MongoDB queries misread.
 */
export function encodeFreeJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    // BigInt values and circular references.
    throw new ToolplaneError('INVALID_ARGUMENT', `value is not JSON: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (text === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `value is not JSON: ${typeof value} has no JSON form`);
  return text;
}

/** Decodes a string written by encodeFreeJson; text that is not JSON means the stored data is damaged (INTERNAL). */
export function decodeFreeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ToolplaneError('INTERNAL', 'stored free-form JSON is not valid JSON', { cause: error });
  }
}
