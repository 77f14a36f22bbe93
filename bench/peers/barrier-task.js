'use strict';
// A Piscina task that returns only once `n` tasks are running at the same time: n of them on a
// pool of n threads prove that every thread is up.
module.exports = ({ counter, n }) => {
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
  const deadline = Date.now() + 10_000;
  for (let seen = Atomics.load(counter, 0); seen < n; seen = Atomics.load(counter, 0)) {
    if (Date.now() > deadline) throw new Error(`only ${seen} of ${n} threads came up`);
    Atomics.wait(counter, 0, seen, 100);
  }
  return true;
};
