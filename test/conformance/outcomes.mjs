// How the runner judges a conformance run: each scenario that ran either failed (a check failed or warned) or passed,
// and expected-failures.json says which may fail and why. Pure, so the verdict depends on nothing but the two.

/** Whether a check counts against its scenario: a FAILURE, or a WARNING (the suite's own baseline counts both). */
export function isFailing(check) {
  return check.status === 'FAILURE' || check.status === 'WARNING';
}

/** The scenario a result folder of `conformance server -o DIR` belongs to (`server-<scenario>-<ISO time>`). */
export function scenarioOfResultDir(dir) {
  return /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(dir)?.[1];
}

/**
 * Compares the outcomes (scenario → { failed }) with the expected failures (scenario → reason). A failure not
 * listed, a listed scenario that passed (the list is stale) and, on a full run, a listed scenario that did not run
 * at all (renamed or dropped by the suite) each make the run not OK. `only` is the one scenario of a partial run.
 */
export function compareOutcomes(outcomes, expected, only) {
  const unexpectedFailures = [];
  const unexpectedPasses = [];
  let passed = 0;
  let expectedFailures = 0;
  for (const [name, { failed }] of outcomes) {
    const listed = Object.hasOwn(expected, name);
    if (failed && listed) expectedFailures += 1;
    else if (failed) unexpectedFailures.push(name);
    else if (listed) unexpectedPasses.push(name);
    else passed += 1;
  }
  const missing = only === undefined ? Object.keys(expected).filter((name) => !outcomes.has(name)) : [];
  const ran = outcomes.size > 0;
  return {
    ok: ran && unexpectedFailures.length === 0 && unexpectedPasses.length === 0 && missing.length === 0,
    passed,
    expectedFailures,
    unexpectedFailures,
    unexpectedPasses,
    missing,
  };
}
