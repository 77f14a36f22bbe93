'use strict';
// Issue 13, soak: ten minutes of mixed load in one process (--seconds=N; --quick: 12 s), then an
// account of every call and of the memory over time.
//
// The load (its structure is fixed; sizes, delays and which calls are aborted come from a
// seeded generator whose seed is printed, and --seed=N repeats it):
//  - wait pool: a private Pool of 3 threads, maxQueue 8, onFull 'wait', under 17 closed-loop
//    callers (more than its threads and queue hold, so some wait for room): echo of small and of
//    big (≥ 32 values: JSON text) params, render, happycoin, happycoin `into` a fresh
//    BigUint64Array over a SharedArrayBuffer, sleep with signal/timeout (some aborted, some
//    timing out, some with huge timeouts), request() batches and handle() text with invalid
//    requests among them;
//  - reject pool: a private Pool of 2 threads, maxQueue 2, onFull 'reject', under bursts of 6;
//  - pool churn: every 2 s (quick: 0.5 s) a new Pool of 2 threads, maxQueue 2, onFull 'wait',
//    gets 12 calls and, a few ms later, close() or destroy() (alternately) with calls waiting;
//  - 2 worker_threads serving soak_sum, soak_fill and soak_wait through Pool.shared().serve()
//    (bench/peers/soak-worker.js), called from this thread (5 loops; a 6th echoes on the shared
//    pool) and from the callers below;
//    every 10–20 s (quick: 2–4 s) one is terminate()d with its calls in flight and another
//    started;
//  - 2 worker_threads calling Pool.shared() (7 loops each: echo, served methods with views and
//    with aborts, sleep, happycoin into); every 10–20 s (quick: 2–4 s) one is terminate()d with
//    its calls in flight and another started.
//
// Accounting: every call is counted when submitted and when it settles (resolved, checked where
// cheap, or rejected: by RpcError type). This thread's calls are also kept in a table until they
// settle, so one that never does can be named. A caller worker_thread counts in a
// SharedArrayBuffer the main thread reads after it is gone: its calls in flight when it was
// terminated went with it (reported as such), while one stopped at the end must have settled all
// of its calls. At the end: stop the loops, close() the private pools, await the shared handle's
// drained(), stop the servers, all within a deadline (60 s; quick 8 s). A call or a pool that
// never settled, a wrong result, a rejection that is not an RpcError or a worker_thread error
// makes the exit code 1. Nothing else is asserted: a rejection of a type the call had no reason
// to meet (a Timeout for a call without a short timeout, say) is counted and listed, not failed.
//
// Memory: RSS and heapUsed (after global.gc()) every 10 s (quick: 1 s; --seconds=N below 600:
// N/60 s, at least 1; --sample=S sets it), and the least-squares slope of each, in MB per minute,
// over the second half of the load (after warm-up), ± twice its standard error: a slope inside
// that band is flat within noise.
//
// Crashes and hangs: the load runs in a child process (node --expose-gc); this process prints
// its output, and if it dies of a signal, or outlives the run and its teardown by a minute (an
// event loop stuck in native code), reports a FAILURE with its last lines and, when gdb is
// installed, the stacks of its threads (in a file under the temp dir).
//
//   node bench/soak.js [--quick] [--seconds=N] [--seed=N] [--sample=S] [--replace-at-end]
//   npm run bench -- soak [--quick] [--seconds=N]   (past ~800 s, raise BENCH_TIMEOUT_S)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { spawn, execFileSync } = require('node:child_process');
const { setTimeout: delay } = require('node:timers/promises');
const { Worker } = require('node:worker_threads');
const { Suite, quick, fmt, round } = require('./harness');

const args = process.argv.slice(2);
const flag = (name, min = 1) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  if (a === undefined) return undefined;
  const n = Number(a.slice(name.length + 3));
  if (!(Number.isInteger(n) && n >= min)) {
    console.error(`[soak] ${a}: expected a whole number ≥ ${min}`);
    process.exit(2);
  }
  return n;
};
const SECONDS = flag('seconds') ?? (quick ? 12 : 600);
const SAMPLE_S = flag('sample') ?? (quick ? 1 : Math.min(10, Math.max(1, Math.round(SECONDS / 60))));
const SEED = flag('seed', 0) ?? Date.now() % 2 ** 31;
const TEARDOWN_S = quick ? 8 : 60;
const WATCHDOG_S = SECONDS + TEARDOWN_S + (quick ? 15 : 60);
const REPLACE_MS = quick ? [2000, 4000] : [10_000, 20_000];
// --replace-at-end: one worker_thread of each kind is also replaced as the load stops, so that
// its replacement is ready only during the teardown (a run aimed at that moment; it leaves
// bench/results alone).
const REPLACE_AT_END = args.includes('--replace-at-end');
const CHURN_GAP_MS = quick ? 500 : 2000;
const MB = 2 ** 20;

const CHILD = args.includes('--child');
const since = (t0) => (performance.now() - t0) / 1000;

// ---------------------------------------------------------------------------------------------
// The parent: runs the load in a child and reports a crash or a hang.

function supervise() {
  const childArgs = ['--expose-gc', __filename, '--child', `--seed=${SEED}`, ...args.filter((a) => !a.startsWith('--seed='))];
  const child = spawn(process.execPath, childArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = [];
  const remember = (line) => {
    tail.push(line);
    if (tail.length > 40) tail.shift();
  };
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    console.log(line);
    remember(line);
  });
  // A panic per call (with its backtrace) can repeat thousands of times: show each distinct line
  // (numbers aside) once, and count the repeats.
  const seen = new Map();
  let hidden = 0;
  readline.createInterface({ input: child.stderr }).on('line', (line) => {
    const key = line.replace(/\d+/g, '#');
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    if (n > 1) {
      hidden++;
      return;
    }
    console.error(line);
    remember(`(stderr) ${line}`);
  });
  let hung = false;
  const watchdog = setTimeout(() => {
    hung = true;
    console.log(`[soak] FAILURE: the child (pid ${child.pid}) is still running ${WATCHDOG_S} s after it started: a hang outside its own deadlines`);
    console.log(stacks(child.pid));
    child.kill('SIGKILL');
  }, WATCHDOG_S * 1000);
  child.on('exit', (code, signal) => {
    clearTimeout(watchdog);
    const panics = [...seen].filter(([k]) => k.includes('panicked at'));
    if (hidden) console.log(`[soak] ${hidden} repeated stderr lines not shown${panics.length ? `; panics: ${panics.map(([k, n]) => `${n}× ${k}`).join('; ')}` : ''}`);
    if (hung || signal) {
      if (signal && !hung) console.log(`[soak] FAILURE: the child died of ${signal}`);
      console.log(`[soak] its last ${tail.length} lines:\n${tail.map((l) => `    ${l}`).join('\n')}`);
      process.exitCode = 1;
    } else {
      process.exitCode = code;
    }
  });
}

/** The threads' stacks of process `pid` by gdb, saved to a file; returns a few lines about them. */
function stacks(pid) {
  let out;
  try {
    out = execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 30'], {
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 * MB,
    });
  } catch (e) {
    return `[soak] no thread stacks (gdb: ${e.code === 'ENOENT' ? 'not installed' : e.message.split('\n')[0]})`;
  }
  const file = path.join(os.tmpdir(), `corepool-soak-hang-${pid}.txt`);
  fs.writeFileSync(file, out);
  // One line per thread: its name and the innermost frames that are not libc waits.
  const lines = [];
  for (const block of out.split(/\n(?=Thread \d+ )/)) {
    const head = block.match(/^Thread \d+ .*?"([^"]*)"/);
    if (!head) continue;
    const frames = [...block.matchAll(/^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+)/gm)].map((m) =>
      m[1]
        .replace(/\[[0-9a-f]+\]|::h[0-9a-f]{16}|<.*$|\(.*$/g, '')
        .slice(0, 70),
    );
    const own = frames.filter((f) => f && !/^(\?\?|syscall|__|futex|pthread_|epoll_wait|start_thread|clone|std::sys::backtrace|core::ops::function)/.test(f));
    lines.push(`    ${head[1]}: ${own.slice(0, 4).join(' < ') || frames.slice(0, 2).join(' < ')}`);
  }
  return `[soak] stacks of ${lines.length} threads in ${file}:\n${lines.join('\n')}`;
}

// ---------------------------------------------------------------------------------------------
// The child: the load.

// Only the child loads the addon: a crash while loading it is one the parent reports.
const { Pool } = CHILD ? require('..') : {};
const { MAKERS, CALLER_MIX, Tally, rng, counted, fixtures } = CHILD ? require('./peers/soak-worker') : {};

const WORKER = path.join(__dirname, 'peers', 'soak-worker.js');

// [kind of call, pool, closed loops]
const MAIN_MIX = [
  ['echo small', 'wait pool', 4],
  ['echo big', 'wait pool', 2],
  ['render', 'wait pool', 2],
  ['happycoin', 'wait pool', 1],
  ['happycoin into', 'wait pool', 2],
  ['sleep', 'wait pool', 4],
  ['request batch', 'wait pool', 1],
  ['handle text', 'wait pool', 1],
  ['queue-full burst', 'reject pool', 1],
  ['echo small', 'shared', 1],
  ['served sum', 'shared', 2],
  ['served fill', 'shared', 1],
  ['served wait', 'shared', 2],
];
const CHURN_CALLS = 12;
// Kinds that are not calls of the mix but must settle all the same, and what they may meet.
const LIFECYCLE = {
  'churn echo': ['PoolClosed'],
  'churn sleep': ['PoolClosed'],
  'churn close()': [],
  'churn destroy()': [],
  'start server': [],
  'terminate server': [],
  'server exits': [],
  'start caller': [],
  'terminate caller': [],
  'stop caller': [],
  'caller exits': [],
  'close wait pool': [],
  'close reject pool': [],
  'shared drained()': [],
};
const mainKind = (kind, pool) => `${kind} (${pool})`;

/** This thread's calls: counted by kind, and kept until they settle so a hung one can be named.
 *  `expected`: kind → the rejections it may meet. `reports`: a few examples of each thing worth
 *  a look (wrong, unexpected, other; see `counted`), from this thread and the callers. */
class Ledger {
  constructor(expected) {
    this.expected = expected;
    this.tally = new Tally(Object.keys(expected));
    this.open = new Map(); // id → { kind, what, since }
    this.next = 0;
    this.settled = 0;
    this.reports = { wrong: [], unexpected: [], other: [] };
  }

  report(what, text) {
    if (this.reports[what].length < 20) this.reports[what].push(text);
  }

  /** Counts `call` ({ promise, check, what, expect? }); resolves when it settles, never rejects. */
  track(kind, call) {
    const id = ++this.next;
    this.open.set(id, { kind, what: call.what, since: performance.now() });
    return counted(this.tally, kind, call, this.expected[kind], (what, text) => this.report(what, text)).then(() => {
      this.open.delete(id);
      this.settled++;
    });
  }

  /** A lifecycle step (a pool closing, a worker stopping) counted like a call. */
  step(kind, promise, what = kind) {
    return this.track(kind, { promise, check: () => null, what });
  }
}

/** `promise` or, after `ms`, 'timed out' (the promise keeps running). */
function within(ms, promise) {
  let timer;
  return Promise.race([
    promise.then(() => 'done'),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms, 'timed out');
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Least-squares line through points [x, y]: { slope, se } (se: the slope's standard error). */
function fit(points) {
  const n = points.length;
  if (n < 2) return { slope: NaN, se: NaN, n };
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2;
    sxy += (x - mx) * (y - my);
  }
  const slope = sxy / sxx;
  const rss = points.reduce((s, [x, y]) => s + (y - my - slope * (x - mx)) ** 2, 0);
  return { slope, se: n > 2 ? Math.sqrt(rss / (n - 2) / sxx) : NaN, n };
}

/** A text table: numbers right-aligned, the rest left-aligned. */
function pad(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => (typeof c === 'number' ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]))).join('  ').trimEnd()).join('\n');
}

const rejectedText = (rejected) =>
  Object.entries(rejected)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ') || '-';

async function load() {
  const suite = new Suite('soak', { runs: 1, warmup: 0, quickRuns: 1 });
  const log = (msg) => suite.log(msg);
  if (!global.gc) log('note: run without --expose-gc: heapUsed is read without a GC first');

  const pools = {
    'wait pool': new Pool({ threads: 3, maxQueue: 8, onFull: 'wait' }),
    'reject pool': new Pool({ threads: 2, maxQueue: 2, onFull: 'reject' }),
    shared: Pool.shared(),
  };
  const ledger = new Ledger(
    Object.fromEntries([...MAIN_MIX.map(([kind, pool]) => [mainKind(kind, pool), MAKERS[kind].expect]), ...Object.entries(LIFECYCLE)]),
  );
  const fx = await fixtures(pools['wait pool']);
  const workerErrors = [];
  let stopping = false;
  const stopper = new AbortController();
  const nap = (ms) => delay(ms, undefined, { signal: stopper.signal }).catch(() => {});

  log(
    `seed ${SEED}; ${SECONDS} s of load, samples every ${SAMPLE_S} s; wait pool 3 threads (maxQueue 8, onFull wait), ` +
      `reject pool 2 threads (maxQueue 2), shared pool ${pools.shared.threads} threads; 2 serving + 2 calling worker_threads, ` +
      `one of each replaced every ${REPLACE_MS[0] / 1000}–${REPLACE_MS[1] / 1000} s; pool churn every ${CHURN_GAP_MS / 1000} s`,
  );

  // --- worker_threads ---------------------------------------------------------------------------
  let workerSeq = 0;
  const servers = [];
  const callers = [];
  const allCallers = [];
  const terminations = [];

  function startWorker(role, data) {
    const id = ++workerSeq;
    const worker = new Worker(WORKER, { workerData: { role, id, ...data } });
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    const ready = new Promise((resolve, reject) => {
      worker.on('message', (m) => {
        if (m.ready) resolve(m);
        else if (m.report) ledger.report(m.report, m.text);
      });
      exited.then((code) => reject(new Error(`${role} #${id} exited (${code}) before it was ready`)));
    });
    worker.on('error', (e) => workerErrors.push(`${role} #${id}: ${e?.stack ?? e}`));
    return { id, role, worker, exited, ready, terminated: false };
  }

  async function startServer() {
    const w = startWorker('server', {});
    await ledger.step('start server', w.ready, `start server #${w.id}`);
    w.serverId = (await w.ready.catch(() => ({}))).serverId;
    servers.push(w);
  }

  async function startCaller() {
    const tally = new Tally(CALLER_MIX);
    const w = startWorker('caller', { seed: (SEED + 7919 * (workerSeq + 1)) >>> 0, tallyBuffer: tally.buffer, fx });
    w.tally = tally;
    w.done = new Promise((resolve, reject) => {
      w.worker.on('message', (m) => m.done && resolve());
      w.exited.then((code) => reject(new Error(`caller #${w.id} exited (${code}) before it was done`)));
    });
    w.done.catch(() => {}); // a terminated caller is never done
    allCallers.push(w);
    await ledger.step('start caller', w.ready, `start caller #${w.id}`);
    callers.push(w);
  }

  /** Calls submitted and not yet settled by caller `w` (read from its tally). */
  const callerOpen = (w) => Object.values(w.tally.snapshot()).reduce((s, k) => s + k.open, 0);

  async function replaceLoop(role, list, start, r) {
    while (!stopping) {
      await nap(REPLACE_MS[0] + r() * (REPLACE_MS[1] - REPLACE_MS[0]));
      if (stopping || list.length === 0) return;
      await replaceOne(role, list, start);
    }
  }

  /**
   * Terminates the oldest worker_thread of `list` (its calls in flight go with it), then starts
   * another, unless the load has stopped meanwhile; `late`: start it all the same.
   */
  async function replaceOne(role, list, start, late = false) {
    if (list.length === 0) return;
    const victim = list.shift();
    let inFlight;
    if (role === 'server') {
      const s = pools.shared.stats().servers.find((x) => x.id === victim.serverId);
      inFlight = s ? { running: s.running, queued: s.queued } : { running: '?', queued: '?' };
    } else {
      inFlight = { open: callerOpen(victim) };
    }
    victim.terminated = true;
    await ledger.step(`terminate ${role}`, victim.worker.terminate(), `terminate ${role} #${victim.id}`);
    terminations.push({ t: Math.round(since(t0)), role, id: victim.id, ...inFlight });
    if (late || !stopping) await start();
  }

  await Promise.all([startServer(), startServer()]);
  await Promise.all([startCaller(), startCaller()]);

  // --- this thread's loops ----------------------------------------------------------------------
  const t0 = performance.now();
  const loops = [];
  let loopNo = 0;
  for (const [kind, poolName, n] of MAIN_MIX) {
    for (let i = 0; i < n; i++) {
      const r = rng(SEED + 104729 * ++loopNo);
      const pool = pools[poolName];
      const key = mainKind(kind, poolName);
      loops.push(
        (async () => {
          while (!stopping) {
            const calls = [].concat(MAKERS[kind].make(pool, r, fx));
            await Promise.all(calls.map((c) => ledger.track(key, c)));
          }
        })(),
      );
    }
  }

  // Pool churn: a short-lived pool closed or destroyed while calls wait for room in its queue.
  loops.push(
    (async () => {
      const r = rng(SEED + 31);
      for (let cycle = 0; !stopping; cycle++) {
        const pool = new Pool({ threads: 2, maxQueue: 2, onFull: 'wait' });
        const calls = [];
        for (let i = 0; i < CHURN_CALLS; i++) {
          const ms = 1 + (i % 5);
          calls.push(
            i % 3 === 0
              ? ledger.track('churn sleep', { promise: pool.exec('sleep', ms), check: (got) => (got === ms ? null : `sleep → ${got}`), what: `churn ${cycle} sleep(${ms})` })
              : ledger.track('churn echo', { promise: pool.exec('echo', i), check: (got) => (got === i ? null : `echo → ${got}`), what: `churn ${cycle} echo ${i}` }),
          );
        }
        await delay(Math.floor(r() * 6));
        const destroy = cycle % 2 === 1;
        calls.push(ledger.step(destroy ? 'churn destroy()' : 'churn close()', destroy ? pool.destroy() : pool.close(), `churn ${cycle} ${destroy ? 'destroy()' : 'close()'}`));
        await Promise.all(calls);
        await nap(CHURN_GAP_MS);
      }
    })(),
  );

  const replacing = [replaceLoop('server', servers, startServer, rng(SEED + 17)), replaceLoop('caller', callers, startCaller, rng(SEED + 19))];

  // --- samples ----------------------------------------------------------------------------------
  const samples = [];
  let lastSettled = 0;
  let lastT = 0;
  const settledSoFar = () => ledger.settled + allCallers.reduce((s, w) => s + Object.values(w.tally.snapshot()).reduce((a, k) => a + k.submitted - k.open, 0), 0);
  function sample(phase) {
    global.gc?.();
    const m = process.memoryUsage();
    const t = since(t0);
    const settled = settledSoFar();
    const rate = t > lastT ? (settled - lastSettled) / (t - lastT) : 0;
    lastSettled = settled;
    lastT = t;
    const s = { t: Math.round(t * 10) / 10, phase, rssMB: m.rss / MB, heapMB: m.heapUsed / MB, callsPerSec: rate, openMain: ledger.open.size };
    samples.push(s);
    const killed = terminations.reduce((c, k) => ((c[k.role] = (c[k.role] ?? 0) + 1), c), {});
    log(
      `t=${s.t.toFixed(0)}s rss ${s.rssMB.toFixed(1)} MB, heap ${s.heapMB.toFixed(1)} MB; ${fmt(rate)} calls/s; ` +
        `open on this thread ${s.openMain}; terminated servers ${killed.server ?? 0}, callers ${killed.caller ?? 0}`,
    );
  }
  sample('start');
  const sampler = setInterval(() => sample('load'), SAMPLE_S * 1000);
  await delay(SECONDS * 1000);
  clearInterval(sampler);
  sample('load');
  const loadSeconds = since(t0);

  // --- teardown, within a deadline ---------------------------------------------------------------
  log(`stopping: ${ledger.open.size} calls open on this thread`);
  if (REPLACE_AT_END) replacing.push(replaceOne('server', servers, startServer, true), replaceOne('caller', callers, startCaller, true));
  stopping = true;
  stopper.abort();
  const until = performance.now() + TEARDOWN_S * 1000;
  const left = () => Math.max(0, until - performance.now());
  const stages = [];
  const stage = async (name, promise) => {
    const t = performance.now();
    const outcome = await within(Math.max(left(), 1000), promise);
    stages.push({ stage: name, outcome, ms: Math.round(performance.now() - t) });
    log(`teardown: ${name}: ${outcome} in ${fmt(performance.now() - t)} ms`);
  };
  // A replacement started before `stopping` was set joins `callers` once it is ready: only
  // when the replacing loops are done is that list complete, and every caller in it gets 'stop'.
  // (Stopping the callers first left such a late one running, its calls counted as never
  // settled.)
  await stage('replacing loops finish', Promise.all(replacing));
  for (const w of callers) w.worker.postMessage('stop');
  await stage(
    'loops and caller worker_threads finish',
    Promise.all([
      ...loops,
      ...callers.map((w) => ledger.step('stop caller', w.done, `stop caller #${w.id}`)),
      ...callers.map((w) => ledger.step('caller exits', w.exited, `caller #${w.id} exits by itself after it is done`)),
    ]),
  );
  await stage(
    'pools close',
    Promise.all([
      ledger.step('close wait pool', pools['wait pool'].close()),
      ledger.step('close reject pool', pools['reject pool'].close()),
      ledger.step('shared drained()', pools.shared.drained()),
    ]),
  );
  for (const w of servers) w.worker.postMessage('stop');
  await stage('servers close', Promise.all(servers.map((w) => ledger.step('server exits', w.exited, `server #${w.id} exits by itself after close()`))));
  sample('after teardown');

  // --- the account ------------------------------------------------------------------------------
  const failures = [];
  const total = (rows, f) => rows.reduce((s, k) => s + (typeof f === 'function' ? f(k) : k[f]), 0);
  const mainRows = [];
  for (const [kind, k] of Object.entries(ledger.tally.snapshot())) {
    if (k.submitted > 0) mainRows.push({ kind, ...k });
  }
  const workerRows = {};
  for (const w of allCallers) {
    for (const [kind, k] of Object.entries(w.tally.snapshot())) {
      const row = (workerRows[kind] ??= { kind, submitted: 0, resolved: 0, wrong: 0, unexpected: 0, rejected: {}, wentWithThread: 0, open: 0 });
      for (const f of ['submitted', 'resolved', 'wrong', 'unexpected']) row[f] += k[f];
      for (const [type, n] of Object.entries(k.rejected)) row.rejected[type] = (row.rejected[type] ?? 0) + n;
      if (w.terminated) row.wentWithThread += k.open;
      else row.open += k.open;
    }
  }

  console.log('\n[soak] calls made on the main thread (unexpected: rejections of a type that call had no reason to meet)');
  console.log(
    pad([
      ['kind', 'submitted', 'resolved', 'wrong', 'unexpected', 'never settled', 'rejected'],
      ...mainRows.map((k) => [k.kind, k.submitted, k.resolved, k.wrong, k.unexpected, k.open, rejectedText(k.rejected)]),
    ]),
  );
  console.log(`\n[soak] calls made by the caller worker_threads (${allCallers.length} threads, ${allCallers.filter((w) => w.terminated).length} terminated)`);
  console.log(
    pad([
      ['kind', 'submitted', 'resolved', 'wrong', 'unexpected', 'went with a terminated thread', 'never settled', 'rejected'],
      ...Object.values(workerRows).map((k) => [k.kind, k.submitted, k.resolved, k.wrong, k.unexpected, k.wentWithThread, k.open, rejectedText(k.rejected)]),
    ]),
  );
  const killedServers = terminations.filter((k) => k.role === 'server');
  const killedCallers = terminations.filter((k) => k.role === 'caller');
  console.log(
    `\n[soak] terminated: ${killedServers.length} serving worker_threads (running + queued calls at the moment: ` +
      `${killedServers.map((k) => `${k.running}+${k.queued}`).join(' ') || '-'}), ${killedCallers.length} calling worker_threads ` +
      `(calls in flight: ${killedCallers.map((k) => k.open).join(' ') || '-'})`,
  );
  const unexpected = total([...mainRows, ...Object.values(workerRows)], 'unexpected');
  if (unexpected) console.log(`[soak] ${unexpected} unexpected rejections (reported, not failed), e.g.:\n    ${ledger.reports.unexpected.slice(0, 10).join('\n    ')}`);

  const all = [...mainRows, ...Object.values(workerRows)];
  const rejections = (k) => Object.values(k.rejected).reduce((a, b) => a + b, 0);
  const submitted = total(all, 'submitted');
  const resolved = total(all, 'resolved');
  const rejected = total(all, rejections);
  const gone = total(Object.values(workerRows), 'wentWithThread');
  const open = total(all, 'open');
  const wrong = total(all, 'wrong');
  const other = total(all, (k) => k.rejected.other ?? 0);

  if (open > 0) {
    const byWhat = new Map();
    const now = performance.now();
    for (const c of ledger.open.values()) {
      const key = `${c.kind}: ${c.what}`;
      const e = byWhat.get(key) ?? { n: 0, oldest: 0 };
      e.n++;
      e.oldest = Math.max(e.oldest, (now - c.since) / 1000);
      byWhat.set(key, e);
    }
    const lines = [...byWhat].sort((a, b) => b[1].oldest - a[1].oldest).map(([key, e]) => `${e.n}× ${key} (open for ${e.oldest.toFixed(1)} s)`);
    for (const row of Object.values(workerRows)) if (row.open) lines.push(`${row.open}× ${row.kind} in a caller worker_thread that was stopped, not terminated`);
    failures.push(`${open} calls never settled:\n    ${lines.slice(0, 30).join('\n    ')}${lines.length > 30 ? `\n    … and ${lines.length - 30} more` : ''}`);
  }
  if (wrong > 0) failures.push(`${wrong} wrong results, e.g.:\n    ${ledger.reports.wrong.slice(0, 10).join('\n    ')}`);
  if (other > 0) failures.push(`${other} rejections that are not an RpcError, e.g.:\n    ${ledger.reports.other.slice(0, 10).join('\n    ')}`);
  if (workerErrors.length) failures.push(`${workerErrors.length} worker_thread errors:\n    ${workerErrors.slice(0, 5).join('\n    ')}`);

  // --- memory -----------------------------------------------------------------------------------
  console.log(`\n[soak] memory samples (every ${SAMPLE_S} s; heapUsed after a GC${global.gc ? '' : ' (no --expose-gc: without)'})`);
  console.log(
    pad([
      ['t (s)', 'phase', 'RSS (MB)', 'heapUsed (MB)', 'calls/s', 'open (main)'],
      ...samples.map((s) => [s.t.toFixed(1), s.phase, s.rssMB.toFixed(1), s.heapMB.toFixed(2), fmt(s.callsPerSec), s.openMain]),
    ]),
  );
  const during = samples.filter((s) => s.phase !== 'after teardown');
  const secondHalf = during.filter((s) => s.t >= loadSeconds / 2);
  const memory = {};
  for (const [name, key] of [
    ['RSS', 'rssMB'],
    ['heapUsed', 'heapMB'],
  ]) {
    const f = fit(secondHalf.map((s) => [s.t / 60, s[key]]));
    const values = during.map((s) => s[key]);
    memory[name] = { slope: f.slope, band: 2 * f.se, n: f.n, first: values[0], last: values[values.length - 1], max: Math.max(...values) };
    const m = memory[name];
    console.log(
      `[soak] ${name}: slope over the second half ${m.slope.toFixed(3)} ± ${m.band.toFixed(3)} MB/min (${m.n} samples; ` +
        `${Math.abs(m.slope) <= m.band ? 'flat within noise' : 'outside ±2 standard errors'}); ` +
        `first ${m.first.toFixed(1)}, last ${m.last.toFixed(1)}, max ${m.max.toFixed(1)} MB`,
    );
  }

  if (loadSeconds < 120) log('note: a run this short is mostly warm-up (threads starting, code warming): its slopes say little');

  // --- results ----------------------------------------------------------------------------------
  const rate = (submitted - gone - open) / loadSeconds;
  suite.record('calls settled per second (all threads)', 'calls/s', [rate]);
  for (const [name, m] of Object.entries(memory)) {
    suite.record(`${name} slope, second half`, 'MB/min', [m.slope]);
    suite.record(`${name} slope ±2 standard errors`, 'MB/min', [m.band]);
    suite.record(`${name} first`, 'MB', [m.first]);
    suite.record(`${name} last`, 'MB', [m.last]);
    suite.record(`${name} max`, 'MB', [m.max]);
  }
  suite.table('account', [{ submitted, resolved, rejected, wentWithTerminatedThreads: gone, neverSettled: open, wrong, unexpected, notRpcError: other }]);
  suite.table('main-thread calls', mainRows);
  suite.table('caller worker_thread calls', Object.values(workerRows));
  suite.table('terminations', terminations);
  suite.table('teardown', stages);
  suite.table('memory samples', round(samples));
  suite.note(`seed ${SEED}; ${Math.round(loadSeconds)} s of load; samples every ${SAMPLE_S} s; slopes over the samples at t ≥ ${Math.round(loadSeconds / 2)} s`);
  suite.note('mix: see the header of bench/soak.js; rejections are counted by RpcError type, results checked against what was sent or computed beforehand');
  if (unexpected) suite.note(`${unexpected} unexpected rejections, e.g.: ${ledger.reports.unexpected.slice(0, 5).join('; ')}`);
  for (const f of failures) suite.note(`FAILURE: ${f}`);

  console.log(
    `\n[soak] ${submitted} calls submitted = ${resolved} resolved + ${rejected} rejected + ` +
      `${gone} gone with terminated worker_threads + ${open} never settled`,
  );
  if (failures.length) for (const f of failures) console.log(`[soak] FAILURE: ${f}`);
  else console.log('[soak] every call accounted for');
  if (!REPLACE_AT_END) suite.save();
  // A pool left with calls in flight keeps the process alive: leave on our own.
  process.exit(failures.length ? 1 : 0);
}

if (CHILD) {
  process.on('unhandledRejection', (e) => {
    console.log(`[soak] FAILURE: unhandled rejection: ${e?.stack ?? e}`);
    process.exit(1);
  });
  load().catch((e) => {
    console.log(`[soak] FAILURE: ${e?.stack ?? e}`);
    process.exit(1);
  });
} else {
  supervise();
}
