// The frame of every page: one stylesheet and one script of the console's own (no inline code, so the CSP can forbid
// it), a skip link, and for a signed-in operator the navigation: the workspace's sections, the token's other
// workspaces, and sign-out (a POST form with its CSRF token).
import { CSRF_FIELD } from './csrf.js';
import { html, type SafeHtml } from './html.js';

/** The sections the navigation links to. */
export type Section = 'approvals' | 'calls' | 'audit';

/** What the navigation needs to know about the signed-in operator. */
export interface Viewer {
  readonly principal: string;
  readonly roles: readonly string[];
  /** The workspace the page is of. */
  readonly workspace: string;
  /** Every workspace the operator's token covers. */
  readonly workspaces: readonly string[];
  /** The CSRF token of the operator's session. */
  readonly csrf: string;
}

/** The URL of a workspace's section. */
export function sectionUrl(workspace: string, section: Section): string {
  return workspaceUrl(workspace, section);
}

/** The URL of a page under a workspace: `/w/<workspace>/<segment>/…`, each segment URL-encoded. */
export function workspaceUrl(workspace: string, ...segments: readonly string[]): string {
  return ['', 'w', workspace, ...segments].map((segment) => encodeURIComponent(segment)).join('/');
}

/** A hidden CSRF field. */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`;
}

/** A typed error as the page says it: `CODE: message`, exactly as the service gave it. */
export function alertOf(error: { readonly code: string; readonly message: string }): SafeHtml {
  return html`<p class="alert" role="alert">${error.code}: ${error.message}</p>`;
}

function navigation(viewer: Viewer, current: Section | undefined): SafeHtml {
  const link = (section: Section, label: string) =>
    html`<li><a href="${sectionUrl(viewer.workspace, section)}"${current === section ? html` aria-current="page"` : ''}>${label}</a></li>`;
  const others = viewer.workspaces.filter((workspace) => workspace !== viewer.workspace);
  return html`<header class="site-header">
<nav aria-label="Console">
<p class="brand"><a href="/">Toolplane</a> <span class="workspace" title="workspace">${viewer.workspace}</span></p>
<ul class="sections">${link('approvals', 'Approvals')}${link('calls', 'Calls')}${link('audit', 'Audit')}</ul>
${others.length === 0 ? '' : html`<details class="workspaces"><summary>Workspaces</summary><ul>${others.map((workspace) => html`<li><a href="${sectionUrl(workspace, current ?? 'approvals')}">${workspace}</a></li>`)}</ul></details>`}
<form class="sign-out" method="post" action="/sign-out"><span class="principal">${viewer.principal}</span>${csrfField(viewer.csrf)}<button type="submit" id="sign-out">Sign out</button></form>
</nav>
</header>`;
}

/** A whole page. */
export function pageOf(options: { readonly title: string; readonly viewer?: Viewer; readonly section?: Section; readonly body: SafeHtml }): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Toolplane console</title>
<link rel="stylesheet" href="/assets/console.css">
<script src="/assets/console.js" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
${options.viewer === undefined ? html`<header class="site-header"><p class="brand">Toolplane</p></header>` : navigation(options.viewer, options.section)}
<main id="main" tabindex="-1">
${options.body}
</main>
</body>
</html>
`.value;
}

/** A page that only says what went wrong (a refused request, a failed read). */
export function errorPage(options: { readonly title: string; readonly viewer?: Viewer; readonly error: { readonly code: string; readonly message: string }; readonly back?: { readonly href: string; readonly label: string } }): string {
  return pageOf({
    title: options.title,
    ...(options.viewer === undefined ? {} : { viewer: options.viewer }),
    body: html`<h1>${options.title}</h1>
${alertOf(options.error)}
${options.back === undefined ? '' : html`<p><a href="${options.back.href}">${options.back.label}</a></p>`}`,
  });
}
