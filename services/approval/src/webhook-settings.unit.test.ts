import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startService } from '@toolplane/service-kit';
import { approvalConfig, approvalService } from './service.js';

const env = { NATS_URL: 'nats://127.0.0.1:1', MONGODB_URL: 'mongodb://127.0.0.1:1', HTTP_PORT: '0' };
const secret = 'whsec_0123456789abcdefghijklmnopqrstuvwxyz';

async function startupError(overrides: Record<string, string | undefined>): Promise<string> {
  try {
    await startService(approvalService, { ...env, ...overrides });
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected the service to refuse to start');
}

const webhooks = (value: unknown) => ({ APPROVAL_WEBHOOKS: JSON.stringify(value) });

describe('APPROVAL_WEBHOOKS', () => {
  it('defaults to no webhooks, and parses a tenant map', () => {
    expect(approvalConfig.parse(env).APPROVAL_WEBHOOKS).toEqual({});
    const config = approvalConfig.parse({ ...env, ...webhooks({ acme: { url: 'https://hooks.acme.example/tp', secret, workspaces: ['support'] }, globex: { url: 'http://127.0.0.1:9/x', secret } }) });
    expect(config.APPROVAL_WEBHOOKS['acme']?.url).toBe('https://hooks.acme.example/tp');
    expect(config.APPROVAL_WEBHOOKS['acme']?.workspaces).toEqual(['support']);
    expect(config.APPROVAL_WEBHOOKS['acme']?.secret.reveal()).toBe(secret);
    expect(config.APPROVAL_WEBHOOKS['globex']?.workspaces).toBeUndefined();
    expect(config.APPROVAL_WEBHOOK_TIMEOUT_MS).toBe(5_000);
  });

  it('shows the secrets as [redacted] in any dump of the configuration', () => {
    const config = approvalConfig.parse({ ...env, ...webhooks({ acme: { url: 'https://hooks.acme.example/tp', secret } }) });
    for (const dump of [JSON.stringify(config), inspect(config, { depth: 10 }), String(config.APPROVAL_WEBHOOKS['acme']?.secret), `${JSON.stringify(config.APPROVAL_WEBHOOKS)}`]) {
      expect(dump).not.toContain(secret);
      expect(dump).toContain('[redacted]');
    }
  });

  it('refuses a bad value with one line naming the setting and the place, never quoting the secret', async () => {
    const cases: [unknown, string][] = [
      [{ acme: { url: 'https://hooks.acme.example', secret: 'short-secret' } }, 'invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme.secret: must be at least 32 characters'],
      [{ acme: { url: 'ftp://hooks.acme.example', secret } }, 'invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme.url: must be an http:// or https:// URL'],
      [{ acme: { url: 'not a url', secret } }, 'invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme.url: must be an http:// or https:// URL'],
      [{ acme: { url: 'https://user:pw@hooks.acme.example', secret } }, 'invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme.url: must not carry a user name or password'],
      [{ acme: { url: 'https://hooks.acme.example', secret, workspaces: [] } }, 'invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme.workspaces: must name at least one workspace'],
    ];
    for (const [value, expected] of cases) expect(await startupError(webhooks(value))).toBe(expected);
    const unknownKey = await startupError(webhooks({ acme: { url: 'https://hooks.acme.example', secret, sekret: secret } }));
    expect(unknownKey).toMatch(/^invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: acme/);
    expect(unknownKey).not.toContain(secret);
    const badTenant = await startupError(webhooks({ 'no spaces': { url: 'https://hooks.acme.example', secret } }));
    expect(badTenant).toMatch(/^invalid configuration: APPROVAL_WEBHOOKS is not a valid webhook map: /);
    const notJson = await startupError({ APPROVAL_WEBHOOKS: `{"acme": {"secret": "${secret}"` });
    expect(notJson).toMatch(/^invalid configuration: APPROVAL_WEBHOOKS is not valid JSON/);
    expect(notJson).not.toContain(secret);
    for (const message of [unknownKey, badTenant, notJson]) expect(message).not.toContain('\n');
  });
});

describe('CONSOLE_PUBLIC_URL and APPROVAL_WEBHOOK_TIMEOUT_MS', () => {
  it('takes an http(s) URL without its trailing slash', () => {
    expect(approvalConfig.parse({ ...env, CONSOLE_PUBLIC_URL: 'https://console.acme.example/' }).CONSOLE_PUBLIC_URL).toBe('https://console.acme.example');
    expect(approvalConfig.parse(env).CONSOLE_PUBLIC_URL).toBeUndefined();
  });

  it('refuses anything else in one line', async () => {
    expect(await startupError({ CONSOLE_PUBLIC_URL: 'console.acme.example' })).toBe('invalid configuration: CONSOLE_PUBLIC_URL must be an http:// or https:// URL');
    expect(await startupError({ APPROVAL_WEBHOOK_TIMEOUT_MS: '0' })).toBe('invalid configuration: APPROVAL_WEBHOOK_TIMEOUT_MS must be positive');
    expect(await startupError({ APPROVAL_WEBHOOK_TIMEOUT_MS: 'soon' })).toBe('invalid configuration: APPROVAL_WEBHOOK_TIMEOUT_MS must be a number of milliseconds');
  });
});
