'use strict';
// bench/heavy-js.js's task file for the values part, loaded by Piscina and by corepool/piscina:
// `echo` returns its task as it came; `moved` returns its task (a Uint8Array) moved back with
// the `move()` of the pool that runs it (workerData.piscina names that module).
const { workerData } = require('node:worker_threads');
const { move } = require(workerData.piscina);

module.exports = (value) => value;
module.exports.moved = (bytes) => move(bytes);
