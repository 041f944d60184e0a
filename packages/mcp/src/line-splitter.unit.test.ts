import { describe, expect, it } from 'vitest';
import { LineSplitter, LineTooLongError } from './line-splitter.js';

describe('LineSplitter', () => {
  it('splits lines across chunk boundaries and strips a trailing CR', () => {
    const splitter = new LineSplitter(100);
    expect(splitter.push(Buffer.from('{"a":1}\n{"b"'))).toEqual(['{"a":1}']);
    expect(splitter.push(Buffer.from(':2}\r\n\n'))).toEqual(['{"b":2}', '']);
    expect(splitter.push(Buffer.from('x'))).toEqual([]);
  });

  it('keeps multi-byte characters split across chunks intact', () => {
    const splitter = new LineSplitter(100);
    const bytes = Buffer.from('é\n');
    expect(splitter.push(bytes.subarray(0, 1))).toEqual([]);
    expect(splitter.push(bytes.subarray(1))).toEqual(['é']);
  });

  it('refuses a line longer than the bound before its newline arrives', () => {
    const splitter = new LineSplitter(10);
    expect(splitter.push(Buffer.from('12345'))).toEqual([]);
    expect(() => splitter.push(Buffer.from('678901'))).toThrow(LineTooLongError);
    // After a refusal the buffer is empty again.
    expect(splitter.push(Buffer.from('ok\n'))).toEqual(['ok']);
  });

  it('refuses a complete line longer than the bound, and accepts one exactly at it', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push(Buffer.from('1234\n'))).toEqual(['1234']);
    expect(() => splitter.push(Buffer.from('12345\n'))).toThrow(LineTooLongError);
  });
});
