import { LifecycleEvent, eventMsgId, subjectOfEvent, type RegistryEvent } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';

/**
 * Publishes lifecycle events in order, each under its deterministic Nats-Msg-Id, so that a republish (the publisher
 * consumer after a command handler, or after a crash) within the stream's duplicate window is dropped.
 */
export function lifecyclePublisher(messaging: Messaging): (events: readonly RegistryEvent[], signal?: AbortSignal) => Promise<void> {
  return async (events, signal) => {
    for (const event of events) {
      await publish(messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), ...(signal ? { signal } : {}) });
    }
  };
}
