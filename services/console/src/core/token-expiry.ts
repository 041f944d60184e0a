/**
 * When a JWT expires (its `exp`, in epoch milliseconds), read from its payload without checking anything: only for a
 * token that was verified already, to bound the cookie and the live stream it opened. Undefined when it states none.
 */
export function tokenExpiresAtMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1_000 : undefined;
  } catch {
    return undefined;
  }
}
