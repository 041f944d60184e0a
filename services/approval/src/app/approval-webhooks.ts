// Tells a tenant's webhook receiver about each ApprovalRequested (durable consumer `approval-webhooks`, apart from
// the one that opens approvals, so a slow or failing receiver never holds up an approval).
import { ToolplaneError, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, scopeOfSubject, type ApprovalRequested } from '@toolplane/contracts';
import type { DeliveryContext } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import type { WebhookPost } from '../adapters/webhook-sender.js';
import { approvalRequestedNotification, decideWebhookDelivery, expiredBeforeDelivery, webhookRouteFor, webhookSignature, type WebhookResponse } from '../core/approval-webhook.js';
import type { ApprovalWebhooks } from '../webhook-settings.js';

/**
 * Deliveries of one event, the first included: the consumer's max_deliver and the point where a failing receiver is
 * given up on. With the backoff below, the last one comes about six minutes after the first.
 */
export const webhookMaxDeliveries = 10;

/** The wait before redelivering after the n-th failed delivery: exponential, then once a minute. */
export const webhookRetryBackoffMs: readonly number[] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000];

/** How one delivery of a notification ended: the outcomes of the webhook delivery counter. */
export type WebhookDeliveryOutcome = 'delivered' | 'retry' | 'given_up' | 'skipped';

/** What delivering webhooks needs. */
export interface ApprovalWebhookRuntime {
  readonly webhooks: ApprovalWebhooks;
  readonly consolePublicUrl: string | undefined;
  readonly timeoutMs: number;
  readonly clock: () => Date;
  readonly logger: Logger;
  readonly post: (post: WebhookPost) => Promise<WebhookResponse>;
  /** Hears how each delivery ended (skipped: nothing to send: no webhook there, nothing to notify, or expired). */
  readonly onDelivery: (outcome: WebhookDeliveryOutcome) => void;
}

/**
 * Sends the event's notification to its tenant's receiver, signed afresh on every delivery (the receiver checks the
 * timestamp), with the event id as WEBHOOK_ID_HEADER on every one. Resolves (the event is acked) when delivered,
 * when the tenant or workspace has no webhook, when there is nothing to notify, and when the last delivery failed
 * (one warning); throws TEMPORARY_UNAVAILABLE otherwise, for the consumer to redeliver after a backoff.
 */
export async function notifyApprovalRequested(runtime: ApprovalWebhookRuntime, event: ApprovalRequested, delivery: Pick<DeliveryContext, 'subject' | 'signal' | 'deliveryCount'>): Promise<void> {
  const scope = scopeOfSubject(delivery.subject);
  const route = webhookRouteFor(runtime.webhooks, scope);
  if (route === undefined) {
    runtime.onDelivery('skipped');
    return;
  }
  const approvalId = event.data.approvalId;
  const built = approvalRequestedNotification(event, scope, { consolePublicUrl: runtime.consolePublicUrl });
  if (built.kind === 'skip') {
    runtime.logger.debug({ tenant: scope.tenant, approvalId, reason: built.reason }, 'approval webhook not sent');
    runtime.onDelivery('skipped');
    return;
  }
  const now = runtime.clock();
  if (expiredBeforeDelivery(built.notification, now)) {
    runtime.logger.info({ tenant: scope.tenant, approvalId, deliveries: delivery.deliveryCount }, 'approval webhook not sent: the approval expired before it could be delivered');
    runtime.onDelivery('skipped');
    return;
  }

  const body = JSON.stringify(built.notification);
  const response = await runtime.post({
    url: route.url,
    body,
    headers: { [WEBHOOK_SIGNATURE_HEADER]: webhookSignature(route.secret.reveal(), body, now), [WEBHOOK_ID_HEADER]: built.notification.id },
    timeoutMs: runtime.timeoutMs,
    signal: delivery.signal,
  });
  const decision = decideWebhookDelivery(response, delivery.deliveryCount, webhookMaxDeliveries);
  switch (decision.kind) {
    case 'delivered':
      runtime.logger.debug({ tenant: scope.tenant, approvalId, deliveries: delivery.deliveryCount }, 'approval webhook delivered');
      runtime.onDelivery('delivered');
      return;
    case 'give-up':
      runtime.logger.warn(
        { tenant: scope.tenant, workspace: scope.workspace, approvalId, status: decision.outcome, deliveries: delivery.deliveryCount },
        'approval webhook not delivered; giving up',
      );
      runtime.onDelivery('given_up');
      return;
    case 'retry':
      runtime.onDelivery('retry');
      throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `the approval webhook receiver of tenant ${scope.tenant} did not take approval ${approvalId}: ${decision.outcome}`);
  }
}
