'use strict';
// bench/heavy-js.js's task file for corepool's task-file pool, corepool/piscina, Piscina and
// Tinypool: the default export is the task, run(n) → n! as a BigInt.
module.exports = require('./factorial.js');
