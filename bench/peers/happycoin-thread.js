'use strict';
// One thread of the book's happycoin-threads.js: posts every coin it finds as it finds it, then
// 'done'. Unlike the book's script, the worker waits for a { draws } message instead of starting
// at once, so the benchmark can time the mining without the worker's start-up.
const { parentPort } = require('node:worker_threads');
const { random64, isHappycoin } = require('./happycoin');

parentPort.on('message', ({ draws }) => {
  for (let i = 0; i < draws; i++) {
    const randomNum = random64();
    if (isHappycoin(randomNum)) parentPort.postMessage(randomNum);
  }
  parentPort.postMessage('done');
});
parentPort.postMessage('ready');
