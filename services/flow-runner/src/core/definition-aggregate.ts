import { ToolplaneError, canonicalJson, type Scope, type ToolDefinition, type ToolDefinitionRecord, type ToolDefinitionSpec } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import { resolveFlowReference, schemaDifferences, type FlowAggregate, type FlowVersionState } from './flow-aggregate.js';

// The ToolDefinition aggregate (one per workspace and name), with ETag CRUD: create only if absent, update and delete
// only with `ifMatch` equal to the current entity tag. The tag is the aggregate's version in quotes, and the version
// is the number of records folded (every decision records one), so it grows with every change, across a delete and a
// new create of the same name too: a tag never names two different states, and the materialized tool's version (the
// definition's version) only ever grows, so a newer save supersedes an older one in the registry.

/** A definition as its records fold: the latest spec and who made it, or nothing before the first create. */
export interface DefinitionAggregate {
  /** The number of records folded: the aggregate's version. */
  readonly version: number;
  readonly definition?: {
    readonly spec: ToolDefinitionSpec;
    readonly createdBy: string;
    readonly createdAt: string;
    readonly updatedBy: string;
    readonly updatedAt: string;
  };
  /** The last record was a delete (the spec is kept for the delete's reply). */
  readonly deleted: boolean;
}

interface Recorded {
  readonly actor: string;
  readonly at: string;
}

/**
 * What may be asked of a definition. `flow` is the state of the Flow the spec references, as the caller read it: a
 * spec saved enabled must resolve it and have its schemas (it is not consulted for a disabled one).
 */
export type DefinitionCommand =
  | ({ readonly type: 'CreateDefinition'; readonly spec: ToolDefinitionSpec; readonly flow?: FlowAggregate } & Recorded)
  | ({ readonly type: 'UpdateDefinition'; readonly spec: ToolDefinitionSpec; readonly ifMatch: string; readonly flow?: FlowAggregate } & Recorded)
  | ({ readonly type: 'DeleteDefinition'; readonly name: string; readonly ifMatch: string } & Recorded);

const initialDefinition: DefinitionAggregate = { version: 0, deleted: false };

/** The entity tag of a definition version: the version in double quotes. */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/** Whether `ifMatch` names the version (with or without the quotes a shell may have stripped). */
export function etagMatches(ifMatch: string, version: number): boolean {
  return ifMatch === etagOf(version) || ifMatch === String(version);
}

/** Whether a definition exists now (created, not deleted since). */
export function definitionExists(state: DefinitionAggregate): boolean {
  return state.definition !== undefined && !state.deleted;
}

function notFound(name: string): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', `no definition ${name} in this workspace`);
}

function staleTag(name: string, ifMatch: string, version: number): ToolplaneError {
  return new ToolplaneError('CONFLICT', `definition ${name} changed: If-Match ${ifMatch} is not its current etag ${etagOf(version)}; read it again`, {
    details: { etag: etagOf(version) },
  });
}

/**
 * Checks what saving `spec` enabled requires: its Flow reference resolves (see resolveFlowReference) and its public
 * schemas equal that Flow version's (INVALID_ARGUMENT `schema mismatch: …` otherwise). Returns the version resolved.
 */
export function checkEnabledSpec(spec: ToolDefinitionSpec, flow: FlowAggregate | undefined): FlowVersionState {
  const resolved = resolveFlowReference(flow, spec.flow);
  const differences = schemaDifferences(spec, resolved.body);
  if (differences.length > 0) {
    throw new ToolplaneError(
      'INVALID_ARGUMENT',
      `schema mismatch: the ${differences.join(' and ')} schema of definition ${spec.name} differs from version ${resolved.version} of flow ${spec.flow.flowId}'s (they must be equal as canonical JSON)`,
    );
  }
  return resolved;
}

function sameSpec(a: ToolDefinitionSpec, b: ToolDefinitionSpec): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function decideDefinition(command: DefinitionCommand, state: DefinitionAggregate): ToolDefinitionRecord[] {
  const recorded = { actor: command.actor, at: command.at };
  switch (command.type) {
    case 'CreateDefinition': {
      const { spec } = command;
      if (definitionExists(state) && state.definition !== undefined) {
        // The same create again (a retry) is answered with what it made; anything else is a conflict.
        if (sameSpec(state.definition.spec, spec)) return [];
        throw new ToolplaneError('CONFLICT', `definition ${spec.name} already exists (etag ${etagOf(state.version)}); update it with If-Match instead`, {
          details: { etag: etagOf(state.version) },
        });
      }
      if (spec.enabled) checkEnabledSpec(spec, command.flow);
      return [{ type: 'ToolDefinitionCreated', name: spec.name, definition: spec, ...recorded }];
    }
    case 'UpdateDefinition': {
      const { spec } = command;
      if (!definitionExists(state) || state.definition === undefined) throw notFound(spec.name);
      if (!etagMatches(command.ifMatch, state.version)) throw staleTag(spec.name, command.ifMatch, state.version);
      if (state.definition.spec.name !== spec.name) throw new ToolplaneError('INVALID_ARGUMENT', `a definition cannot be renamed (${state.definition.spec.name} to ${spec.name})`);
      if (sameSpec(state.definition.spec, spec)) return [];
      // Saving enabled (and so enabling) resolves the Flow and requires equal schemas; a disabled one stays editable.
      if (spec.enabled) checkEnabledSpec(spec, command.flow);
      return [{ type: 'ToolDefinitionUpdated', name: spec.name, definition: spec, ...recorded }];
    }
    case 'DeleteDefinition': {
      if (state.definition === undefined) throw notFound(command.name);
      if (state.deleted) {
        // The delete that made this version, again (its tool is retired again): nothing to record.
        if (etagMatches(command.ifMatch, state.version)) return [];
        throw notFound(command.name);
      }
      if (!etagMatches(command.ifMatch, state.version)) throw staleTag(command.name, command.ifMatch, state.version);
      return [{ type: 'ToolDefinitionDeleted', name: command.name, ...recorded }];
    }
  }
}

function evolveDefinition(state: DefinitionAggregate, record: ToolDefinitionRecord): DefinitionAggregate {
  const version = state.version + 1;
  switch (record.type) {
    case 'ToolDefinitionCreated':
      return {
        version,
        definition: { spec: record.definition, createdBy: record.actor, createdAt: record.at, updatedBy: record.actor, updatedAt: record.at },
        deleted: false,
      };
    case 'ToolDefinitionUpdated':
      return state.definition === undefined
        ? { ...state, version }
        : { version, definition: { ...state.definition, spec: record.definition, updatedBy: record.actor, updatedAt: record.at }, deleted: false };
    case 'ToolDefinitionDeleted':
      return state.definition === undefined
        ? { ...state, version, deleted: true }
        : { version, definition: { ...state.definition, updatedBy: record.actor, updatedAt: record.at }, deleted: true };
  }
}

/** The ToolDefinition aggregate on the one write path. */
export const definitionDecider: Decider<DefinitionAggregate, DefinitionCommand, ToolDefinitionRecord> = {
  decide: decideDefinition,
  evolve: evolveDefinition,
  initialState: () => initialDefinition,
};

/** The definition as the document callers read (marked deleted after a delete); undefined before its first create. */
export function definitionDocument(scope: Scope, state: DefinitionAggregate): ToolDefinition | undefined {
  if (state.definition === undefined) return undefined;
  const { spec, createdBy, createdAt, updatedBy, updatedAt } = state.definition;
  return {
    ...spec,
    tenant: scope.tenant,
    workspace: scope.workspace,
    version: state.version,
    etag: etagOf(state.version),
    createdBy,
    createdAt,
    updatedBy,
    updatedAt,
    ...(state.deleted ? { deleted: true as const } : {}),
  };
}
