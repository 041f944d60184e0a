// A workspace's approval changes from the lifecycle event stream, through the agent-runtime SDK's event follower
// (an ordered consumer filtered to the approval event types). Only the approval id is taken from an event: the page
// reads the approval itself fresh, as the operator.
import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { ToolplaneError, type EventType, type Scope } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import type { WatchApprovals } from '../app/approvals-hub.js';

/** Every event that creates an approval or changes its state. */
export const APPROVAL_EVENT_TYPES = ['ApprovalRequested', 'ApprovalGranted', 'ApprovalRejected', 'ApprovalExpired', 'ApprovalConsumed', 'ApprovalVoided'] as const satisfies readonly EventType[];

/** One SDK client per workspace over the console's one connection; the console never invokes, so it has no token. */
export function workspaceClients(messaging: Messaging): { readonly clientFor: (scope: Scope) => Promise<ToolplaneClient>; readonly close: () => Promise<void> } {
  const clients = new Map<string, Promise<ToolplaneClient>>();
  const noToken = () => {
    throw new ToolplaneError('AUTHENTICATION_FAILED', 'the console follows events only; it invokes nothing');
  };
  return {
    clientFor: (scope) => {
      const key = `${scope.tenant}/${scope.workspace}`;
      let client = clients.get(key);
      if (client === undefined) {
        client = createToolplaneClient({ scope, contextToken: noToken, messaging });
        clients.set(key, client);
      }
      return client;
    },
    close: async () => {
      await Promise.all([...clients.values()].map(async (client) => (await client).close()));
    },
  };
}

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
