import { describe, expect, it } from 'vitest';
import { bearerHeaders, bearerTokenOf } from './bearer.js';

describe('bearer tokens in request headers', () => {
  it('round-trips a token through the Authorization header, whatever the header name’s case', () => {
    expect(bearerHeaders('abc.def.ghi')).toEqual({ Authorization: 'Bearer abc.def.ghi' });
    expect(bearerTokenOf({ Authorization: ['Bearer abc.def.ghi'] })).toBe('abc.def.ghi');
    expect(bearerTokenOf({ authorization: ['Bearer abc.def.ghi'] })).toBe('abc.def.ghi');
  });

  it('finds nothing when the header is missing, not a bearer token, or given twice', () => {
    expect(bearerTokenOf({})).toBeUndefined();
    expect(bearerTokenOf({ Authorization: ['Basic dXNlcjpwdw=='] })).toBeUndefined();
    expect(bearerTokenOf({ Authorization: ['Bearer a.b.c', 'Bearer d.e.f'] })).toBeUndefined();
    expect(bearerTokenOf({ Authorization: ['Bearer a.b.c'], authorization: ['Bearer d.e.f'] })).toBeUndefined();
    expect(bearerTokenOf({ Authorization: ['Bearer a b'] })).toBeUndefined();
  });
});
