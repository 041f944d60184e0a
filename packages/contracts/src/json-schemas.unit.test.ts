import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { JSON_SCHEMA_DIR, renderJsonSchemaFiles } from './json-schemas.js';
import { LifecycleEvent } from './lifecycle-event.js';
import { wireSchemas } from './wire-schemas.js';

const dir = new URL(`../${JSON_SCHEMA_DIR}/`, import.meta.url);

describe('generated JSON Schemas', () => {
  it('are checked in and up to date (run `npm run generate -w @toolplane/contracts` after changing a schema)', async () => {
    const expected = renderJsonSchemaFiles();
    const present = new Set(await readdir(dir));
    const missing = [...expected.keys()].filter((file) => !present.has(file));
    const extra = [...present].filter((file) => !expected.has(file));
    const stale: string[] = [];
    for (const [file, text] of expected) {
      if (present.has(file) && (await readFile(new URL(file, dir), 'utf8')) !== text) stale.push(file);
    }
    expect({ missing, extra, stale }).toEqual({ missing: [], extra: [], stale: [] });
  });

  it('include every lifecycle event type, under its own name', () => {
    const registry: Record<string, unknown> = wireSchemas;
    for (const option of LifecycleEvent.options) {
      expect(registry[option.shape.type.value], option.shape.type.value).toBe(option);
    }
  });

  it('are draft 2020-12 and titled by message name', () => {
    for (const [file, text] of renderJsonSchemaFiles()) {
      if (file === 'index.json') continue;
      const schema = JSON.parse(text) as { $schema: string; title: string };
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(`${schema.title}.schema.json`).toBe(file);
    }
  });
});
