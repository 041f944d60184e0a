// A FlowRun: its tool-call journal from the audit projection and, when FlowRunner answers, the run's own state.
import type { FlowJournalEntry, FlowRunView } from '@toolplane/contracts';
import { alertOf, pageOf, workspaceUrl, type Viewer } from './layout.js';
import { html } from './html.js';

/** FlowRunner's view of the run, or why it is not there. */
export type RunState = { readonly ok: true; readonly run: FlowRunView } | { readonly ok: false; readonly code: string; readonly message: string };

/** The run page. */
export function runPage(options: {
  readonly viewer: Viewer;
  readonly flowRunId: string;
  readonly entries: readonly FlowJournalEntry[];
  readonly journalError?: { readonly code: string; readonly message: string };
  readonly run: RunState;
}): string {
  const { viewer, run } = options;
  const rows = options.entries.map(
    (entry) => html`<tr><td>${entry.occurredAt}</td><td>${entry.type}</td><td><a href="${workspaceUrl(viewer.workspace, 'calls', entry.toolCallId)}">${entry.toolCallId}</a></td><td>${entry.toolId}${entry.toolVersion === undefined ? '' : `@${entry.toolVersion}`}</td><td>${entry.attempt}</td><td>${entry.durationMs ?? ''}</td><td>${entry.failure === undefined ? '' : `${entry.failure.code}: ${entry.failure.message}`}</td></tr>`,
  );
  return pageOf({
    title: `Flow run ${options.flowRunId}`,
    viewer,
    section: 'calls',
    body: html`<h1>Flow run <code>${options.flowRunId}</code></h1>
<dl class="facts">
<dt>State</dt><dd id="run-state">${run.ok ? run.run.state : `unavailable: ${run.code}`}</dd>
${run.ok ? html`<dt>Definition</dt><dd>${run.run.definitionName}@${run.run.definitionVersion}</dd><dt>Flow</dt><dd>${run.run.flowId}@${run.run.flowVersion}</dd><dt>Started</dt><dd>${run.run.startedAt}</dd>${run.run.failure === undefined ? '' : html`<dt>Failure</dt><dd>${run.run.failure.code}: ${run.run.failure.message}</dd>`}` : ''}
</dl>
<h2>Journal</h2>
${options.journalError === undefined ? '' : alertOf(options.journalError)}
<div class="table-wrap">
<table id="journal">
<thead><tr><th scope="col">At</th><th scope="col">Entry</th><th scope="col">Tool call</th><th scope="col">Tool</th><th scope="col">Attempt</th><th scope="col">ms</th><th scope="col">Failure</th></tr></thead>
<tbody>${rows}</tbody>
</table>
</div>`,
  });
}
