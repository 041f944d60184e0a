import { z } from 'zod';
import { wireSchemas } from './wire-schemas.js';

/** The folder, relative to the package root, the JSON Schemas are generated into and checked in. */
export const JSON_SCHEMA_DIR = 'generated/json-schema';

/** The checked-in text of one file: pretty-printed JSON with a trailing newline. */
function fileText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Renders every wire message of {@link wireSchemas} as JSON Schema (draft 2020-12) file contents by file name:
 * `<Name>.schema.json` each, plus `index.json` listing them. Pure: the generator writes these, the staleness
 * test compares them with what is checked in.
 */
export function renderJsonSchemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const index: { name: string; file: string }[] = [];
  for (const name of Object.keys(wireSchemas).sort() as (keyof typeof wireSchemas)[]) {
    const file = `${name}.schema.json`;
    const jsonSchema = z.toJSONSchema(wireSchemas[name], { target: 'draft-2020-12', io: 'input', unrepresentable: 'throw' });
    files.set(file, fileText({ $schema: jsonSchema.$schema, title: name, ...jsonSchema }));
    index.push({ name, file });
  }
  files.set('index.json', fileText({ description: 'Toolplane v1 wire messages as JSON Schema (draft 2020-12). Generated; do not edit.', schemas: index }));
  return files;
}
