import { describe, expect, it } from 'vitest';
import { parseNatsUrl, redactUrl } from './connection-url.js';

describe('parseNatsUrl', () => {
  it('parses a plain URL with the default port', () => {
    expect(parseNatsUrl('nats://nats.internal')).toEqual({ servers: ['nats.internal:4222'], tls: false, display: 'nats://nats.internal:4222' });
  });

  it('accepts a bare host:port and a cluster list', () => {
    const endpoint = parseNatsUrl('127.0.0.1:4333, nats://b:4444');
    expect(endpoint.servers).toEqual(['127.0.0.1:4333', 'b:4444']);
    expect(endpoint.display).toBe('nats://127.0.0.1:4333,nats://b:4444');
  });

  it('takes user and password out of the URL and keeps them out of the display form', () => {
    const endpoint = parseNatsUrl('tls://alice:s%40cret@nats:4222');
    expect(endpoint).toMatchObject({ user: 'alice', pass: 's@cret', tls: true, display: 'tls://nats:4222' });
    expect(endpoint.display).not.toContain('cret');
  });

  it('treats a user without a password as a token', () => {
    expect(parseNatsUrl('nats://t0ken@nats:4222')).toMatchObject({ token: 't0ken' });
  });

  it.each([
    ['', 'no server given'],
    ['http://nats:4222', 'unsupported scheme'],
    ['nats://nats:notaport', 'is not a valid URL'],
    ['nats://nats:4222/path', 'no path'],
    ['nats://', 'missing host'],
  ])('rejects %j with INVALID_ARGUMENT', (url, why) => {
    expect(() => parseNatsUrl(url)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(why) as unknown }));
  });

  it('never puts credentials in the error message', () => {
    expect(() => parseNatsUrl('nats://alice:hunter2@nats:bad')).toThrow(expect.objectContaining({ message: expect.not.stringContaining('hunter2') as unknown }));
  });
});

describe('redactUrl', () => {
  it('removes user info from every URL of a list, even unparseable ones', () => {
    expect(redactUrl('nats://a:b@h1:1,nats://c@h2:2,nats://x:y@::bad')).toBe('nats://h1:1,nats://h2:2,nats://::bad');
  });
});
