'use strict';
// One task in a worker_thread of its own, for tests whose workers report once and exit.
const { Worker } = require('node:worker_threads');

/**
 * Runs `task` in a Worker of `file` (`workerData: { task, ...data }`); resolves with the message
 * it posted, rejects on an error, on a non-zero exit or on an exit without a message.
 */
function runTask(file, task, data) {
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { workerData: { task, ...data } });
    let result;
    w.once('message', (m) => (result = m));
    w.once('error', reject);
    w.once('exit', (code) => (code === 0 && result !== undefined ? resolve(result) : reject(new Error(`${task} worker exited with ${code}`))));
  });
}

module.exports = { runTask };
