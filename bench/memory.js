'use strict';
// BENCHMARKS.md §4 and the book's Table 8-1: what a pool of N threads costs in memory and
// start-up, for N = 0, 1, 2, 4, 8, 16:
//   corepool         new Pool({ threads: N }); ready when pool.broadcast('echo', 0) resolves,
//                    i.e. every thread has taken and answered a call
//   worker_threads   the book's leader.js: N new Worker(…) that each post 'ready'; ready when all
//                    N have
//   piscina          new Piscina({ minThreads: N, maxThreads: N }); ready when N tasks that wait
//                    for each other (bench/peers/barrier-task.js) all return, i.e. N threads run
// Every configuration runs in a fresh child process (`node bench/memory.js --child KIND N`)
// that loads its module, settles, creates the pool, waits until it is ready, settles again and
// reads its RSS. Reported: RSS added over the same kind's 0-thread process, the RSS added within
// the process (after − before), construction time (constructor returns) and ready time; for
// corepool also the ready time of a second pool in the same process (no first-use costs).
//
//   node bench/memory.js [--quick]
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Suite, fmt, median, round } = require('./harness');

const SIZES = [0, 1, 2, 4, 8, 16];
const KINDS = ['corepool', 'worker_threads', 'piscina'];
const MB = 2 ** 20;
const SETTLE_MS = 100;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const since = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

async function settledRss() {
  global.gc?.();
  await sleep(SETTLE_MS);
  global.gc?.();
  return process.memoryUsage.rss() / MB;
}

/** Creates a pool of `n` threads of `kind` in this process; prints one JSON line. */
async function child(kind, n) {
  let start; // (n) → { constructed, ready: Promise, stop }
  if (kind === 'corepool') {
    const { Pool } = require('..');
    start = (n) => {
      const pool = new Pool({ threads: n });
      return {
        ready: pool.broadcast('echo', 0).then((r) => {
          if (r.length !== n) throw new Error(`broadcast answered ${r.length} of ${n}`);
        }),
        stop: () => pool.close(),
      };
    };
  } else if (kind === 'worker_threads') {
    const { Worker } = require('node:worker_threads');
    const file = path.join(__dirname, 'peers', 'ready-worker.js');
    start = (n) => {
      const workers = [];
      const ready = [];
      for (let i = 0; i < n; i++) {
        const w = new Worker(file);
        workers.push(w);
        ready.push(new Promise((resolve, reject) => w.once('message', resolve).once('error', reject)));
      }
      return { ready: Promise.all(ready), stop: () => Promise.all(workers.map((w) => w.terminate())) };
    };
  } else if (kind === 'piscina') {
    const { Piscina } = require('piscina');
    const filename = path.join(__dirname, 'peers', 'barrier-task.js');
    start = (n) => {
      const pool = new Piscina({ filename, minThreads: n, maxThreads: n });
      const counter = new Int32Array(new SharedArrayBuffer(4));
      const tasks = Array.from({ length: n }, () => pool.run({ counter, n }));
      return { ready: Promise.all(tasks), stop: () => pool.destroy() };
    };
  } else {
    throw new Error(`unknown kind ${kind}`);
  }

  const before = await settledRss();
  let constructMs = 0;
  let readyMs = 0;
  let stop = async () => {};
  if (n > 0) {
    const t0 = process.hrtime.bigint();
    const p = start(n);
    constructMs = since(t0);
    await p.ready;
    readyMs = since(t0);
    stop = p.stop;
  }
  const after = await settledRss();
  await stop();
  // corepool only: a second pool in the same (now warm) process, to tell the per-pool cost
  // from the first-use cost of the addon's code paths in a fresh process.
  let againMs = null;
  if (kind === 'corepool' && n > 0) {
    const t0 = process.hrtime.bigint();
    const p = start(n);
    await p.ready;
    againMs = since(t0);
    await p.stop();
  }
  process.stdout.write(`${JSON.stringify({ kind, n, before, after, constructMs, readyMs, againMs })}\n`);
  process.exit(0);
}

async function main() {
  const suite = new Suite('memory', { runs: 3, quickRuns: 1 });
  const runs = {}; // `${kind} ${n}` → [{ before, after, constructMs, readyMs }]
  for (let r = 0; r < suite.runs; r++) {
    for (const n of SIZES) {
      for (const kind of KINDS) {
        const out = execFileSync(process.execPath, ['--expose-gc', __filename, '--child', kind, String(n)], {
          encoding: 'utf8',
          timeout: 60_000,
        });
        const m = JSON.parse(out.trim().split('\n').pop());
        (runs[`${kind} ${n}`] ??= []).push(m);
        suite.log(
          `${kind} ${n} threads: run ${r + 1}/${suite.runs} → RSS ${fmt(m.after)} MB (+${fmt(m.after - m.before)} in process), ` +
            `constructed ${fmt(m.constructMs)} ms, ready ${fmt(m.readyMs)} ms`,
        );
      }
    }
  }

  const rows = [];
  for (const kind of KINDS) {
    const base = median(runs[`${kind} 0`].map((m) => m.after));
    for (const n of SIZES) {
      const ms = runs[`${kind} ${n}`];
      const added = suite.record(`${kind} ${n} threads: RSS added`, 'MB', ms.map((m) => m.after - base));
      const ready = suite.record(`${kind} ${n} threads: ready`, 'ms', ms.map((m) => m.readyMs));
      suite.record(`${kind} ${n} threads: constructed`, 'ms', ms.map((m) => m.constructMs));
      const again = ms.map((m) => m.againMs).filter((x) => x != null);
      if (again.length) suite.record(`${kind} ${n} threads: ready, second pool in the process`, 'ms', again);
      rows.push({
        kind,
        threads: n,
        rssMB: median(ms.map((m) => m.after)),
        addedMB: added.median,
        addedMin: added.min,
        addedMax: added.max,
        addedInProcessMB: median(ms.map((m) => m.after - m.before)),
        constructMs: median(ms.map((m) => m.constructMs)),
        readyMs: ready.median,
        secondPoolReadyMs: kind === 'corepool' && n > 0 ? suite.results[`${kind} ${n} threads: ready, second pool in the process`].median : null,
        perThreadMB: n ? added.median / n : null,
      });
    }
  }
  suite.table('memory and start-up', round(rows));

  const top = SIZES[SIZES.length - 1];
  suite.limit(`corepool ${top} threads: RSS added over 0 threads`, `corepool ${top} threads: RSS added`, 4);
  suite.limit(`corepool ${top} threads: ready (broadcast answered by all)`, `corepool ${top} threads: ready`, 2);
  suite.ratio(`corepool vs worker_threads ready time (${top} threads)`, `corepool ${top} threads: ready`, `worker_threads ${top} threads: ready`);
  suite.ratio(`corepool vs piscina ready time (${top} threads)`, `corepool ${top} threads: ready`, `piscina ${top} threads: ready`);
  suite.note('each configuration in a fresh child process (node --expose-gc); RSS read after GC and a 100 ms settle, with the pool ready and idle');
  suite.note('RSS added = RSS of the N-thread process − median RSS of the same kind\'s 0-thread process (module loaded, no pool)');
  suite.note('secondPoolReadyMs (corepool): a second pool of the same size created after the first closed, in the same process: the per-pool cost without first-use costs');
  suite.note('ready: corepool = broadcast(\'echo\', 0) resolved (every thread answered); worker_threads = every worker posted \'ready\'; piscina = N barrier tasks ran at once');
  suite.save();
}

const at = process.argv.indexOf('--child');
(at >= 0 ? child(process.argv[at + 1], Number(process.argv[at + 2])) : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
