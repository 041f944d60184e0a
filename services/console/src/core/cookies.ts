// Cookie headers, read and written by hand: the console sets two cookies and reads two.

/** The cookies of a request's `Cookie` header; a name given twice is dropped (ambiguous, so neither counts). */
export function parseCookies(header: string | undefined): ReadonlyMap<string, string> {
  const cookies = new Map<string, string>();
  const repeated = new Set<string>();
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const name = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (cookies.has(name)) repeated.add(name);
    cookies.set(name, value);
  }
  for (const name of repeated) cookies.delete(name);
  return cookies;
}

/** How a cookie is set. */
export interface CookieOptions {
  readonly path: string;
  /** Seconds; 0 deletes the cookie. */
  readonly maxAgeSeconds: number;
  readonly secure: boolean;
}

/** A `Set-Cookie` value: always HttpOnly and SameSite=Strict (the console's cookies are never a script's nor another site's). */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  if (!/^[A-Za-z0-9_-]+$/.test(name) || !/^[A-Za-z0-9_.-]*$/.test(value)) throw new RangeError('cookie names and values are base64url text');
  const parts = [`${name}=${value}`, `Path=${options.path}`, `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`, 'HttpOnly', 'SameSite=Strict'];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}
