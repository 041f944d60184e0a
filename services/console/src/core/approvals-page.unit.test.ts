import { describe, expect, it } from 'vitest';
import { pendingApproval } from '../../test/approvals.js';
import { approvalsPage, pendingFragment } from './approvals-page.js';
import type { Viewer } from './layout.js';
import type { PreviewState } from './approvals-page.js';

const approver: Viewer = { principal: 'user:alice@acme.example', roles: ['approver'], workspace: 'main', workspaces: ['main', 'ops'], csrf: 'csrf-token-of-alice' };
const preview: PreviewState = { ok: true, preview: { text: '{"repo":"acme/old-site","password":"[REDACTED]"}', redacted: ['/password'], truncated: false } };

describe('the pending approvals', () => {
  it('shows each approval with its hooks and the decision forms for an approver', () => {
    const approval = pendingApproval();
    const out = pendingFragment([{ approval, preview }], approver).value;
    expect(out).toContain(`<article class="approval" id="approval-${approval.approvalId}" data-approval-id="${approval.approvalId}"`);
    expect(out).toContain('<span class="tool">github.delete_repo@1.2.0</span>');
    expect(out).toContain('<dd class="side-effect">DESTRUCTIVE</dd>');
    expect(out).toContain('<dd class="risk">HIGH</dd>');
    expect(out).toContain(`<time class="expires" datetime="${approval.expiresAt}">`);
    expect(out).toContain('<pre class="arguments">{&quot;repo&quot;:&quot;acme/old-site&quot;,&quot;password&quot;:&quot;[REDACTED]&quot;}</pre>');
    expect(out).toContain(`action="/w/main/approvals/${approval.approvalId}/approve"`);
    expect(out).toContain(`action="/w/main/approvals/${approval.approvalId}/reject"`);
    expect(out.match(/name="_csrf" value="csrf-token-of-alice"/g)).toHaveLength(2);
    expect(out).toContain('data-action="approve"');
    expect(out).toMatch(/name="reason" maxlength="1024" required/);
    expect(out).not.toContain('cannot-decide');
  });

  it('shows no forms to the requester, and says why', () => {
    const out = pendingFragment([{ approval: pendingApproval({ requestedBy: approver.principal }), preview }], approver).value;
    expect(out).not.toContain('<form');
    expect(out).toContain('<p class="cannot-decide">You cannot decide this approval: the call runs on your behalf');
  });

  it('shows no forms to an operator who is no approver', () => {
    const out = pendingFragment([{ approval: pendingApproval(), preview }], { ...approver, roles: ['viewer'] }).value;
    expect(out).not.toContain('<form');
    expect(out).toContain('You are not an approver of this call: it needs role approver.');
  });

  it('says which code a failed preview failed with', () => {
    const out = pendingFragment([{ approval: pendingApproval(), preview: { ok: false, code: 'NOT_FOUND' } }], approver).value;
    expect(out).toContain('preview unavailable: NOT_FOUND');
  });

  it('escapes what services and tools wrote: summaries, arguments, ids', () => {
    const out = pendingFragment(
      [{ approval: pendingApproval({ summary: '<script>alert(1)</script>', agentId: 'a"><img src=x onerror=alert(2)>' }), preview: { ok: true, preview: { text: '</pre><script>alert(3)</script>', redacted: [], truncated: false } } }],
      approver,
    ).value;
    expect(out).not.toContain('<script');
    expect(out).not.toContain('<img');
    expect(out).toContain('&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;');
  });

  it('says the list is empty', () => {
    expect(pendingFragment([], approver).value).toContain('<p class="empty">');
  });

  it('frames the page with the live status, the stream address, one script and one stylesheet of its own', () => {
    const page = approvalsPage({ viewer: approver, items: [], flash: { approvalId: 'x', outcome: 'granted' } });
    expect(page).toContain('<section id="pending-approvals" aria-label="Pending approvals" data-events="/w/main/approvals/events">');
    expect(page).toContain('<p id="live-status" aria-live="polite">');
    expect(page).toContain('<p class="flash" role="status">Approval x granted.</p>');
    expect(page).toContain('<a class="skip-link" href="#main">');
    expect(page).toContain('<button type="submit" id="sign-out">');
    expect(page).toContain('href="/w/ops/approvals"');
    expect(page.match(/<script/g)).toHaveLength(1);
    expect(page).toContain('<script src="/assets/console.js" defer></script>');
    expect(page).not.toMatch(/\sstyle=|<style|\son[a-z]+=/);
  });
});
