import { raceAbort } from '@toolplane/contracts';
import type { Messaging } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';

/**
 * Removes a subject's older messages from a stream, keeping its last `keep` (default 1): for a log whose last message
 * holds the whole state, so what the earlier ones held (an old ciphertext) is gone from the server. Resolves with how
 * many messages were removed.
 */
export async function purgeSubject(m: Messaging, stream: string, subject: string, options: { readonly keep?: number; readonly signal?: AbortSignal } = {}): Promise<number> {
  const what = `purging ${subject} from ${stream}`;
  try {
    const response = await raceAbort(m.manager.streams.purge(stream, { filter: subject, keep: options.keep ?? 1 }), options.signal, what);
    return response.purged;
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}
