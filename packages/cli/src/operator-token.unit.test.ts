import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import { unverifiedClaims } from './operator-token.js';

describe('unverifiedClaims', () => {
  it('reads the principal and workspaces of an operator token without verifying it', async () => {
    const key = await generateSigningKeyPair('k1');
    const token = await issueToken({ kind: 'human', tenant: 'acme', workspaces: ['main', 'ops'], principal: 'user:ada@acme.example', roles: [] }, key.privateKey, { kid: 'k1', expiresIn: 60 });
    expect(unverifiedClaims(token)).toEqual({ tenant: 'acme', principal: 'user:ada@acme.example', workspaces: ['main', 'ops'] });
  });

  it('reads nothing from what is not a token', () => {
    expect(unverifiedClaims('opaque')).toEqual({});
    expect(unverifiedClaims('a.!!!.c')).toEqual({});
    expect(unverifiedClaims(`x.${Buffer.from('[1,2]').toString('base64url')}.y`)).toEqual({});
  });
});
