'use strict';
// Pool#map against a loop of exec() calls: 100k inputs through one method, results in input
// order, on a pool of as many threads as cores.
//   exec loop   for each input pool.exec(method, input), then Promise.all: one native crossing,
//               one job and one Promise per input (the fastest way to submit them one by one)
//   map         pool.map(method, inputs): inputs go to the native pool in chunks, one crossing,
//               job and settlement per chunk, no Promise per input
// 1. native: the built-in `echo` (the work is nothing, so the figure is what submitting costs);
// 2. served: a task file's function (peers/add-task.js, a + b) on a pool of JavaScript workers,
//    where map still submits many calls per crossing but every input runs as a call of its
//    own in a worker, so the workers' own cost bounds both.
// Every result is checked; contestants alternate run by run; a GC before each run.
//
//   node --expose-gc bench/map.js [--quick]   (bench/run.js passes --expose-gc)
const os = require('node:os');
const path = require('node:path');
const { Pool } = require('..');
const { Suite } = require('./harness');

const THREADS = os.availableParallelism();
const INPUTS = 100_000;
const TASK_FILE = path.join(__dirname, 'peers', 'add-task.js');

const suite = new Suite('map', { runs: 5, warmup: 1, quickRuns: 1 });

function gc() {
  if (global.gc) global.gc();
}

/** Milliseconds for `run()` to settle every input; throws unless results[i] === expected(i). */
async function timed(run, expected) {
  gc();
  const t0 = performance.now();
  const results = await run();
  const ms = performance.now() - t0;
  if (results.length !== INPUTS) throw new Error(`${results.length} results for ${INPUTS} inputs`);
  for (let i = 0; i < INPUTS; i++) {
    if (results[i] !== expected(i)) throw new Error(`result ${i} is ${JSON.stringify(results[i])}, not ${expected(i)}`);
  }
  return ms;
}

/** The two contestants on `pool` with `method`, `inputs` and the result each input expects. */
async function compare(kind, pool, method, inputs, expected) {
  const unit = `ms per ${INPUTS / 1000}k inputs (${kind})`;
  await suite.interleave([
    { label: `${kind}: exec loop`, unit, fn: () => timed(() => Promise.all(Array.from(inputs, (x) => pool.exec(method, x))), expected) },
    { label: `${kind}: map`, unit, fn: () => timed(() => pool.map(method, inputs), expected) },
  ]);
}

async function main() {
  suite.log(`${INPUTS} inputs, ${THREADS} threads`);
  const native = new Pool({ threads: THREADS });
  try {
    const numbers = Array.from({ length: INPUTS }, (_, i) => i);
    await compare('native echo', native, 'echo', numbers, (i) => i);
  } finally {
    await native.close();
  }
  suite.ratio(`map vs exec loop, ${INPUTS / 1000}k native echo`, 'native echo: map', 'native echo: exec loop', 3);

  const workers = new Pool({ filename: TASK_FILE, threads: THREADS });
  try {
    await workers.run({ a: 0, b: 0 }); // waits for the workers to load the file
    const pairs = Array.from({ length: INPUTS }, (_, i) => ({ a: i, b: 1 }));
    await compare('task file a + b', workers, 'default', pairs, (i) => i + 1);
  } finally {
    await workers.close();
  }
  suite.ratio(`map vs exec loop, ${INPUTS / 1000}k calls of a task file's function`, 'task file a + b: map', 'task file a + b: exec loop');

  suite.note(
    `${INPUTS} inputs per run; ${THREADS} native threads for echo, ${THREADS} JavaScript workers for the task file; ` +
      'times from the first submission until every result is in an array; a GC before each run.',
  );
  suite.save();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
