/**
 * A MongoDB connection string as it may appear in logs and error messages: credentials replaced by `***`
 * and the query string dropped (options such as `authMechanismProperties` or `tlsCertificateKeyFilePassword`
 * can carry secrets). Works on malformed strings too, since those are exactly the ones reported.
 */
export function redactMongoUrl(url: string): string {
  const trimmed = url.trim();
  const schemeEnd = trimmed.indexOf('://');
  const scheme = schemeEnd >= 0 ? trimmed.slice(0, schemeEnd + 3) : '';
  let rest = schemeEnd >= 0 ? trimmed.slice(schemeEnd + 3) : trimmed;
  // The last `@` ends the user info even when a malformed password contains `/`, `?` or `@`.
  const at = rest.lastIndexOf('@');
  if (at >= 0) rest = `***@${rest.slice(at + 1)}`;
  const query = rest.search(/[?#]/);
  if (query >= 0) rest = rest.slice(0, query);
  return `${scheme}${rest}`;
}

/** Removes the URL's user info (and its password alone) from a driver message that might echo it. */
export function scrubCredentials(message: string, url: string): string {
  const trimmed = url.trim();
  const schemeEnd = trimmed.indexOf('://');
  const rest = schemeEnd >= 0 ? trimmed.slice(schemeEnd + 3) : trimmed;
  const at = rest.lastIndexOf('@');
  if (at < 0) return message;
  const userInfo = rest.slice(0, at);
  const colon = userInfo.indexOf(':');
  const secrets = [userInfo, colon >= 0 ? userInfo.slice(colon + 1) : ''].filter((s) => s.length >= 3);
  let scrubbed = message;
  for (const secret of secrets) {
    scrubbed = scrubbed.split(secret).join('***');
    try {
      scrubbed = scrubbed.split(decodeURIComponent(secret)).join('***');
    } catch {
      // A malformed percent-encoding cannot appear decoded in the message either.
    }
  }
  return scrubbed;
}
