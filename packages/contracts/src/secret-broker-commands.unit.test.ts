import { describe, expect, it } from 'vitest';
import { ConnectionView, CreateConnectionRequest, CredentialInput, LeasedCredential, SecretLeaseReply, SecretLeaseRequest } from './secret-broker-commands.js';
import { ConnectionName } from './secret-broker-documents.js';
import { EncryptedEnvelope, SealedBox } from './sealed-secrets.js';

const secret = 'tp-canary-0123456789';
const issuesOf = (value: unknown) => {
  const parsed = CredentialInput.safeParse(value);
  return parsed.success ? [] : parsed.error.issues;
};

describe('CredentialInput', () => {
  it('accepts each kind', () => {
    for (const credential of [
      { kind: 'api-key', apiKey: secret },
      { kind: 'bearer', token: secret },
      { kind: 'basic', username: 'svc user', password: `${secret} ünïcode` },
      { kind: 'oauth2-client-credentials', tokenEndpoint: 'https://auth.example.com/token', clientId: 'tp', clientSecret: secret },
    ]) {
      expect(CredentialInput.safeParse(credential).success).toBe(true);
    }
    expect(CredentialInput.parse({ kind: 'oauth2-client-credentials', tokenEndpoint: 'https://a.example/t', clientId: 'c', clientSecret: 's' })).toMatchObject({ scopes: [] });
  });

  it.each([
    ['a token with a space', { kind: 'bearer', token: `${secret} x` }],
    ['a token with a line break (header injection)', { kind: 'bearer', token: `${secret}\r\nX-Evil: 1` }],
    ['an empty api key', { kind: 'api-key', apiKey: '' }],
    ['a username with a colon', { kind: 'basic', username: 'a:b', password: secret }],
    ['a password with a control character', { kind: 'basic', username: 'a', password: `${secret}\u0000` }],
    ['a password with DEL', { kind: 'basic', username: 'a', password: `${secret}\u007f` }],
    ['a token endpoint that is not http(s)', { kind: 'oauth2-client-credentials', tokenEndpoint: 'ftp://a.example/t', clientId: 'c', clientSecret: secret }],
    ['a scope with a space', { kind: 'oauth2-client-credentials', tokenEndpoint: 'https://a.example/t', clientId: 'c', clientSecret: secret, scopes: ['a b'] }],
    ['fields of another kind', { kind: 'bearer', apiKey: secret }],
  ])('refuses %s, with issues that never repeat the value', (_label, credential) => {
    const issues = issuesOf(credential);
    expect(issues).not.toEqual([]);
    expect(JSON.stringify(issues.map((issue) => ({ path: issue.path, message: issue.message })))).not.toContain(secret);
  });
});

describe('secret-broker contracts', () => {
  it('refuse names that are not names, and requests without an allow-list', () => {
    expect(ConnectionName.safeParse('github.prod-1').success).toBe(true);
    expect(ConnectionName.safeParse('-x').success).toBe(false);
    expect(CreateConnectionRequest.safeParse({ name: 'x', allowedTools: [], credential: { kind: 'bearer', token: 't' } }).success).toBe(false);
  });

  it('have no field in any read or lease reply that could carry a secret in the clear', () => {
    for (const schema of [ConnectionView, SecretLeaseReply, SecretLeaseRequest]) {
      const fields = JSON.stringify(Object.keys(schema.shape));
      for (const word of ['secret"', 'token"', 'apiKey', 'password', 'credential']) expect(fields).not.toContain(word);
    }
  });

  it('describe sealed boxes, envelopes and leased credentials strictly', () => {
    const box = { v: 1, alg: 'X25519-HKDF-SHA256-A256GCM', recipientKeyId: 'tool-adapter', ephemeralPublicKey: 'A'.repeat(43), iv: 'A'.repeat(16), ciphertext: 'AAAA', tag: 'A'.repeat(22) };
    expect(SealedBox.safeParse(box).success).toBe(true);
    expect(SealedBox.safeParse({ ...box, plaintext: 'x' }).success).toBe(false);
    expect(SealedBox.safeParse({ ...box, iv: 'A+/=' }).success).toBe(false);
    expect(EncryptedEnvelope.safeParse({ v: 1, alg: 'A256GCM-KEK-A256GCM', kekId: 'k1', wrappedKey: 'A'.repeat(80), iv: 'A'.repeat(16), ciphertext: '', tag: 'A'.repeat(22) }).success).toBe(true);
    expect(LeasedCredential.safeParse({ kind: 'oauth2-client-credentials', accessToken: 'at', tokenType: 'Bearer', expiresAt: '2026-11-29T17:00:00.000Z' }).success).toBe(true);
    expect(LeasedCredential.safeParse({ kind: 'oauth2-client-credentials', accessToken: 'at', tokenType: 'DPoP', expiresAt: '2026-11-29T17:00:00.000Z' }).success).toBe(false);
  });
});
