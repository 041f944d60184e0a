#!/usr/bin/env node
// `npm test`: runs every workspace's tests through Turborepo (one workspace at a time: each starts its own
// NATS and FerretDB and the machine has two cores), every one of them even after a failure, then prints one closing
// line for the whole suite: `N passed, N failed, N skipped` (a file that failed outside its tests counts as a
// failure, and so does a workspace whose tests did not run or wrote no report: test-summary.mjs). Arguments are
// turbo's (`--filter=…`). Exits non-zero when anything failed or no test ran.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { closingLine, plannedReports, summarizeReports } from './test-summary.mjs';

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

const args = ['run', 'test', '--concurrency=1', ...process.argv.slice(2)];
// The workspaces that must report: those whose test task turbo plans for these arguments (filters included).
const dryRun = spawnSync('npx', ['turbo', ...args, '--dry=json'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] });
if (dryRun.status !== 0) {
  process.stderr.write(`run-tests: turbo could not plan the run (turbo ${[...args, '--dry=json'].join(' ')})\n`);
  process.exit(dryRun.status ?? 1);
}
const planned = plannedReports(JSON.parse(dryRun.stdout));

// `--continue=always`: a failing workspace does not stop the others (the test tasks depend on nothing, and
// "always" runs even a task whose dependencies failed, should one ever get some).
const turbo = spawnSync('npx', ['turbo', ...args, '--continue=always'], { cwd: root, stdio: 'inherit' });

const reports = [];
const unreported = [];
for (const { workspace, report } of planned) {
  const parsed = readReport(path.join(resultsDir, report));
  if (parsed === undefined) unreported.push(workspace);
  else reports.push(parsed);
}
const summary = summarizeReports(reports, { turboFailed: turbo.status !== 0, unreported });
for (const suite of summary.failedSuites) process.stdout.write(`\nfailed: ${suite}`);
process.stdout.write(`\n${closingLine(summary)}\n`);
const ok = turbo.status === 0 && summary.failed === 0 && summary.passed > 0;
process.exit(ok ? 0 : 1);

/** A vitest JSON report, or undefined when there is none (the tests did not run, or were killed while it was written). */
function readReport(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}
