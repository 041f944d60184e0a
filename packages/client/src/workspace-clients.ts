import { ToolplaneError, type Scope } from '@toolplane/contracts';
import type { Messaging } from '@toolplane/messaging';
import { createToolplaneClient, type ToolplaneClient } from './toolplane-client.js';

/** One SDK client per workspace over a service's one connection, made on first use. */
export interface WorkspaceClients {
  readonly clientFor: (scope: Scope) => Promise<ToolplaneClient>;
  /** Closes every client made (not the connection). */
  readonly close: () => Promise<void>;
}

/**
 * The clients of a service that acts for many workspaces' callers over one connection (the MCP endpoint, the
 * console): each request it sends brings its caller's own token, so the clients hold none, and one that asks for its
 * own token fails AUTHENTICATION_FAILED with `noTokenMessage`.
 */
export function workspaceClients(messaging: Messaging, noTokenMessage: string): WorkspaceClients {
  const clients = new Map<string, Promise<ToolplaneClient>>();
  const noToken = () => {
    throw new ToolplaneError('AUTHENTICATION_FAILED', noTokenMessage);
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
