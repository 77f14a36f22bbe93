'use strict';
// BENCHMARKS.md §1, happycoin: CPU-bound work split over the machine's cores.
//
// Rows (threads = cores unless named otherwise), each the time to try 10M random numbers:
//   js-main      the book's happycoin.js: one JS thread, BigInt, randomFillSync per draw
//   js-workers   the book's happycoin-threads.js: N worker_threads, coins posted back
//   piscina      the book's happycoin-piscina.js: N tasks on a Piscina pool of N threads
//   corepool     N exec('happycoin', { attempts: draws / N }) calls, results merged
//   corepool 1 thread    one call on a 1-thread pool (for the parallel-efficiency figure)
//   corepool + onProgress  as corepool, each call with a progress listener (what listening costs)
//   c-pthreads   the book's C program shape (bench/peers/happycoin.c), cc -O2 -pthread
//   c-pthreads 1 thread  the control for that figure on a machine shared with other work
// Rows try different amounts and are scaled to 10M: JS rows 1M (--quick: 50k), corepool 50M
// (steadier timing for the speed-up; --quick: 2M), C 10M (--quick: 2M). Every coin found is
// checked (happy and divisible by 10000) and every count against the known rate.
//
//   node bench/happycoin.js [--quick]
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Piscina } = require('piscina');
const { Pool } = require('..');
const { Suite, quick, fmt, round } = require('./harness');
const { mine, isHappy } = require('./peers/happycoin');
const { buildC } = require('./peers/cc');

const CORES = os.availableParallelism();
const JS_DRAWS = quick ? 50_000 : 1_000_000;
const COREPOOL_DRAWS = quick ? 2_000_000 : 50_000_000;
const C_DRAWS = quick ? 2_000_000 : 10_000_000;
const NATIVE_RUNS = quick ? 3 : 9;
const UNIT = 'ms per 10M draws';
// Coins per draw, measured with the C peer: 5,263 coins in 4·10^8 draws.
const RATE = 1.3e-5;
const PEERS = path.join(__dirname, 'peers');

const suite = new Suite('happycoin', { runs: 3, quickRuns: 2 });
const counts = {}; // label → coins found per run, scaled to 10M draws
const problems = [];

/** n nearly equal parts of total. */
function split(total, n) {
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));
}

/** Checks every coin and the count; remembers the count (per 10M) for the table. */
function check(label, draws, coins) {
  for (const c of coins) {
    const n = BigInt(c);
    if (n % 10000n !== 0n || !isHappy(n)) problems.push(`${label}: ${c} is not a Happycoin`);
  }
  const expected = RATE * draws;
  const slack = 5 * Math.sqrt(expected) + 2;
  if (Math.abs(coins.length - expected) > slack) {
    problems.push(`${label}: ${coins.length} coins in ${draws} draws (expected ${expected.toFixed(0)} ± ${slack.toFixed(0)})`);
  }
  (counts[label] ??= []).push((coins.length * 10_000_000) / draws);
}

function since(t0) {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

// --- js-workers: one worker per thread, started (and ready) before the clock starts ----------

async function jsWorkersOnce(threads, draws) {
  const workers = [];
  await Promise.all(
    split(draws, threads).map(
      (n) =>
        new Promise((resolve, reject) => {
          const w = new Worker(path.join(PEERS, 'happycoin-thread.js'));
          w.once('error', reject);
          w.once('message', (m) => (m === 'ready' ? resolve() : reject(new Error(`unexpected ${m}`))));
          workers.push({ w, n });
        }),
    ),
  );
  const coins = [];
  const t0 = process.hrtime.bigint();
  await Promise.all(
    workers.map(
      ({ w, n }) =>
        new Promise((resolve, reject) => {
          w.on('error', reject);
          w.on('message', (m) => (m === 'done' ? resolve() : coins.push(String(m))));
          w.postMessage({ draws: n });
        }),
    ),
  );
  const ms = since(t0);
  await Promise.all(workers.map(({ w }) => w.terminate()));
  return { ms, coins };
}

// --- c-pthreads ------------------------------------------------------------------------------

function cOnce(exe, threads, draws) {
  const r = spawnSync(exe, [String(threads), String(draws)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`happycoin.c exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// --- the run ---------------------------------------------------------------------------------

async function main() {
  const piscina = new Piscina({
    filename: path.join(PEERS, 'happycoin-piscina.js'),
    minThreads: CORES,
    maxThreads: CORES,
  });
  const pool = new Pool({ threads: CORES });
  const pool1 = new Pool({ threads: 1 });
  const c = buildC('happycoin');

  let reports = 0;
  const onProgress = () => reports++;
  const mineCorepool = async (p, calls, draws, listen = false) => {
    const options = listen ? { onProgress } : undefined;
    const results = await Promise.all(split(draws, calls).map((attempts) => p.call('happycoin', [{ attempts }], options)));
    return results.flatMap((r) => r.coins);
  };
  const minePiscina = async (draws) => {
    const results = await Promise.all(split(draws, CORES).map((n) => piscina.run({ draws: n })));
    return results.flatMap((r) => r.coins);
  };

  // Warm-up: JIT the JS loop on every thread, start Piscina's threads, touch the native pools.
  suite.log('warm-up');
  mine(20_000);
  await minePiscina(20_000 * CORES);
  await jsWorkersOnce(CORES, 20_000 * CORES);
  await mineCorepool(pool, CORES, COREPOOL_DRAWS);
  await mineCorepool(pool1, 1, COREPOOL_DRAWS);

  // Each row: how many numbers it tries per run and how; its figure is scaled to 10M.
  const rows = [
    { label: 'js-main', threads: 1, draws: JS_DRAWS, run: async (n) => ({ coins: mine(n) }) },
    { label: 'js-workers', threads: CORES, draws: JS_DRAWS, run: (n) => jsWorkersOnce(CORES, n) },
    { label: 'piscina', threads: CORES, draws: JS_DRAWS, run: async (n) => ({ coins: await minePiscina(n) }) },
    { label: 'corepool', threads: CORES, draws: COREPOOL_DRAWS, run: async (n) => ({ coins: await mineCorepool(pool, CORES, n) }) },
    { label: 'corepool 1 thread', threads: 1, draws: COREPOOL_DRAWS, run: async (n) => ({ coins: await mineCorepool(pool1, 1, n) }) },
    { label: 'corepool + onProgress', threads: CORES, draws: COREPOOL_DRAWS, run: async (n) => ({ coins: await mineCorepool(pool, CORES, n, true) }) },
  ];
  if (c.exe) {
    rows.push({ label: 'c-pthreads', threads: CORES, draws: C_DRAWS, run: async (n) => cOnce(c.exe, CORES, n) });
    // The control for corepool's speed-up: if the C program scales no better in the same run,
    // the machine (other load on its cores), not corepool, is what limits it.
    rows.push({ label: 'c-pthreads 1 thread', threads: 1, draws: C_DRAWS, run: async (n) => cOnce(c.exe, 1, n) });
  }
  suite.log(`${CORES} cores; numbers tried per run: ${rows.map((r) => `${r.label} ${fmt(r.draws)}`).join(', ')}; all quoted per 10M`);
  const entries = rows.map(({ label, draws, run }) => ({
    label,
    unit: UNIT,
    fn: async () => {
      const t0 = process.hrtime.bigint();
      const r = await run(draws);
      // js-workers and c-pthreads time themselves (without thread start-up and process start).
      const ms = r.ms ?? since(t0);
      check(label, draws, r.coins);
      return (ms * 10_000_000) / draws;
    },
  }));
  // The JS rows take seconds per run; the native rows, a fraction of one: they get more rounds
  // of their own, back to back, so the speed-up compares times taken under the same load.
  const isJs = (e) => e.label.startsWith('js-') || e.label === 'piscina';
  await suite.interleave(entries.filter(isJs), { warmup: 0 });
  await suite.interleave(entries.filter((e) => !isJs(e)), { warmup: 0, runs: NATIVE_RUNS });
  await Promise.all([pool.close(), pool1.close(), piscina.destroy()]);

  suite.ratio(`corepool vs js-workers (${CORES} threads)`, 'corepool', 'js-workers', 50);
  suite.ratio(`corepool vs piscina (${CORES} threads)`, 'corepool', 'piscina', 50);
  suite.ratio('corepool vs js-main', 'corepool', 'js-main');
  // Above 1× is expected: corepool sums the digits' squares three digits at a time from a
  // table; the C peer is the book's digit-by-digit loop. The same draws, the same checks.
  if (c.exe) suite.ratio("corepool (digit table) vs c-pthreads (the book's digit loop)", 'corepool', 'c-pthreads', 1.0);
  const speedup = suite.ratio(`corepool ${CORES}-thread speed-up over 1 thread (goal 0.9·${CORES})`, 'corepool', 'corepool 1 thread', 0.9 * CORES);
  if (speedup) suite.note(`corepool parallel efficiency: ${(speedup.value / CORES).toFixed(2)} (goal ≥ 0.9)`);
  if (c.exe) suite.ratio(`c-pthreads ${CORES}-thread speed-up over 1 thread (control)`, 'c-pthreads', 'c-pthreads 1 thread');
  // Reports go at most every 20 ms per call: listening must cost next to nothing.
  suite.ratio('corepool with a progress listener vs without (time without / time with)', 'corepool + onProgress', 'corepool', 0.97);
  suite.note(`progress: ${fmt(reports)} reports heard in the + onProgress runs.`);

  const core = suite.results.corepool.median;
  suite.table(
    'happycoin',
    round(
      rows.map(({ label, threads, draws }) => {
        const r = suite.results[label];
        return {
          contestant: label,
          threads,
          drawsTried: draws,
          msPer10M: r.median,
          min: r.min,
          max: r.max,
          timesCorepool: r.median / core,
          coinsPer10M: counts[label].reduce((a, b) => a + b, 0) / counts[label].length,
        };
      }),
    ),
  );

  suite.note(
    `numbers tried per run, scaled to 10M: ${fmt(JS_DRAWS)} for the JS rows (js-main, js-workers, piscina), ` +
      `${fmt(COREPOOL_DRAWS)} for corepool (a steadier speed-up figure), ${fmt(C_DRAWS)} for c-pthreads.`,
  );
  suite.note('js-workers: the workers are started and ready before the clock starts (the book times the whole program, start-up included).');
  suite.note(
    c.exe
      ? `c-pthreads: ${c.version}, cc -O2 -pthread, SplitMix64 like corepool; time taken inside the program (first pthread_create to last pthread_join). ` +
          "It runs the book's isHappy, one digit per division; corepool's command takes three digits per step from a 1000-entry table of " +
          'digit-square sums (src/commands/happycoin.rs): the same draws and checks, less work per draw, hence faster than this C.'
      : `c-pthreads skipped: ${c.error}`,
  );
  if (problems.length) {
    for (const p of problems.slice(0, 20)) suite.note(`SANITY CHECK FAILED: ${p}`);
    process.exitCode = 1;
  } else {
    suite.note(`sanity: every coin found is happy and divisible by 10000; every count within 5σ of ${RATE} coins per draw.`);
  }
  suite.save();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
