export { SCHEMA_DIALECTS, compileSchema, createSchemaEngine, schemaDialectOf, violationPath } from './schema-engine.js';
export type { CompiledSchema, SchemaDialect, SchemaEngine } from './schema-engine.js';
export type { AnySchema, ErrorObject, ValidateFunction } from 'ajv';
