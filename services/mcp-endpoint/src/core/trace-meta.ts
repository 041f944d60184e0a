// The W3C trace context a tools/call may carry in `params._meta` (the OpenTelemetry MCP semantic conventions):
// `traceparent` and, with it, `tracestate`. Only a well-formed value is taken; anything else (a wrong type, a bad
// shape, the all-zero ids, version ff, an oversized state) is ignored, never an error: a client's tracing must not be
// able to fail its call.

/** A trace context as a propagator reads it: `traceparent`, and `tracestate` when one came with it. */
export type TraceCarrier = { readonly traceparent: string; readonly tracestate?: string };

// version-traceid-parentid-flags, lower-case hex; version 00 has exactly these four fields, a later one may add more.
const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
// W3C: at most 32 list members; 512 characters is the length every implementation must accept.
const maxTracestateLength = 512;
const tracestatePattern = /^[\x20-\x7e]*$/;

/** The trace context of a tools/call's `_meta`, if it holds a well-formed one. */
export function traceCarrierOf(meta: unknown): TraceCarrier | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined;
  const { traceparent, tracestate } = meta as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== 'string' || !wellFormedTraceparent(traceparent)) return undefined;
  if (typeof tracestate === 'string' && tracestate.length <= maxTracestateLength && tracestatePattern.test(tracestate)) return { traceparent, tracestate };
  return { traceparent };
}

function wellFormedTraceparent(value: string): boolean {
  const match = traceparentPattern.exec(value);
  if (match === null) return false;
  const [, version, traceId, spanId, , rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return false;
  return !/^0+$/.test(traceId ?? '') && !/^0+$/.test(spanId ?? '');
}
