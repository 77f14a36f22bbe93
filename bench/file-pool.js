'use strict';
// A pool of JavaScript workers started from a task file (`new Pool({ filename })`) against
// Piscina, its model, on a tiny task: both load the same file (peers/add-task.js, whose default
// export returns a + b) into as many worker_threads as the machine has cores, and are called
// the same way, `run({ a, b })`, from 64 concurrent closed loops (every result checked). The
// figure is settled calls per second; the contestants alternate run by run.
// The file pool's calls reach its workers through the native scheduler, as served methods do
// (bench/serve.js measures those); Piscina posts each task to a worker with postMessage.
// The same pool on an HTTP route (rendering a page with mustache.js in its workers) is the
// /file-pool route of bench/template-render.js.
//
//   node bench/file-pool.js [--quick]
const os = require('node:os');
const path = require('node:path');
const { Piscina, version: piscinaVersion } = require('piscina');
const { Pool } = require('..');
const { Suite, closedLoop } = require('./harness');

const THREADS = os.availableParallelism();
const CALLERS = 64;
const TASK_FILE = path.join(__dirname, 'peers', 'add-task.js');

const suite = new Suite('file-pool', { runs: 5, warmup: 1, quickRuns: 1 });
const LOOP_MS = suite.quick ? 1000 : 3000;

async function main() {
  suite.log(`${THREADS} worker_threads each, task file ${path.relative(process.cwd(), TASK_FILE)}; ${CALLERS} callers × ${LOOP_MS} ms`);
  const pool = new Pool({ filename: TASK_FILE, threads: THREADS });
  const piscina = new Piscina({ filename: TASK_FILE, minThreads: THREADS, maxThreads: THREADS });
  try {
    // The first calls also wait for both pools' workers to load the file.
    if ((await pool.run({ a: 2, b: 3 })) !== 5 || (await piscina.run({ a: 2, b: 3 })) !== 5) throw new Error('add is wrong');
    const loop = { callers: CALLERS, ms: LOOP_MS, check: (i, sum) => sum === i + 1 };
    await suite.interleave([
      { label: 'file pool', unit: 'ops/s', fn: () => closedLoop((i) => pool.run({ a: i, b: 1 }), loop) },
      { label: 'piscina', unit: 'ops/s', fn: () => closedLoop((i) => piscina.run({ a: i, b: 1 }), loop) },
    ]);
    suite.ratio('file pool vs piscina, tiny task', 'file pool', 'piscina', 5);
    suite.note(
      `${THREADS} worker_threads per pool (file pool: threads ${THREADS}; Piscina ${piscinaVersion}: ` +
        `minThreads = maxThreads = ${THREADS}), one call at a time per worker in both; ${CALLERS} callers, ` +
        `${LOOP_MS / 1000} s per run, the contestants in alternating rounds.`,
    );
  } finally {
    await Promise.all([pool.close(), piscina.destroy()]);
  }
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
