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

describe('TrustedKeysSetting: an OIDC issuer', () => {
  const issuer = { issuer: 'https://login.acme.example', jwksUri: 'https://login.acme.example/.well-known/jwks.json' };

  it('parses an issuer beside static keys, keeping the issuer exactly as written', () => {
    const local = { issuer: 'http://127.0.0.1:8080/realms/acme/', jwksUri: 'http://localhost:8080/realms/acme/certs?v=2' };
    const setting = { acme: issuer, globex: [okp], initech: local };
    expect(TrustedKeysSetting.parse(JSON.stringify(setting))).toEqual(setting);
  });

  it('refuses an issuer or key set URL that is not https, except on this machine', () => {
    expect(problem(JSON.stringify({ acme: { ...issuer, issuer: 'http://login.acme.example' } }))).toBe(
      'is not a valid key set: acme.issuer: issuer must use https (http only on 127.0.0.1 or localhost)',
    );
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: 'http://10.0.0.1/jwks.json' } }))).toBe(
      'is not a valid key set: acme.jwksUri: jwksUri must use https (http only on 127.0.0.1 or localhost)',
    );
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: 'ftp://login.acme.example/jwks.json' } }))).toMatch(/^is not a valid key set: acme\.jwksUri: jwksUri must use https/);
    // A host that merely starts with a loopback name is not this machine.
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: 'http://localhost.evil.example/jwks.json' } }))).toMatch(/^is not a valid key set: acme\.jwksUri: jwksUri must use https/);
  });

  it('refuses relative URLs, credentials, fragments and an issuer with a query', () => {
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: '/jwks.json' } }))).toBe('is not a valid key set: acme.jwksUri: jwksUri must be an absolute URL');
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: 'https://user:pw@login.acme.example/jwks.json' } }))).toBe(
      'is not a valid key set: acme.jwksUri: jwksUri must not carry credentials',
    );
    expect(problem(JSON.stringify({ acme: { ...issuer, jwksUri: 'https://login.acme.example/jwks.json#' } }))).toBe('is not a valid key set: acme.jwksUri: jwksUri must have no fragment');
    expect(problem(JSON.stringify({ acme: { ...issuer, issuer: 'https://login.acme.example?tenant=acme' } }))).toBe('is not a valid key set: acme.issuer: issuer must have no query');
  });

  it('refuses a missing or unknown field, and an entry of neither form', () => {
    expect(problem(JSON.stringify({ acme: { issuer: issuer.issuer } }))).toMatch(/^is not a valid key set: acme\.jwksUri: /);
    expect(problem(JSON.stringify({ acme: { ...issuer, audience: 'other' } }))).toMatch(/^is not a valid key set: acme: .*audience/);
    expect(problem(JSON.stringify({ acme: 'https://login.acme.example' }))).toBe(
      'is not a valid key set: acme: expected an array of public JWKs or {"issuer": "https://…", "jwksUri": "https://…"}',
    );
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
