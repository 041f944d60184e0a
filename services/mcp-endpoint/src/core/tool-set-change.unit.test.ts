import { describe, expect, it } from 'vitest';
import { changeCovers, toolSetChangeOf } from './tool-set-change.js';

describe('the scope a read-model change belongs to', () => {
  it('is the workspace of a descriptor or a profile, and every workspace of a policy’s tenant', () => {
    expect(toolSetChangeOf('descriptors', 'acme.main.ZXZlcnl0aGluZy5lY2hv.djE')).toEqual({ tenant: 'acme', workspace: 'main' });
    expect(toolSetChangeOf('profiles', 'acme.main.YWdlbnQtMQ')).toEqual({ tenant: 'acme', workspace: 'main' });
    expect(toolSetChangeOf('policies', 'acme')).toEqual({ tenant: 'acme', workspace: undefined });
  });

  it('is nothing for a key of another shape', () => {
    expect(toolSetChangeOf('policies', 'acme.main')).toBeUndefined();
    // A policy bundle may be named by a server of any workspace of its tenant.
    expect(toolSetChangeOf('bundles', 'acme.cGF5bWVudHMtc3RyaWN0')).toEqual({ tenant: 'acme', workspace: undefined });
    expect(toolSetChangeOf('bundles', 'acme')).toBeUndefined();
    expect(toolSetChangeOf('profiles', 'acme')).toBeUndefined();
    expect(toolSetChangeOf('descriptors', '')).toBeUndefined();
  });

  it('covers the callers of its scope only', () => {
    expect(changeCovers({ tenant: 'acme', workspace: 'main' }, { tenant: 'acme', workspace: 'main' })).toBe(true);
    expect(changeCovers({ tenant: 'acme', workspace: 'main' }, { tenant: 'acme', workspace: 'other' })).toBe(false);
    expect(changeCovers({ tenant: 'acme', workspace: undefined }, { tenant: 'acme', workspace: 'other' })).toBe(true);
    expect(changeCovers({ tenant: 'acme', workspace: undefined }, { tenant: 'globex', workspace: 'main' })).toBe(false);
  });
});
