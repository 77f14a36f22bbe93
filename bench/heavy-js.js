'use strict';
// Moderately heavy JavaScript tasks, the job most pool users have (BENCHMARKS.md §6):
//
//  1. Heavy: the BigInt factorial of 1000 (~190 µs of CPU here, peers/factorial.js), returned
//     as a BigInt, N = 100,000 tasks (--quick: 4,000) on 2 threads. Each contestant runs in a
//     fresh process (this file with --child), startup and shutdown included, and the figure is
//     that process's whole wall time, measured here; the contestants alternate round by round.
//     Every contestant submits its N tasks the same way, as a user would: one loop calling
//     run/exec N times, each call's promise checked by a `.then` (the result must equal n!),
//     all awaited with one Promise.all. Contestants: the compute floor (the same function in a
//     plain loop on 2 worker_threads, N/2 each, nothing sent per task), corepool's task-file
//     pool (`new Pool({ filename, threads: 2 })`), corepool/piscina, Piscina, poolifier
//     (FixedThreadPool), Tinypool and workerpool, all loading peers/factorial.js through their
//     own task-file convention (peers/factorial-*.js).
//  2. Tiny tasks: corepool/piscina against Piscina, `run({ a, b })` → a + b from 64 closed-loop
//     callers (calls per second), 2 threads each.
//  3. Values only structured clone carries, corepool/piscina against Piscina from 64 callers:
//     a 1 KB object with Dates and a Map, a 100 KB Uint8Array moved there and back
//     (`Piscina.move`), a Map of 1,000 entries (the same one each call), and that Map with 50
//     keys more that no call had before, each echoed by the task. A contestant that
//     refuses the value (corepool's RpcError InvalidParams) is recorded as "not supported" for
//     it; any other failure fails the run.
//
//   node bench/heavy-js.js [--quick] [--part heavy|tiny|values]...
//
// --part runs only the parts named (repeat it for several); such a run prints its figures but
// writes no results file, which holds the whole benchmark's.
const path = require('node:path');
const { spawn } = require('node:child_process');
const { isDeepStrictEqual } = require('node:util');
const { Worker } = require('node:worker_threads');
const { Suite, closedLoop } = require('./harness');

const THREADS = 2;
const N_FULL = 100_000;
const N_QUICK = 4_000;
const FACTORIAL_OF = 1000;
const CALLERS = 64;
const PEERS = path.join(__dirname, 'peers');
const TASK_FILE = path.join(PEERS, 'factorial-task.js');
const COREPOOL_PISCINA = path.join(__dirname, '..', 'lib', 'piscina.js');

/** Runs `count` tasks through `call(n)`, all submitted in one loop and awaited together; each result must be n!. */
async function submitAll(count, call) {
  const expected = require('./peers/factorial.js')(FACTORIAL_OF);
  let wrong = 0;
  const check = (result) => {
    if (result !== expected) wrong++;
  };
  const calls = new Array(count);
  for (let i = 0; i < count; i++) calls[i] = call(FACTORIAL_OF).then(check);
  await Promise.all(calls);
  if (wrong > 0) throw new Error(`${wrong} of ${count} results were not ${FACTORIAL_OF}!`);
}

/**
 * `destroying` (a pool's destroy()), or the moment this process's event loop empties once all
 * tasks are done: on a loaded machine poolifier 5.3.2's destroy() now and then never settles
 * although its threads are gone (6 runs of 20 with three busy loops beside), and the process
 * would end there without its figures. Its tasks were all done and checked before.
 */
function destroyed(destroying) {
  return Promise.race([destroying, new Promise((resolve) => process.once('beforeExit', resolve))]);
}

/** Each contestant of part 1, as it runs in its own process: (count) => Promise, done when all `count` tasks are. */
const contestants = {
  async floor(count) {
    const expected = require('./peers/factorial.js')(FACTORIAL_OF);
    const shares = [Math.ceil(count / THREADS), ...Array(THREADS - 1).fill(Math.floor(count / THREADS))];
    const lasts = await Promise.all(
      shares.map(
        (share) =>
          new Promise((resolve, reject) => {
            const w = new Worker(path.join(PEERS, 'factorial-floor.js'), { workerData: { count: share, n: FACTORIAL_OF } });
            w.once('message', (last) => w.terminate().then(() => resolve(last)));
            w.once('error', reject);
          }),
      ),
    );
    if (lasts.some((last) => last !== expected)) throw new Error('the floor computed something else');
  },
  async corepool(count) {
    const { Pool } = require('..');
    const pool = new Pool({ filename: TASK_FILE, threads: THREADS });
    await submitAll(count, (n) => pool.run(n));
    await pool.close();
  },
  async 'corepool/piscina'(count) {
    const Piscina = require(COREPOOL_PISCINA);
    const pool = new Piscina({ filename: TASK_FILE, minThreads: THREADS, maxThreads: THREADS });
    await submitAll(count, (n) => pool.run(n));
    await pool.close();
  },
  async piscina(count) {
    const { Piscina } = require('piscina');
    const pool = new Piscina({ filename: TASK_FILE, minThreads: THREADS, maxThreads: THREADS });
    await submitAll(count, (n) => pool.run(n));
    await pool.close();
  },
  async poolifier(count) {
    const { FixedThreadPool } = require('poolifier');
    const pool = new FixedThreadPool(THREADS, path.join(PEERS, 'factorial-poolifier.js'));
    await submitAll(count, (n) => pool.execute(n));
    await destroyed(pool.destroy());
  },
  async tinypool(count) {
    const { Tinypool } = require('tinypool');
    const pool = new Tinypool({ filename: TASK_FILE, minThreads: THREADS, maxThreads: THREADS });
    await submitAll(count, (n) => pool.run(n));
    await pool.destroy();
  },
  async workerpool(count) {
    const workerpool = require('workerpool');
    const pool = workerpool.pool(path.join(PEERS, 'factorial-workerpool.js'), { minWorkers: THREADS, maxWorkers: THREADS, workerType: 'thread' });
    await submitAll(count, (n) => pool.exec('factorial', [n]));
    await pool.terminate();
  },
};

/** Part 1 in a child process: `--child <contestant> <count>`; once every task is done and
 *  checked, writes the process's CPU time (all its threads, µs) on stdout and exits 0. */
async function child(name, count) {
  await contestants[name](count);
  const { userCPUTime, systemCPUTime } = process.resourceUsage();
  process.stdout.write(`${JSON.stringify({ cpuUs: userCPUTime + systemCPUTime })}\n`, () => process.exit(0));
}

/** CPU seconds of each whole run, by contestant (a figure the machine's other load skews less than wall time). */
const cpuSeconds = new Map();

/** One fresh process running `name`: its whole wall time in seconds (its CPU time goes to cpuSeconds). */
function wholeRun(name, count) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, [__filename, '--child', name, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('close', (code, signal) => {
      const s = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`${name}: its process exited with ${code ?? signal}`));
      if (out.trim() === '') return reject(new Error(`${name}: its process ended without its figures (its event loop emptied before its pool was done)`));
      const cpu = JSON.parse(out.trim().split('\n').pop()).cpuUs / 1e6;
      if (!cpuSeconds.has(name)) cpuSeconds.set(name, []);
      cpuSeconds.get(name).push(cpu);
      resolve(s);
    });
  });
}

async function heavy(suite) {
  const count = suite.quick ? N_QUICK : N_FULL;
  suite.log(`part 1: ${count} tasks of ${FACTORIAL_OF}! (BigInt) on ${THREADS} threads, each contestant a fresh process`);
  const names = Object.keys(contestants);
  // Three rounds of whole 100k-task processes (about 2 minutes a round here) give a median.
  await suite.interleave(
    names.map((name) => ({ label: name, unit: 's', fn: () => wholeRun(name, count) })),
    { runs: suite.quick ? suite.runs : 3 },
  );
  const floor = suite.results.floor.median;
  const corepool = suite.results.corepool.median;
  // The headline: corepool's time over the floor's (goal ≤ 1.15×), recorded as a bound.
  suite.record('corepool / floor', '×', corepool / floor);
  suite.limit('corepool time / floor time', 'corepool / floor', 1.15);
  suite.record('corepool/piscina / floor', '×', suite.results['corepool/piscina'].median / floor);
  for (const peer of ['piscina', 'poolifier', 'tinypool', 'workerpool']) {
    const goal = peer === 'piscina' || peer === 'poolifier' ? 1.25 : undefined;
    suite.ratio(`corepool vs ${peer} (heavy JS)`, 'corepool', peer, goal);
    suite.record(`${peer} / floor`, '×', suite.results[peer].median / floor);
  }
  suite.ratio('corepool/piscina vs piscina (heavy JS)', 'corepool/piscina', 'piscina');
  // The same runs' CPU time (user + system, every thread of the process; warm-ups left out).
  for (const name of names) suite.record(`${name} CPU`, 's', cpuSeconds.get(name).slice(-suite.results[name].runs.length));
  suite.record('corepool CPU / floor CPU', '×', suite.results['corepool CPU'].median / suite.results['floor CPU'].median);
  for (const peer of ['corepool/piscina', 'piscina', 'poolifier', 'tinypool', 'workerpool']) {
    suite.record(`${peer} CPU / floor CPU`, '×', suite.results[`${peer} CPU`].median / suite.results['floor CPU'].median);
  }
  suite.log(
    `CPU time over the floor's: ${['corepool', 'corepool/piscina', 'piscina', 'poolifier', 'tinypool', 'workerpool']
      .map((n) => `${n} ${suite.results[`${n} CPU / floor CPU`].median.toFixed(2)}×`)
      .join(', ')}`,
  );
  suite.note(
    `part 1: ${count} tasks of ${FACTORIAL_OF}! on ${THREADS} threads; whole-process wall time (start-up and shutdown included) of a fresh ` +
      `process per run, contestants alternating round by round; all tasks submitted in one loop, each promise checked by a .then, ` +
      `awaited with one Promise.all. Floor: the same function in a plain loop, ${count / THREADS} on each of ${THREADS} worker_threads. ` +
      `'<name> CPU' is the same processes' CPU time (user + system, all threads), less skewed by other load on the machine.`,
  );
}

/** The values of part 3: a label, a way to make it, and a cheap check of what came back (the first answer is compared in full). */
function values() {
  const stamp = new Date(Date.UTC(2026, 11, 2, 12, 0, 0));
  const record = {
    id: 42,
    name: 'Katelyn',
    created: stamp,
    updated: new Date(stamp.getTime() + 86_400_000),
    tags: new Map(Array.from({ length: 12 }, (_, i) => [`tag-${i}`, { weight: i / 10, seen: new Date(stamp.getTime() + i) }])),
    notes: Array.from({ length: 8 }, (_, i) => `note ${i}: ${'x'.repeat(40)}`),
  };
  const map = new Map(Array.from({ length: 1000 }, (_, i) => [`key-${i}`, i]));
  let calls = 0;
  return [
    {
      label: '1 KB object with Dates and a Map',
      value: () => record,
      check: (r) => r.updated instanceof Date && r.updated.getTime() === record.updated.getTime() && r.tags instanceof Map && r.tags.size === 12,
    },
    { label: 'Map of 1,000 entries', value: () => map, check: (r) => r instanceof Map && r.size === 1000 && r.get('key-999') === 999 },
    // The same, with keys no call had before (the first 50 new each time): no key strings to
    // reuse (lib/flat.js keeps those of the last Maps).
    {
      label: 'Map of 1,000 entries, new keys each call',
      value: () => {
        const fresh = new Map(map);
        const n = ++calls;
        for (let i = 0; i < 50; i++) fresh.set(`new-${n}-${i}`, i);
        return fresh;
      },
      check: (r) => r instanceof Map && r.size === 1050 && r.get('key-999') === 999,
    },
  ];
}

const BYTES = 100 * 1024;

/** Part 3 for one pool: per caller, a closed loop; returns [label, fn] pairs, or 'not supported' for the values the pool refuses. */
async function valueLoops(pool, move, loop) {
  const out = [];
  for (const v of values()) {
    const sent = v.value();
    const first = await probe(() => pool.run(sent));
    if (first === NOT_SUPPORTED) out.push({ label: v.label, fn: null });
    else {
      if (!isDeepStrictEqual(first, sent)) throw new Error(`${v.label}: came back changed`);
      out.push({ label: v.label, fn: () => closedLoop(() => pool.run(v.value()), { ...loop, check: (_, r) => v.check(r) }) });
    }
  }
  // A 100 KB Uint8Array moved to the task and moved back: each caller keeps its buffer going round.
  const moved = '100 KB Uint8Array moved';
  const first = await probe(() => pool.run(move(new Uint8Array(BYTES).fill(7)), { name: 'moved' }));
  if (first === NOT_SUPPORTED) out.push({ label: moved, fn: null });
  else {
    if (!(first instanceof Uint8Array) || first.length !== BYTES || first[BYTES - 1] !== 7) throw new Error(`${moved}: came back changed`);
    out.push({
      label: moved,
      fn: () => {
        const buffers = new Map();
        return closedLoop(
          async (i) => {
            const caller = Math.floor(i / 1e6);
            const bytes = buffers.get(caller) ?? new Uint8Array(BYTES);
            bytes[0] = i & 255;
            const back = await pool.run(move(bytes), { name: 'moved' });
            buffers.set(caller, back);
            return back;
          },
          { ...loop, check: (i, r) => r instanceof Uint8Array && r.length === BYTES && r[0] === (i & 255) },
        );
      },
    });
  }
  return out;
}

const NOT_SUPPORTED = Symbol('not supported');

/** The first answer of `run()`, or NOT_SUPPORTED if corepool refuses the value (RpcError InvalidParams). */
async function probe(run) {
  try {
    return await run();
  } catch (e) {
    const { RpcError } = require('..');
    if (e instanceof RpcError && e.code === RpcError.codes.InvalidParams) return NOT_SUPPORTED;
    throw e;
  }
}

/** The parts to run: each `--part <name>` given, or all of them. */
function chosenParts() {
  const all = ['heavy', 'tiny', 'values'];
  const chosen = [];
  for (let i = 0; i < process.argv.length; i++) {
    if (process.argv[i] !== '--part') continue;
    const name = process.argv[i + 1];
    if (!all.includes(name)) throw new Error(`--part takes one of ${all.join(', ')}, not ${name}`);
    chosen.push(name);
  }
  return chosen.length === 0 ? all : chosen;
}

async function piscinaParts(suite, parts) {
  const loopMs = suite.quick ? 500 : 3000;
  const loop = { callers: CALLERS, ms: loopMs };
  const CorepoolPiscina = require(COREPOOL_PISCINA);
  const { Piscina } = require('piscina');
  const make = (P, module) =>
    new P({ filename: path.join(PEERS, 'values-task.js'), minThreads: THREADS, maxThreads: THREADS, workerData: { piscina: module } });
  const ours = make(CorepoolPiscina, COREPOOL_PISCINA);
  const theirs = make(Piscina, require.resolve('piscina'));
  try {
    if (parts.includes('tiny')) await tinyPart(suite, loop, ours, theirs);
    if (parts.includes('values')) await valuesPart(suite, loop, ours, theirs, CorepoolPiscina, Piscina);
  } finally {
    await Promise.all([ours.destroy(), theirs.destroy()]);
  }
}

async function tinyPart(suite, loop, ours, theirs) {
  const add = path.join(PEERS, 'add-task.js');
  suite.log(`part 2: tiny tasks, ${CALLERS} callers × ${loop.ms} ms, ${THREADS} threads each`);
  for (const p of [ours, theirs]) if ((await p.run({ a: 2, b: 3 }, { filename: add })) !== 5) throw new Error('add is wrong');
  const tiny = { ...loop, check: (i, sum) => sum === i + 1 };
  await suite.interleave([
    { label: 'corepool/piscina add', unit: 'ops/s', fn: () => closedLoop((i) => ours.run({ a: i, b: 1 }, { filename: add }), tiny) },
    { label: 'piscina add', unit: 'ops/s', fn: () => closedLoop((i) => theirs.run({ a: i, b: 1 }, { filename: add }), tiny) },
  ]);
  suite.ratio('corepool/piscina vs piscina, tiny task', 'corepool/piscina add', 'piscina add', 5);
}

async function valuesPart(suite, loop, ours, theirs, CorepoolPiscina, Piscina) {
  suite.log(`part 3: values structured clone carries, ${CALLERS} callers × ${loop.ms} ms`);
  const mine = await valueLoops(ours, CorepoolPiscina.move, loop);
  const peer = await valueLoops(theirs, Piscina.move, loop);
  const rows = [];
  for (const [k, { label, fn }] of mine.entries()) {
    if (peer[k].fn === null) throw new Error(`Piscina refused ${label}`);
    if (fn === null) {
      suite.note(`${label}: corepool/piscina refuses it today (InvalidParams): not supported, Piscina measured alone`);
      await suite.interleave([{ label: `piscina: ${label}`, unit: 'ops/s', fn: peer[k].fn }]);
      rows.push({ value: label, 'corepool/piscina': 'not supported', piscina: suite.results[`piscina: ${label}`].median });
      continue;
    }
    await suite.interleave([
      { label: `corepool/piscina: ${label}`, unit: 'ops/s', fn },
      { label: `piscina: ${label}`, unit: 'ops/s', fn: peer[k].fn },
    ]);
    suite.ratio(`corepool/piscina vs piscina, ${label}`, `corepool/piscina: ${label}`, `piscina: ${label}`, 1.5);
    rows.push({ value: label, 'corepool/piscina': suite.results[`corepool/piscina: ${label}`].median, piscina: suite.results[`piscina: ${label}`].median });
  }
  suite.table('values (ops/s)', rows);
}

async function main() {
  const suite = new Suite('heavy-js', { runs: 5, warmup: 0, quickRuns: 2 });
  const parts = chosenParts();
  if (parts.includes('heavy')) await heavy(suite);
  if (parts.includes('tiny') || parts.includes('values')) await piscinaParts(suite, parts);
  if (parts.length === 3) suite.save();
}

const at = process.argv.indexOf('--child');
(at >= 0 ? child(process.argv[at + 1], Number(process.argv[at + 2])) : main()).catch((e) => {
  console.error(e);
  process.exit(1);
});
