'use strict';
// bench/heavy-js.js's task file for workerpool: exec('factorial', [n]) → n! as a BigInt.
const workerpool = require('workerpool');
const factorial = require('./factorial.js');

workerpool.worker({ factorial });
