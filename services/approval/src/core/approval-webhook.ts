// The approval-requested webhook's decisions, without I/O: which tenant's receiver an event goes to, the body it
// carries, its signature, and what a receiver's answer means for the delivery.
import { createHmac } from 'node:crypto';
import { ApprovalRequestedNotification, webhookSignedText, type ApprovalRequested, type Scope } from '@toolplane/contracts';

/** Where a tenant's notifications go, as far as the decisions here need it. */
export interface WebhookRoute {
  /** Only these workspaces' approvals; absent: all of the tenant's. */
  readonly workspaces?: readonly string[] | undefined;
}

/** The route for an event of this scope: the tenant's, when it has one that covers the workspace. */
export function webhookRouteFor<R extends WebhookRoute>(routes: Readonly<Record<string, R>>, scope: Scope): R | undefined {
  const route = Object.hasOwn(routes, scope.tenant) ? routes[scope.tenant] : undefined;
  if (route === undefined) return undefined;
  if (route.workspaces !== undefined && !route.workspaces.includes(scope.workspace)) return undefined;
  return route;
}

/** Where the console shows an approval, under its public address. */
export function consoleUrlOf(consolePublicUrl: string, workspace: string, approvalId: string): string {
  return `${consolePublicUrl.replace(/\/+$/, '')}/w/${encodeURIComponent(workspace)}/approvals#approval-${encodeURIComponent(approvalId)}`;
}

/** The notification for an event, or why there is none. */
export type NotificationOutcome =
  | { readonly kind: 'notify'; readonly notification: ApprovalRequestedNotification }
  /** The event cannot open an approval (the approval consumer refuses it too): there is nothing to decide. */
  | { readonly kind: 'skip'; readonly reason: string };

/**
 * The webhook body for an ApprovalRequested that arrived on a subject of `subjectScope`. It names the call and
 * where to decide it; the summary (which may preview arguments), the approvers and the request hash stay out.
 */
export function approvalRequestedNotification(event: ApprovalRequested, subjectScope: Scope, options: { readonly consolePublicUrl?: string | undefined }): NotificationOutcome {
  const { metadata, data } = event;
  // The same refusals as openingOf: an event the approval consumer will not open must not page anyone.
  if (metadata.tenant !== subjectScope.tenant || metadata.workspace !== subjectScope.workspace) return { kind: 'skip', reason: 'the event names another scope than its subject' };
  if (metadata.toolVersion === undefined) return { kind: 'skip', reason: 'the event names no tool version' };
  const parsed = ApprovalRequestedNotification.safeParse({
    type: 'approval.requested',
    id: metadata.eventId,
    occurredAt: metadata.occurredAt,
    tenant: subjectScope.tenant,
    workspace: subjectScope.workspace,
    approvalId: data.approvalId,
    toolCallId: metadata.toolCallId,
    toolId: metadata.toolId,
    toolVersion: metadata.toolVersion,
    sideEffectClass: data.sideEffectClass,
    riskClass: data.riskClass,
    requestedBy: metadata.principal,
    ...(metadata.agentId === undefined ? {} : { agentId: metadata.agentId }),
    ...(metadata.agentRevision === undefined ? {} : { agentRevision: metadata.agentRevision }),
    ...(metadata.flowRunId === undefined ? {} : { flowRunId: metadata.flowRunId }),
    expiresAt: data.expiresAt,
    ...(options.consolePublicUrl === undefined ? {} : { consoleUrl: consoleUrlOf(options.consolePublicUrl, subjectScope.workspace, data.approvalId) }),
  });
  if (!parsed.success) return { kind: 'skip', reason: `the notification does not fit its contract at ${parsed.error.issues[0]?.path.join('.') ?? 'the body'}` };
  return { kind: 'notify', notification: parsed.data };
}

/** The WEBHOOK_SIGNATURE_HEADER value for a raw body sent at `now`: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export function webhookSignature(secret: string, rawBody: string, now: Date): string {
  const timestamp = Math.floor(now.getTime() / 1000);
  const mac = createHmac('sha256', secret).update(webhookSignedText(timestamp, rawBody), 'utf8').digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

/** How one POST ended, as the receiver (or the network) answered it. */
export type WebhookResponse = { readonly status: number } | { readonly failure: string };

/** What to do with a delivery after its POST. */
export type WebhookDeliveryDecision =
  | { readonly kind: 'delivered' }
  /** Try again later, as a redelivery of the event. */
  | { readonly kind: 'retry'; readonly outcome: string }
  /** The last delivery failed too: stop, and say so once. */
  | { readonly kind: 'give-up'; readonly outcome: string };

/** A 2xx delivers; anything else is retried until the `maxDeliveries`-th delivery, which gives up. */
export function decideWebhookDelivery(response: WebhookResponse, deliveryCount: number, maxDeliveries: number): WebhookDeliveryDecision {
  if ('status' in response && response.status >= 200 && response.status < 300) return { kind: 'delivered' };
  const outcome = 'status' in response ? `HTTP ${response.status}` : response.failure;
  return deliveryCount >= maxDeliveries ? { kind: 'give-up', outcome } : { kind: 'retry', outcome };
}

/** Whether an approval expired before its notification could go out: telling anyone now only wastes their time. */
export function expiredBeforeDelivery(notification: ApprovalRequestedNotification, now: Date): boolean {
  return new Date(notification.expiresAt).getTime() <= now.getTime();
}
