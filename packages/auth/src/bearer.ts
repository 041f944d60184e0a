import { AUTHORIZATION_HEADER } from '@toolplane/contracts';

/** The request headers that carry `token` as a bearer token. */
export function bearerHeaders(token: string): Record<string, string> {
  return { [AUTHORIZATION_HEADER]: `Bearer ${token}` };
}

/**
 * The bearer token in request headers (header name matched without regard to case), or undefined when there is
 * none or more than one: an ambiguous credential is no credential.
 */
export function bearerTokenOf(headers: Readonly<Record<string, readonly string[]>>): string | undefined {
  const wanted = AUTHORIZATION_HEADER.toLowerCase();
  const values = Object.entries(headers).flatMap(([name, list]) => (name.toLowerCase() === wanted ? list : []));
  if (values.length !== 1) return undefined;
  const match = /^Bearer ([A-Za-z0-9_.~+/=-]+)$/.exec(values[0] ?? '');
  return match?.[1];
}
