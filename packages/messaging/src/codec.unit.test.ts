import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decode, encode } from './codec.js';

const Order = z.object({ id: z.string(), qty: z.number().int().default(1) });
const bytes = (text: string) => new TextEncoder().encode(text);

describe('encode', () => {
  it('encodes the parsed value, defaults applied', () => {
    expect(encode(Order, { id: 'a' }, 'order')).toBe('{"id":"a","qty":1}');
  });

  it('rejects a value that breaks the contract with INVALID_ARGUMENT naming the path', () => {
    expect(() => encode(Order, { id: 7 } as never, 'order')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('id:') as unknown }));
  });
});

describe('decode', () => {
  it('returns the typed value of valid JSON', () => {
    expect(decode(Order, bytes('{"id":"a","qty":2}'), 'order')).toEqual({ ok: true, value: { id: 'a', qty: 2 } });
  });

  it.each([
    ['bad JSON', bytes('{"id":'), 'is not UTF-8 JSON'],
    ['invalid UTF-8', new Uint8Array([0x22, 0xff, 0x22]), 'is not UTF-8 JSON'],
    ['a contract violation', bytes('{"qty":"x"}'), 'does not match its contract'],
  ])('reports %s as INVALID_ARGUMENT', (_, data, message) => {
    const decoded = decode(Order, data, 'order');
    expect(decoded).toMatchObject({ ok: false, reason: { code: 'INVALID_ARGUMENT', retryable: false, message: expect.stringContaining(message) as unknown } });
  });
});
