import { describe, expect, it } from 'vitest';
import { describeTarget, mcpTargetKey, validateTarget, type McpTarget } from './target.js';

describe('validateTarget', () => {
  it('accepts well-formed stdio and HTTP targets', () => {
    expect(() => validateTarget({ transport: 'stdio', command: 'node', args: ['server.js'], env: { API_URL: 'x' }, cwd: '/tmp' })).not.toThrow();
    expect(() => validateTarget({ transport: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } })).not.toThrow();
  });

  it('refuses malformed targets with INVALID_ARGUMENT', () => {
    const bad: unknown[] = [
      { transport: 'stdio', command: '' },
      { transport: 'stdio', command: 'node', env: { 'BAD NAME': 'x' } },
      { transport: 'stdio', command: 'node', cwd: 'relative/dir' },
      { transport: 'http', url: 'not a url' },
      { transport: 'http', url: 'ftp://example.com/' },
      { transport: 'http', url: 'https://user:pw@example.com/mcp' },
      { transport: 'http', url: 'https://example.com/mcp', headers: { 'mcp-session-id': 'x' } },
      { transport: 'http', url: 'https://example.com/mcp', headers: { 'X-Evil': 'a\r\nb' } },
      { transport: 'smoke-signals' },
    ];
    for (const target of bad) expect(() => validateTarget(target as McpTarget), JSON.stringify(target)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('mcpTargetKey', () => {
  it('is the same for equal targets and differs when anything that matters differs', () => {
    const base: McpTarget = { transport: 'stdio', command: 'node', args: ['a.js'], env: { A: '1', B: '2' } };
    expect(mcpTargetKey({ ...base, env: { B: '2', A: '1' } })).toBe(mcpTargetKey(base));
    expect(mcpTargetKey({ ...base, env: { A: '1', B: '3' } })).not.toBe(mcpTargetKey(base));
    expect(mcpTargetKey({ ...base, args: ['b.js'] })).not.toBe(mcpTargetKey(base));
    expect(mcpTargetKey({ ...base, cwd: '/tmp' })).not.toBe(mcpTargetKey(base));
    const http: McpTarget = { transport: 'http', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer a' } };
    expect(mcpTargetKey({ ...http, headers: { authorization: 'Bearer a' } })).toBe(mcpTargetKey(http));
    expect(mcpTargetKey({ ...http, headers: { Authorization: 'Bearer b' } })).not.toBe(mcpTargetKey(http));
  });

  it('contains no secret', () => {
    const key = mcpTargetKey({ transport: 'http', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer sekrit' } });
    expect(key).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('describeTarget', () => {
  it('never shows env or header values, nor the query string', () => {
    expect(describeTarget({ transport: 'stdio', command: 'node', env: { TOKEN: 'sekrit' } })).not.toContain('sekrit');
    expect(describeTarget({ transport: 'http', url: 'https://example.com/mcp?token=sekrit', headers: { Authorization: 'sekrit' } })).toBe('https://example.com/mcp');
  });
});
