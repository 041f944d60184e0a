#!/usr/bin/env node
// `npm test`: runs every workspace's tests through Turborepo (one workspace at a time: each starts its own
// NATS and FerretDB and the machine has two cores), then prints one closing line for the whole suite:
// `N passed, N failed, N skipped` (a file that failed outside its tests counts as a failure: test-summary.mjs).
// Exits non-zero when anything failed or no test ran.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { closingLine, summarizeReports } from './test-summary.mjs';

const root = path.resolve(import.meta.dirname, '../..');
const resultsDir = path.join(root, '.local/test-results');
rmSync(resultsDir, { recursive: true, force: true });

// A fresh machine gets the local nats-server and FerretDB here (idempotent and quick once installed),
// unless the suite was pointed at running servers.
if (!process.env.NATS_URL || !process.env.MONGODB_URL) {
  const install = spawnSync('bash', [path.join(root, 'infra/local/install.sh')], { cwd: root, stdio: 'inherit' });
  if (install.status !== 0) process.exit(install.status ?? 1);
}

// And Debian's Chromium for the console's browser test (nothing to do once it is there).
const chromium = spawnSync('bash', [path.join(root, 'infra/local/install-chromium.sh')], { cwd: root, stdio: 'inherit' });
if (chromium.status !== 0) process.exit(chromium.status ?? 1);

// And bubblewrap, the sandbox every stdio MCP server the tests spawn runs in.
const sandbox = spawnSync('bash', [path.join(root, 'infra/local/install-sandbox.sh')], { cwd: root, stdio: 'inherit' });
if (sandbox.status !== 0) process.exit(sandbox.status ?? 1);

const turbo = spawnSync('npx', ['turbo', 'run', 'test', '--concurrency=1', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });

const files = existsSync(resultsDir) ? readdirSync(resultsDir).filter((f) => f.endsWith('.json')) : [];
const reports = files.map((file) => JSON.parse(readFileSync(path.join(resultsDir, file), 'utf8')));
const summary = summarizeReports(reports, { turboFailed: turbo.status !== 0 });
for (const suite of summary.failedSuites) process.stdout.write(`\nfailed: ${suite}`);
process.stdout.write(`\n${closingLine(summary)}\n`);
const ok = turbo.status === 0 && summary.failed === 0 && summary.passed > 0;
process.exit(ok ? 0 : 1);
