'use strict';
// bench/heavy-js.js's task file for poolifier: a ThreadWorker around the same function.
const { ThreadWorker } = require('poolifier');
const factorial = require('./factorial.js');

module.exports = new ThreadWorker(factorial);
