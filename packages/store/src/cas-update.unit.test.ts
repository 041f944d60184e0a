import { describe, expect, it } from 'vitest';
import { casFilter, casUpdate, currentFilter, meetsExpectation, type Transition } from './cas-update.js';

interface Invocation {
  _id: string;
  version: number;
  state: 'Received' | 'Validated' | 'Executing' | 'Failed';
  tenant: string;
  attempt: number;
  note?: string;
  detail?: { reason: string };
}

const base: Transition<Invocation> = { id: 'inv-1', expect: { version: 3 } };

describe('casFilter', () => {
  it('guards id and version', () => {
    expect(casFilter(base)).toEqual({ _id: 'inv-1', version: 3 });
  });

  it('guards a single state, a list of states, and extra conditions', () => {
    expect(casFilter({ ...base, expect: { version: 3, state: 'Validated' } })).toEqual({ _id: 'inv-1', version: 3, state: 'Validated' });
    expect(casFilter({ ...base, expect: { version: 3, state: ['Received', 'Validated'] }, where: { tenant: 't1' } })).toEqual({
      tenant: 't1',
      _id: 'inv-1',
      version: 3,
      state: { $in: ['Received', 'Validated'] },
    });
  });

  it.each([[{ _id: 'other' }], [{ version: 9 }], [{ state: 'Failed' as const }]])('refuses where %j that would override the guard', (where) => {
    expect(() => casFilter({ ...base, where })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('refuses a version that is not a whole number', () => {
    expect(() => casFilter({ ...base, expect: { version: 1.5 } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('reads the current document inside the same scope', () => {
    expect(currentFilter({ ...base, where: { tenant: 't1' } })).toEqual({ tenant: 't1', _id: 'inv-1' });
  });
});

describe('casUpdate', () => {
  it('always increments version by exactly one, in the same write', () => {
    expect(casUpdate(base)).toEqual({ $inc: { version: 1 } });
    expect(casUpdate({ ...base, set: { state: 'Executing' }, inc: { attempt: 1 }, unset: ['note'] })).toEqual({
      $inc: { attempt: 1, version: 1 },
      $set: { state: 'Executing' },
      $unset: { note: '' },
    });
  });

  it('refuses changes that would corrupt the guard or the stored shape', () => {
    const refuse = (transition: Transition<Invocation>) => expect(() => casUpdate(transition)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    refuse({ ...base, set: { version: 9 } as never });
    refuse({ ...base, set: { _id: 'x' } as never });
    refuse({ ...base, inc: { version: 1 } as never });
    refuse({ ...base, set: { detail: { 'a.b': 'x' } as never } });
    refuse({ ...base, set: { ['a.b' as 'note']: 'x' } });
    refuse({ ...base, set: { note: 'x' }, unset: ['note'] });
    refuse({ ...base, inc: { attempt: Number.NaN } });
  });
});

describe('meetsExpectation', () => {
  it('checks version and state', () => {
    const doc = { _id: 'inv-1', version: 3, state: 'Validated' };
    expect(meetsExpectation(doc, { ...base, expect: { version: 3, state: ['Received', 'Validated'] } })).toBe(true);
    expect(meetsExpectation(doc, { ...base, expect: { version: 4 } })).toBe(false);
    expect(meetsExpectation(doc, { ...base, expect: { version: 3, state: 'Received' } })).toBe(false);
  });
});
