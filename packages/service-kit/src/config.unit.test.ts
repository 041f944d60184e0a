import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, baseServiceConfig, loadConfig } from './config.js';

const schema = baseServiceConfig({ httpPort: 7101 });
const good = { NATS_URL: 'nats://127.0.0.1:4222', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

function errorOf(env: Record<string, string | undefined>): string {
  try {
    loadConfig(schema, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies defaults to a minimal environment', () => {
    const config = loadConfig(schema, good);
    expect(config).toMatchObject({ HTTP_PORT: 7101, HTTP_HOST: '127.0.0.1', MONGODB_DATABASE: 'toolplane', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: 10_000 });
  });

  it('takes the token clock tolerance in whole seconds, 30 by default, 0-300', () => {
    expect(loadConfig(schema, good).TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S).toBe(30);
    expect(loadConfig(schema, { ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: '0' }).TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S).toBe(0);
    expect(loadConfig(schema, { ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: '300' }).TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S).toBe(300);
  });

  it('takes an optional NATS inbox prefix', () => {
    expect(loadConfig(schema, good).NATS_INBOX_PREFIX).toBeUndefined();
    expect(loadConfig(schema, { ...good, NATS_INBOX_PREFIX: '_INBOX_services.registry' }).NATS_INBOX_PREFIX).toBe('_INBOX_services.registry');
  });

  it('accepts a comma-separated list of NATS servers', () => {
    expect(loadConfig(schema, { ...good, NATS_URL: 'nats://a:4222, tls://b:4222' }).NATS_URL).toBe('nats://a:4222, tls://b:4222');
  });

  it.each([
    [{ MONGODB_URL: good.MONGODB_URL }, /^NATS_URL is missing \(e\.g\. nats:\/\/127\.0\.0\.1:4222\)$/],
    [{ ...good, NATS_URL: 'http://127.0.0.1:4222' }, /^NATS_URL must be a nats:\/\/ or tls:\/\/ or ws:\/\/ or wss:\/\/ URL/],
    [{ ...good, NATS_URL: 'not a url' }, /^NATS_URL must be a nats:\/\//],
    [{ ...good, NATS_URL: '' }, /^NATS_URL is empty/],
    [{ NATS_URL: good.NATS_URL }, /^MONGODB_URL is missing/],
    [{ ...good, MONGODB_URL: 'postgres://x' }, /^MONGODB_URL must be a mongodb:\/\/ or mongodb\+srv:\/\/ URL/],
    [{ ...good, HTTP_PORT: 'eighty' }, /^HTTP_PORT must be a port number$/],
    [{ ...good, HTTP_PORT: '70000' }, /^HTTP_PORT must be between 0 and 65535$/],
    [{ ...good, LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ ...good, MONGODB_DATABASE: 'a.b' }, /^MONGODB_DATABASE must be 1-63 letters/],
    [{ ...good, NATS_INBOX_PREFIX: '_INBOX.>' }, /^NATS_INBOX_PREFIX must be 1-16 dot-separated tokens/],
    [{ ...good, NATS_INBOX_PREFIX: '' }, /^NATS_INBOX_PREFIX must be 1-16 dot-separated tokens/],
    [{ ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: '301' }, /^TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S must be between 0 and 300 seconds$/],
    [{ ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: '-1' }, /^TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S must be between 0 and 300 seconds$/],
    [{ ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: '2.5' }, /^TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S must be whole seconds/],
    [{ ...good, TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S: 'half a minute' }, /^TOOLPLANE_TOKEN_CLOCK_TOLERANCE_S must be a number of seconds/],
  ])('names the bad setting in one line: %j', (env, expected) => {
    const message = errorOf(env);
    expect(message).toMatch(expected);
    expect(message).not.toContain('\n');
  });

  it('reports settings of a service-specific extension the same way', () => {
    const extended = schema.extend({ APPROVAL_TTL_MS: z.coerce.number({ error: 'must be a number' }) });
    expect(() => loadConfig(extended, { ...good, APPROVAL_TTL_MS: 'soon' })).toThrow(/^APPROVAL_TTL_MS must be a number$/);
  });
});
