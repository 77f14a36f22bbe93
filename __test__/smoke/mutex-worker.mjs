// A worker_thread of the runtime smoke check: adds 1 to word 1 `rounds` times under the
// Mutex on word 0, with a plain read and write that would lose counts without the lock.
import { parentPort, workerData } from 'node:worker_threads';
import corepool from '../../index.js';

const words = new Int32Array(workerData.sab);
const lock = new corepool.Mutex(words, 0);
for (let i = 0; i < workerData.rounds; i++) {
  lock.withLock(() => {
    const seen = Atomics.load(words, 1);
    Atomics.store(words, 1, seen + 1);
  });
}
parentPort.postMessage('done');
