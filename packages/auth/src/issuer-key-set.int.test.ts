// Tokens of tenants that trust an OIDC issuer, verified against the issuer's key set served over real HTTP by a
// local node:http server (a stand-in for the issuer's jwks_uri), with keys and tokens made by jose.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hasErrorCode, TrustedKeysSetting, type AgentContextClaims, type OperatorClaims, type TrustedKeys } from '@toolplane/contracts';
import { issueToken } from './issue-token.js';
import { generateSigningKeyPair, type SigningKeyPair } from './signing-keys.js';
import { createTokenVerifier, type TokenVerifierOptions } from './token-verifier.js';

const acmeKey = await generateSigningKeyPair('acme-1', { extractable: true });
const acmeNextKey = await generateSigningKeyPair('acme-2');
const globexKey = await generateSigningKeyPair('globex-1');
const staticKey = await generateSigningKeyPair('initech-1');

/** What the issuer serves at each path (mutable: a rotation swaps it), and how often each path was asked. */
const served = new Map<string, { status: number; body: unknown }>();
const requests = new Map<string, number>();
let server: Server;
let base: string;

function handle(request: IncomingMessage, response: ServerResponse): void {
  const path = request.url ?? '';
  requests.set(path, (requests.get(path) ?? 0) + 1);
  // Never answered: an issuer that hangs (the connection is cut when the server closes).
  if (path === '/hanging/jwks.json') return;
  const answer = served.get(path) ?? { status: 404, body: { error: 'not found' } };
  response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
});

beforeEach(() => {
  served.clear();
  requests.clear();
  served.set('/acme/jwks.json', { status: 200, body: { keys: [acmeKey.publicJwk] } });
  served.set('/globex/jwks.json', { status: 200, body: { keys: [globexKey.publicJwk] } });
});

const issuerOf = (tenant: string) => `${base}/${tenant}`;
/** The setting as an operator writes it: parsed through TrustedKeysSetting, like every service does. */
const trustedKeys = (extra: Record<string, unknown> = {}): TrustedKeys =>
  TrustedKeysSetting.parse(
    JSON.stringify({
      acme: { issuer: issuerOf('acme'), jwksUri: `${base}/acme/jwks.json` },
      globex: { issuer: issuerOf('globex'), jwksUri: `${base}/globex/jwks.json` },
      initech: [staticKey.publicJwk],
      ...extra,
    }),
  );
const verifierOf = (keys: TrustedKeys, options: Partial<TokenVerifierOptions> = {}) => createTokenVerifier(keys, { clockToleranceSeconds: 5, ...options });

const alice: OperatorClaims = { kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:alice@acme.example', roles: ['approver'] };
const expectAlice = { tenant: 'acme', workspace: 'main', kind: 'human' } as const;

/** A token as the issuer mints it: Toolplane's claims, audience `toolplane`, and `iss` (unless given as undefined). */
async function issuerToken(claims: OperatorClaims | AgentContextClaims, key: SigningKeyPair, options: { readonly iss?: string | undefined; readonly kid?: string } = {}): Promise<string> {
  const { principal, ...rest } = claims;
  const jwt = new SignJWT(rest)
    .setProtectedHeader({ alg: 'EdDSA', kid: options.kid ?? key.kid, typ: 'JWT' })
    .setSubject(principal)
    .setAudience('toolplane')
    .setIssuedAt()
    .setExpirationTime('10m');
  const iss = 'iss' in options ? options.iss : issuerOf(claims.tenant);
  if (iss !== undefined) jwt.setIssuer(iss);
  return jwt.sign(key.privateKey);
}

async function refusal(promise: Promise<unknown>, token?: string): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (!hasErrorCode(error)) throw error;
    if (token !== undefined) expect(error.message).not.toContain(token.split('.')[1]);
    return `${error.code}${error.retryable ? ' (retryable)' : ''}: ${error.message}`;
  }
  throw new Error('expected the token to be refused');
}

describe('createTokenVerifier with a tenant trusting an OIDC issuer', () => {
  it('verifies a token signed with the issuer’s key and naming the issuer, fetching the key set once', async () => {
    const verifier = verifierOf(trustedKeys());
    const token = await issuerToken(alice, acmeKey);
    expect(await verifier.verify(token, expectAlice)).toEqual(alice);
    const agent: AgentContextClaims = { kind: 'agent', tenant: 'acme', workspace: 'main', principal: alice.principal, agentId: 'agent-support', agentRevision: '3' };
    expect(await verifier.verify(await issuerToken(agent, acmeKey), { tenant: 'acme', workspace: 'main', kind: 'agent' })).toEqual(agent);
    expect(await verifier.verify(token, expectAlice)).toEqual(alice);
    expect(requests.get('/acme/jwks.json')).toBe(1);
  });

  it('reads an issuer’s token for Toolplane’s claims alone, ignoring the claims the issuer adds of its own', async () => {
    const verifier = verifierOf(trustedKeys());
    const token = await issuerToken({ ...alice, ...{ azp: 'console', scope: 'openid email', email: 'alice@acme.example', sid: 's-1', auth_time: 1 } }, acmeKey);
    expect(await verifier.verify(token, expectAlice)).toEqual(alice);
    // Toolplane's own claims are still checked: a malformed role is refused, extras or not.
    const malformed = await issuerToken({ ...alice, roles: ['has space'], email: 'alice@acme.example' } as OperatorClaims, acmeKey);
    expect(await refusal(verifier.verify(malformed, expectAlice), malformed)).toMatch(/^AUTHENTICATION_FAILED: .*claims are malformed/);
  });

  it('refuses a token of the issuer’s key that names another issuer, or none', async () => {
    const verifier = verifierOf(trustedKeys());
    const elsewhere = await issuerToken(alice, acmeKey, { iss: issuerOf('globex') });
    expect(await refusal(verifier.verify(elsewhere, expectAlice), elsewhere)).toBe('AUTHENTICATION_FAILED: token refused: it was not issued by the issuer its tenant trusts');
    // Trailing slash: the issuer is compared exactly as configured.
    const slashed = await issuerToken(alice, acmeKey, { iss: `${issuerOf('acme')}/` });
    expect(await refusal(verifier.verify(slashed, expectAlice))).toBe('AUTHENTICATION_FAILED: token refused: it was not issued by the issuer its tenant trusts');
    const anonymous = await issuerToken(alice, acmeKey, { iss: undefined });
    expect(await refusal(verifier.verify(anonymous, expectAlice))).toBe('AUTHENTICATION_FAILED: token refused: it was not issued by the issuer its tenant trusts');
  });

  it('refuses an unknown kid, and within the cooldown does not ask the issuer again for it', async () => {
    const verifier = verifierOf(trustedKeys());
    expect(await verifier.verify(await issuerToken(alice, acmeKey), expectAlice)).toEqual(alice);
    const stranger = await generateSigningKeyPair('acme-9');
    for (let i = 0; i < 3; i += 1) {
      const token = await issuerToken(alice, stranger);
      expect(await refusal(verifier.verify(token, expectAlice), token)).toBe(
        `AUTHENTICATION_FAILED: token refused: its signing key (kid and algorithm) is not in the key set of tenant acme's issuer (${base}/acme/jwks.json)`,
      );
    }
    // A known kid with a forged signature is refused by the signature check.
    const forged = await issuerToken(alice, stranger, { kid: 'acme-1' });
    expect(await refusal(verifier.verify(forged, expectAlice))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
    expect(requests.get('/acme/jwks.json')).toBe(1);
  });

  it('refuses another tenant’s token: its issuer’s keys are not this tenant’s', async () => {
    const verifier = verifierOf(trustedKeys());
    const globexToken = await issuerToken({ ...alice, tenant: 'globex' }, globexKey);
    expect(await verifier.verify(globexToken, { ...expectAlice, tenant: 'globex' })).toEqual({ ...alice, tenant: 'globex' });
    expect(await refusal(verifier.verify(globexToken, expectAlice))).toBe(
      `AUTHENTICATION_FAILED: token refused: its signing key (kid and algorithm) is not in the key set of tenant acme's issuer (${base}/acme/jwks.json)`,
    );
    // Signed by acme's issuer and naming it, but claiming the other tenant.
    const claimsGlobex = await issuerToken({ ...alice, tenant: 'globex' }, acmeKey, { iss: issuerOf('acme') });
    expect(await refusal(verifier.verify(claimsGlobex, expectAlice))).toBe('AUTHENTICATION_FAILED: token refused: it is for another tenant');
    expect(await refusal(verifier.verify(claimsGlobex, { ...expectAlice, tenant: 'globex' }))).toMatch(/^AUTHENTICATION_FAILED: token refused: its signing key \(kid and algorithm\) is not in the key set of tenant globex's issuer/);
  });

  it('follows a key rotation: a token with the new kid verifies after a refetch, and the withdrawn key stops verifying', async () => {
    const verifier = verifierOf(trustedKeys(), { issuerKeySets: { cooldownMs: 0 } });
    const before = await issuerToken(alice, acmeKey);
    expect(await verifier.verify(before, expectAlice)).toEqual(alice);
    served.set('/acme/jwks.json', { status: 200, body: { keys: [acmeNextKey.publicJwk] } });
    const after = await issuerToken(alice, acmeNextKey);
    expect(await verifier.verify(after, expectAlice)).toEqual(alice);
    expect(requests.get('/acme/jwks.json')).toBe(2);
    // Remembered as verified before the rotation, yet its key is no longer the issuer's: refused.
    expect(await refusal(verifier.verify(before, expectAlice))).toMatch(/^AUTHENTICATION_FAILED: token refused: its signing key \(kid and algorithm\) is not in the key set/);
    expect(await verifier.verify(after, expectAlice)).toEqual(alice);
  });

  it('checks a remembered token afresh once the key set was fetched again: a key replaced under the same kid no longer verifies it', async () => {
    const verifier = verifierOf(trustedKeys(), { issuerKeySets: { cacheMaxAgeMs: 0 } });
    const token = await issuerToken(alice, acmeKey);
    expect(await verifier.verify(token, expectAlice)).toEqual(alice);
    expect(await verifier.verify(token, expectAlice)).toEqual(alice);
    const replacement = await generateSigningKeyPair('acme-1');
    served.set('/acme/jwks.json', { status: 200, body: { keys: [replacement.publicJwk] } });
    expect(await refusal(verifier.verify(token, expectAlice))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
    expect(requests.get('/acme/jwks.json')).toBe(3);
  });

  it('refuses, retryably, while the key set cannot be fetched: refused connection, non-200 answer, timeout', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const verifier = verifierOf(
      trustedKeys({
        unreachable: { issuer: issuerOf('unreachable'), jwksUri: `http://127.0.0.1:${closedPort}/jwks.json` },
        missing: { issuer: issuerOf('missing'), jwksUri: `${base}/missing/jwks.json` },
        hanging: { issuer: issuerOf('hanging'), jwksUri: `${base}/hanging/jwks.json` },
      }),
      { issuerKeySets: { timeoutMs: 200 } },
    );
    const tokenOf = (tenant: string) => issuerToken({ ...alice, tenant }, acmeKey);
    const token = await tokenOf('unreachable');
    expect(await refusal(verifier.verify(token, { ...expectAlice, tenant: 'unreachable' }), token)).toBe(
      `AUTHENTICATION_FAILED (retryable): token refused: the key set of tenant unreachable's issuer (http://127.0.0.1:${closedPort}/jwks.json) could not be fetched`,
    );
    expect(await refusal(verifier.verify(await tokenOf('missing'), { ...expectAlice, tenant: 'missing' }))).toBe(
      `AUTHENTICATION_FAILED (retryable): token refused: the key set of tenant missing's issuer (${base}/missing/jwks.json) could not be fetched`,
    );
    expect(requests.get('/missing/jwks.json')).toBe(1);
    expect(await refusal(verifier.verify(await tokenOf('hanging'), { ...expectAlice, tenant: 'hanging' }))).toBe(
      `AUTHENTICATION_FAILED (retryable): token refused: the key set of tenant hanging's issuer (${base}/hanging/jwks.json) did not answer within 200 ms`,
    );
    // Once the issuer answers, the same verifier fetches again rather than remembering the failure.
    served.set('/missing/jwks.json', { status: 200, body: { keys: [acmeKey.publicJwk] } });
    expect(await verifier.verify(await issuerToken({ ...alice, tenant: 'missing' }, acmeKey), { ...expectAlice, tenant: 'missing' })).toEqual({ ...alice, tenant: 'missing' });
  });

  it('refuses a key set that holds private key material', async () => {
    const privateJwk: JWK = { ...(await exportJWK(acmeKey.privateKey)), kid: 'acme-1', alg: 'EdDSA', use: 'sig' };
    served.set('/acme/jwks.json', { status: 200, body: { keys: [privateJwk] } });
    const verifier = verifierOf(trustedKeys());
    expect(await refusal(verifier.verify(await issuerToken(alice, acmeKey), expectAlice))).toBe(
      `AUTHENTICATION_FAILED: token refused: the key set of tenant acme's issuer (${base}/acme/jwks.json) is not a valid JSON Web Key Set`,
    );
  });

  it('leaves a tenant with static keys as it was: no fetch, no issuer required', async () => {
    const verifier = verifierOf(trustedKeys());
    const initech = { ...alice, tenant: 'initech' };
    const token = await issueToken(initech, staticKey.privateKey, { kid: 'initech-1', expiresIn: 60 });
    expect(await verifier.verify(token, { ...expectAlice, tenant: 'initech' })).toEqual(initech);
    expect(await refusal(verifier.verify(await issuerToken(initech, acmeKey), { ...expectAlice, tenant: 'initech' }))).toBe(
      'AUTHENTICATION_FAILED: token refused: its signing key is not trusted for tenant initech',
    );
    expect([...requests.keys()]).toEqual([]);
  });
});
