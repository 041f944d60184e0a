// The closing line of `npm test`, counted from the vitest JSON reports of the workspaces that ran.

/**
 * Counts passed, failed and skipped tests over vitest JSON reports. A test file that failed without a failing test
 * of its own (a failing beforeAll, an import that throws: its tests are reported skipped or not at all) counts as
 * one failure, and so does a turbo run that failed while no report shows any failure (a workspace that failed
 * before its tests wrote a report: a type error, a build or setup step). Returns the counts and why each
 * uncounted failure was added.
 */
export function summarizeReports(reports, { turboFailed = false } = {}) {
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
