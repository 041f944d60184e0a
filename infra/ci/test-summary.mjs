// The closing line of `npm test`, counted from the vitest JSON reports of the workspaces that ran, and from the
// workspaces that should have reported and did not.
import path from 'node:path';

/**
 * The workspaces whose test task a turbo run plans (its `--dry=json` plan, with the run's own filters): every task
 * with a command, and the report its vitest writes, `<directory's name>.json` (vitest.preset.ts names it so).
 */
export function plannedReports(plan) {
  return (plan.tasks ?? [])
    .filter((task) => task.command !== undefined && task.command !== '<NONEXISTENT>')
    .map((task) => ({ workspace: task.package, report: `${path.basename(task.directory)}.json` }));
}

/**
 * Counts passed, failed and skipped tests over vitest JSON reports. A test file that failed without a failing test
 * of its own (a failing beforeAll, an import that throws: its tests are reported skipped or not at all) counts as
 * one failure, and so does each workspace in `unreported` (planned, but its tests did not run or wrote no report:
 * none of its tests is counted anywhere else), and a turbo run that failed while nothing else shows a failure.
 * Returns the counts and why each uncounted failure was added.
 */
export function summarizeReports(reports, { turboFailed = false, unreported = [] } = {}) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failedSuites = [];
  for (const report of reports) {
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    for (const file of report.testResults ?? []) {
      const ownFailures = (file.assertionResults ?? []).filter((assertion) => assertion.status === 'failed').length;
      if (file.status === 'failed' && ownFailures === 0) {
        failed += 1;
        failedSuites.push(`${file.name}: ${firstLine(file.message) || 'the file failed outside its tests'}`);
      }
    }
  }
  for (const workspace of unreported) {
    failed += 1;
    failedSuites.push(`${workspace} (no test report: its tests did not run)`);
  }
  if (turboFailed && failed === 0) {
    failed += 1;
    failedSuites.push('a workspace failed without a test report (see the turbo output above)');
  }
  return { passed, failed, skipped, failedSuites };
}

/** The closing line: `N passed, N failed, N skipped`. */
export function closingLine({ passed, failed, skipped }) {
  return `${passed} passed, ${failed} failed, ${skipped} skipped`;
}

function firstLine(text) {
  return typeof text === 'string' ? (text.split('\n').find((line) => line.trim() !== '') ?? '').trim().slice(0, 300) : '';
}
