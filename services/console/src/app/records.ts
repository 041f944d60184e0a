// The read-only pages' use cases: calls, one call, a flow run and the audit chain, each read from its owning service
// as the operator. A failed read becomes the page's typed error; one failed part of a page does not hide the rest.
import {
  ExternalId,
  InvocationState,
  ToolId,
  adapterCommandSchemas,
  adapterOperations,
  auditCommandSchemas,
  auditOperations,
  flowRunCommandSchemas,
  flowRunOperations,
  type FlowJournalEntry,
  type ListCallsRequest,
  type RuntimeToolCallSummary,
  type RuntimeToolCallView,
  type VerifyChainReply,
} from '@toolplane/contracts';
import type { Inspection } from '../core/call-page.js';
import type { CallFilters } from '../core/calls-page.js';
import type { RunState } from '../core/run-page.js';
import { typedErrorOf, type TypedError } from '../core/typed-error.js';
import type { ServiceCaller } from './service-caller.js';
import type { Operator } from './sessions.js';

/** A read that either answered or failed with a typed error. */
export type Read<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: TypedError };

async function read<T>(work: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return { ok: false, error: typedErrorOf(error) };
  }
}

const CALLS_PAGE_SIZE = 50;

/** The filters of the calls page from its query string: the request they make, or what is wrong with them. */
export function callsRequestOf(filters: CallFilters): { readonly ok: true; readonly request: Partial<ListCallsRequest> } | { readonly ok: false; readonly error: TypedError } {
  const request: Record<string, unknown> = { limit: CALLS_PAGE_SIZE };
  const checks = [
    ['state', 'state', InvocationState],
    ['tool', 'toolId', ToolId],
    ['agent', 'agentId', ExternalId],
    ['run', 'flowRunId', ExternalId],
  ] as const;
  for (const [field, key, schema] of checks) {
    const value = filters[field];
    if (value === undefined || value === '') continue;
    if (!schema.safeParse(value).success) return { ok: false, error: { code: 'INVALID_ARGUMENT', message: `the ${field} filter ${JSON.stringify(value.slice(0, 100))} is not valid` } };
    request[key] = value;
  }
  if (filters.after !== undefined && filters.after !== '') {
    if (filters.after.length > 2048) return { ok: false, error: { code: 'INVALID_ARGUMENT', message: 'the page cursor is too long' } };
    request['after'] = filters.after;
  }
  return { ok: true, request: request };
}

/** One page of the workspace's calls. */
export function listCalls(call: ServiceCaller, operator: Operator, request: Partial<ListCallsRequest>, signal: AbortSignal): Promise<Read<{ items: RuntimeToolCallSummary[]; next: string | null }>> {
  return read(() =>
    call({ scope: operator.scope, service: 'audit', operation: auditOperations.listCalls, schemas: auditCommandSchemas.listCalls, body: request, token: operator.token, signal }),
  );
}

/** One call: the projection (required for the page) and the adapter's inspection (shown as unavailable if it fails). */
export async function showCall(call: ServiceCaller, operator: Operator, toolCallId: string, signal: AbortSignal): Promise<Read<{ call: RuntimeToolCallView; inspection: Inspection }>> {
  const projected = await read(() => call({ scope: operator.scope, service: 'audit', operation: auditOperations.getCall, schemas: auditCommandSchemas.getCall, body: { toolCallId }, token: operator.token, signal }));
  if (!projected.ok) return projected;
  // The adapter reads a call directly by its idempotency key (the record has it); by ToolCallId alone it finds only
  // a call parked for an approval or ended Uncertain.
  const { idempotencyKey } = projected.value.call;
  const body = { toolCallId, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
  const inspected = await read(() =>
    call({ scope: operator.scope, service: 'adapter', operation: adapterOperations.inspectInvocation, schemas: adapterCommandSchemas.inspectInvocation, body, token: operator.token, signal }),
  );
  const inspection: Inspection = inspected.ok ? { ok: true, reply: inspected.value } : { ok: false, code: inspected.error.code, message: inspected.error.message };
  return { ok: true, value: { call: projected.value.call, inspection } };
}

/** A flow run: its journal (first page) from the audit projection, and its state from FlowRunner if it answers. */
export async function showRun(
  call: ServiceCaller,
  operator: Operator,
  flowRunId: string,
  signal: AbortSignal,
): Promise<{ readonly journal: Read<{ entries: FlowJournalEntry[] }>; readonly run: RunState }> {
  const [journal, run] = await Promise.all([
    read(() => call({ scope: operator.scope, service: 'audit', operation: auditOperations.flowJournal, schemas: auditCommandSchemas.flowJournal, body: { flowRunId, limit: 200 }, token: operator.token, signal })),
    read(() => call({ scope: operator.scope, service: 'flows', operation: flowRunOperations.getRun, schemas: flowRunCommandSchemas.getRun, body: { flowRunId }, token: operator.token, signal })),
  ]);
  return { journal, run: run.ok ? { ok: true, run: run.value.run } : { ok: false, code: run.error.code, message: run.error.message } };
}

/** The tenant's audit chain, walked from its first entry. */
export function verifyChain(call: ServiceCaller, operator: Operator, timeoutMs: number, signal: AbortSignal): Promise<Read<VerifyChainReply>> {
  return read(() => call({ scope: operator.scope, service: 'audit', operation: auditOperations.verifyChain, schemas: auditCommandSchemas.verifyChain, body: {}, token: operator.token, signal, timeoutMs }));
}
