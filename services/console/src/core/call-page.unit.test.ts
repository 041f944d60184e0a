import { describe, expect, it } from 'vitest';
import type { InspectInvocationReply, RuntimeToolCallView } from '@toolplane/contracts';
import { callPage } from './call-page.js';
import { callsPage } from './calls-page.js';
import type { Viewer } from './layout.js';

const viewer: Viewer = { principal: 'user:alice@acme.example', roles: [], workspace: 'main', workspaces: ['main'], csrf: 'csrf' };

const call = {
  tenant: 'acme',
  workspace: 'main',
  toolCallId: 'call_1',
  principal: 'user:bob@acme.example',
  toolId: 'web.fetch',
  toolVersion: '1.0.0',
  invocationId: '0b6a8c1e-3f7d-4c2a-9e5b-1d2c3b4a5f60',
  attemptCount: 1,
  state: 'Observed',
  firstEventAt: '2026-03-01T10:00:00.000Z',
  lastEventAt: '2026-03-01T10:00:01.000Z',
  correlationId: 'c1',
  flowRunId: 'run-7',
  attempts: [{ attempt: 1, invocationId: '0b6a8c1e-3f7d-4c2a-9e5b-1d2c3b4a5f60', state: 'Observed', highestSequence: 6 }],
} as unknown as RuntimeToolCallView;

describe('the call page', () => {
  it('shows tool output only as escaped text', () => {
    const reply = {
      toolCallId: 'call_1',
      invocationId: call.invocationId,
      attempt: 1,
      state: 'Observed',
      toolId: 'web.fetch',
      arguments: { text: '{"url":"https://example.com"}', redacted: [], truncated: false },
      result: { status: 'SUCCESS', textContent: '<script>alert(1)</script><img src=x onerror=alert(2)>', structuredContent: { html: '<iframe src="//evil">' }, truncated: false, provenance: 'untrusted-tool-data', receipt: { note: '<b>' } },
    } as unknown as InspectInvocationReply;
    const page = callPage({ viewer, call, inspection: { ok: true, reply } });
    expect(page).toContain('<dd id="call-state">Observed</dd>');
    expect(page).toContain('<table id="attempts">');
    expect(page).toContain('<pre id="arguments">{&quot;url&quot;:&quot;https://example.com&quot;}</pre>');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;');
    expect(page).toContain('&lt;iframe src=\\&quot;//evil\\&quot;&gt;');
    expect(page).toMatch(/<pre id="receipt">\{\n {2}&quot;note&quot;: &quot;&lt;b&gt;&quot;\n\}<\/pre>/);
    expect(page).toContain('href="/w/main/runs/run-7"');
    expect(page).not.toMatch(/<script>|<img|<iframe/);
  });

  it('shows each non-text content block as one escaped line: type, media type, size and URI', () => {
    const reply = {
      toolCallId: 'call_1',
      invocationId: call.invocationId,
      attempt: 1,
      state: 'Observed',
      toolId: 'web.fetch',
      arguments: { text: '{}', redacted: [], truncated: false },
      result: {
        status: 'SUCCESS',
        content: [
          { type: 'text', text: 'the page:' },
          { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
          { type: 'resource_link', uri: 'https://example.com/<x>', name: 'x', mimeType: 'text/html' },
        ],
        textContent: 'the page:\n[image (image/png) omitted]\n[resource link https://example.com/<x>]',
        truncated: false,
        provenance: 'untrusted-tool-data',
        receipt: {},
      },
    } as unknown as InspectInvocationReply;
    const page = callPage({ viewer, call, inspection: { ok: true, reply } });
    expect(page).toContain('\n\nthe page:\n[image image/png 8 bytes]\n[resource_link text/html https://example.com/&lt;x&gt;]</pre>');
    expect(page).not.toContain('iVBORw0KGgo');
  });

  it('says what failed when the adapter cannot show the call', () => {
    const page = callPage({ viewer, call, inspection: { ok: false, code: 'NOT_FOUND', message: 'no call call_1' } });
    expect(page).toContain('<pre id="arguments">preview unavailable: NOT_FOUND</pre>');
    expect(page).toContain('<pre id="result">unavailable: NOT_FOUND</pre>');
    expect(page).toContain('role="alert">NOT_FOUND: no call call_1</p>');
  });
});

describe('the calls page', () => {
  it('links each row to its call, keeps the filters, and links the next page with them', () => {
    const page = callsPage({ viewer, filters: { tool: 'web.fetch', state: 'Observed' }, calls: [call], next: 'cursor-2' });
    expect(page).toContain('<tr data-tool-call-id="call_1">');
    expect(page).toContain('<a href="/w/main/calls/call_1">call_1</a>');
    expect(page).toContain('<option value="Observed" selected>');
    expect(page).toContain('value="web.fetch"');
    expect(page).toContain('href="/w/main/calls?tool=web.fetch&amp;state=Observed&amp;after=cursor-2"');
  });
});
