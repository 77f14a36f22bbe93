'use strict';
// bench/heavy-js.js's compute floor: one worker_thread computes workerData.count factorials in
// a plain loop (no pool, nothing sent per task) and posts the last one when done.
const { parentPort, workerData } = require('node:worker_threads');
const factorial = require('./factorial.js');

let last;
for (let i = 0; i < workerData.count; i++) last = factorial(workerData.n);
parentPort.postMessage(last);
