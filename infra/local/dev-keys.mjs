#!/usr/bin/env node
// Generates a development key set for the services that refuse to start without keys, as environment lines
// (KEY='value'), so that `npm start` and `docker compose` work out of the box. Never use these keys for real
// data: production keys come from a secret store.
//   node infra/local/dev-keys.mjs            prints the lines (e.g. `> .env` for docker compose)
//   node infra/local/dev-keys.mjs --file F   writes F once (kept if it exists) and prints nothing
// Needs the workspaces built (npm run build): it uses @toolplane/sealing's key generators.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateKek, generateRecipientKeyPair } from '@toolplane/sealing';

export function devKeyEnv() {
  const adapter = generateRecipientKeyPair();
  return {
    SECRET_BROKER_KEKS: JSON.stringify({ current: 'dev-1', keys: { 'dev-1': generateKek() } }),
    SECRET_BROKER_RECIPIENTS: JSON.stringify({ 'tool-adapter': adapter.publicKey }),
    TOOL_ADAPTER_SECRET_KEY: adapter.privateKey,
    // The tool adapter signs receipts with it (Ed25519, PKCS#8 DER in base64).
    ADAPTER_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  };
}

const lines = (env) =>
  Object.entries(env)
    .map(([key, value]) => `${key}='${value}'`)
    .join('\n') + '\n';

if (process.argv[1] === import.meta.filename) {
  const fileFlag = process.argv.indexOf('--file');
  if (fileFlag === -1) {
    process.stdout.write(lines(devKeyEnv()));
  } else {
    const file = process.argv[fileFlag + 1];
    if (!file) throw new Error('--file needs a path');
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, lines(devKeyEnv()), { mode: 0o600 });
    }
  }
}
