'use strict';
// Lock/unlock pairs per second: corepool's Mutex vs the book's JS Mutex (and the native-call
// design corepool did not choose), uncontended on one thread and contended by 4 worker_threads.
//
//   node bench/mutex.js [--quick]
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Suite } = require('./harness');
const { mutex, KINDS } = require('./peers/mutex-variants.js');

const THREADS = 4;

/** A lock/unlock loop of its own per kind: one shared loop would see several kinds at its call
 *  sites and let V8's inline caches favour whichever ran first. */
const loops = new Map(KINDS.map((kind) => [kind, new Function('m', 'pairs', 'for (let i = 0; i < pairs; i++) { m.lock(); m.unlock(); }')]));

function uncontended(kind, pairs) {
  const array = new Int32Array(new SharedArrayBuffer(4));
  const m = mutex(kind, array, 0);
  const loop = loops.get(kind);
  const t = performance.now();
  loop(m, pairs);
  return (pairs / (performance.now() - t)) * 1000;
}

async function contended(kind, pairs) {
  const sab = new SharedArrayBuffer(16);
  const words = new Int32Array(sab, 0, 2);
  const script = path.join(__dirname, 'peers', 'mutex-worker.js');
  const workers = Array.from({ length: THREADS }, () => new Worker(script, { workerData: { sab, kind, pairs } }));
  const results = workers.map((w) => new Promise((resolve, reject) => w.once('message', resolve).once('error', reject)));
  await Promise.all(workers.map((w) => new Promise((r) => w.once('online', r))));
  await new Promise((r) => setTimeout(r, 50));
  Atomics.store(words, 1, 1);
  Atomics.notify(words, 1);
  const times = await Promise.all(results);
  const total = THREADS * pairs;
  const counted = new Float64Array(sab, 8, 1)[0];
  if (counted !== total) throw new Error(`${kind}: ${counted} of ${total} increments survived: the mutex failed`);
  const seconds = (Math.max(...times.map((t) => t.finished)) - Math.min(...times.map((t) => t.started))) / 1000;
  return total / seconds;
}

async function main() {
  const suite = new Suite('mutex', { runs: 5 });
  const solo = suite.quick ? 500_000 : 2_000_000;
  const shared = suite.quick ? 50_000 : 200_000;
  for (const kind of KINDS) await suite.measure(`uncontended ${kind}`, 'pairs/s', () => uncontended(kind, solo));
  for (const kind of KINDS) await suite.measure(`contended ${kind}`, 'pairs/s', () => contended(kind, shared));
  suite.ratio('uncontended: corepool vs book', 'uncontended corepool', 'uncontended book');
  const design = suite.ratio('uncontended: corepool (inline JS) vs native call per op', 'uncontended corepool', 'uncontended native-op');
  suite.ratio('contended: corepool vs book', 'contended corepool', 'contended book');
  suite.ratio('contended: corepool (inline JS) vs native call per op', 'contended corepool', 'contended native-op');
  suite.note(
    design.value >= 1
      ? `a native call per lock/unlock is ${design.value.toFixed(2)}× slower than JS Atomics uncontended, ` +
          "so corepool's Mutex does its compare-exchanges inline in JS (the protocol of src/shm/mutex.rs) " +
          "and keeps native calls for the ring buffer's data"
      : `a native call per lock/unlock measured faster than JS Atomics here (${(1 / design.value).toFixed(2)}×): ` +
          "revisit the inline design of corepool's Mutex",
  );
  suite.note(
    `uncontended: ${solo} pairs on one thread; contended: ${THREADS} worker_threads × ${shared} pairs, ` +
      'a plain increment inside, checked at the end',
  );
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
