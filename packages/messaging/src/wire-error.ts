import type { WireError } from '@toolplane/contracts';

// WireError's contract bounds the message; a longer one would make the whole envelope or dead letter invalid.
const maxMessage = 4096;

/** A WireError that always satisfies its contract: the message bounded, details dropped if they are not JSON. */
export function wireSafe(reason: WireError): WireError {
  const message = reason.message.length > maxMessage ? reason.message.slice(0, maxMessage) : reason.message;
  let details = reason.details;
  try {
    if (details !== undefined) JSON.stringify(details);
  } catch {
    details = undefined;
  }
  return { code: reason.code, message, retryable: reason.retryable, ...(details === undefined ? {} : { details }) };
}
