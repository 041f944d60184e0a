// The tenant's audit chain, walked by the audit projector on request: intact, or where it is broken.
import type { VerifyChainReply } from '@toolplane/contracts';
import { alertOf, pageOf, type Viewer } from './layout.js';
import { html } from './html.js';

/** What `#chain-status` says of a walk. */
export function chainStatusText(reply: VerifyChainReply): string {
  if (reply.firstBreak === undefined) return 'intact';
  return `broken at entry ${reply.firstBreak.position} (${reply.firstBreak.kind}): ${reply.firstBreak.message}`;
}

/** The audit page: the walk's verdict, or the error it failed with. */
export function auditPage(options: { readonly viewer: Viewer; readonly result: { readonly ok: true; readonly reply: VerifyChainReply } | { readonly ok: false; readonly code: string; readonly message: string } }): string {
  const { viewer, result } = options;
  return pageOf({
    title: 'Audit chain',
    viewer,
    section: 'audit',
    body: result.ok
      ? html`<h1>Audit chain of ${result.reply.tenant}</h1>
<p>Status: <strong id="chain-status" class="${result.reply.ok ? 'intact' : 'broken'}">${chainStatusText(result.reply)}</strong></p>
<dl class="facts">
<dt>Entries read</dt><dd>${result.reply.entries}</dd>
<dt>Verified through</dt><dd>${result.reply.verifiedThrough}</dd>
${result.reply.headHash === undefined ? '' : html`<dt>Head hash</dt><dd><code>${result.reply.headHash}</code></dd>`}
${result.reply.firstBreak?.entryId === undefined ? '' : html`<dt>Broken entry</dt><dd><code>${result.reply.firstBreak.entryId}</code></dd>`}
</dl>`
      : html`<h1>Audit chain</h1>
<p>Status: <strong id="chain-status" class="unknown">unknown</strong></p>
${alertOf(result)}`,
  });
}
