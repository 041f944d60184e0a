import { describe, expect, it } from 'vitest';
import { traceCarrierOf } from './trace-meta.js';

const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('traceCarrierOf', () => {
  it('takes a well-formed traceparent, with its tracestate', () => {
    expect(traceCarrierOf({ traceparent })).toEqual({ traceparent });
    expect(traceCarrierOf({ traceparent, tracestate: 'vendor=opaque,other=1' })).toEqual({ traceparent, tracestate: 'vendor=opaque,other=1' });
    // A later version may carry more fields.
    expect(traceCarrierOf({ traceparent: `01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra` })).toBeDefined();
  });

  it('ignores anything else, never failing', () => {
    const bad: unknown[] = [
      undefined,
      null,
      'text',
      {},
      { traceparent: 42 },
      { traceparent: { nested: traceparent } },
      { traceparent: traceparent.toUpperCase() },
      { traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' },
      { traceparent: '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01' },
      { traceparent: 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      { traceparent: `${traceparent}-extra` },
      { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01' },
      { traceparent: ` ${traceparent}` },
    ];
    for (const meta of bad) expect(traceCarrierOf(meta), JSON.stringify(meta)).toBeUndefined();
  });

  it('drops a tracestate that is not a bounded printable string, keeping the traceparent', () => {
    expect(traceCarrierOf({ traceparent, tracestate: 7 })).toEqual({ traceparent });
    expect(traceCarrierOf({ traceparent, tracestate: 'a=1\nb=2' })).toEqual({ traceparent });
    expect(traceCarrierOf({ traceparent, tracestate: `a=${'x'.repeat(600)}` })).toEqual({ traceparent });
  });
});
