import type { z } from 'zod';
import { ToolplaneError, type WireError } from '@toolplane/contracts';

/** The outcome of decoding a payload against a contract: the typed value, or why it is unusable. */
export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: WireError };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const maxIssues = 10;

/** Validates a value against its contract and encodes it as JSON; INVALID_ARGUMENT when it does not conform. */
export function encode<S extends z.ZodType>(schema: S, value: z.input<S>, what: string): string {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const reason = invalid(`${what} does not match its contract`, parsed.error);
    throw new ToolplaneError(reason.code, reason.message, { details: reason.details ?? {} });
  }
  try {
    return JSON.stringify(parsed.data) ?? 'null';
  } catch (error) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${what} cannot be encoded as JSON`, { cause: error });
  }
}

/** Decodes UTF-8 JSON bytes and validates them against a contract; never throws. */
export function decode<S extends z.ZodType>(schema: S, data: Uint8Array, what: string): Decoded<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(strictUtf8.decode(data));
  } catch {
    return { ok: false, reason: { code: 'INVALID_ARGUMENT', message: `${what} is not UTF-8 JSON`, retryable: false } };
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, reason: invalid(`${what} does not match its contract`, parsed.error) };
}

function invalid(message: string, error: z.ZodError): WireError {
  // Paths and messages only: zod's issues can echo input values, which may be sensitive.
  const issues = error.issues.slice(0, maxIssues).map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  const summary = issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
  return { code: 'INVALID_ARGUMENT', message: `${message}: ${summary}`.slice(0, 1000), retryable: false, details: { issues } };
}
