#!/usr/bin/env node
// `npm test`: runs every workspace's tests through Turborepo (one workspace at a time: each starts its own
// NATS and FerretDB and the machine has two cores), then prints one closing line for the whole suite:
// `N passed, N failed, N skipped`. Exits non-zero when anything failed or no test ran.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const resultsDir = path.join(root, '.local/test-results');
rmSync(resultsDir, { recursive: true, force: true });

// A fresh machine gets the local nats-server and FerretDB here (idempotent and quick once installed),
// unless the suite was pointed at running servers.
if (!process.env.NATS_URL || !process.env.MONGODB_URL) {
  const install = spawnSync('bash', [path.join(root, 'infra/local/install.sh')], { cwd: root, stdio: 'inherit' });
  if (install.status !== 0) process.exit(install.status ?? 1);
}

const turbo = spawnSync('npx', ['turbo', 'run', 'test', '--concurrency=1', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });

let passed = 0;
let failed = 0;
let skipped = 0;
const files = existsSync(resultsDir) ? readdirSync(resultsDir).filter((f) => f.endsWith('.json')) : [];
for (const file of files) {
  const report = JSON.parse(readFileSync(path.join(resultsDir, file), 'utf8'));
  passed += report.numPassedTests ?? 0;
  failed += report.numFailedTests ?? 0;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  // A file that failed to load (syntax error, failing beforeAll) counts as a failure even with no test in it.
  failed += (report.testResults ?? []).filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0).length;
}
process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
const ok = turbo.status === 0 && failed === 0 && passed > 0;
process.exit(ok ? 0 : 1);
