import { describe, expect, it } from 'vitest';
import { escapeHtml, html, join } from './html.js';

describe('the html template', () => {
  it('escapes a script tag in text, so it stays text', () => {
    const out = html`<p>${'<script>alert(1)</script>'}</p>`.value;
    expect(out).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(out).not.toContain('<script');
  });

  it('escapes quotes, so a value cannot leave its attribute', () => {
    const hostile = `x" onmouseover="alert(1)`;
    const out = html`<a title="${hostile}" data-x='${"' autofocus onfocus='alert(2)"}'>a</a>`.value;
    expect(out).toBe('<a title="x&quot; onmouseover=&quot;alert(1)" data-x=\'&#39; autofocus onfocus=&#39;alert(2)\'>a</a>');
    expect(out).not.toMatch(/" onmouseover="/);
  });

  it('inserts markup made by html as is, and escapes it once only', () => {
    const inner = html`<b>${'a & b'}</b>`;
    expect(html`<p>${inner}</p>`.value).toBe('<p><b>a &amp; b</b></p>');
  });

  it('renders lists and leaves out null, undefined and booleans', () => {
    expect(html`${['<i>', html`<i>`, 3, undefined, null, false, true]}`.value).toBe('&lt;i&gt;<i>3');
    expect(join(['a<', html`<br>`, ''], ', ').value).toBe('a&lt;, <br>');
  });

  it('does not take an object that merely looks like markup as markup', () => {
    const forged = { value: '<script>alert(1)</script>' } as unknown as string;
    expect(html`${forged}`.value).not.toContain('<script>');
  });

  it('escapes every character that can end text or an attribute', () => {
    expect(escapeHtml(`&<>"'\``)).toBe('&amp;&lt;&gt;&quot;&#39;&#96;');
  });
});
