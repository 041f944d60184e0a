import { generateKeyPairSync } from 'node:crypto';
import { loadConfig } from '@toolplane/service-kit';
import { describe, expect, it } from 'vitest';
import { toolAdapterConfig } from './service.js';

const base = { NATS_URL: 'nats://127.0.0.1:4222', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

describe('the tool adapter settings', () => {
  it('read the receipt key from a private JWK, taking its kid', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'receipts-2026' };
    const config = loadConfig(toolAdapterConfig, { ...base, ADAPTER_SIGNING_KEY: JSON.stringify(jwk) });
    expect(config.ADAPTER_SIGNING_KEY?.keyId).toBe('receipts-2026');
    expect(config.ADAPTER_SIGNING_KEY?.privateKey.asymmetricKeyType).toBe('ed25519');
  });

  it('read the receipt key from base64 PKCS#8', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const config = loadConfig(toolAdapterConfig, { ...base, ADAPTER_SIGNING_KEY: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64') });
    expect(config.ADAPTER_SIGNING_KEY?.keyId).toBeUndefined();
    expect(config.ADAPTER_SIGNING_KEY?.privateKey.type).toBe('private');
  });

  it('refuse a bad key in one line naming the setting, never echoing it', () => {
    expect(() => loadConfig(toolAdapterConfig, { ...base, ADAPTER_SIGNING_KEY: 'not-a-key' })).toThrow(/^ADAPTER_SIGNING_KEY cannot be read as an Ed25519 private key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    expect(() => loadConfig(toolAdapterConfig, { ...base, ADAPTER_SIGNING_KEY: rsa })).toThrow(/^ADAPTER_SIGNING_KEY is a rsa key; receipts are signed with Ed25519$/);
    const { publicKey } = generateKeyPairSync('ed25519');
    expect(() => loadConfig(toolAdapterConfig, { ...base, ADAPTER_SIGNING_KEY: JSON.stringify(publicKey.export({ format: 'jwk' })) })).toThrow(/^ADAPTER_SIGNING_KEY is a JWK without private key material/);
  });

  it('refuse malformed trusted keys', () => {
    expect(() => loadConfig(toolAdapterConfig, { ...base, TOOLPLANE_TRUSTED_KEYS: '{' })).toThrow(/^TOOLPLANE_TRUSTED_KEYS is not valid JSON/);
  });
});
