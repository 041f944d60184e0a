// HTML built only through the `html` tagged template: every interpolated value is escaped unless it is itself the
// output of `html`, so text from services, tokens or tool output can never become markup. Attributes are always
// written quoted in the templates, and quotes are escaped too, so a value cannot leave its attribute either.

const escapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe to place in element content or in a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => escapes[char] ?? char);
}

const trusted = Symbol('trusted html');

/** Markup produced by `html` (and only by it): inserted as is into another template. */
export interface SafeHtml {
  readonly [trusted]: true;
  readonly value: string;
}

/** What may be interpolated: text (escaped), numbers, markup from `html`, lists of these; nothing for null/undefined/booleans. */
export type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function isSafe(value: unknown): value is SafeHtml {
  return typeof value === 'object' && value !== null && (value as Partial<SafeHtml>)[trusted] === true;
}

function render(value: Interpolation): string {
  if (value === null || value === undefined || typeof value === 'boolean') return '';
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number') return escapeHtml(String(value));
  if (isSafe(value)) return value.value;
  if (Array.isArray(value)) return (value as readonly Interpolation[]).map(render).join('');
  // Anything else (an object passed where text was meant) is its text, escaped: never markup.
  return escapeHtml(JSON.stringify(value) ?? '');
}

function safe(value: string): SafeHtml {
  return { [trusted]: true, value };
}

/** The template tag: literal parts verbatim, interpolations escaped (see Interpolation). */
export function html(strings: TemplateStringsArray, ...values: readonly Interpolation[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i]) + (strings[i + 1] ?? '');
  return safe(out);
}

/** Renders a list with a separator, each item escaped unless it is markup. */
export function join(items: readonly Interpolation[], separator: string): SafeHtml {
  return safe(items.map(render).filter((text) => text !== '').join(escapeHtml(separator)));
}
