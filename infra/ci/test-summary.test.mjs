// Run with `node --test infra/ci/test-summary.test.mjs` (naming the file: run-tests.mjs beside it is the whole suite).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closingLine, plannedReports, summarizeReports } from './test-summary.mjs';

const passedFile = { name: '/repo/services/a/test/ok.int.test.ts', status: 'passed', assertionResults: [{ status: 'passed' }, { status: 'passed' }] };
const report = (testResults, counts) => ({ numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, ...counts, testResults });

describe('summarizeReports', () => {
  it('adds up passed, failed and skipped tests over the workspaces', () => {
    const failing = { name: '/repo/b.int.test.ts', status: 'failed', assertionResults: [{ status: 'failed' }, { status: 'passed' }] };
    const summary = summarizeReports([report([passedFile], { numPassedTests: 2, numPendingTests: 1 }), report([failing], { numPassedTests: 1, numFailedTests: 1, numTodoTests: 1 })]);
    assert.deepEqual(summary, { passed: 3, failed: 1, skipped: 2, failedSuites: [] });
  });

  it('counts a file that failed in setup as a failure, though its tests were only skipped', () => {
    const setupFailure = {
      name: '/repo/services/audit-projector/test/bad-input.int.test.ts',
      status: 'failed',
      message: 'StreamNotFoundError: stream not found\n    at watchDeadLetters',
      assertionResults: [{ status: 'skipped' }],
    };
    const summary = summarizeReports([report([passedFile, setupFailure], { numPassedTests: 2, numPendingTests: 1 })]);
    assert.equal(summary.failed, 1);
    assert.deepEqual(summary.failedSuites, ['/repo/services/audit-projector/test/bad-input.int.test.ts: StreamNotFoundError: stream not found']);
    assert.equal(closingLine(summary), '2 passed, 1 failed, 1 skipped');
  });

  it('counts a file that failed to load (no tests at all) as a failure', () => {
    const summary = summarizeReports([report([{ name: '/repo/c.unit.test.ts', status: 'failed', message: 'SyntaxError: Unexpected token', assertionResults: [] }])]);
    assert.equal(summary.failed, 1);
  });

  it('does not count a file twice when a test of its own failed', () => {
    const failing = { name: '/repo/d.int.test.ts', status: 'failed', assertionResults: [{ status: 'failed' }, { status: 'failed' }] };
    assert.equal(summarizeReports([report([failing], { numFailedTests: 2 })]).failed, 2);
  });

  it('counts a failed turbo run with no failing report as a failure', () => {
    const summary = summarizeReports([report([passedFile], { numPassedTests: 2 })], { turboFailed: true });
    assert.equal(summary.failed, 1);
    assert.match(summary.failedSuites[0] ?? '', /without a test report/);
    assert.equal(summarizeReports([report([passedFile], { numPassedTests: 2 })], { turboFailed: false }).failed, 0);
  });

  it('counts each planned workspace without a report as one failure, naming it, and the failed turbo run not again', () => {
    const summary = summarizeReports([report([passedFile], { numPassedTests: 2, numPendingTests: 1 })], { turboFailed: true, unreported: ['@toolplane/sealing', '@toolplane/auth'] });
    assert.deepEqual(summary.failedSuites, ['@toolplane/sealing (no test report: its tests did not run)', '@toolplane/auth (no test report: its tests did not run)']);
    assert.equal(closingLine(summary), '2 passed, 2 failed, 1 skipped');
  });

  it('counts a workspace without a report as a failure even when turbo says it succeeded', () => {
    const summary = summarizeReports([report([passedFile], { numPassedTests: 2 })], { turboFailed: false, unreported: ['@toolplane/e2e'] });
    assert.equal(summary.failed, 1);
    assert.deepEqual(summary.failedSuites, ['@toolplane/e2e (no test report: its tests did not run)']);
  });
});

describe('plannedReports', () => {
  it("names the report of each workspace whose test task turbo plans, after its directory, skipping a workspace with no test script", () => {
    const plan = {
      tasks: [
        { taskId: '@toolplane/sealing#test', task: 'test', package: '@toolplane/sealing', directory: 'packages/sealing', command: 'vitest run' },
        { taskId: '@toolplane/e2e#test', task: 'test', package: '@toolplane/e2e', directory: 'test', command: 'vitest run' },
        { taskId: '@toolplane/docs#test', task: 'test', package: '@toolplane/docs', directory: 'packages/docs', command: '<NONEXISTENT>' },
      ],
    };
    assert.deepEqual(plannedReports(plan), [
      { workspace: '@toolplane/sealing', report: 'sealing.json' },
      { workspace: '@toolplane/e2e', report: 'test.json' },
    ]);
  });

  it('plans nothing when turbo plans no task', () => {
    assert.deepEqual(plannedReports({ tasks: [] }), []);
  });
});
