import { flowStreamId, toolDefinitionStreamId, type FlowDefinitionBody, type FlowRecord, type Scope, type ToolDefinitionRecord } from '@toolplane/contracts';
import { foldEvents, type EventStore, type StoredAppend } from '@toolplane/event-store';
import type { RegistryGateway } from '../adapters/registry-gateway.js';
import { definitionDecider, type DefinitionAggregate } from '../core/definition-aggregate.js';
import { flowDecider, type FlowAggregate } from '../core/flow-aggregate.js';

/** Who asks for a management change: the verified operator, and the token the registry is asked with on their behalf. */
export interface Operator {
  readonly principal: string;
  readonly token: string;
}

/** What FlowRunner's management use cases run with: the record, the registry, body validation and the clock. */
export interface ManagementContext {
  /** The Flow and ToolDefinition aggregates, each on its own subject of FlowRunner's private stream. */
  readonly flows: EventStore<FlowRecord>;
  readonly definitions: EventStore<ToolDefinitionRecord>;
  /** Every append of a scope's aggregates of one kind, in stream order (the records name their aggregate): listings. */
  readonly readAllFlows: (scope: Scope, signal?: AbortSignal) => Promise<readonly StoredAppend<FlowRecord>[]>;
  readonly readAllDefinitions: (scope: Scope, signal?: AbortSignal) => Promise<readonly StoredAppend<ToolDefinitionRecord>[]>;
  /** Validates a whole body for publishing (schemas, each step's tool, mappings): throws the typed refusal. */
  readonly validateBody: (scope: Scope, body: FlowDefinitionBody, signal?: AbortSignal) => Promise<void>;
  readonly registry: RegistryGateway;
  /** Now, as an ISO instant. */
  readonly now: () => string;
}

/** The records of every aggregate in a listing, grouped by the aggregate each names, in stream order. */
export function groupRecords<R>(appends: readonly StoredAppend<R>[], idOf: (record: R) => string): Map<string, R[]> {
  const grouped = new Map<string, R[]>();
  for (const append of appends) {
    for (const record of append.events) {
      const id = idOf(record);
      const records = grouped.get(id);
      if (records === undefined) grouped.set(id, [record]);
      else records.push(record);
    }
  }
  return grouped;
}

/** One page of items sorted by key: at most `limit` after the cursor, and the cursor of the next page. */
export function page<T>(items: readonly T[], keyOf: (item: T) => string, limit: number, after?: string): { readonly items: T[]; readonly next: string | null } {
  const sorted = [...items].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const rest = after === undefined ? sorted : sorted.filter((item) => keyOf(item) > after);
  const taken = rest.slice(0, limit);
  const last = taken.at(-1);
  return { items: taken, next: rest.length > limit && last !== undefined ? keyOf(last) : null };
}

/** A Flow's state from its record (no versions when it was never drafted). */
export async function readFlow(context: Pick<ManagementContext, 'flows'>, scope: Scope, flowId: string, signal?: AbortSignal): Promise<FlowAggregate> {
  const stored = await context.flows.readStream(flowStreamId(scope, flowId), signal === undefined ? {} : { signal });
  return foldEvents(flowDecider, stored.events);
}

/** A ToolDefinition's state from its record (version 0 and no definition when it was never created). */
export async function readDefinition(context: Pick<ManagementContext, 'definitions'>, scope: Scope, name: string, signal?: AbortSignal): Promise<DefinitionAggregate> {
  const stored = await context.definitions.readStream(toolDefinitionStreamId(scope, name), signal === undefined ? {} : { signal });
  return foldEvents(definitionDecider, stored.events);
}

/** The state of every definition the workspace ever created (deleted ones too), by name. */
export async function readAllDefinitions(context: Pick<ManagementContext, 'readAllDefinitions'>, scope: Scope, signal?: AbortSignal): Promise<Map<string, DefinitionAggregate>> {
  const grouped = groupRecords(await context.readAllDefinitions(scope, signal), (record) => record.name);
  return new Map([...grouped].map(([name, records]) => [name, foldEvents(definitionDecider, records)]));
}
