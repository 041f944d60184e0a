// The pending approvals of a workspace: one article per approval with what the approver needs to decide (tool,
// effective class and risk, who asks, the request hash it is bound to, the redacted arguments, the expiry), and the
// decision forms when this operator may decide. The section's inner HTML is also what the live stream sends.
import type { ApprovalView, ArgumentPreview, ErrorCode } from '@toolplane/contracts';
import { alertOf, csrfField, pageOf, sectionUrl, workspaceUrl, type Viewer } from './layout.js';
import { html, type SafeHtml } from './html.js';
import { decisionRight } from './who-may-decide.js';

/** The argument preview of an approval's call, or the code its read failed with. */
export type PreviewState = { readonly ok: true; readonly preview: ArgumentPreview } | { readonly ok: false; readonly code: ErrorCode };

/** One pending approval as the page shows it. */
export interface PendingItem {
  readonly approval: ApprovalView;
  readonly preview: PreviewState;
}

/** The page's `?decided=` flash: the approval and how it stands now (or that it could not be read). */
export interface DecidedFlash {
  readonly approvalId: string;
  readonly outcome: 'granted' | 'rejected' | 'decided';
}

const base = (workspace: string, approvalId: string) => workspaceUrl(workspace, 'approvals', approvalId);

function requestedBy(approval: ApprovalView, workspace: string): SafeHtml {
  const agent = approval.agentId === undefined ? '' : html` · agent <span class="agent">${approval.agentId}${approval.agentRevision === undefined ? '' : `@${approval.agentRevision}`}</span>`;
  const run =
    approval.flowRunId === undefined ? '' : html` · flow run <a class="flow-run" href="${workspaceUrl(workspace, 'runs', approval.flowRunId)}">${approval.flowRunId}</a>`;
  return html`<span class="principal">${approval.requestedBy}</span>${agent}${run}`;
}

function previewOf(state: PreviewState): SafeHtml {
  if (!state.ok) return html`<pre class="arguments unavailable">preview unavailable: ${state.code}</pre>`;
  const { preview } = state;
  const notes = [
    preview.redacted.length === 0 ? '' : html`<li>${preview.redacted.length === 1 ? '1 field' : `${preview.redacted.length} fields`} redacted: ${preview.redacted.map((pointer, i) => html`${i === 0 ? '' : ', '}<code>${pointer}</code>`)}</li>`,
    preview.truncated ? html`<li>cut to its first ${preview.text.length} characters</li>` : '',
  ];
  return html`<pre class="arguments">${preview.text}</pre>${notes.some((note) => note !== '') ? html`<ul class="preview-notes">${notes}</ul>` : ''}`;
}

function decisionForms(approval: ApprovalView, viewer: Viewer): SafeHtml {
  const right = decisionRight(approval, viewer);
  if (!right.may) {
    const why =
      right.why === 'own-request'
        ? 'You cannot decide this approval: the call runs on your behalf, so another approver must decide it.'
        : right.why === 'not-pending'
          ? `This approval is ${right.state.toLowerCase()}; it can no longer be decided.`
          : `You are not an approver of this call: it needs ${[...right.roles.map((role) => `role ${role}`), ...right.principals].join(' or ')}.`;
    return html`<p class="cannot-decide">${why}</p>`;
  }
  const id = approval.approvalId;
  return html`<div class="decisions">
<form class="decide" method="post" action="${`${base(viewer.workspace, id)}/approve`}">
${csrfField(viewer.csrf)}
<label for="${`approve-reason-${id}`}">Reason for approving (optional)</label>
<input type="text" id="${`approve-reason-${id}`}" name="reason" maxlength="1024" autocomplete="off">
<button type="submit" data-action="approve">Approve</button>
</form>
<form class="decide" method="post" action="${`${base(viewer.workspace, id)}/reject`}">
${csrfField(viewer.csrf)}
<label for="${`reject-reason-${id}`}">Reason for rejecting (required, shown to the requester)</label>
<input type="text" id="${`reject-reason-${id}`}" name="reason" maxlength="1024" required autocomplete="off">
<button type="submit" data-action="reject">Reject</button>
</form>
</div>`;
}

function approvalArticle(item: PendingItem, viewer: Viewer): SafeHtml {
  const { approval } = item;
  const id = approval.approvalId;
  return html`<article class="approval" id="${`approval-${id}`}" data-approval-id="${id}" aria-labelledby="${`approval-title-${id}`}">
<h2 id="${`approval-title-${id}`}"><span class="tool">${approval.toolId}@${approval.toolVersion}</span></h2>
<p class="summary">${approval.summary}</p>
<dl class="facts">
<dt>Side effect</dt><dd class="side-effect">${approval.sideEffectClass}</dd>
<dt>Risk</dt><dd class="risk">${approval.riskClass}</dd>
<dt>Requested by</dt><dd class="requested-by">${requestedBy(approval, viewer.workspace)}</dd>
<dt>Tool call</dt><dd class="tool-call"><a href="${workspaceUrl(viewer.workspace, 'calls', approval.toolCallId)}">${approval.toolCallId}</a></dd>
<dt>Request hash</dt><dd><code class="request-hash">${approval.requestHash}</code></dd>
<dt>Expires</dt><dd><time class="expires" datetime="${approval.expiresAt}">${approval.expiresAt}</time></dd>
</dl>
<h3>Arguments</h3>
${previewOf(item.preview)}
${decisionForms(approval, viewer)}
</article>`;
}

/** The inner HTML of `#pending-approvals`: the page's first render and every live update. */
export function pendingFragment(items: readonly PendingItem[], viewer: Viewer): SafeHtml {
  if (items.length === 0) return html`<p class="empty">No approvals are pending in ${viewer.workspace}.</p>`;
  return html`${items.map((item) => approvalArticle(item, viewer))}`;
}

/** The approvals page. */
export function approvalsPage(options: { readonly viewer: Viewer; readonly items: readonly PendingItem[]; readonly flash?: DecidedFlash; readonly listError?: { code: string; message: string } }): string {
  const { viewer } = options;
  const flash = options.flash;
  const flashText = flash === undefined ? undefined : flash.outcome === 'decided' ? `Approval ${flash.approvalId} was decided.` : `Approval ${flash.approvalId} ${flash.outcome}.`;
  return pageOf({
    title: 'Pending approvals',
    viewer,
    section: 'approvals',
    body: html`<h1>Pending approvals</h1>
${flashText === undefined ? '' : html`<p class="flash" role="status">${flashText}</p>`}
${options.listError === undefined ? '' : alertOf(options.listError)}
<p id="live-status" aria-live="polite">reconnecting…</p>
<section id="pending-approvals" aria-label="Pending approvals" data-events="${`${sectionUrl(viewer.workspace, 'approvals')}/events`}">
${pendingFragment(options.items, viewer)}
</section>`,
  });
}
