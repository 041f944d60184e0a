// Whether the console offers an operator the approve and reject forms. Only a courtesy: the approval service decides
// who may decide and refuses everyone else with a typed error, which the console shows as it is. The rule mirrors
// the service's: a named principal or a holder of a named role, and never the principal the call runs for.
import type { ApprovalView, OperatorClaims } from '@toolplane/contracts';

/** Why the forms are offered or not, as data for the page to word. */
export type DecisionRight =
  | { readonly may: true }
  | { readonly may: false; readonly why: 'own-request' }
  | { readonly may: false; readonly why: 'not-approver'; readonly roles: readonly string[]; readonly principals: readonly string[] }
  | { readonly may: false; readonly why: 'not-pending'; readonly state: ApprovalView['state'] };

/** What the console knows of an approval and an operator to tell whether to offer the forms. */
export function decisionRight(approval: Pick<ApprovalView, 'approvers' | 'requestedBy' | 'state'>, operator: { readonly principal: OperatorClaims['principal']; readonly roles: readonly string[] }): DecisionRight {
  if (approval.state !== 'Pending') return { may: false, why: 'not-pending', state: approval.state };
  if (approval.requestedBy === operator.principal) return { may: false, why: 'own-request' };
  const byRole = approval.approvers.roles.some((role) => operator.roles.includes(role));
  const byName = approval.approvers.principals.includes(operator.principal);
  if (!byRole && !byName) return { may: false, why: 'not-approver', roles: approval.approvers.roles, principals: approval.approvers.principals };
  return { may: true };
}
