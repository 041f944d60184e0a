// A workspace's approval changes from the lifecycle event stream, through the agent-runtime SDK's event follower
// (an ordered consumer filtered to the approval event types). Only the approval id is taken from an event: the page
// reads the approval itself fresh, as the operator.
import type { ToolplaneClient } from '@toolplane/client';
import type { EventType, Scope } from '@toolplane/contracts';
import type { WatchApprovals } from '../app/approvals-hub.js';

/** Every event that creates an approval or changes its state. */
export const APPROVAL_EVENT_TYPES = ['ApprovalRequested', 'ApprovalGranted', 'ApprovalRejected', 'ApprovalExpired', 'ApprovalConsumed', 'ApprovalVoided'] as const satisfies readonly EventType[];

/** Follows approval events of a workspace from the moment it resolves. */
export function approvalEventWatch(clientFor: (scope: Scope) => Promise<ToolplaneClient>): WatchApprovals {
  return async (scope, handlers) => {
    const client = await clientFor(scope);
    const controller = new AbortController();
    const events = client.events({ types: APPROVAL_EVENT_TYPES, signal: controller.signal });
    await events.ready();
    const done = (async () => {
      try {
        for await (const event of events) {
          if ('approvalId' in event.data && typeof event.data.approvalId === 'string') handlers.onChange(event.data.approvalId);
        }
      } catch (error) {
        handlers.onProblem(error);
      } finally {
        if (!controller.signal.aborted) handlers.onEnd();
      }
    })();
    return {
      close: async () => {
        controller.abort();
        await events.close();
        await done;
      },
    };
  };
}
