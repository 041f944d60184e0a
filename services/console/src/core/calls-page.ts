// The workspace's calls (the audit projection: ids, states, times; never arguments or results), with a GET filter.
import { InvocationState, type RuntimeToolCallSummary } from '@toolplane/contracts';
import { alertOf, pageOf, sectionUrl, workspaceUrl, type Viewer } from './layout.js';
import { html, type SafeHtml } from './html.js';

/** The filters of the calls page as the query string gave them (validated by the use case). */
export interface CallFilters {
  readonly state?: string;
  readonly tool?: string;
  readonly agent?: string;
  readonly run?: string;
  readonly after?: string;
}

function failureText(call: Pick<RuntimeToolCallSummary, 'failure'>): string {
  return call.failure === undefined ? '' : `${call.failure.code}: ${call.failure.message}`;
}

function filterForm(workspace: string, filters: CallFilters): SafeHtml {
  const field = (name: keyof CallFilters, label: string) =>
    html`<div class="field"><label for="${`filter-${name}`}">${label}</label><input type="text" id="${`filter-${name}`}" name="${name}" value="${filters[name] ?? ''}" autocomplete="off"></div>`;
  return html`<form class="filters" method="get" action="${sectionUrl(workspace, 'calls')}">
<div class="field"><label for="filter-state">State</label><select id="filter-state" name="state"><option value="">any</option>${InvocationState.options.map(
    (state) => html`<option value="${state}"${filters.state === state ? html` selected` : ''}>${state}</option>`,
  )}</select></div>
${field('tool', 'Tool id')}
${field('agent', 'Agent id')}
${field('run', 'Flow run id')}
<button type="submit">Filter</button>
</form>`;
}

/** The calls page: the filter form, the table (or the error of the list), and a link to the next page. */
export function callsPage(options: {
  readonly viewer: Viewer;
  readonly filters: CallFilters;
  readonly calls: readonly RuntimeToolCallSummary[];
  readonly next: string | null;
  readonly error?: { readonly code: string; readonly message: string };
}): string {
  const { viewer, filters } = options;
  const nextQuery = options.next === null ? undefined : new URLSearchParams({ ...Object.fromEntries(Object.entries(filters).filter(([key, value]) => key !== 'after' && value !== undefined && value !== '')), after: options.next }).toString();
  const rows = options.calls.map(
    (call) => html`<tr data-tool-call-id="${call.toolCallId}">
<td><a href="${workspaceUrl(viewer.workspace, 'calls', call.toolCallId)}">${call.toolCallId}</a></td>
<td>${call.toolId}${call.toolVersion === undefined ? '' : `@${call.toolVersion}`}</td>
<td class="state">${call.state}</td>
<td>${call.agentId ?? ''}</td>
<td>${call.flowRunId === undefined ? '' : html`<a href="${workspaceUrl(viewer.workspace, 'runs', call.flowRunId)}">${call.flowRunId}</a>`}</td>
<td>${call.lastEventAt}</td>
<td>${failureText(call)}</td>
</tr>`,
  );
  return pageOf({
    title: 'Calls',
    viewer,
    section: 'calls',
    body: html`<h1>Calls</h1>
${filterForm(viewer.workspace, filters)}
${options.error === undefined ? '' : alertOf(options.error)}
<div class="table-wrap">
<table id="calls">
<caption>Tool calls of ${viewer.workspace}, latest activity first</caption>
<thead><tr><th scope="col">Tool call</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Agent</th><th scope="col">Flow run</th><th scope="col">Last event</th><th scope="col">Failure</th></tr></thead>
<tbody>${rows}</tbody>
</table>
</div>
${options.calls.length === 0 && options.error === undefined ? html`<p class="empty">No calls match.</p>` : ''}
${nextQuery === undefined ? '' : html`<p><a rel="next" href="${`${sectionUrl(viewer.workspace, 'calls')}?${nextQuery}`}">Older calls</a></p>`}`,
  });
}
