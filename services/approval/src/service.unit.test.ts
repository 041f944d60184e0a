import { describe, expect, it } from 'vitest';
import { startService } from '@toolplane/service-kit';
import { approvalService } from './service.js';

const env = { NATS_URL: 'nats://127.0.0.1:1', MONGODB_URL: 'mongodb://127.0.0.1:1', HTTP_PORT: '0' };
const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'acme-1' };

async function startupError(overrides: Record<string, string | undefined>): Promise<string> {
  try {
    await startService(approvalService, { ...env, ...overrides });
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected the service to refuse to start');
}

describe('approval service configuration', () => {
  it('accepts no trusted keys at all (every token is then refused), but not an empty value', async () => {
    // Configuration passed: the start got as far as connecting.
    expect(await startupError({})).toMatch(/^NATS_URL: cannot connect to NATS/);
    const message = await startupError({ TOOLPLANE_TRUSTED_KEYS: '' });
    expect(message).toMatch(/^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not valid JSON/);
    expect(message).not.toContain('\n');
  });

  it('refuses to start with keys that are not JSON, not a key set, or private', async () => {
    expect(await startupError({ TOOLPLANE_TRUSTED_KEYS: '{acme:' })).toMatch(/^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not valid JSON/);
    expect(await startupError({ TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [{ ...publicJwk, crv: 'P-256' }] }) })).toMatch(
      /^invalid configuration: TOOLPLANE_TRUSTED_KEYS is not a valid key set: acme\[0\]/,
    );
    const privateKey = await startupError({ TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [{ ...publicJwk, d: publicJwk.x }] }) });
    expect(privateKey).toBe('invalid configuration: TOOLPLANE_TRUSTED_KEYS holds private or symmetric key material at acme[0]: configure public asymmetric keys only');
    expect(privateKey).not.toContain(publicJwk.x);
  });

  it('refuses a sweep interval that is not a positive number of milliseconds', async () => {
    expect(await startupError({ TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ acme: [publicJwk] }), APPROVAL_SWEEP_INTERVAL_MS: '0' })).toBe(
      'invalid configuration: APPROVAL_SWEEP_INTERVAL_MS must be positive',
    );
  });
});
