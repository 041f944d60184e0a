import { describe, expect, it } from 'vitest';
import type { TokenClaims } from '@toolplane/contracts';
import { decodeTokenClaims, tokenExpiresAtMs } from './decode-token.js';
import { issueToken } from './issue-token.js';
import { generateSigningKeyPair } from './signing-keys.js';

describe('decodeTokenClaims', () => {
  it('reads the claims of operator and agent tokens without verifying them, even expired ones', async () => {
    const key = await generateSigningKeyPair('k1');
    const operator: TokenClaims = { kind: 'human', tenant: 'acme', workspaces: ['main', 'ops'], principal: 'user:ada@acme.example', roles: ['approver'] };
    const agent: TokenClaims = { kind: 'agent', tenant: 'acme', workspace: 'main', principal: 'user:bob@acme.example', agentId: 'support', agentRevision: '3' };
    const expired = { kid: 'k1', expiresIn: 60, now: new Date('2020-01-01T00:00:00Z') };
    expect(decodeTokenClaims(await issueToken(operator, key.privateKey, expired))).toEqual(operator);
    expect(decodeTokenClaims(await issueToken(agent, key.privateKey, expired))).toEqual(agent);
  });

  it('reads nothing from what is not a Toolplane token', () => {
    const jws = (claims: unknown) => `${Buffer.from('{"alg":"EdDSA"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
    expect(decodeTokenClaims('opaque')).toBeUndefined();
    expect(decodeTokenClaims('a.!!!.c')).toBeUndefined();
    expect(decodeTokenClaims(jws([1, 2]))).toBeUndefined();
    expect(decodeTokenClaims(jws({ sub: 'user:x', tenant: 'acme' }))).toBeUndefined();
    expect(decodeTokenClaims(jws({ sub: 'user:x', kind: 'human', tenant: 'acme', workspaces: [], roles: [] }))).toBeUndefined();
  });
});

describe('tokenExpiresAtMs', () => {
  const jwt = (payload: unknown) => `e30.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`;

  it('is the exp in milliseconds, or undefined when the token states none or is no JWT', () => {
    expect(tokenExpiresAtMs(jwt({ exp: 1_800_000_000 }))).toBe(1_800_000_000_000);
    expect(tokenExpiresAtMs(jwt({ sub: 'x' }))).toBeUndefined();
    expect(tokenExpiresAtMs(jwt({ exp: '1800000000' }))).toBeUndefined();
    expect(tokenExpiresAtMs('opaque')).toBeUndefined();
    expect(tokenExpiresAtMs('a.!!!.c')).toBeUndefined();
  });
});
