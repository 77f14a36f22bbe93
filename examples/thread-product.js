// The book's thread-product demo on corepool's Mutex: four worker_threads each multiply one
// shared number by their own factor, 1,000 times, inside the mutex. The multiply is a plain
// read-then-write, so any overlap would lose updates and the product would come out wrong.
//
//   node examples/thread-product.js
'use strict';
const { Worker, isMainThread, workerData } = require('node:worker_threads');
const { Mutex } = require('..');

const MODULUS = 1_000_000_007;

if (isMainThread) {
  const factors = [2, 3, 5, 7];
  const runs = 1000;
  // Int32 word 0: the mutex; Float64 at byte 8: the product.
  const sab = new SharedArrayBuffer(16);
  const product = new Float64Array(sab, 8, 1);
  product[0] = 1;
  const exits = factors.map(
    (factor) =>
      new Promise((resolve, reject) => {
        new Worker(__filename, { workerData: { sab, factor, runs } }).on('exit', resolve).on('error', reject);
      }),
  );
  Promise.all(exits).then(() => {
    let expected = 1n;
    for (const f of factors) for (let i = 0; i < runs; i++) expected = (expected * BigInt(f)) % BigInt(MODULUS);
    console.log(`${factors.length} threads × ${runs} multiplications under corepool's Mutex`);
    console.log(`product mod ${MODULUS}: ${product[0]}`);
    console.log(`expected:             ${expected}`);
    const ok = product[0] === Number(expected);
    console.log(ok ? 'no update was lost' : 'UPDATES WERE LOST');
    process.exitCode = ok ? 0 : 1;
  });
} else {
  const { sab, factor, runs } = workerData;
  const mutex = new Mutex(new Int32Array(sab, 0, 1), 0);
  const product = new Float64Array(sab, 8, 1);
  for (let i = 0; i < runs; i++) {
    mutex.withLock(() => {
      const value = product[0];
      product[0] = (value * factor) % MODULUS;
    });
  }
}
