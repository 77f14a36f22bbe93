'use strict';
// The task file of examples/invoices.js: each export is a function the pool's workers serve.
const { workerData } = require('node:worker_threads');
const { setTimeout: sleep } = require('node:timers/promises');

exports.invoice = async (amount) => {
  if (!(amount > 0)) throw new Error('invalid amount');
  // The demo's stand-in for real work (a slow upstream API, say); `--slow ORDER` makes one
  // invoice take longer than the 1 s limit.
  await sleep(amount === workerData?.slowAmount ? 1500 : 50);
  return amount * 1.2;
};
