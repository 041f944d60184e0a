import { describe, expect, it } from 'vitest';
import { POLICY_ADMIN_ROLE, hasErrorCode, type AgentContextClaims, type OperatorClaims } from '@toolplane/contracts';
import { bearerHeaders } from './bearer.js';
import { issueToken } from './issue-token.js';
import { generateSigningKeyPair } from './signing-keys.js';
import { createTokenVerifier } from './token-verifier.js';
import { verifyOperator } from './verify-operator.js';

const now = new Date('2026-11-29T12:00:00.000Z');
const acme = await generateSigningKeyPair('acme-1');
const forger = await generateSigningKeyPair('acme-1');
const verifier = createTokenVerifier({ acme: [acme.publicJwk] }, { clock: () => now, clockToleranceSeconds: 30 });
const scope = { tenant: 'acme', workspace: 'main' };

const reader: OperatorClaims = { kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:rita@acme.example', roles: ['approver'] };
const admin: OperatorClaims = { ...reader, principal: 'user:ada@acme.example', roles: ['approver', POLICY_ADMIN_ROLE] };
const agent: AgentContextClaims = { kind: 'agent', tenant: 'acme', workspace: 'main', principal: 'user:bob@acme.example', agentId: 'agent-support', agentRevision: '1' };

const tokenOf = (claims: OperatorClaims | AgentContextClaims, key = acme.privateKey) => issueToken(claims, key, { kid: 'acme-1', expiresIn: '5m', now });

/** The headers a responder sees for a request sent with bearerHeaders(token). */
const received = (token: string) => Object.fromEntries(Object.entries(bearerHeaders(token)).map(([name, value]) => [name, [value]]));

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('verifyOperator', () => {
  it('returns the claims of a valid operator token of the scope, with or without a role requirement', async () => {
    expect(await verifyOperator(verifier, scope, received(await tokenOf(reader)))).toEqual(reader);
    expect(await verifyOperator(verifier, scope, received(await tokenOf(admin)), { role: POLICY_ADMIN_ROLE })).toEqual(admin);
  });

  it('refuses a request without a bearer token as AUTHENTICATION_FAILED', async () => {
    expect(await refusal(verifyOperator(verifier, scope, {}))).toBe('AUTHENTICATION_FAILED: no operator token: send one as "Authorization: Bearer <token>"');
    expect(await refusal(verifyOperator(verifier, scope, { Authorization: ['Basic dXNlcjpwdw=='] }))).toMatch(/^AUTHENTICATION_FAILED: no operator token/);
  });

  it('refuses a forged token, an agent token and a token of another workspace as AUTHENTICATION_FAILED', async () => {
    expect(await refusal(verifyOperator(verifier, scope, received(await tokenOf(admin, forger.privateKey))))).toBe(
      'AUTHENTICATION_FAILED: token refused: the signature does not verify',
    );
    expect(await refusal(verifyOperator(verifier, scope, received(await tokenOf(agent))))).toBe('AUTHENTICATION_FAILED: token refused: expected an operator token');
    expect(await refusal(verifyOperator(verifier, { tenant: 'acme', workspace: 'ops' }, received(await tokenOf(admin))))).toBe(
      'AUTHENTICATION_FAILED: token refused: it does not cover workspace ops',
    );
  });

  it('refuses a valid token without the required role as AUTHORIZATION_DENIED naming the role', async () => {
    expect(await refusal(verifyOperator(verifier, scope, received(await tokenOf(reader)), { role: POLICY_ADMIN_ROLE }))).toBe(
      `AUTHORIZATION_DENIED: operator user:rita@acme.example lacks the role ${POLICY_ADMIN_ROLE} this operation needs`,
    );
  });
});
