// A token given for one request replaces the client's for that request only: an entry serving many agents over one
// client (the MCP endpoint) sends each agent's own token. The connection is a stand-in that records what was sent.
import { describe, expect, it } from 'vitest';
import type { Messaging } from '@toolplane/messaging';
import { createToolplaneClient } from './toolplane-client.js';

const scope = { tenant: 'acme', workspace: 'main' };
const clientToken = 'client.token.sig';

/** A connection that answers every request with an empty tool set and remembers each request's context token. */
function recordingMessaging(): { messaging: Messaging; tokens: string[] } {
  const tokens: string[] = [];
  const connection = {
    status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => undefined) }), stop: () => undefined }),
    request: (_subject: string, payload: string) => {
      tokens.push((JSON.parse(payload) as { contextToken: string }).contextToken);
      return Promise.resolve({ data: new TextEncoder().encode(JSON.stringify({ ok: true, data: { tools: [] } })) });
    },
  };
  return { messaging: { connection } as unknown as Messaging, tokens };
}

describe('a per-request context token', () => {
  it('goes with that request, and the client’s token with every other', async () => {
    const { messaging, tokens } = recordingMessaging();
    const client = await createToolplaneClient({ scope, contextToken: clientToken, messaging });
    await client.effectiveTools({}, { contextToken: 'agent-a.token.sig' });
    await client.effectiveTools();
    await client.effectiveTools({}, { contextToken: 'agent-b.token.sig' });
    expect(tokens).toEqual(['agent-a.token.sig', clientToken, 'agent-b.token.sig']);
    await client.close();
  });

  it('is not asked of the client’s token source when given', async () => {
    const { messaging, tokens } = recordingMessaging();
    let asked = 0;
    const client = await createToolplaneClient({
      scope,
      contextToken: () => {
        asked += 1;
        return clientToken;
      },
      messaging,
    });
    await client.effectiveTools({}, { contextToken: 'agent-a.token.sig' });
    expect(asked).toBe(0);
    expect(tokens).toEqual(['agent-a.token.sig']);
    await client.close();
  });
});
