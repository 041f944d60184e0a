// The approval use cases: the pending list with each call's redacted arguments, a fresh read of one approval, and a
// decision. All of them go to the owning services as the operator; the approval service alone decides whether the
// operator may decide, and its typed error is what the page shows.
import { adapterCommandSchemas, adapterOperations, approvalCommandSchemas, approvalOperations, hasErrorCode, sleep, type ApprovalView } from '@toolplane/contracts';
import type { DecidedFlash, PendingItem, PreviewState } from '../core/approvals-page.js';
import { pendingOf } from '../core/pending-list.js';
import { typedErrorOf, type TypedError } from '../core/typed-error.js';
import type { ServiceCaller } from './service-caller.js';
import type { Operator } from './sessions.js';

/** The most approvals the page lists (the service's page bound). */
const LIST_LIMIT = 200;
/** Argument previews read at once for one page. */
const PREVIEW_CONCURRENCY = 8;

/** How long, and how often, a fresh read waits for an approval the approval service has not recorded yet. */
export interface FreshReadTiming {
  readonly withinMs: number;
  readonly everyMs: number;
}

/** The event stream can run ahead of the approval service creating the approval from it by a moment. */
export const defaultFreshReadTiming: FreshReadTiming = { withinMs: 2_000, everyMs: 100 };

/** The argument preview of a call, or the code the adapter refused it with. */
export async function previewOf(call: ServiceCaller, operator: Operator, toolCallId: string, signal: AbortSignal): Promise<PreviewState> {
  try {
    const reply = await call({
      scope: operator.scope,
      service: 'adapter',
      operation: adapterOperations.inspectInvocation,
      schemas: adapterCommandSchemas.inspectInvocation,
      body: { toolCallId },
      token: operator.token,
      signal,
    });
    return { ok: true, preview: reply.arguments };
  } catch (error) {
    return { ok: false, code: typedErrorOf(error).code };
  }
}

/**
 * The listed approvals still pending, each with its preview, read a few at a time. Each is read fresh first: the read
 * model the list comes from may still show Pending what was decided a moment ago, and no later event would correct
 * the page. One that cannot be read fresh keeps the list's view.
 */
export async function withPreviews(call: ServiceCaller, operator: Operator, approvals: readonly ApprovalView[], signal: AbortSignal): Promise<PendingItem[]> {
  const items: (PendingItem | undefined)[] = new Array<PendingItem | undefined>(approvals.length);
  let next = 0;
  const worker = async () => {
    while (next < approvals.length) {
      const index = next;
      next += 1;
      const listed = approvals[index] as ApprovalView;
      const approval = await showApproval(call, operator, listed.approvalId, signal).catch(() => listed);
      if (approval.state === 'Pending') items[index] = { approval, preview: await previewOf(call, operator, approval.toolCallId, signal) };
    }
  };
  await Promise.all(Array.from({ length: Math.min(PREVIEW_CONCURRENCY, approvals.length) }, worker));
  return items.filter((item) => item !== undefined);
}

/** The workspace's pending approvals, newest first (the read model's view, which may lag a moment). */
export async function listPending(call: ServiceCaller, operator: Operator, signal: AbortSignal): Promise<ApprovalView[]> {
  const page = await call({
    scope: operator.scope,
    service: 'approval',
    operation: approvalOperations.list,
    schemas: approvalCommandSchemas.list,
    body: { state: 'Pending', limit: LIST_LIMIT },
    token: operator.token,
    signal,
  });
  return pendingOf(page.items);
}

/** One approval as its record stands now. */
export async function showApproval(call: ServiceCaller, operator: Operator, approvalId: string, signal: AbortSignal): Promise<ApprovalView> {
  const reply = await call({ scope: operator.scope, service: 'approval', operation: approvalOperations.show, schemas: approvalCommandSchemas.show, body: { approvalId }, token: operator.token, signal });
  return reply.approval;
}

/** One approval read fresh, retrying NOT_FOUND for a moment: an event may name an approval its service records an instant later. */
export async function showFresh(call: ServiceCaller, operator: Operator, approvalId: string, signal: AbortSignal, timing: FreshReadTiming = defaultFreshReadTiming): Promise<ApprovalView> {
  const deadline = Date.now() + timing.withinMs;
  for (;;) {
    try {
      return await showApproval(call, operator, approvalId, signal);
    } catch (error) {
      if (!hasErrorCode(error) || error.code !== 'NOT_FOUND' || Date.now() + timing.everyMs > deadline) throw error;
    }
    await sleep(timing.everyMs, signal, `waiting for approval ${approvalId}`);
  }
}

/** What a decision came to: the approval as the service left it, or the service's typed error. */
export type DecisionOutcome = { readonly ok: true; readonly approval: ApprovalView } | { readonly ok: false; readonly error: TypedError };

/** Sends the operator's decision to the approval service, which is the authority on it. */
export async function decide(call: ServiceCaller, operator: Operator, approvalId: string, decision: 'approve' | 'reject', reason: string | undefined, signal: AbortSignal): Promise<DecisionOutcome> {
  try {
    const reply =
      decision === 'approve'
        ? await call({
            scope: operator.scope,
            service: 'approval',
            operation: approvalOperations.approve,
            schemas: approvalCommandSchemas.approve,
            body: { approvalId, ...(reason === undefined ? {} : { reason }) },
            token: operator.token,
            signal,
          })
        : await call({
            scope: operator.scope,
            service: 'approval',
            operation: approvalOperations.reject,
            schemas: approvalCommandSchemas.reject,
            body: { approvalId, reason: reason ?? '' },
            token: operator.token,
            signal,
          });
    return { ok: true, approval: reply.approval };
  } catch (error) {
    return { ok: false, error: typedErrorOf(error) };
  }
}

/** The `?decided=` flash: how the approval stands now, or only that it was decided when it cannot be read. */
export async function decidedFlash(call: ServiceCaller, operator: Operator, approvalId: string, signal: AbortSignal): Promise<DecidedFlash> {
  try {
    const approval = await showApproval(call, operator, approvalId, signal);
    const outcome = approval.state === 'Granted' || approval.state === 'Consumed' ? 'granted' : approval.state === 'Rejected' ? 'rejected' : 'decided';
    return { approvalId, outcome };
  } catch {
    return { approvalId, outcome: 'decided' };
  }
}
