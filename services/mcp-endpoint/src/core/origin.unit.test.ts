import { describe, expect, it } from 'vitest';
import { allowedHosts, isLoopbackBind, originAllowed } from './origin.js';

describe('DNS-rebinding protection', () => {
  const allowed = new Set(['http://localhost:6274']);

  it('serves clients that send no Origin (not browsers) and allowed origins', () => {
    expect(originAllowed(undefined, allowed)).toBe(true);
    expect(originAllowed('http://localhost:6274', allowed)).toBe(true);
    // Browsers may send the default port; the origin is the same.
    expect(originAllowed('http://localhost:6274/', allowed)).toBe(true);
  });

  it('refuses every other origin, the opaque `null` one and garbage', () => {
    for (const origin of ['http://evil.example', 'http://localhost:6275', 'https://localhost:6274', 'null', 'not a url', '']) {
      expect(originAllowed(origin, allowed)).toBe(false);
    }
    expect(originAllowed('http://localhost:6274', new Set())).toBe(false);
  });

  it('answers a loopback bind only under loopback host names and the public URL’s host', () => {
    const hosts = allowedHosts(7107, 'https://tools.example.com');
    expect([...hosts].sort()).toEqual(['127.0.0.1:7107', '[::1]:7107', 'localhost:7107', 'tools.example.com'].sort());
    expect(hosts.has('attacker.example:7107')).toBe(false);
    expect(isLoopbackBind('127.0.0.1')).toBe(true);
    expect(isLoopbackBind('::1')).toBe(true);
    expect(isLoopbackBind('0.0.0.0')).toBe(false);
  });
});
