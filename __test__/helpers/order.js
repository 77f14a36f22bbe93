'use strict';
// Orderings for tests that check "X happened without waiting for Y" (issue #28: tests never
// assert wall-clock bounds, which a busy machine breaks). Rather than "X took under N ms", a
// test asks which came first: X, or the moment a task that takes at least `ms` (a sleep of
// `ms`, started after the mark was made) could have run its course.

/**
 * A promise that resolves with `label` once `ms` have passed: no task of at least `ms`
 * started after this call can have ended, and nothing that waited for one can have settled,
 * before it resolves. Its timer is unref'd: it never holds the process open.
 */
function sleepEnd(ms, label = `a ${ms} ms task ran its course first`) {
  return new Promise((resolve) => setTimeout(resolve, ms, label).unref());
}

/** What settles first: `promise` (its value, or its rejection) or `end` (its label). */
function first(promise, end) {
  return Promise.race([promise, end]);
}

/**
 * A hang guard: `promise`, or a rejection naming `what` after `ms` (at least 10 s, never a
 * bound on speed: only what would otherwise hang until jest's own timeout fails here, clearly).
 */
function unlessHung(promise, what, ms = 20_000) {
  let timer;
  const hung = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hung: ${what} (nothing after ${ms / 1000} s)`)), ms);
  });
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

/**
 * Resolves once `done()` holds, looking every few milliseconds; behind a hang guard, so a
 * condition that never comes fails the test naming `what` (nothing says how soon it should).
 */
function eventually(done, what) {
  let stop = false;
  const poll = (async () => {
    while (!stop && !done()) await new Promise((resolve) => setTimeout(resolve, 5));
  })();
  return unlessHung(poll, what).finally(() => {
    stop = true;
  });
}

/** `promise`, or a rejection if it has not settled after a generous bound (a hang, not a time limit). */
function settles(promise, ms = 20_000) {
  return unlessHung(promise, 'did not settle', ms);
}

module.exports = { sleepEnd, first, unlessHung, settles, eventually };
