import type { ConsumerDiagnostic } from '@toolplane/messaging';
import type { Logger } from 'pino';

/**
 * Logs what a consumer reports about messages it could not handle: sequence numbers, codes and reasons only,
 * never the message itself (it may hold arguments, tokens or other payload).
 */
export function logConsumerDiagnostic(log: Logger): (diagnostic: ConsumerDiagnostic) => void {
  return (diagnostic) => {
    const { type } = diagnostic;
    if (type === 'fetch_failed') log.warn({ type, err: diagnostic.error }, 'consumer problem');
    else if (type === 'settle_failed') log.warn({ type, streamSequence: diagnostic.streamSequence, action: diagnostic.action, err: diagnostic.error }, 'consumer problem');
    else log.warn({ type, streamSequence: diagnostic.streamSequence, deliveryCount: diagnostic.deliveryCount, code: diagnostic.reason.code, reason: diagnostic.reason.message }, 'message not handled');
  };
}
