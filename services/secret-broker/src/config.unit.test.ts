import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@toolplane/service-kit';
import { encodeKeyringConfig, generateKek, generateRecipientKeyPair } from '@toolplane/sealing';
import { randomBytes } from 'node:crypto';
import { secretBrokerConfig } from './config.js';

const kek = generateKek();
const recipient = generateRecipientKeyPair();
const base = {
  NATS_URL: 'nats://127.0.0.1:4222',
  MONGODB_URL: 'mongodb://127.0.0.1:27017',
  SECRET_BROKER_KEKS: JSON.stringify({ current: 'k1', keys: { k1: kek } }),
  SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': recipient.publicKey }),
};

function configError(env: Record<string, string | undefined>): string {
  try {
    loadConfig(secretBrokerConfig, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('secret-broker configuration', () => {
  it('parses the keyring, the recipients and the defaults', () => {
    const config = loadConfig(secretBrokerConfig, base);
    expect(config.SECRET_BROKER_KEKS.currentId).toBe('k1');
    expect([...config.SECRET_BROKER_RECIPIENTS.keys()]).toEqual(['tool-adapter']);
    expect(config.SECRET_BROKER_LEASE_TTL_MS).toBe(300_000);
    expect(config.SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS).toBe(false);
    expect(loadConfig(secretBrokerConfig, { ...base, SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS: 'true' }).SECRET_BROKER_ALLOW_HTTP_TOKEN_ENDPOINTS).toBe(true);
  });

  it('names SECRET_BROKER_KEKS in one line when it is missing', () => {
    const message = configError({ ...base, SECRET_BROKER_KEKS: undefined });
    expect(message).toMatch(/^SECRET_BROKER_KEKS is missing \(e\.g\. \{"current":"k1","keys":\{"k1":"<base64url of 32 random bytes>"\}\}\)$/);
  });

  it.each([
    ['not JSON', 'k1=abc'],
    ['a current key that is not configured', JSON.stringify({ current: 'k2', keys: { k1: kek } })],
    ['a short key', encodeKeyringConfig('k1', { k1: randomBytes(16) })],
  ])('names SECRET_BROKER_KEKS in one line, without the keys, when it is %s', (_label, value) => {
    const message = configError({ ...base, SECRET_BROKER_KEKS: value });
    expect(message).toMatch(/^SECRET_BROKER_KEKS /);
    expect(message).not.toContain('\n');
    expect(message).not.toContain(kek);
  });

  it.each([
    ['missing', undefined],
    ['empty', '{}'],
    ['a malformed key', JSON.stringify({ 'tool-adapter': 'abc' })],
    ['a bad key id', JSON.stringify({ 'tool adapter': recipient.publicKey })],
  ])('names SECRET_BROKER_RECIPIENTS when it is %s', (_label, value) => {
    expect(configError({ ...base, SECRET_BROKER_RECIPIENTS: value })).toMatch(/^SECRET_BROKER_RECIPIENTS /);
  });

  it('takes operator keys from TOOLPLANE_TRUSTED_KEYS: optional, but refused in one line when malformed', () => {
    const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'acme-1' };
    expect(loadConfig(secretBrokerConfig, base).TOOLPLANE_TRUSTED_KEYS).toBeUndefined();
    expect(loadConfig(secretBrokerConfig, { ...base, TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [publicJwk] }) }).TOOLPLANE_TRUSTED_KEYS).toEqual({ acme: [publicJwk] });
    for (const value of ['', '{acme:', JSON.stringify({ acme: [{ ...publicJwk, d: publicJwk.x }] })]) {
      const message = configError({ ...base, TOOLPLANE_TRUSTED_KEYS: value });
      expect(message).toMatch(/^TOOLPLANE_TRUSTED_KEYS (is not valid JSON|holds private or symmetric key material)/);
      expect(message).not.toContain('\n');
    }
  });
});
