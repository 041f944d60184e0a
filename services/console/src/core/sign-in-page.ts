// The sign-in page: paste an operator token, or pick the file holding it (console.js reads the file into the text
// area; the file itself is never uploaded, the file input has no name). The form carries the pre-session CSRF token.
import { alertOf, csrfField, pageOf } from './layout.js';
import { html } from './html.js';

/** The sign-in page, with the error of a refused attempt when there was one. */
export function signInPage(options: { readonly csrf: string; readonly error?: { readonly code: string; readonly message: string } }): string {
  return pageOf({
    title: 'Sign in',
    body: html`<h1>Sign in</h1>
${options.error === undefined ? '' : alertOf(options.error)}
<p>Sign in with your operator token. It stays in a sealed, HttpOnly cookie of this console and goes only to Toolplane's own services, which authorize each request as they would for the CLI.</p>
<form id="sign-in" method="post" action="/sign-in">
${csrfField(options.csrf)}
<label for="token">Operator token</label>
<textarea id="token" name="token" rows="6" required autocomplete="off" autocapitalize="off" spellcheck="false"></textarea>
<label for="token-file">Or read it from a file</label>
<input type="file" id="token-file" accept=".jwt,.token,.txt,text/plain">
<button type="submit">Sign in</button>
</form>`,
  });
}
