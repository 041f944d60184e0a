// Publishes the public lifecycle events of each append to the approval stream (durable consumer `approval-events`):
// appending is the decision, and this is how everyone else hears of it. Each event goes out with its deterministic
// Nats-Msg-Id (from approvalId and type), so a message redelivered after a crash republishes rather than loses, and
// the copy is dropped. One message in flight at a time keeps an approval's events in the order they were decided.
import { ApprovalOutcomeEvent, eventMsgId, subjectOfEvent, type ApprovalStreamEvent } from '@toolplane/contracts';
import { publish, type DeliveryContext, type Messaging } from '@toolplane/messaging';

/** Publishes an append's outcome events (not the private opening) on the events stream, in order. */
export async function relayApprovalEvents(messaging: Messaging, appended: { readonly events: readonly ApprovalStreamEvent[] }, delivery: Pick<DeliveryContext, 'signal'>): Promise<void> {
  for (const event of appended.events) {
    if (event.type === 'ApprovalOpened') continue;
    await publish(messaging, { subject: subjectOfEvent(event), schema: ApprovalOutcomeEvent, message: event, msgId: eventMsgId(event), signal: delivery.signal });
  }
}
