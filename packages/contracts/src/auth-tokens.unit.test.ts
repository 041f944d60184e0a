import { describe, expect, it } from 'vitest';
import { OperatorClaims, TokenClaims, TrustedKeysSetting } from './auth-tokens.js';

const x = 'A'.repeat(43);
const okp = { kty: 'OKP', crv: 'Ed25519', x, kid: 'acme-1', alg: 'EdDSA', use: 'sig' };

function problem(text: string | undefined): string {
  const result = TrustedKeysSetting.safeParse(text);
  if (result.success) throw new Error('expected the setting to be refused');
  expect(result.error.issues).toHaveLength(1);
  expect(result.error.issues[0]?.path).toEqual([]);
  return result.error.issues[0]?.message ?? '';
}

describe('TrustedKeysSetting', () => {
  it('parses per-tenant public keys from JSON text', () => {
    const ec = { kty: 'EC', crv: 'P-256', x, y: x, kid: 'p256' };
    expect(TrustedKeysSetting.parse(JSON.stringify({ acme: [okp, ec], globex: [{ ...okp, kid: 'g' }] }))).toEqual({ acme: [okp, ec], globex: [{ ...okp, kid: 'g' }] });
  });

  it('fails with one pathless issue that names the problem', () => {
    expect(problem(undefined)).toMatch(/^is missing/);
    expect(problem('{nope')).toMatch(/^is not valid JSON/);
    expect(problem(JSON.stringify({ acme: [{ ...okp, d: x }] }))).toBe('holds private or symmetric key material at acme[0]: configure public asymmetric keys only');
    expect(problem(JSON.stringify({ acme: [{ kty: 'oct', k: x, kid: 'hmac' }] }))).toBe('holds private or symmetric key material at acme[0]: configure public asymmetric keys only');
    expect(problem(JSON.stringify({ acme: [okp, okp] }))).toBe('is not a valid key set: acme: kid "acme-1" appears twice');
    expect(problem(JSON.stringify({ acme: [{ ...okp, kid: undefined }] }))).toMatch(/^is not a valid key set: acme\[0\]\.kid: /);
    expect(problem(JSON.stringify({ acme: [{ ...okp, alg: 'HS256' }] }))).toMatch(/^is not a valid key set: acme\[0\]\.alg: /);
    expect(problem(JSON.stringify({ acme: [] }))).toMatch(/^is not a valid key set: acme: /);
    expect(problem(JSON.stringify({ 'bad.tenant': [okp] }))).toMatch(/^is not a valid key set: /);
    expect(problem(JSON.stringify([okp]))).toMatch(/^is not a valid key set: the document: /);
  });
});

describe('TokenClaims', () => {
  it('tells agent and operator claims apart by kind, and refuses unknown claims', () => {
    const operator = { kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:alice', roles: ['approver'] } as const;
    expect(TokenClaims.parse(operator)).toEqual(operator);
    expect(OperatorClaims.safeParse({ ...operator, workspaces: [] }).success).toBe(false);
    expect(TokenClaims.safeParse({ ...operator, admin: true }).success).toBe(false);
    expect(TokenClaims.safeParse({ kind: 'agent', tenant: 'acme', workspace: 'main', principal: 'user:bob', agentId: 'a1', agentRevision: '3' }).success).toBe(true);
  });
});
