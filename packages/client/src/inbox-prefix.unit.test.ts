import { describe, expect, it } from 'vitest';
import { checkInboxPrefix } from '@toolplane/messaging';
import { defaultInboxPrefix } from './inbox-prefix.js';

describe('defaultInboxPrefix', () => {
  it('is _INBOX_<tenant>.<workspace>, a valid inbox prefix', () => {
    expect(defaultInboxPrefix({ tenant: 'acme', workspace: 'prod-1' })).toBe('_INBOX_acme.prod-1');
    const longest = defaultInboxPrefix({ tenant: 't'.repeat(64), workspace: 'w'.repeat(64) });
    expect(checkInboxPrefix(longest)).toBe(longest);
  });

  it('keeps tenants apart: no other tenant’s prefix, nor NATS’s _INBOX, falls under `_INBOX_acme.>`', () => {
    const firstTokens = ['acme_x', 'acme-1', 'acmex', 'x_acme', 'ACME'].map((tenant) => defaultInboxPrefix({ tenant, workspace: 'acme' }).split('.')[0]);
    expect(firstTokens.filter((token) => token === '_INBOX_acme' || token === '_INBOX')).toEqual([]);
    expect(defaultInboxPrefix({ tenant: 'acme', workspace: 'w' }).split('.')[0]).toBe('_INBOX_acme');
  });

  it('refuses a tenant or workspace that is not a subject token with INVALID_ARGUMENT', () => {
    expect(() => defaultInboxPrefix({ tenant: 'acme.x', workspace: 'w' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('tenant "acme.x"') as unknown }));
    expect(() => defaultInboxPrefix({ tenant: 'acme', workspace: '>' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('workspace ">"') as unknown }));
  });
});
