import { describe, expect, it } from 'vitest';
import { WireError } from '@toolplane/contracts';
import { wireSafe } from './wire-error.js';

describe('wireSafe', () => {
  it('keeps a conforming error as it is', () => {
    const error: WireError = { code: 'CONFLICT', message: 'taken', retryable: false, details: { id: 'x' } };
    expect(wireSafe(error)).toEqual(error);
  });

  it('bounds an over-long message so the error still satisfies its contract', () => {
    const safe = wireSafe({ code: 'INTERNAL', message: 'x'.repeat(5_000), retryable: false });
    expect(WireError.safeParse(safe).success).toBe(true);
  });

  it('drops details that cannot travel as JSON', () => {
    expect(wireSafe({ code: 'INTERNAL', message: 'm', retryable: false, details: { big: 1n } })).toEqual({ code: 'INTERNAL', message: 'm', retryable: false });
  });
});
