// A real OAuth 2.0 token endpoint for tests: the client credentials grant (RFC 6749 §4.4) over node:http, with
// client_secret_basic or client_secret_post, counting the requests of each client.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A client the endpoint knows, and the lifetime of the tokens it issues to it (none: no expires_in). */
export interface TokenClient {
  readonly secret: string;
  readonly expiresIn?: number;
}

/** A running token endpoint. */
export interface TokenEndpoint {
  readonly url: string;
  /** Requests made for a client (any outcome). */
  requests(clientId: string): number;
  /** Every access token issued, in order. */
  readonly issued: string[];
  /** Changes a client's secret or token lifetime (rotation tests). */
  setClient(clientId: string, client: TokenClient): void;
  close(): Promise<void>;
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** Starts the endpoint on a free loopback port; tokens are `${tokenPrefix}-${n}-${random}`. */
export async function startTokenEndpoint(clients: Record<string, TokenClient>, tokenPrefix: string): Promise<TokenEndpoint> {
  const known = new Map(Object.entries(clients));
  const counts = new Map<string, number>();
  const issued: string[] = [];

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/token') return answer(res, 404, { error: 'not_found' });
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    let clientId = form.get('client_id') ?? '';
    let clientSecret = form.get('client_secret') ?? '';
    const authorization = req.headers.authorization ?? '';
    if (authorization.startsWith('Basic ')) {
      const decoded = Buffer.from(authorization.slice(6), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      clientId = formDecode(decoded.slice(0, colon));
      clientSecret = formDecode(decoded.slice(colon + 1));
    }
    counts.set(clientId, (counts.get(clientId) ?? 0) + 1);
    const client = known.get(clientId);
    if (client === undefined || client.secret !== clientSecret) return answer(res, 401, { error: 'invalid_client' });
    if (form.get('grant_type') !== 'client_credentials') return answer(res, 400, { error: 'unsupported_grant_type' });
    const token = `${tokenPrefix}-${issued.length + 1}-${randomBytes(6).toString('hex')}`;
    issued.push(token);
    const scope = form.get('scope');
    return answer(res, 200, {
      access_token: token,
      token_type: 'Bearer',
      ...(client.expiresIn === undefined ? {} : { expires_in: client.expiresIn }),
      ...(scope === null ? {} : { scope }),
    });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => answer(res, 500, { error: 'server_error' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/token`,
    requests: (clientId) => counts.get(clientId) ?? 0,
    issued,
    setClient: (clientId, client) => void known.set(clientId, client),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
