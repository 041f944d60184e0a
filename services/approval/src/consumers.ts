/** The durable consumers of the approval service. */
export const approvalConsumers = {
  /** ApprovalRequested from the tool adapter (events stream). */
  requests: 'approval',
  /** Registry events that void approvals (events stream). */
  registry: 'approval-registry',
  /** Folds the approval stream into the read model. */
  projector: 'approval-projector',
  /** Publishes the approval stream's outcome events on the events stream. */
  events: 'approval-events',
  /** ApprovalRequested again, to tell tenants' webhook receivers (events stream). */
  webhooks: 'approval-webhooks',
} as const;
