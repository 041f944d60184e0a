import { describe, expect, it } from 'vitest';
import { createTokenVerifier, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { authenticate, bearerOf } from './authenticate.js';

const agent = { kind: 'agent', principal: 'user:alice@example.com', agentId: 'agent-1', agentRevision: '1' } as const;

async function setup() {
  const key = await generateSigningKeyPair('acme-agents-1');
  const other = await generateSigningKeyPair('acme-agents-2');
  const verifier = createTokenVerifier({ acme: [key.publicJwk] }, { clockToleranceSeconds: 0 });
  const token = (workspace: string, signer = key) => issueToken({ ...agent, tenant: 'acme', workspace }, signer.privateKey, { kid: signer.kid, expiresIn: '5m' });
  return { verifier, token, other };
}

describe('authenticating a request', () => {
  it('accepts an agent token of the route’s workspace', async () => {
    const { verifier, token } = await setup();
    const outcome = await authenticate(verifier, `Bearer ${await token('main')}`, { tenant: 'acme', workspace: 'main' });
    expect(outcome).toMatchObject({ ok: true, caller: { scope: { tenant: 'acme', workspace: 'main' }, claims: { agentId: 'agent-1', principal: 'user:alice@example.com' } } });
  });

  it('asks for a token when none is given (401 without an error code)', async () => {
    const { verifier } = await setup();
    expect(await authenticate(verifier, undefined, { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 401, error: undefined });
    expect(await authenticate(verifier, 'Basic abc', { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 401, error: 'invalid_request' });
  });

  it('refuses a forged token (401 invalid_token)', async () => {
    const { verifier, token, other } = await setup();
    // Signed by a key the tenant does not trust, under the trusted key's kid.
    const forged = await issueToken({ ...agent, tenant: 'acme', workspace: 'main' }, other.privateKey, { kid: 'acme-agents-1', expiresIn: '5m' });
    expect(await authenticate(verifier, `Bearer ${forged}`, { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 401, error: 'invalid_token' });
    expect(await authenticate(verifier, `Bearer ${(await token('main')).slice(0, -4)}AAAA`, { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 401 });
  });

  it('refuses a genuine token of another workspace with 403, a forged one of another workspace with 401', async () => {
    const { verifier, token, other } = await setup();
    expect(await authenticate(verifier, `Bearer ${await token('other')}`, { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 403, error: 'insufficient_scope' });
    const forged = await issueToken({ ...agent, tenant: 'acme', workspace: 'other' }, other.privateKey, { kid: 'acme-agents-1', expiresIn: '5m' });
    expect(await authenticate(verifier, `Bearer ${forged}`, { tenant: 'acme', workspace: 'main' })).toMatchObject({ ok: false, status: 401, error: 'invalid_token' });
  });

  it('reads only `Bearer <token>` headers', () => {
    expect(bearerOf(undefined)).toBeUndefined();
    expect(bearerOf('Bearer a.b.c')).toBe('a.b.c');
    expect(bearerOf('bearer a.b.c')).toBe('a.b.c');
    expect(bearerOf('Bearer a b')).toBeNull();
  });
});
