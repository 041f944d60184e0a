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
// The services trust operator tokens of tenant `dev` signed with the development operator key, whose private half
// is kept in .local/dev-operator-key.json ($TOOLPLANE_LOCAL_DIR if set; created on first use, never printed).
// Needs the workspaces built (npm run build): it uses @toolplane/sealing's key generators and @toolplane/auth.
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { issueToken } from '@toolplane/auth';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';

const root = path.resolve(import.meta.dirname, '../..');
const operatorKeyFile = path.join(process.env.TOOLPLANE_LOCAL_DIR ?? path.join(root, '.local'), 'dev-operator-key.json');
const operatorKid = 'dev-operator-1';
/** The tenant development operator tokens are trusted for. */
export const devTenant = 'dev';

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
  };
}

/** An operator token signed with the development operator key. */
async function devOperatorToken(args) {
  const values = (flag) => args.flatMap((arg, i) => (arg === flag && args[i + 1] !== undefined ? [args[i + 1]] : []));
  const one = (flag, fallback) => values(flag).at(-1) ?? fallback;
  const workspaces = values('--workspace');
  const roles = values('--role');
  const claims = {
    kind: 'human',
    tenant: one('--tenant', devTenant),
    workspaces: workspaces.length > 0 ? workspaces : ['main'],
    principal: one('--principal', 'user:dev@localhost'),
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
