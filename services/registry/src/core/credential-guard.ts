import type { McpServerSetting } from '@toolplane/contracts';

// The registry stores no secret: a credential belongs in a secret-broker connection, referenced by name. These
// checks refuse what plainly looks like an inline credential in what an operator registers. They are a guard
// against mistakes, not a proof of absence: a secret with no recognisable name or shape cannot be told apart.

/** Words that, as a whole word of a setting's or parameter's name, mark it as a credential. */
const secretWords = new Set(['password', 'passwd', 'pwd', 'passphrase', 'secret', 'token', 'apikey', 'credential', 'credentials', 'cookie', 'authorization', 'auth', 'signature', 'sig', 'privatekey', 'bearer']);
/** Adjacent word pairs that mark a credential (`API_KEY`, `x-api-key`, `client_secret`, `private-key`). */
const secretPairs = new Set(['api key', 'access key', 'private key', 'secret key', 'client secret', 'session key', 'signing key', 'access token', 'refresh token', 'id token']);

/** Last words that make a credential-like name a pointer to the credential rather than the credential itself. */
const referenceWords = new Set(['file', 'path', 'dir', 'env', 'ref', 'url', 'uri', 'name', 'id', 'type', 'header', 'ttl', 'expiry', 'endpoint']);

/** Shapes of well-known credential formats, found anywhere in a value. */
const secretShapes: readonly RegExp[] = [
  /\b(?:bearer|basic|digest)\s+[A-Za-z0-9._~+/=-]{8,}/i,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./, // a JWT
  /\b(?:sk|rk)-[A-Za-z0-9_-]{16,}/,
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{16,}/,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/,
  /\bAKIA[0-9A-Z]{16}\b/,
  /\bAIza[0-9A-Za-z_-]{30,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
];

function words(name: string): string[] {
  // camelCase and kebab/snake/dot case alike: `apiKey`, `API_KEY`, `x-api-key`, `client.secret`.
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}

/** Whether a name (an environment variable, a header, a query parameter, a flag) names a credential. */
export function namesCredential(name: string): boolean {
  const parts = words(name);
  // `TOKEN_FILE`, `--password-env`, `API_KEY_PATH`, `TOKEN_URL` name where a credential is, not the credential.
  if (referenceWords.has(parts.at(-1) ?? '')) return false;
  if (parts.some((word) => secretWords.has(word))) return true;
  if (parts.at(-1) === 'key') return true;
  return parts.some((word, i) => i + 1 < parts.length && secretPairs.has(`${word} ${parts[i + 1]}`));
}

/** Whether a value has the shape of a well-known credential format. */
export function looksLikeCredential(value: string): boolean {
  return secretShapes.some((shape) => shape.test(value));
}

/** Why an endpoint URL carries an inline credential, or undefined. */
export function urlCredentialProblem(endpointUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return 'the endpoint URL carries a user name or password; put the credential in a connection and reference it';
  for (const [name, value] of url.searchParams) {
    if (namesCredential(name)) return `the endpoint URL's query parameter ${JSON.stringify(name)} looks like a credential; put it in a connection and reference it`;
    if (looksLikeCredential(value)) return `the endpoint URL's query parameter ${JSON.stringify(name)} holds what looks like a credential; put it in a connection`;
  }
  if (looksLikeCredential(decodeURIComponent(url.pathname + url.hash))) return 'the endpoint URL holds what looks like a credential; put it in a connection';
  return undefined;
}

/** Why a plain-valued setting (an environment variable, a header) looks like a credential, or undefined. */
export function settingCredentialProblem(setting: McpServerSetting, what: 'environment variable' | 'header'): string | undefined {
  if (!('value' in setting)) return undefined;
  if (namesCredential(setting.name)) {
    return `the ${what} ${JSON.stringify(setting.name)} names a credential; give it as a connection reference, not a value`;
  }
  if (looksLikeCredential(setting.value)) return `the ${what} ${JSON.stringify(setting.name)} holds what looks like a credential; give it as a connection reference`;
  return undefined;
}

/** Why a stdio command's arguments carry an inline credential (`--token=…`, `--password …`, a token-shaped value), or undefined. */
export function argumentsCredentialProblem(args: readonly string[]): string | undefined {
  for (const [i, arg] of args.entries()) {
    if (looksLikeCredential(arg)) return `argument ${i + 1} holds what looks like a credential; pass it through an environment variable backed by a connection`;
    const flag = /^--?([A-Za-z][A-Za-z0-9_.-]*)(=(.*))?$/.exec(arg);
    if (flag?.[1] === undefined || !namesCredential(flag[1])) continue;
    const inline = flag[2] !== undefined && flag[3] !== '';
    const next = args[i + 1];
    if (inline || (next !== undefined && !next.startsWith('-'))) {
      return `argument ${i + 1} (${JSON.stringify(`--${flag[1]}`)}) passes a credential on the command line; use an environment variable backed by a connection`;
    }
  }
  return undefined;
}
