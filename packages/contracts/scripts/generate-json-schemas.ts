// Writes the JSON Schema of every v1 wire message into generated/json-schema/ (checked in), removing files
// of messages that no longer exist. Run with `npm run generate`; src/json-schemas.unit.test.ts fails when the
// checked-in files differ from what this would write.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { JSON_SCHEMA_DIR, renderJsonSchemaFiles } from '../src/json-schemas.js';

const dir = path.join(import.meta.dirname, '..', JSON_SCHEMA_DIR);
const files = renderJsonSchemaFiles();
await mkdir(dir, { recursive: true });
for (const stale of (await readdir(dir)).filter((name) => !files.has(name))) {
  await rm(path.join(dir, stale));
  console.log(`removed ${stale}`);
}
for (const [name, text] of files) await writeFile(path.join(dir, name), text);
console.log(`wrote ${files.size} files to ${JSON_SCHEMA_DIR}`);
