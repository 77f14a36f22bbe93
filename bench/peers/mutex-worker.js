'use strict';
// One contending thread for bench/mutex.js: waits for the start flag, then does `pairs`
// lock/unlock pairs with a plain (non-atomic) increment inside, and reports its start and end.
const { workerData: w, parentPort } = require('node:worker_threads');
const { mutex } = require('./mutex-variants.js');

const words = new Int32Array(w.sab, 0, 2); // [mutex, start flag]
const counter = new Float64Array(w.sab, 8, 1);
const m = mutex(w.kind, words, 0);
const now = () => performance.timeOrigin + performance.now();

Atomics.wait(words, 1, 0);
const started = now();
for (let i = 0; i < w.pairs; i++) {
  m.lock();
  counter[0] += 1;
  m.unlock();
}
parentPort.postMessage({ started, finished: now() });
