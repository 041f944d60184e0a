// Folds the approval stream into the `approvals` read model (durable consumer `approval-projector`). Each message
// names an approval; the projector folds that approval's whole stream as it is now and writes the document whole by
// `_id`. So a redelivered, duplicated or late message writes the same or a newer fold, never an older one, as long
// as one message is in flight at a time across replicas (the consumer's max ack pending is 1): a single writer.
import type { ApprovalStreamEvent } from '@toolplane/contracts';
import { foldEvents, type EventStore } from '@toolplane/event-store';
import type { DeliveryContext } from '@toolplane/messaging';
import type { StoreCollection } from '@toolplane/store';
import { approvalDecider } from '../core/approval-decider.js';
import { putApproval } from './approval-read-model.js';
import type { StoredApproval } from './collections.js';

/** What the projector reads from and writes to. */
export interface ApprovalProjection {
  readonly events: EventStore<ApprovalStreamEvent>;
  readonly approvals: StoreCollection<StoredApproval>;
}

/** Projects the approval an appended message belongs to; acked (by resolving) only once the document is written. */
export async function projectApproval(projection: ApprovalProjection, appended: { readonly events: readonly ApprovalStreamEvent[] }, delivery: Pick<DeliveryContext, 'signal'>): Promise<void> {
  const approvalId = appended.events[0]?.data.approvalId;
  if (approvalId === undefined) return;
  const { events } = await projection.events.readStream(approvalId, { signal: delivery.signal });
  const approval = foldEvents(approvalDecider, events);
  if (approval !== null) await putApproval(projection.approvals, approval, delivery.signal);
}
