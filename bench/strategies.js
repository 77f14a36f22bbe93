'use strict';
// BENCHMARKS.md §5, strategies: how roundrobin, random and leastbusy place work.
//
// 1. The book's Table 6-1 from a real run: 3 workers, requests R1…R9 submitted 5 ms apart
//    without waiting, each holding its worker for the time in SCHEDULE; which worker (0-based)
//    served each request, for every strategy, on corepool and on the book's RpcWorkerPool.
//    corepool: the worker whose queued + running + completed count went up across exec();
//    RpcWorkerPool: what its getWorker() returned.
// 2. A skewed load on corepool (threads = cores): TASKS sleep tasks, every 6th one 20 ms, the
//    others 1 ms (20× shorter).
//    - batch: all submitted at once; figure = time until the last settles (makespan);
//    - stream: one task every 3 ms (about 70% of the pool's capacity); figure = p50 and p99 of
//      each task's submit → settle time.
//    With the tasks' count per worker, their busy time per worker and the spread (max − min).
//
//   node bench/strategies.js [--quick]
const os = require('node:os');
const { Pool } = require('..');
const { Suite, quick, fmt, median, round } = require('./harness');
const RpcWorkerPool = require('./peers/rpc-worker-pool');

const STRATEGIES = ['roundrobin', 'random', 'leastbusy'];
const CORES = os.availableParallelism();
const TABLE_WORKERS = 3;
// R1…R9: how long each holds its worker (ms); they arrive 5 ms apart.
const SCHEDULE = [40, 10, 10, 30, 10, 10, 10, 20, 10];
const GAP_MS = 5;
const TASKS = quick ? 60 : 120;
const SHORT_MS = 1;
const LONG_MS = 20;
const STREAM_GAP_MS = 3;

const suite = new Suite('strategies', { runs: 3, quickRuns: 2 });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const taskMs = (i) => (i % 6 === 5 ? LONG_MS : SHORT_MS);

/** Per worker: calls it has accepted so far (queued + running + completed). */
function accepted(pool) {
  return pool.stats().workers.map((w) => w.queued + w.running + w.completed);
}

/** Runs SCHEDULE on a corepool pool; returns the worker index that took each request. */
async function tableCorepool(strategy) {
  const pool = new Pool({ threads: TABLE_WORKERS, strategy });
  await pool.broadcast('echo', 0);
  const picks = [];
  const calls = [];
  for (const ms of SCHEDULE) {
    const before = accepted(pool);
    calls.push(pool.exec('sleep', ms));
    const after = accepted(pool);
    const grew = after.flatMap((n, i) => (n === before[i] + 1 ? [i] : []));
    picks.push(grew.length === 1 ? grew[0] : '?');
    await sleep(GAP_MS);
  }
  await Promise.all(calls);
  await pool.close();
  return picks;
}

/** Runs SCHEDULE on the book's RpcWorkerPool; returns getWorker()'s pick for each request. */
async function tableBook(strategy) {
  const pool = new RpcWorkerPool(RpcWorkerPool.COMMANDS, TABLE_WORKERS, strategy);
  await Promise.all(Array.from({ length: TABLE_WORKERS }, () => pool.exec('echo', 0)));
  const picks = [];
  const getWorker = pool.getWorker.bind(pool);
  pool.getWorker = () => {
    const w = getWorker();
    picks.push(pool.workers.indexOf(w));
    return w;
  };
  const calls = [];
  for (const ms of SCHEDULE) {
    calls.push(pool.exec('sleep', ms));
    await sleep(GAP_MS);
  }
  await Promise.all(calls);
  await pool.close();
  return picks;
}

/** Per-worker completed count and busy time between two stats() snapshots. */
function perWorker(before, after) {
  return after.workers.map((w, i) => ({
    tasks: w.completed - before.workers[i].completed,
    busyMs: w.busyMs - before.workers[i].busyMs,
  }));
}

async function batch(pool) {
  const before = pool.stats();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: TASKS }, (_, i) => pool.exec('sleep', taskMs(i))));
  const ms = performance.now() - t0;
  return { ms, workers: perWorker(before, pool.stats()) };
}

async function stream(pool) {
  const before = pool.stats();
  const lat = [];
  const calls = [];
  for (let i = 0; i < TASKS; i++) {
    const t0 = performance.now();
    calls.push(pool.exec('sleep', taskMs(i)).then(() => lat.push(performance.now() - t0)));
    await sleep(STREAM_GAP_MS);
  }
  await Promise.all(calls);
  lat.sort((a, b) => a - b);
  return {
    p50: lat[Math.floor(lat.length * 0.5)],
    p99: lat[Math.floor(lat.length * 0.99)],
    workers: perWorker(before, pool.stats()),
  };
}

const spread = (xs) => Math.max(...xs) - Math.min(...xs);

async function main() {
  // 1. Table 6-1.
  const table = [];
  for (const strategy of STRATEGIES) {
    for (const [impl, run] of [['corepool', tableCorepool], ["book's RpcWorkerPool", tableBook]]) {
      const picks = await run(strategy);
      suite.log(`Table 6-1, ${impl}, ${strategy}: ${picks.join(' ')}`);
      table.push({ strategy, pool: impl, ...Object.fromEntries(picks.map((w, i) => [`R${i + 1}`, w])) });
    }
  }
  suite.table('Table 6-1: worker (0-based) serving each request', table);
  suite.note(
    `Table 6-1: ${TABLE_WORKERS} workers; R1…R9 arrive ${GAP_MS} ms apart and hold their worker ${SCHEDULE.join(', ')} ms; ` +
      "ties in leastbusy go to worker 0 in the book's pool and, in corepool, to a tied worker that is still awake, else to a random one.",
  );

  // 2. Skewed load.
  const pools = Object.fromEntries(STRATEGIES.map((s) => [s, new Pool({ threads: CORES, strategy: s })]));
  for (const pool of Object.values(pools)) await pool.broadcast('echo', 0);
  const detail = {}; // label → runs of per-worker figures
  const entries = [];
  for (const strategy of STRATEGIES) {
    entries.push({
      label: `batch ${strategy}`,
      unit: 'ms',
      fn: async () => {
        const r = await batch(pools[strategy]);
        (detail[`batch ${strategy}`] ??= []).push(r.workers);
        return r.ms;
      },
    });
  }
  await suite.interleave(entries, { warmup: 0 });

  const streamRuns = {};
  for (let r = 0; r < suite.runs; r++) {
    for (const strategy of STRATEGIES) {
      const s = await stream(pools[strategy]);
      (streamRuns[strategy] ??= []).push(s);
      (detail[`stream ${strategy}`] ??= []).push(s.workers);
      suite.log(`stream ${strategy}: run ${r + 1}/${suite.runs} → p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms`);
    }
  }
  for (const strategy of STRATEGIES) {
    suite.record(`stream ${strategy} p50`, 'ms', streamRuns[strategy].map((s) => s.p50));
    suite.record(`stream ${strategy} p99`, 'ms', streamRuns[strategy].map((s) => s.p99));
  }
  await Promise.all(Object.values(pools).map((p) => p.close()));

  const rows = [];
  for (const mode of ['batch', 'stream']) {
    for (const strategy of STRATEGIES) {
      const runs = detail[`${mode} ${strategy}`];
      const last = runs[runs.length - 1];
      const row = { mode, strategy };
      if (mode === 'batch') {
        const r = suite.results[`batch ${strategy}`];
        Object.assign(row, { totalMs: r.median, min: r.min, max: r.max });
      } else {
        Object.assign(row, {
          p50Ms: suite.results[`stream ${strategy} p50`].median,
          p99Ms: suite.results[`stream ${strategy} p99`].median,
        });
      }
      Object.assign(row, {
        tasksPerWorker: last.map((w) => w.tasks).join('/'),
        busyMsPerWorker: last.map((w) => Math.round(w.busyMs)).join('/'),
        taskSpread: median(runs.map((ws) => spread(ws.map((w) => w.tasks)))),
        busyMsSpread: median(runs.map((ws) => spread(ws.map((w) => w.busyMs)))),
      });
      rows.push(row);
    }
  }
  suite.table('skewed load (every 6th task 20× longer)', round(rows));

  suite.ratio('leastbusy vs roundrobin (skewed batch total time)', 'batch leastbusy', 'batch roundrobin', 1.0);
  suite.ratio('leastbusy vs random (skewed batch total time)', 'batch leastbusy', 'batch random');
  suite.ratio('leastbusy vs roundrobin (skewed stream p99)', 'stream leastbusy p99', 'stream roundrobin p99');
  suite.note(
    `skewed load: ${TASKS} sleep tasks on ${CORES} threads, task i sleeps ${LONG_MS} ms if i % 6 = 5, else ${SHORT_MS} ms; ` +
      `batch = all at once, stream = one every ${STREAM_GAP_MS} ms. "per worker" columns are from the last run; spreads are medians.`,
  );
  const lb = suite.results['batch leastbusy'].median;
  const rr = suite.results['batch roundrobin'].median;
  if (!(lb < rr)) suite.note(`NOT MET: leastbusy (${fmt(lb)} ms) does not beat roundrobin (${fmt(rr)} ms) on the skewed batch`);
  suite.save();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
