import { describe, expect, it } from 'vitest';
import { Uuid } from '@toolplane/contracts';
import { deterministicUuid } from './deterministic-id.js';

describe('deterministicUuid', () => {
  it('gives the same valid UUID for the same name and different ones for different names', () => {
    const a = deterministicUuid('SecretLeased/1');
    expect(Uuid.safeParse(a).success).toBe(true);
    expect(a[14]).toBe('8');
    expect(deterministicUuid('SecretLeased/1')).toBe(a);
    expect(deterministicUuid('SecretLeased/2')).not.toBe(a);
  });
});
