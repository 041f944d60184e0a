#!/usr/bin/env node
// Generates a development key set for the services that refuse to start without keys, as environment lines
// (KEY='value'), so that `npm start` and `docker compose` work out of the box, and issues development operator
// tokens. Never use these keys for real data: production keys come from a secret store.
//   node infra/local/dev-keys.mjs            prints the lines (e.g. `> .env` for docker compose)
//   node infra/local/dev-keys.mjs --file F   writes F once (kept if it exists; settings added since are appended)
//   node infra/local/dev-keys.mjs token [--tenant dev] [--workspace main]… [--principal user:dev@localhost]
//                                       [--role R]… [--expires-in 8h]
//                                       prints an operator token for TOOLPLANE_TOKEN (default roles: approver,
//                                       policy-admin, platform-admin)
//   node infra/local/dev-keys.mjs agent-token [--agent dev-agent] [--revision 1] [--tenant dev] [--workspace main]
//                                       [--principal user:dev@localhost] [--expires-in 8h]
//                                       prints an agent context token for TOOLPLANE_AGENT_TOKEN
// The services trust tokens of tenant `dev` signed with the development token key (TOOLPLANE_TRUSTED_KEYS), whose
// private half is kept in .local/dev-operator-key.json ($TOOLPLANE_LOCAL_DIR if set; created on first use, never
// printed). It signs both kinds: what a token may do is its kind's and its claims', not the key's.
// Needs the workspaces built (npm run build): it uses @toolplane/sealing's key generators and @toolplane/auth.
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { issueToken } from '@toolplane/auth';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';

const root = path.resolve(import.meta.dirname, '../..');
const operatorKeyFile = path.join(process.env.TOOLPLANE_LOCAL_DIR ?? path.join(root, '.local'), 'dev-operator-key.json');
const operatorKid = 'dev-operator-1';
/** The tenant development tokens are trusted for. */
export const devTenant = 'dev';
/** The agent of development agent tokens, whose profile `npm start` writes (infra/local/dev-agent-profile.json). */
export const devAgentId = 'dev-agent';
/** The principal development tokens name unless told: the operator, and the human the development agent acts for. */
export const devPrincipal = 'user:dev@localhost';

/** The development operator signing key (a private Ed25519 JWK), created on first use. */
function operatorPrivateJwk() {
  if (!existsSync(operatorKeyFile)) {
    mkdirSync(path.dirname(operatorKeyFile), { recursive: true });
    const jwk = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: operatorKid, alg: 'EdDSA' };
    writeFileSync(operatorKeyFile, `${JSON.stringify(jwk)}\n`, { mode: 0o600 });
  }
  return JSON.parse(readFileSync(operatorKeyFile, 'utf8'));
}

/** TOOLPLANE_TRUSTED_KEYS for the development operator key: its public half, for tenant `dev`. */
function trustedKeys() {
  const { kty, crv, x, kid } = createPublicKey({ key: operatorPrivateJwk(), format: 'jwk' }).export({ format: 'jwk' });
  return JSON.stringify({ [devTenant]: [{ kty, crv, x, kid: kid ?? operatorKid, alg: 'EdDSA', use: 'sig' }] });
}

/**
 * Which development keys each service is given: only the settings its configuration reads (services/NAME/src/service.ts).
 * The key-encryption keys stay with the secret broker, the adapter's signing and sealing keys with the adapter.
 */
export const devKeysByService = {
  registry: ['TOOLPLANE_TRUSTED_KEYS'],
  'tool-adapter': ['TOOLPLANE_TRUSTED_KEYS', 'ADAPTER_SIGNING_KEY', 'TOOL_ADAPTER_SECRET_KEY'],
  approval: ['TOOLPLANE_TRUSTED_KEYS'],
  'secret-broker': ['TOOLPLANE_TRUSTED_KEYS', 'SECRET_BROKER_KEKS', 'SECRET_BROKER_RECIPIENTS'],
  'audit-projector': ['TOOLPLANE_TRUSTED_KEYS'],
  'flow-runner': ['TOOLPLANE_TRUSTED_KEYS', 'FLOW_RUNNER_SIGNING_KEY'],
  console: ['TOOLPLANE_TRUSTED_KEYS', 'CONSOLE_SESSION_KEY'],
};

export function devKeyEnv() {
  const adapter = generateRecipientKeyPair();
  return {
    SECRET_BROKER_KEKS: JSON.stringify({ current: 'dev-1', keys: { 'dev-1': generateKek() } }),
    SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': adapter.publicKey }),
    TOOL_ADAPTER_SECRET_KEY: adapter.privateKey,
    // The tool adapter signs receipts with it (Ed25519, PKCS#8 DER in base64).
    ADAPTER_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    // Operator tokens (approvals, registry, connections, policies, audit) are verified with it.
    TOOLPLANE_TRUSTED_KEYS: trustedKeys(),
    // FlowRunner signs its steps' context tokens with it: here the development key, which the services already trust
    // for tenant `dev` (in production FlowRunner has a key of its own, whose public half joins TOOLPLANE_TRUSTED_KEYS).
    FLOW_RUNNER_SIGNING_KEY: JSON.stringify(operatorPrivateJwk()),
    // The console seals its session cookies and keys its CSRF tokens with it (32 random bytes, base64url): a new key
    // signs every operator out, so it is kept in the file like the others.
    CONSOLE_SESSION_KEY: randomBytes(32).toString('base64url'),
  };
}

/** The values of a repeatable flag, and the last value of a flag (or its default). */
function flagReader(args) {
  const values = (flag) => args.flatMap((arg, i) => (arg === flag && args[i + 1] !== undefined ? [args[i + 1]] : []));
  return { values, one: (flag, fallback) => values(flag).at(-1) ?? fallback };
}

/** An agent context token (kind `agent`) signed with the development key: what an agent runtime sends with each call. */
async function devAgentToken(args) {
  const { one } = flagReader(args);
  const claims = {
    kind: 'agent',
    tenant: one('--tenant', devTenant),
    workspace: one('--workspace', 'main'),
    principal: one('--principal', devPrincipal),
    agentId: one('--agent', devAgentId),
    agentRevision: one('--revision', '1'),
  };
  const key = operatorPrivateJwk();
  return issueToken(claims, key, { kid: key.kid ?? operatorKid, expiresIn: one('--expires-in', '8h') });
}

/** An operator token signed with the development operator key. */
async function devOperatorToken(args) {
  const { values, one } = flagReader(args);
  const workspaces = values('--workspace');
  const roles = values('--role');
  const claims = {
    kind: 'human',
    tenant: one('--tenant', devTenant),
    workspaces: workspaces.length > 0 ? workspaces : ['main'],
    principal: one('--principal', devPrincipal),
    roles: roles.length > 0 ? roles : ['approver', 'policy-admin', 'platform-admin'],
  };
  const key = operatorPrivateJwk();
  return issueToken(claims, key, { kid: key.kid ?? operatorKid, expiresIn: one('--expires-in', '8h') });
}

const lines = (env) =>
  Object.entries(env)
    .map(([key, value]) => `${key}='${value}'`)
    .join('\n') + '\n';

if (process.argv[1] === import.meta.filename) {
  const fileFlag = process.argv.indexOf('--file');
  if (process.argv[2] === 'token') {
    process.stdout.write(`${await devOperatorToken(process.argv.slice(3))}\n`);
  } else if (process.argv[2] === 'agent-token') {
    process.stdout.write(`${await devAgentToken(process.argv.slice(3))}\n`);
  } else if (fileFlag === -1) {
    process.stdout.write(lines(devKeyEnv()));
  } else {
    const file = process.argv[fileFlag + 1];
    if (!file) throw new Error('--file needs a path');
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, lines(devKeyEnv()), { mode: 0o600 });
    } else {
      // A file from an older version keeps its keys and gains the settings added since.
      const present = new Set([...readFileSync(file, 'utf8').matchAll(/^([A-Z0-9_]+)=/gm)].map((match) => match[1]));
      const missing = Object.fromEntries(Object.entries(devKeyEnv()).filter(([key]) => !present.has(key)));
      if (Object.keys(missing).length > 0) writeFileSync(file, lines(missing), { flag: 'a', mode: 0o600 });
    }
  }
}
