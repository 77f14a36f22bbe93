'use strict';
// How a property runs: its number of runs, seed and path from the environment, and the
// deadlines that tell a hang from a slow machine (hang guards, never bounds on speed).
const fc = require('fast-check');
const RUNS = Number(process.env.COREPOOL_PROPERTY_RUNS ?? 1);
if (!(RUNS > 0)) throw new RangeError(`COREPOOL_PROPERTY_RUNS must be a positive number, got ${process.env.COREPOOL_PROPERTY_RUNS}`);
const SEED = process.env.COREPOOL_PROPERTY_SEED;
const PATH = process.env.COREPOOL_PROPERTY_PATH;

/** The README's limit on the nesting of params. */
const MAX_NESTING = 512;

/** A call settles within this long, or it is a hang (a failure, never a stuck jest): a hang
 *  guard, generous so that a loaded machine never trips it (issue #28). */
const DEADLINE_MS = 20_000;

/**
 * Each check ends within this long (× COREPOOL_PROPERTY_RUNS); its runs take a few seconds. Only
 * a failure's shrinking gets near it (every try of a hang waits out the deadline): then the
 * failure is reported with the counterexample shrunk so far, its seed and its path.
 */
const BUDGET_MS = 120_000;

/** Runs `property` `runs` times (× COREPOOL_PROPERTY_RUNS). */
async function check(property, runs) {
  const settings = {
    numRuns: Math.max(1, Math.round(runs * RUNS)),
    interruptAfterTimeLimit: BUDGET_MS * RUNS,
    markInterruptAsFailure: false,
  };
  if (SEED !== undefined) settings.seed = Number(SEED);
  if (PATH !== undefined) settings.path = PATH;
  await fc.assert(property, settings);
}

/** Jest's limit for one check. */
const LIMIT_MS = BUDGET_MS * RUNS + 30_000;

module.exports = { MAX_NESTING, DEADLINE_MS, check, LIMIT_MS };
