'use strict';
// Model-based test of a task-file pool's lifecycle (issue 28): random sequences of exec, map,
// abort, timeout, a worker crash (a task that calls process.exit), the file replaced by a
// broken one and back, close() and destroy(), run against a real pool (minThreads 1,
// maxThreads 2; no maxQueue, or maxQueue 1 with either onFull) and checked against a model
// that says which outcomes each call may have:
//
// - every call settles exactly once, with its result or an RpcError whose code the model
//   allows for what happened during its life (InternalError only if the file was broken
//   meanwhile, ServerGone only if a worker crashed, Aborted only if it was aborted, Timeout
//   only with a timeout, PoolClosed only if destroy() ran or it was made after close());
// - nothing hangs: each step that waits (close, destroy, waiting for the calls in flight)
//   does so under a generous guard that fails the run, naming the step and the seed, instead
//   of asserting a time;
// - no call settles after close()/destroy() resolved unless it was accepted before: every call
//   accepted before has settled by then, and the ones made after reject with PoolClosed.
//
// COREPOOL_MODEL_RUNS=<n> sets the number of runs (default 8: a few seconds).
// ready() is one of the calls: it resolves, or rejects with the load error or PoolClosed.
// A failure prints fast-check's seed and path; replay it with
//   COREPOOL_MODEL_SEED=<seed> COREPOOL_MODEL_PATH=<path> npx jest __test__/file-pool-model.test.js
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const fc = require('fast-check');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;
const NAME = Object.fromEntries(Object.entries(C).map(([k, v]) => [v, k]));

const RUNS = Number(process.env.COREPOOL_MODEL_RUNS ?? 8);
if (!(Number.isInteger(RUNS) && RUNS > 0)) throw new RangeError(`COREPOOL_MODEL_RUNS must be a whole number > 0, got ${process.env.COREPOOL_MODEL_RUNS}`);
const SEED = process.env.COREPOOL_MODEL_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.COREPOOL_MODEL_SEED);
const PATH = process.env.COREPOOL_MODEL_PATH;

/** A step that waits has this long before it counts as a hang (a failure, not a time limit). */
const GUARD_MS = 20_000;
/**
 * fast-check starts no new run after this long: only a failure's shrinking gets near it (each
 * try of a hang waits out its guards), and then the failure is reported shrunk so far.
 */
const BUDGET_MS = 30_000 + 10_000 * RUNS;

const good = path.join(__dirname, 'fixtures', 'tasks', 'lifecycle.js');
const broken = path.join(__dirname, 'fixtures', 'tasks', 'lifecycle-broken.js');

/** `promise`, or a failure naming `step` and the seed if it has not settled within GUARD_MS. */
function guarded(promise, step) {
  let timer;
  const guard = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`hang: ${step} did not settle in ${GUARD_MS} ms (seed ${SEED})`)), GUARD_MS);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

/**
 * The real side of one run: the pool, its task file, and every call made, each with what
 * happened during its life (so far) and how it settled.
 */
class Real {
  constructor(queue) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-model-'));
    this.file = path.join(this.dir, 'tasks.js');
    fs.copyFileSync(good, this.file);
    this.pool = new Pool({ filename: this.file, minThreads: 1, maxThreads: 2, ...queue });
    this.calls = [];
    this.order = 0; // settlements and close/destroy resolutions, in order
  }

  /** Tracks a call: `expected` is its result if it succeeds; `life` what may have happened to it. */
  track(label, promise, expected, life) {
    const call = { label, expected, life, settlements: 0, outcome: null, at: -1, controller: null, resolvesAfterClose: false };
    this.calls.push(call);
    call.done = promise.then(
      (value) => this.#settled(call, { value }),
      (error) => this.#settled(call, { error }),
    );
    return call;
  }

  #settled(call, outcome) {
    call.settlements++;
    call.outcome = outcome;
    call.at = this.order++;
  }

  pending() {
    return this.calls.filter((c) => c.settlements === 0);
  }

  /** What happened marks every call still pending (the file broke, a worker crashed, destroy ran). */
  mark(what) {
    for (const c of this.pending()) c.life[what] = true;
  }
}

/** Throws unless `call` settled once, with its expected result or an error its life allows. */
function checkOutcome(call) {
  const where = `${call.label} (seed ${SEED})`;
  if (call.settlements !== 1) throw new Error(`${where} settled ${call.settlements} times`);
  const { value, error } = call.outcome;
  const life = call.life;
  if (error === undefined) {
    if (life.afterClose && !call.resolvesAfterClose) throw new Error(`${where} was made after close() yet resolved with ${JSON.stringify(value)}`);
    if (!call.accepts(value)) throw new Error(`${where} resolved with ${JSON.stringify(value)}, expected ${JSON.stringify(call.expected)}`);
    return;
  }
  if (!(error instanceof RpcError)) throw new Error(`${where} rejected with a ${error?.constructor?.name}, not an RpcError: ${error?.message}`);
  const allowed = allowedCodes(life);
  if (!allowed.has(error.code)) {
    throw new Error(`${where} rejected with ${NAME[error.code] ?? error.code} (${error.message}); allowed: ${[...allowed].map((c) => NAME[c]).join(', ')}`);
  }
}

/** The error codes a call may settle with, given what happened during its life. */
function allowedCodes(life) {
  if (life.afterClose) return new Set([C.PoolClosed]);
  const codes = new Set();
  if (life.queueFull) codes.add(C.QueueFull); // maxQueue with onFull: 'reject'
  if (life.broken) codes.add(C.InternalError); // the pool gave up loading the file
  if (life.crashed || life.crash) codes.add(C.ServerGone);
  if (life.aborted) codes.add(C.Aborted);
  if (life.timeout) codes.add(C.Timeout);
  if (life.destroyed) codes.add(C.PoolClosed).add(C.ServerGone);
  if (life.ready && life.stopped) codes.add(C.PoolClosed); // the pool stopped before its workers were ready
  return codes;
}

/** A new call's life: what is true when it is made. */
function life(model, more = {}) {
  return { broken: model.broken, afterClose: model.closed, queueFull: model.queueFull, crashed: false, destroyed: false, stopped: false, aborted: false, timeout: false, ready: false, map: false, ...more };
}

// ---- commands ----

class Exec {
  constructor(value) {
    this.value = value;
  }

  check() {
    return true;
  }

  run(model, real) {
    const call = real.track(this.toString(), real.pool.exec('echo', this.value), this.value, life(model));
    call.accepts = (v) => v === this.value;
  }

  toString() {
    return `exec('echo', ${this.value})`;
  }
}

class MapCall {
  constructor(values, all) {
    this.values = values;
    this.all = all;
  }

  check() {
    return true;
  }

  run(model, real) {
    const l = life(model, { map: true });
    const promise = real.pool.map('echo', this.values, this.all ? { settle: 'all' } : undefined);
    const call = real.track(this.toString(), promise, this.values, l);
    // With settle: 'all' a map resolves with its inputs' outcomes (PoolClosed each, after
    // close()); a map of no inputs makes no call, and resolves with [] even then.
    call.resolvesAfterClose = this.all || this.values.length === 0;
    call.accepts = (out) => {
      if (!Array.isArray(out) || out.length !== this.values.length) return false;
      if (!this.all) return out.every((v, i) => v === this.values[i]);
      const allowed = allowedCodes(l);
      const fulfilled = (r, i) => !l.afterClose && r.status === 'fulfilled' && r.value === this.values[i];
      return out.every((r, i) => fulfilled(r, i) || (r.status === 'rejected' && r.reason instanceof RpcError && allowed.has(r.reason.code)));
    };
  }

  toString() {
    return `map('echo', [${this.values}]${this.all ? ", { settle: 'all' }" : ''})`;
  }
}

/** ready(): resolves once the workers serve; a ready() made after close() is PoolClosed. */
class Ready {
  check() {
    return true;
  }

  run(model, real) {
    const call = real.track(this.toString(), real.pool.ready(), undefined, life(model, { ready: true }));
    call.accepts = (v) => v === undefined;
  }

  toString() {
    return 'ready()';
  }
}

/** A slow call that an Abort may stop. */
class Slow {
  constructor(ms) {
    this.ms = ms;
  }

  check() {
    return true;
  }

  run(model, real) {
    const controller = new AbortController();
    const call = real.track(this.toString(), real.pool.call('slow', [this.ms], { signal: controller.signal }), this.ms, life(model));
    call.controller = controller;
    // Aborted while it ran, its handler ends early with -1 (the call is Aborted unless it had finished).
    call.accepts = (v) => v === this.ms || (call.life.aborted && v === -1);
  }

  toString() {
    return `call('slow', [${this.ms}], { signal })`;
  }
}

class Abort {
  constructor(pick) {
    this.pick = pick;
  }

  check() {
    return true;
  }

  run(model, real) {
    const abortable = real.pending().filter((c) => c.controller !== null && !c.life.aborted);
    if (abortable.length === 0) return;
    const call = abortable[this.pick % abortable.length];
    call.life.aborted = true;
    call.controller.abort();
  }

  toString() {
    return `abort(pending slow call #${this.pick})`;
  }
}

/** A call that runs longer than its timeout. */
class Timeout {
  check() {
    return true;
  }

  run(model, real) {
    const call = real.track(this.toString(), real.pool.call('slow', [300], { timeout: 20 }), 300, life(model, { timeout: true }));
    // Its handler ends with -1 when the timeout stops it; the call is Timeout all the same.
    call.accepts = () => false;
  }

  toString() {
    return "call('slow', [300], { timeout: 20 })";
  }
}

/** A task that calls process.exit: its worker dies, and is replaced. */
class Crash {
  check() {
    return true;
  }

  run(model, real) {
    const call = real.track(this.toString(), real.pool.exec('crash'), undefined, life(model, { crash: true }));
    call.accepts = () => false;
    // The other calls in flight may have been on its worker.
    real.mark('crashed');
  }

  toString() {
    return "exec('crash')";
  }
}

class Break {
  check(model) {
    return !model.broken;
  }

  run(model, real) {
    fs.copyFileSync(broken, real.file);
    model.broken = true;
    real.mark('broken');
  }

  toString() {
    return 'the task file is replaced by a broken one';
  }
}

class Fix {
  check(model) {
    return model.broken;
  }

  run(model, real) {
    fs.copyFileSync(good, real.file);
    model.broken = false;
  }

  toString() {
    return 'the task file is fixed';
  }
}

/** Lets time pass (worker loads, backoffs and calls progress meanwhile). */
class Pause {
  constructor(ms) {
    this.ms = ms;
  }

  check() {
    return true;
  }

  async run() {
    await new Promise((resolve) => setTimeout(resolve, this.ms));
  }

  toString() {
    return `pause ${this.ms} ms`;
  }
}

/** Waits for every call in flight: none may hang. */
class Settle {
  check() {
    return true;
  }

  async run(model, real) {
    await guarded(Promise.all(real.pending().map((c) => c.done)), `${this} (${real.pending().length} calls)`);
    for (const c of real.calls) checkOutcome(c);
  }

  toString() {
    return 'wait for the calls in flight';
  }
}

/** close() or destroy(): resolves once every call accepted before it has settled. */
class Stop {
  constructor(how) {
    this.how = how;
  }

  check(model) {
    return !model.closed;
  }

  async run(model, real) {
    const accepted = real.calls.slice();
    if (this.how === 'destroy') real.mark('destroyed');
    real.mark('stopped');
    model.closed = true;
    await guarded(real.pool[this.how](), `${this.how}()`);
    const at = real.order++;
    for (const c of accepted) {
      if (c.settlements === 0 || c.at > at) throw new Error(`${c.label} was accepted before ${this.how}() but had not settled when it resolved (seed ${SEED})`);
      checkOutcome(c);
    }
  }

  toString() {
    return `${this.how}()`;
  }
}

const commands = [
  fc.integer({ min: -1000, max: 1000 }).map((v) => new Exec(v)),
  fc.tuple(fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 6 }), fc.boolean()).map(([values, all]) => new MapCall(values, all)),
  fc.integer({ min: 1, max: 80 }).map((ms) => new Slow(ms)),
  fc.nat(7).map((pick) => new Abort(pick)),
  fc.constant(new Timeout()),
  fc.constant(new Ready()),
  fc.constant(new Crash()),
  fc.constant(new Break()),
  fc.constant(new Fix()),
  fc.integer({ min: 1, max: 60 }).map((ms) => new Pause(ms)),
  fc.constant(new Settle()),
  fc.constantFrom('close', 'destroy').map((how) => new Stop(how)),
];

describe('a task-file pool against its model', () => {
  test('exec, map, abort, timeout, crash, a broken and fixed file, close and destroy: every call settles once, as allowed, nothing hangs', async () => {
    const queues = fc.constantFrom({}, { maxQueue: 1, onFull: 'wait' }, { maxQueue: 1, onFull: 'reject' });
    const property = fc.asyncProperty(queues, fc.commands(commands, { maxCommands: 12, size: 'max' }), async (queue, cmds) => {
      const real = new Real(queue);
      const model = { broken: false, closed: false, queueFull: queue.onFull === 'reject' };
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        // The end of every run: the calls still in flight settle, then the pool closes.
        await new Settle().run(model, real);
        if (!model.closed) await new Stop('close').run(model, real);
        for (const c of real.calls) checkOutcome(c);
      } finally {
        await guarded(real.pool.destroy(), 'the final destroy()');
        fs.rmSync(real.dir, { recursive: true, force: true });
      }
    });
    const settings = { numRuns: RUNS, seed: SEED, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false };
    if (PATH !== undefined) settings.path = PATH;
    try {
      await fc.assert(property, settings);
    } catch (e) {
      // fast-check's report names the seed and path; say how to replay it.
      e.message += `\nReplay: COREPOOL_MODEL_SEED=${SEED} COREPOOL_MODEL_PATH=<path above> npx jest __test__/file-pool-model.test.js`;
      throw e;
    }
  }, BUDGET_MS + 5 * GUARD_MS);
});
