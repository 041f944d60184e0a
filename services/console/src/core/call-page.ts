// One call: its projection (state, attempts, ids) and, from the adapter, its redacted arguments and, once terminal,
// the result and signed receipt. Tool output is untrusted data: it is only ever text in a <pre>, escaped.
import { contentBlockSummary, type InspectInvocationReply, type InvocationResult, type RuntimeToolCallView } from '@toolplane/contracts';
import { alertOf, pageOf, sectionUrl, workspaceUrl, type Viewer } from './layout.js';
import { html, type SafeHtml } from './html.js';

/** What the adapter said about the call, or the code its read failed with. */
export type Inspection = { readonly ok: true; readonly reply: InspectInvocationReply } | { readonly ok: false; readonly code: string; readonly message: string };

function fact(label: string, value: string | number | SafeHtml | undefined): SafeHtml {
  return value === undefined || value === '' ? html`` : html`<dt>${label}</dt><dd>${value}</dd>`;
}

/** The text of a result: its blocks' text, each other block (image, audio, link, binary resource) as one line; else its text. */
function contentText(result: InvocationResult): string | undefined {
  if (result.content === undefined) return result.textContent;
  return result.content
    .map((block) => (block.type === 'text' ? block.text : block.type === 'resource' && 'text' in block.resource ? block.resource.text : contentBlockSummary(block)))
    .join('\n');
}

function resultText(inspection: Inspection): { text: string; receipt: string } {
  if (!inspection.ok) return { text: `unavailable: ${inspection.code}`, receipt: `unavailable: ${inspection.code}` };
  const result = inspection.reply.result;
  if (result === undefined) return { text: `no result yet: the call is ${inspection.reply.state}`, receipt: 'no receipt yet' };
  const content = contentText(result);
  const parts = [
    `status: ${result.status} (provenance: ${result.provenance}${result.truncated ? ', cut to its size bound' : ''})`,
    ...(content === undefined ? [] : ['', content]),
    ...(result.structuredContent === undefined ? [] : ['', JSON.stringify(result.structuredContent, null, 2)]),
  ];
  return { text: parts.join('\n'), receipt: JSON.stringify(result.receipt, null, 2) };
}

/** The call page. */
export function callPage(options: { readonly viewer: Viewer; readonly call: RuntimeToolCallView; readonly inspection: Inspection }): string {
  const { viewer, call, inspection } = options;
  const { text, receipt } = resultText(inspection);
  const attempts = call.attempts.map(
    (attempt) => html`<tr><td>${attempt.attempt}</td><td><code>${attempt.invocationId}</code></td><td>${attempt.state}</td><td>${attempt.startedAt ?? ''}</td><td>${attempt.endedAt ?? ''}</td><td>${attempt.durationMs ?? ''}</td><td>${attempt.failure === undefined ? '' : `${attempt.failure.code}: ${attempt.failure.message}`}</td></tr>`,
  );
  const argumentsText = inspection.ok ? inspection.reply.arguments.text : `preview unavailable: ${inspection.code}`;
  return pageOf({
    title: `Call ${call.toolCallId}`,
    viewer,
    section: 'calls',
    body: html`<p><a href="${sectionUrl(viewer.workspace, 'calls')}">All calls</a></p>
<h1>Call <code>${call.toolCallId}</code></h1>
<dl class="facts">
<dt>State</dt><dd id="call-state">${call.state}</dd>
${fact('Tool', `${call.toolId}${call.toolVersion === undefined ? '' : `@${call.toolVersion}`}`)}
${fact('Side effect', call.sideEffectClass)}
${fact('Risk', call.riskClass)}
${fact('Principal', call.principal)}
${fact('Agent', call.agentId === undefined ? undefined : `${call.agentId}${call.agentRevision === undefined ? '' : `@${call.agentRevision}`}`)}
${fact('Flow run', call.flowRunId === undefined ? undefined : html`<a id="flow-run" href="${workspaceUrl(viewer.workspace, 'runs', call.flowRunId)}">${call.flowRunId}</a>`)}
${fact('Approval', call.approvalId)}
${fact('Failure', call.failure === undefined ? undefined : `${call.failure.code}: ${call.failure.message}`)}
${fact('Started', call.startedAt)}
${fact('Ended', call.endedAt)}
${fact('Duration (ms)', call.durationMs)}
${fact('Correlation', call.correlationId)}
${fact('Request hash', call.requestHash)}
</dl>
<h2>Attempts</h2>
<div class="table-wrap">
<table id="attempts">
<thead><tr><th scope="col">Attempt</th><th scope="col">Invocation</th><th scope="col">State</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">ms</th><th scope="col">Failure</th></tr></thead>
<tbody>${attempts}</tbody>
</table>
</div>
${inspection.ok ? '' : alertOf(inspection)}
<h2>Arguments</h2>
<pre id="arguments">${argumentsText}</pre>
${inspection.ok && inspection.reply.arguments.redacted.length > 0 ? html`<p class="preview-notes">Redacted: ${inspection.reply.arguments.redacted.join(', ')}</p>` : ''}
<h2>Result <small>(tool output: untrusted data)</small></h2>
<pre id="result">${text}</pre>
<h2>Receipt</h2>
<pre id="receipt">${receipt}</pre>`,
  });
}
