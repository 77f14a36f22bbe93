'use strict';
// BENCHMARKS.md §3, dispatch: what one tiny call costs.
//
// 1. Closed loop: 64 concurrent callers, each awaiting one tiny call after another for 5 s
//    (--quick: 1 s), on every pool with threads = cores:
//      corepool          exec('echo', x)
//      piscina           run({ a, b }) → a + b
//      tinypool          run({ a, b }) → a + b
//      workerpool        exec('add', [a, b])
//      rpc-worker-pool   the book's RpcWorkerPool (leastbusy), exec('echo', x)
//    Contestants run in alternating rounds; the figure is settled calls per second.
// 2. Burst: 200k corepool exec('echo', i) at once under Promise.all: time, and heapUsed right
//    after the last call settles (no GC) against heapUsed before (after a GC). The same burst
//    of plain Promises settled from a timer shows what any Promise-per-call API costs.
// 3. Sequential latency: one call at a time, submit → settle, p50 and p99 (µs); next to it a
//    bare C round trip between two threads that sleep between turns: what two cross-thread
//    wake-ups cost here. It is a reference, not a floor: corepool's threads poll for 50 µs
//    before they sleep (src/pool/idle.rs), so a sequential caller's next call wakes no one.
//
//   node --expose-gc bench/dispatch.js [--quick]   (bench/run.js passes --expose-gc)
const os = require('node:os');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { Piscina } = require('piscina');
const { Tinypool } = require('tinypool');
const workerpool = require('workerpool');
const { Pool } = require('..');
const { Suite, quick, fmt, median, round } = require('./harness');
const RpcWorkerPool = require('./peers/rpc-worker-pool');
const { buildC } = require('./peers/cc');

const CORES = os.availableParallelism();
const CALLERS = 64;
const LOOP_MS = quick ? 1000 : 5000;
const WARMUP_MS = quick ? 200 : 1000;
const BURST = 200_000;
const SEQ_CALLS = quick ? 3000 : 20_000;
const SEQ_CALLS_PEER = quick ? 1000 : 5000;
const ADD = path.join(__dirname, 'peers', 'add-task.js');

const suite = new Suite('dispatch', { runs: 3, quickRuns: 2 });
const wrong = [];

const now = () => performance.now();

/** CALLERS concurrent loops of `call(i)` for `ms`; returns settled calls per second. */
async function closedLoop(label, call, check, ms) {
  let done = 0;
  const end = now() + ms;
  const t0 = now();
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, k) => {
      for (let i = k * 1e6; now() < end; i++) {
        const r = await call(i);
        if (r !== check(i) && wrong.length < 5) wrong.push(`${label}: call(${i}) → ${r}`);
        done++;
      }
    }),
  );
  return done / ((now() - t0) / 1000);
}

/** `calls` calls one after another; returns [p50, p99] of submit → settle, in µs. */
async function sequential(call, calls) {
  const lat = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await call(i);
    lat[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  lat.sort();
  return [lat[Math.floor(calls * 0.5)], lat[Math.floor(calls * 0.99)]];
}

const FLOOR = 'thread round trip (C)';

/** Runs the C ping-pong for `rounds`; returns [p50, p99] in µs. */
function floor(exe, rounds) {
  const r = JSON.parse(execFileSync(exe, [String(rounds)], { encoding: 'utf8' }));
  return [r.p50, r.p99];
}

function gc() {
  if (global.gc) {
    global.gc();
    global.gc();
  }
}

const MB = 2 ** 20;

/** 200k calls at once; returns { ms, before, settled, retained } (heap in MB). */
async function burst(call) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const t0 = now();
  let results = await Promise.all(Array.from({ length: BURST }, (_, i) => call(i)));
  const ms = now() - t0;
  const settled = process.memoryUsage().heapUsed;
  for (let i = 0; i < BURST; i += 997) {
    if (results[i] !== i && wrong.length < 5) wrong.push(`burst: call(${i}) → ${results[i]}`);
  }
  // eslint-disable-next-line no-useless-assignment -- drops the results before the heap is measured
  results = null;
  gc();
  const retained = process.memoryUsage().heapUsed;
  return { ms, before: before / MB, settled: settled / MB, retained: retained / MB };
}

async function main() {
  suite.log(`${CORES} threads per pool, ${CALLERS} callers, ${LOOP_MS} ms per closed loop`);
  const pool = new Pool({ threads: CORES });
  const piscina = new Piscina({ filename: ADD, minThreads: CORES, maxThreads: CORES });
  const tinypool = new Tinypool({ filename: ADD, minThreads: CORES, maxThreads: CORES });
  const wpool = workerpool.pool(path.join(__dirname, 'peers', 'add-workerpool.js'), {
    minWorkers: CORES,
    maxWorkers: CORES,
  });
  const rpc = new RpcWorkerPool(RpcWorkerPool.COMMANDS, CORES, 'leastbusy');

  const same = (i) => i;
  const sum = (i) => i + 1;
  const contestants = [
    { label: 'corepool', call: (i) => pool.exec('echo', i), check: same },
    { label: 'piscina', call: (i) => piscina.run({ a: i, b: 1 }), check: sum },
    { label: 'tinypool', call: (i) => tinypool.run({ a: i, b: 1 }), check: sum },
    { label: 'workerpool', call: (i) => wpool.exec('add', [i, 1]), check: sum },
    { label: 'rpc-worker-pool', call: (i) => rpc.exec('echo', i), check: same },
  ];

  // 1. Closed loops. Warm-up also starts every pool's threads.
  for (const { label, call, check } of contestants) {
    suite.log(`${label}: warm-up`);
    await closedLoop(label, call, check, WARMUP_MS);
  }
  await suite.interleave(
    contestants.map(({ label, call, check }) => ({
      label,
      unit: 'ops/s',
      fn: () => closedLoop(label, call, check, LOOP_MS),
    })),
    { warmup: 0 },
  );

  // 3. Sequential latency (before the burst, so the heap is quiet).
  const seq = [
    { label: 'corepool', call: (i) => pool.exec('echo', i), calls: SEQ_CALLS },
    { label: 'piscina', call: (i) => piscina.run({ a: i, b: 1 }), calls: SEQ_CALLS_PEER },
    { label: 'rpc-worker-pool', call: (i) => rpc.exec('echo', i), calls: SEQ_CALLS_PEER },
  ];
  const lat = Object.fromEntries(seq.map(({ label }) => [label, { p50: [], p99: [] }]));
  for (const { call, calls } of seq) await sequential(call, Math.min(calls, 1000));
  // The machine's floor: a bare round trip between two sleeping threads (bench/peers/pingpong.c).
  const pingpong = buildC('pingpong');
  if (pingpong.exe) {
    lat[FLOOR] = { p50: [], p99: [] };
    seq.push({ label: FLOOR, calls: SEQ_CALLS });
  }
  for (let r = 0; r < suite.runs; r++) {
    for (const { label, call, calls } of seq) {
      const [p50, p99] = call ? await sequential(call, calls) : floor(pingpong.exe, calls);
      lat[label].p50.push(p50);
      lat[label].p99.push(p99);
      suite.log(`${label} sequential: run ${r + 1}/${suite.runs} → p50 ${fmt(p50)} µs, p99 ${fmt(p99)} µs`);
    }
  }
  for (const { label } of seq) {
    suite.record(`${label} latency p50`, 'µs', lat[label].p50);
    suite.record(`${label} latency p99`, 'µs', lat[label].p99);
  }

  // 2. Bursts: corepool, and plain Promises settled from a timer (the floor for any API that
  //    returns one Promise per call).
  const bursts = {
    corepool: (i) => pool.exec('echo', i),
    'plain promises': (i) => new Promise((resolve) => setImmediate(resolve, i)),
  };
  const burstRuns = {};
  await burst(bursts.corepool);
  for (let r = 0; r < suite.runs; r++) {
    for (const [label, call] of Object.entries(bursts)) {
      const b = await burst(call);
      (burstRuns[label] ??= []).push(b);
      suite.log(
        `${label} burst of ${fmt(BURST)}: run ${r + 1}/${suite.runs} → ${fmt(b.ms)} ms; heap ${fmt(b.before)} MB before, ` +
          `${fmt(b.settled)} MB settled (${(b.settled / b.before).toFixed(2)}×), ${fmt(b.retained)} MB after GC`,
      );
    }
  }
  for (const [label, runs] of Object.entries(burstRuns)) {
    suite.record(`${label} burst time`, 'ms', runs.map((b) => b.ms));
    suite.record(`${label} burst heap settled/before`, '×', runs.map((b) => b.settled / b.before));
    suite.record(`${label} burst heap retained/before`, '×', runs.map((b) => b.retained / b.before));
  }

  await Promise.all([pool.close(), piscina.destroy(), tinypool.destroy(), wpool.terminate(), rpc.close()]);

  suite.ratio('corepool vs piscina (closed loop)', 'corepool', 'piscina', 10);
  suite.ratio('corepool vs tinypool (closed loop)', 'corepool', 'tinypool');
  suite.ratio('corepool vs workerpool (closed loop)', 'corepool', 'workerpool');
  suite.ratio('corepool vs rpc-worker-pool (closed loop)', 'corepool', 'rpc-worker-pool');
  suite.limit('corepool sequential latency p50', 'corepool latency p50', 30);
  suite.ratio('corepool vs piscina (sequential p50)', 'corepool latency p50', 'piscina latency p50');
  suite.ratio('corepool vs two C threads waking each other (sequential p50)', 'corepool latency p50', `${FLOOR} latency p50`);
  suite.limit(`corepool burst of ${fmt(BURST)}: heap settled/before (no GC)`, 'corepool burst heap settled/before', 2);
  suite.limit(`corepool burst of ${fmt(BURST)}: heap after GC/before (leak check)`, 'corepool burst heap retained/before', 2);
  suite.ratio('corepool vs plain promises (burst heap settled)', 'corepool burst heap settled/before', 'plain promises burst heap settled/before');

  suite.table(
    'closed loop',
    round(
      contestants.map(({ label }) => {
        const r = suite.results[label];
        return { pool: label, threads: CORES, opsPerSec: r.median, min: r.min, max: r.max, vsCorepool: r.median / suite.results.corepool.median };
      }),
    ),
  );
  suite.table(
    'sequential latency',
    round(
      seq.map(({ label, calls }) => ({
        pool: label,
        calls,
        p50us: suite.results[`${label} latency p50`].median,
        p99us: suite.results[`${label} latency p99`].median,
      })),
    ),
  );
  suite.table(
    'burst',
    round(
      Object.entries(burstRuns).map(([label, runs]) => ({
        what: label,
        calls: BURST,
        ms: median(runs.map((b) => b.ms)),
        callsPerSec: BURST / (median(runs.map((b) => b.ms)) / 1000),
        heapBeforeMB: median(runs.map((b) => b.before)),
        heapSettledMB: median(runs.map((b) => b.settled)),
        heapAfterGcMB: median(runs.map((b) => b.retained)),
      })),
    ),
  );
  suite.note(`closed loops: ${CALLERS} callers, ${LOOP_MS / 1000} s per run, contestants in alternating rounds, ${CORES} threads each; the book's RpcWorkerPool with leastbusy.`);
  suite.note('burst heap: heapUsed when Promise.all settles (no GC) over heapUsed before (after GC); "after GC" is what stays once the results are dropped.');
  suite.note(
    pingpong.exe
      ? `sequential latency: "${FLOOR}" is two C threads handing a turn back and forth through a futex, both sleeping between turns: ` +
          'what two cross-thread wake-ups cost on this machine. Not a floor for corepool: its threads poll for 50 µs before ' +
          'they sleep, so a sequential caller\'s next call wakes no sleeping thread and can beat it'
      : `sequential latency: the C round-trip floor was skipped: ${pingpong.error}`,
  );
  if (!global.gc) suite.note('run without --expose-gc: heap figures include garbage from before the burst');
  if (wrong.length) {
    for (const w of wrong) suite.note(`WRONG RESULT: ${w}`);
    process.exitCode = 1;
  }
  suite.save();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
