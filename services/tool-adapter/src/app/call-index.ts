import { scopeOfSubject, type InvocationReceived } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import type { InvocationRuntime } from './invocation-runtime.js';

// Every call's ToolCallId indexed off the hot path, so an operator can inspect any call by it (inspectInvocation):
// the pipeline indexes only the calls an approval decision or a reconcile must find (parked, Uncertain), since a
// READ call's hot path writes nothing but its two facts. This consumer of InvocationReceived (which carries the
// ToolCallId and the idempotency key naming the call's subject) writes the rest, milliseconds after the event. The
// index entry is written once (at version 0): a ToolCallId the pipeline or an earlier delivery indexed is left as is.

/** Handles one InvocationReceived; resolving acks it. */
export async function indexReceivedCall(runtime: Pick<InvocationRuntime, 'calls'>, event: InvocationReceived, delivery: DeliveryContext): Promise<void> {
  await runtime.calls.indexToolCallId(scopeOfSubject(delivery.subject), event.metadata.toolCallId, event.data.idempotencyKey, delivery.signal);
}
