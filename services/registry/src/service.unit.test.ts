import { describe, expect, it } from 'vitest';
import { startService } from '@toolplane/service-kit';
import { registryService } from './service.js';

const env = { NATS_URL: 'nats://127.0.0.1:1', MONGODB_URL: 'mongodb://127.0.0.1:1', HTTP_PORT: '0', LOG_LEVEL: 'silent' };
const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'acme-1' };

async function startupError(overrides: Record<string, string | undefined>): Promise<string> {
  try {
    await startService(registryService, { ...env, ...overrides });
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected the registry to refuse to start');
}

describe('registry configuration: TOOLPLANE_TRUSTED_KEYS', () => {
  it('may be absent (every operator command is then refused) or a key set: the start gets as far as connecting', async () => {
    expect(await startupError({})).toMatch(/^NATS_URL: cannot connect to NATS/);
    expect(await startupError({ TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [publicJwk] }) })).toMatch(/^NATS_URL: cannot connect to NATS/);
  });

  it.each([
    ['empty', '', /^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not valid JSON/],
    ['not JSON', '{acme:', /^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not valid JSON/],
    ['a key of another curve', JSON.stringify({ acme: [{ ...publicJwk, crv: 'P-256' }] }), /^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not a valid key set: acme\[0\]/],
    ['a private key', JSON.stringify({ acme: [{ ...publicJwk, d: publicJwk.x }] }), /^invalid configuration: TOOLPLANE_TRUSTED_KEYS holds private or symmetric key material at acme\[0\]/],
  ])('stops the start in one line when it is %s', async (_label, value, expected) => {
    const message = await startupError({ TOOLPLANE_TRUSTED_KEYS: value });
    expect(message).toMatch(expected);
    expect(message).not.toContain('\n');
  });
});
