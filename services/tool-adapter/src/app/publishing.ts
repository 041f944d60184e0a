import { InvocationReply, LifecycleEvent, eventMsgId, invocationReplySubject, subjectOfEvent, type Scope } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import type { PipelineEvent } from '../core/invocation-event-log.js';

/** Publishes events in order, each with its deterministic Nats-Msg-Id (a republished event is dropped as a duplicate). */
export async function publishEvents(messaging: Messaging, events: readonly PipelineEvent[], signal?: AbortSignal): Promise<void> {
  for (const event of events) {
    await publish(messaging, { subject: subjectOfEvent(event), schema: LifecycleEvent, message: event, msgId: eventMsgId(event), ...(signal ? { signal } : {}) });
  }
}

/** Sends a reply to the runtime's inbox (core NATS: a reply is not kept; the receipt is, in the document). */
export function sendReply(messaging: Messaging, scope: Scope, replyInbox: string | undefined, reply: InvocationReply): void {
  if (replyInbox === undefined) return;
  messaging.connection.publish(invocationReplySubject(scope, replyInbox), JSON.stringify(InvocationReply.parse(reply)));
}
