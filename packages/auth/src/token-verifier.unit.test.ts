import { base64url, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { hasErrorCode, type AgentContextClaims, type OperatorClaims, type TrustedKeys, type TrustedPublicJwk } from '@toolplane/contracts';
import { issueToken } from './issue-token.js';
import { generateSigningKeyPair, type SigningKeyPair } from './signing-keys.js';
import { createTokenVerifier } from './token-verifier.js';

const now = new Date('2026-11-29T12:00:00.000Z');
const clock = () => now;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

const acme = await generateSigningKeyPair('acme-1');
const acmeNext = await generateSigningKeyPair('acme-2');
const globex = await generateSigningKeyPair('globex-1');
const keys: TrustedKeys = { acme: [acme.publicJwk, acmeNext.publicJwk], globex: [globex.publicJwk] };
const verifier = createTokenVerifier(keys, { clock, clockToleranceSeconds: 30 });

const alice: OperatorClaims = { kind: 'human', tenant: 'acme', workspaces: ['main', 'ops'], principal: 'user:alice@acme.example', roles: ['approver'] };
const agent: AgentContextClaims = { kind: 'agent', tenant: 'acme', workspace: 'main', principal: 'user:bob@acme.example', agentId: 'agent-support', agentRevision: '7' };
const expectHuman = { tenant: 'acme', workspace: 'main', kind: 'human' } as const;

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected the token to be refused');
}

function encodeSegment(value: object): string {
  return base64url.encode(JSON.stringify(value));
}

const validPayload = { kind: 'human', tenant: 'acme', workspaces: ['main'], roles: ['approver'], sub: 'user:alice@acme.example', aud: 'toolplane', iat: seconds(now), exp: seconds(now) + 600 };

describe('issueToken and createTokenVerifier', () => {
  it('round-trips an operator token: the verified claims are the issued ones', async () => {
    const token = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: '15m', now });
    expect(await verifier.verify(token, expectHuman)).toEqual(alice);
    expect(await verifier.verify(token, { ...expectHuman, workspace: 'ops' })).toEqual(alice);
  });

  it('round-trips an agent context token, signed with the tenant’s second (rotated-in) key', async () => {
    const token = await issueToken(agent, acmeNext.privateKey, { kid: 'acme-2', expiresIn: 60, now });
    expect(await verifier.verify(token, { tenant: 'acme', workspace: 'main', kind: 'agent' })).toEqual(agent);
  });

  it('accepts a P-256 (ES256) key as well', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'p256' } as TrustedPublicJwk;
    const token = await issueToken(alice, privateKey, { kid: 'p256', expiresIn: 60, now, alg: 'ES256' });
    expect(await createTokenVerifier({ acme: [jwk] }, { clock, clockToleranceSeconds: 30 }).verify(token, expectHuman)).toEqual(alice);
  });

  it('refuses an unsigned token (alg none)', async () => {
    const token = `${encodeSegment({ alg: 'none', kid: 'acme-1' })}.${encodeSegment(validPayload)}.`;
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: unsigned tokens are never accepted');
  });

  it('refuses a token without any alg', async () => {
    const token = `${encodeSegment({ kid: 'acme-1' })}.${encodeSegment(validPayload)}.`;
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: unsigned tokens are never accepted');
  });

  it('refuses an HMAC token, also one keyed with the public key’s bytes (algorithm confusion)', async () => {
    const secret = base64url.decode(acme.publicJwk.x);
    const token = await new SignJWT({ ...validPayload }).setProtectedHeader({ alg: 'HS256', kid: 'acme-1' }).sign(secret);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: algorithm "HS256" is not accepted');
  });

  it('refuses an asymmetric algorithm that is not on the list (RS256)', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ ...validPayload }).setProtectedHeader({ alg: 'RS256', kid: 'acme-1' }).sign(privateKey);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: algorithm "RS256" is not accepted');
  });

  it('refuses an algorithm that does not fit the named key (ES256 header on an Ed25519 kid)', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({ ...validPayload }).setProtectedHeader({ alg: 'ES256', kid: 'acme-1' }).sign(privateKey);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: algorithm ES256 does not fit its signing key');
  });

  it('refuses an expired token, and accepts it within the clock tolerance', async () => {
    const token = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now: new Date(now.getTime() - 3_600_000) });
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it has expired');
    const justExpired = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now: new Date(now.getTime() - 70_000) });
    expect(await verifier.verify(justExpired, expectHuman)).toEqual(alice);
  });

  it('forgives exactly the configured clock tolerance: 10 s past expiry is refused with 0, accepted with 30', async () => {
    const tenSecondsPast = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now: new Date(now.getTime() - 70_000) });
    const strict = createTokenVerifier(keys, { clock, clockToleranceSeconds: 0 });
    expect(await refusal(strict.verify(tenSecondsPast, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it has expired');
    const lenient = createTokenVerifier(keys, { clock, clockToleranceSeconds: 30 });
    expect(await lenient.verify(tenSecondsPast, expectHuman)).toEqual(alice);
  });

  it('checks a token whose signature it verified before on every use: its expiry, workspace and kind', async () => {
    let at = now;
    const moving = createTokenVerifier(keys, { clock: () => at, clockToleranceSeconds: 0 });
    const token = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await moving.verify(token, expectHuman)).toEqual(alice);
    expect(await moving.verify(token, expectHuman)).toEqual(alice);
    expect(await refusal(moving.verify(token, { ...expectHuman, workspace: 'finance' }))).toBe('AUTHENTICATION_FAILED: token refused: it does not cover workspace finance');
    expect(await refusal(moving.verify(token, { tenant: 'acme', workspace: 'main', kind: 'agent' }))).toBe('AUTHENTICATION_FAILED: token refused: expected an agent context token');
    // Another tenant's keys are consulted afresh: the remembered signature was checked against acme's.
    expect(await refusal(moving.verify(token, { ...expectHuman, tenant: 'globex' }))).toBe('AUTHENTICATION_FAILED: token refused: its signing key is not trusted for tenant globex');
    at = new Date(now.getTime() + 61_000);
    expect(await refusal(moving.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it has expired');
    at = now;
    // Tampering makes another string: never the remembered one.
    const [header, , signature] = token.split('.');
    const widened = `${header}.${encodeSegment({ ...validPayload, roles: ['approver', 'policy-admin'] })}.${signature}`;
    expect(await refusal(moving.verify(widened, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
  });

  it('refuses a remembered token before its nbf, within the tolerance only', async () => {
    let at = now;
    const moving = createTokenVerifier(keys, { clock: () => at, clockToleranceSeconds: 0 });
    const early = await new SignJWT({ ...validPayload, nbf: seconds(now) })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1' })
      .sign(acme.privateKey);
    expect(await moving.verify(early, expectHuman)).toMatchObject({ principal: alice.principal });
    at = new Date(now.getTime() - 5_000);
    expect(await refusal(moving.verify(early, expectHuman))).toMatch(/it is not valid yet|issued in the future/);
  });

  it('refuses a tolerance that is negative or not whole seconds', () => {
    expect(() => createTokenVerifier(keys, { clock, clockToleranceSeconds: -1 })).toThrow(/^clockToleranceSeconds must be a whole number of seconds, 0 or more, not -1$/);
    expect(() => createTokenVerifier(keys, { clock, clockToleranceSeconds: 1.5 })).toThrow(/^clockToleranceSeconds must be a whole number/);
  });

  it('refuses a token issued in the future', async () => {
    const token = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: '1h', now: new Date(now.getTime() + 600_000) });
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it was issued in the future');
  });

  it('refuses a token without exp', async () => {
    const { exp: _exp, ...noExpiry } = validPayload;
    const token = await new SignJWT(noExpiry).setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1' }).sign(acme.privateKey);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: its exp claim is missing or invalid');
  });

  it('refuses a forged signature: another key under a trusted kid', async () => {
    const forger = await generateSigningKeyPair('acme-1');
    const token = await issueToken(alice, forger.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
  });

  it('refuses a tampered payload (roles widened after signing)', async () => {
    const token = await issueToken({ ...alice, roles: [] }, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    const [header, , signature] = token.split('.');
    const forged = `${header}.${encodeSegment({ ...validPayload, roles: ['approver', 'admin'] })}.${signature}`;
    expect(await refusal(verifier.verify(forged, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: the signature does not verify');
  });

  it('refuses an unknown kid and a token that names no kid', async () => {
    const unknown = await issueToken(alice, acme.privateKey, { kid: 'acme-9', expiresIn: 60, now });
    expect(await refusal(verifier.verify(unknown, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: its signing key is not trusted for tenant acme');
    const noKid = await new SignJWT({ ...validPayload }).setProtectedHeader({ alg: 'EdDSA' }).sign(acme.privateKey);
    expect(await refusal(verifier.verify(noKid, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it names no signing key (kid)');
  });

  it('refuses another tenant’s token: its key is not trusted for this tenant', async () => {
    const token = await issueToken({ ...alice, tenant: 'globex' }, globex.privateKey, { kid: 'globex-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: its signing key is not trusted for tenant acme');
    expect(await verifier.verify(token, { ...expectHuman, tenant: 'globex' })).toEqual({ ...alice, tenant: 'globex' });
  });

  it('refuses a token whose tenant claim names another tenant, even signed with this tenant’s key', async () => {
    const token = await issueToken({ ...alice, tenant: 'globex' }, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it is for another tenant');
  });

  it('refuses a tenant without trusted keys', async () => {
    const token = await issueToken({ ...alice, tenant: 'initech' }, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(token, { ...expectHuman, tenant: 'initech' }))).toBe('AUTHENTICATION_FAILED: token refused: no keys are trusted for tenant initech');
    // An inherited property name is not a tenant.
    expect(await refusal(verifier.verify(token, { ...expectHuman, tenant: 'constructor' }))).toBe('AUTHENTICATION_FAILED: token refused: no keys are trusted for tenant constructor');
  });

  it('refuses a token for another audience', async () => {
    const token = await new SignJWT({ ...validPayload, aud: 'elsewhere' }).setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1' }).sign(acme.privateKey);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: it is not meant for toolplane');
  });

  it('refuses a workspace the token does not cover', async () => {
    const token = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(token, { ...expectHuman, workspace: 'finance' }))).toBe('AUTHENTICATION_FAILED: token refused: it does not cover workspace finance');
    const agentToken = await issueToken(agent, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(agentToken, { tenant: 'acme', workspace: 'ops', kind: 'agent' }))).toBe(
      'AUTHENTICATION_FAILED: token refused: it does not cover workspace ops',
    );
  });

  it('refuses the wrong kind of holder: an agent token where an operator is expected, and back', async () => {
    const agentToken = await issueToken(agent, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(agentToken, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: expected an operator token');
    const operatorToken = await issueToken(alice, acme.privateKey, { kid: 'acme-1', expiresIn: 60, now });
    expect(await refusal(verifier.verify(operatorToken, { tenant: 'acme', workspace: 'main', kind: 'agent' }))).toBe('AUTHENTICATION_FAILED: token refused: expected an agent context token');
  });

  it('refuses signed but malformed claims', async () => {
    const token = await new SignJWT({ ...validPayload, workspaces: [] }).setProtectedHeader({ alg: 'EdDSA', kid: 'acme-1' }).sign(acme.privateKey);
    expect(await refusal(verifier.verify(token, expectHuman))).toBe('AUTHENTICATION_FAILED: token refused: its claims are malformed');
  });

  it('refuses garbage without quoting it', async () => {
    for (const garbage of ['', 'not-a-token', 'a.b.c', `${'x'.repeat(9000)}`]) {
      const message = await refusal(verifier.verify(garbage, expectHuman));
      expect(message).toMatch(/^AUTHENTICATION_FAILED: token refused: (it is malformed|it is empty or too long)$/);
    }
  });
});

describe('issueToken', () => {
  let key: SigningKeyPair;
  it('refuses malformed claims, lifetimes, kids and algorithms with INVALID_ARGUMENT', async () => {
    key = await generateSigningKeyPair('k');
    const sign = (claims: unknown, options: Partial<Parameters<typeof issueToken>[2]> = {}) =>
      refusal(issueToken(claims as OperatorClaims, key.privateKey, { kid: 'k', expiresIn: 60, now, ...options }));
    expect(await sign({ ...alice, tenant: 'a.b' })).toMatch(/^INVALID_ARGUMENT: token claims are malformed/);
    expect(await sign({ ...alice, extra: true })).toMatch(/^INVALID_ARGUMENT: token claims are malformed/);
    expect(await sign(alice, { expiresIn: 0 })).toMatch(/^INVALID_ARGUMENT: expiresIn must be/);
    expect(await sign(alice, { expiresIn: '10y' as never })).toMatch(/^INVALID_ARGUMENT: expiresIn must be/);
    expect(await sign(alice, { kid: 'has space' })).toBe('INVALID_ARGUMENT: kid must be 1-128 printable characters');
    expect(await sign(alice, { alg: 'HS256' as never })).toMatch(/^INVALID_ARGUMENT: algorithm HS256 is not accepted/);
  });

  it('signs with a private JWK too', async () => {
    const extractable = await generateSigningKeyPair('jwk', { extractable: true });
    const token = await issueToken(alice, await exportJWK(extractable.privateKey), { kid: 'jwk', expiresIn: 60, now });
    expect(await createTokenVerifier({ acme: [extractable.publicJwk] }, { clock, clockToleranceSeconds: 30 }).verify(token, expectHuman)).toEqual(alice);
  });
});
