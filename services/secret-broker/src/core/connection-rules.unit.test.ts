import { describe, expect, it } from 'vitest';
import { ConnectionView, hasErrorCode, type Connection, type CreateConnectionRequest, type CredentialInput } from '@toolplane/contracts';
import {
  accessTokenContext,
  checkCredential,
  credentialContext,
  credentialPlaintext,
  planNewConnection,
  planRevocation,
  planRotation,
  refIsId,
  toConnectionView,
} from './connection-rules.js';

const scope = { tenant: 'acme', workspace: 'main' };
const now = new Date('2026-11-29T17:00:00.000Z');
const later = new Date('2026-11-29T18:00:00.000Z');
const connectionId = '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11';
const strict = { allowHttpTokenEndpoints: false };
const oauth2: CredentialInput = {
  kind: 'oauth2-client-credentials',
  tokenEndpoint: 'https://auth.example.com/token',
  clientId: 'toolplane',
  clientSecret: 'tp-canary-client-secret',
  scopes: ['read', 'write'],
};
const create = (credential: CredentialInput, extra: Partial<CreateConnectionRequest> = {}): CreateConnectionRequest => ({ name: 'github', allowedTools: ['github.create_issue'], credential, ...extra });

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('no refusal');
}

function connection(overrides: Partial<Connection> = {}): Connection {
  return {
    ...planNewConnection(scope, create({ kind: 'bearer', token: 'tp-canary-bearer' }), { connectionId, now }, strict),
    secret: { v: 1, alg: 'A256GCM-KEK-A256GCM', kekId: 'k1', wrappedKey: 'A'.repeat(80), iv: 'A'.repeat(16), ciphertext: 'AAAA', tag: 'A'.repeat(22) },
    ...overrides,
  };
}

describe('planNewConnection', () => {
  it('builds an Active connection of generation 1, scoped by the subject, with a sorted, deduplicated allow-list', () => {
    const plan = planNewConnection(scope, create(oauth2, { allowedTools: ['b.tool', 'a.tool', 'b.tool'], actor: 'user:ops' }), { connectionId, now }, strict);
    expect(plan).toMatchObject({ connectionId, tenant: 'acme', workspace: 'main', name: 'github', kind: 'oauth2-client-credentials', state: 'Active', secretGeneration: 1, version: 1, createdBy: 'user:ops' });
    expect(plan.allowedTools).toEqual(['a.tool', 'b.tool']);
    expect(plan.createdAt).toBe(now.toISOString());
  });

  it('keeps only the non-secret oauth2 settings in the clear', () => {
    const plan = planNewConnection(scope, create(oauth2), { connectionId, now }, strict);
    expect(plan.oauth2).toEqual({ tokenEndpoint: 'https://auth.example.com/token', clientId: 'toolplane', scopes: ['read', 'write'] });
    expect(JSON.stringify(plan)).not.toContain('tp-canary-client-secret');
  });

  it('refuses a UUID-shaped name, since refs by id would be ambiguous', () => {
    expect(refusal(() => planNewConnection(scope, create({ kind: 'api-key', apiKey: 'k' }, { name: connectionId }), { connectionId, now }, strict)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('checkCredential', () => {
  it('requires an https token endpoint unless http is allowed', () => {
    const http = { ...oauth2, tokenEndpoint: 'http://127.0.0.1:9/token' };
    expect(refusal(() => checkCredential(http, strict))).toEqual({ code: 'INVALID_ARGUMENT', message: 'credential.tokenEndpoint must be an https:// URL' });
    expect(() => checkCredential(http, { allowHttpTokenEndpoints: true })).not.toThrow();
    expect(() => checkCredential(oauth2, strict)).not.toThrow();
  });

  it('refuses token endpoints with credentials or a fragment, without echoing them', () => {
    const withUser = refusal(() => checkCredential({ ...oauth2, tokenEndpoint: 'https://user:tp-canary-pw@auth.example.com/token' }, strict));
    expect(withUser.code).toBe('INVALID_ARGUMENT');
    expect(withUser.message).not.toContain('tp-canary-pw');
    expect(refusal(() => checkCredential({ ...oauth2, tokenEndpoint: 'https://auth.example.com/token#x' }, strict)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('credential plaintext and contexts', () => {
  it('stores exactly the credential fields of each kind', () => {
    expect(JSON.parse(credentialPlaintext({ kind: 'basic', username: 'u', password: 'p' }))).toEqual({ kind: 'basic', username: 'u', password: 'p' });
    expect(JSON.parse(credentialPlaintext(oauth2))).toEqual(oauth2);
  });

  it('binds ciphertexts to tenant, workspace, connection, kind and generation', () => {
    const c = connection();
    expect(credentialContext(c)).toEqual({ purpose: 'connection-credential', tenant: 'acme', workspace: 'main', connectionId, kind: 'bearer', secretGeneration: '1' });
    expect(credentialContext({ ...c, secretGeneration: 2 })).not.toEqual(credentialContext(c));
    expect(accessTokenContext(c)).toMatchObject({ purpose: 'access-token', connectionId, secretGeneration: '1' });
  });
});

describe('planRotation', () => {
  it('bumps the generation and records when and by whom', () => {
    const plan = planRotation(connection(), { connectionRef: 'github', credential: { kind: 'bearer', token: 'new' }, actor: 'user:ops' }, later, strict);
    expect(plan).toEqual({ secretGeneration: 2, updatedAt: later.toISOString(), rotatedAt: later.toISOString(), rotatedBy: 'user:ops' });
  });

  it('refuses a credential of another kind (INVALID_ARGUMENT) and a revoked connection (CONFLICT)', () => {
    expect(refusal(() => planRotation(connection(), { connectionRef: 'github', credential: { kind: 'api-key', apiKey: 'x' } }, later, strict)).code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => planRotation(connection({ state: 'Revoked' }), { connectionRef: 'github', credential: { kind: 'bearer', token: 'x' } }, later, strict)).code).toBe('CONFLICT');
  });

  it('updates the displayed oauth2 settings with the new credential', () => {
    const c = connection({ kind: 'oauth2-client-credentials' });
    const plan = planRotation(c, { connectionRef: 'github', credential: { ...oauth2, clientId: 'v2', scopes: [] } }, later, strict);
    expect(plan.oauth2).toEqual({ tokenEndpoint: oauth2.tokenEndpoint, clientId: 'v2', scopes: [] });
  });
});

describe('planRevocation', () => {
  it('revokes an active connection and is a no-op on a revoked one', () => {
    expect(planRevocation(connection(), { connectionRef: 'github', reason: 'leaked', actor: 'user:ops' }, later)).toEqual({
      state: 'Revoked',
      updatedAt: later.toISOString(),
      revokedAt: later.toISOString(),
      revokedBy: 'user:ops',
      revokeReason: 'leaked',
    });
    expect(planRevocation(connection({ state: 'Revoked' }), { connectionRef: 'github' }, later)).toBeUndefined();
  });
});

describe('toConnectionView', () => {
  it('shows metadata and the KEK id, never the encrypted secret, and satisfies the strict view contract', () => {
    const view = toConnectionView(connection());
    expect(ConnectionView.parse(view)).toEqual(view);
    expect(view.kekId).toBe('k1');
    expect(view).not.toHaveProperty('secret');
    expect(JSON.stringify(view)).not.toContain('wrappedKey');
  });

  it('omits the KEK id of a revoked connection whose secret was deleted', () => {
    const { secret: _secret, ...revoked } = connection({ state: 'Revoked' });
    expect(toConnectionView(revoked)).not.toHaveProperty('kekId');
  });
});

describe('refIsId', () => {
  it('tells ids from names', () => {
    expect(refIsId(connectionId)).toBe(true);
    expect(refIsId('github')).toBe(false);
  });
});
