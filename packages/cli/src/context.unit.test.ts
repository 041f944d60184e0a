import { describe, expect, it } from 'vitest';
import { inboxPrefixOf } from './context.js';

describe('inboxPrefixOf', () => {
  it('takes --inbox-prefix over TOOLPLANE_INBOX_PREFIX over the scope’s default', () => {
    const env = { TOOLPLANE_INBOX_PREFIX: '_INBOX_from_env', TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'prod' };
    expect(inboxPrefixOf({ inboxPrefix: 'custom.inbox' }, env)).toBe('custom.inbox');
    expect(inboxPrefixOf({}, env)).toBe('_INBOX_from_env');
    expect(inboxPrefixOf({}, { ...env, TOOLPLANE_INBOX_PREFIX: '' })).toBe('_INBOX_acme.prod');
    expect(inboxPrefixOf({ tenant: 'globex', workspace: 'dev' }, { TOOLPLANE_TENANT: 'acme' })).toBe('_INBOX_globex.dev');
  });

  it('leaves NATS’s own _INBOX when the tenant or workspace is unknown', () => {
    expect(inboxPrefixOf({ tenant: 'acme' }, {})).toBeUndefined();
    expect(inboxPrefixOf({}, { TOOLPLANE_WORKSPACE: 'prod' })).toBeUndefined();
  });

  it('refuses a malformed prefix with one INVALID_ARGUMENT line naming the flag or variable', () => {
    expect(() => inboxPrefixOf({ inboxPrefix: '_INBOX.>' }, {})).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^--inbox-prefix: inbox prefix "_INBOX\.>" is malformed: [^\n]+$/) as unknown }));
    expect(() => inboxPrefixOf({}, { TOOLPLANE_INBOX_PREFIX: 'a b' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^TOOLPLANE_INBOX_PREFIX: inbox prefix "a b" is malformed/) as unknown }));
  });
});
