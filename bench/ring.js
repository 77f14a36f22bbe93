'use strict';
// MB/s through a ring buffer between worker_threads: corepool's RingBuffer (bytes moved
// natively under the lock, sleepers woken only when the ring leaves empty or full) vs the
// book's SharedRingBuffer in JavaScript (its Mutex, polling writers and readers), with the
// same memory layout, producers, consumers and chunk sizes.
//
//   node bench/ring.js [--quick]
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Suite } = require('./harness');

const WORKER = path.join(__dirname, 'peers', 'ring-worker.js');
const MB = 1024 * 1024;

// mb: megabytes moved per run by each contestant (the book's version is much slower).
const SCENARIOS = [
  {
    name: '1→1, 64 KiB ring, 16 KiB chunks',
    producers: 1,
    consumers: 1,
    capacity: 64 * 1024,
    chunks: [16 * 1024],
    mb: { corepool: 256, book: 64 },
  },
  { name: '1→1, 4 KiB ring, 1 KiB chunks', producers: 1, consumers: 1, capacity: 4096, chunks: [1024], mb: { corepool: 64, book: 8 } },
  {
    name: '4→4, 100-byte ring, 4–256-byte chunks',
    producers: 4,
    consumers: 4,
    capacity: 100,
    chunks: [4, 52, 256, 100, 12, 180, 36],
    mb: { corepool: 8, book: 1 },
  },
];

/** Runs one transfer; resolves with MB/s from the first start to the last finish. */
function transfer(kind, s, megabytes) {
  const ring = new SharedArrayBuffer(16 + s.capacity);
  const control = new Int32Array(new SharedArrayBuffer(8));
  const perProducer = Math.floor((megabytes * MB) / s.producers);
  const total = perProducer * s.producers;
  const workers = [];
  for (let i = 0; i < s.producers; i++) workers.push({ role: 'producer', id: i + 1, bytes: perProducer });
  for (let i = 0; i < s.consumers; i++) workers.push({ role: 'consumer', id: i });
  const ready = [];
  const done = workers.map(
    (w) =>
      new Promise((resolve, reject) => {
        const worker = new Worker(WORKER, { workerData: { ...w, kind, ring, control: control.buffer, total, chunks: s.chunks } });
        ready.push(new Promise((r) => worker.once('online', r)));
        worker.once('message', resolve);
        worker.once('error', reject);
      }),
  );
  return Promise.all(ready)
    .then(() => new Promise((r) => setTimeout(r, 50))) // let every worker reach its wait
    .then(() => {
      Atomics.store(control, 0, 1);
      Atomics.notify(control, 0);
      return Promise.all(done);
    })
    .then((results) => {
      const received = results.filter((_, i) => workers[i].role === 'consumer').reduce((n, r) => n + r.moved, 0);
      if (received !== total) throw new Error(`${kind}: ${received} of ${total} bytes arrived`);
      const seconds = (Math.max(...results.map((r) => r.finished)) - Math.min(...results.map((r) => r.started))) / 1000;
      return total / MB / seconds;
    });
}

async function main() {
  const suite = new Suite('ring', { runs: 5 });
  const table = [];
  for (const s of SCENARIOS) {
    const scale = suite.quick ? 4 : 1;
    const labels = {};
    for (const kind of ['corepool', 'book']) {
      labels[kind] = `${kind} ${s.name}`;
      await suite.measure(labels[kind], 'MB/s', () => transfer(kind, s, s.mb[kind] / scale));
    }
    const r = suite.ratio(`corepool vs book, ${s.name}`, labels.corepool, labels.book, 3);
    table.push({ scenario: s.name, corepool: suite.results[labels.corepool].median, book: suite.results[labels.book].median, ratio: r.value });
    const moved = `corepool moved ${s.mb.corepool / scale} MB per run, the book's version ${s.mb.book / scale} MB`;
    suite.note(`${s.name}: ${moved} (it is slower; MB/s is what is compared)`);
  }
  suite.table('MB/s', table);
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
