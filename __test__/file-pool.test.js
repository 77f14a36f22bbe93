'use strict';
// new Pool({ filename }): a pool of JavaScript workers serving a task file's functions, the way
// Piscina users expect, scheduled by the native pool.
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');
const util = require('node:util');
const { Pool, RpcError } = require('..');
const { outcome, rejection } = require('./helpers/rejection.js');
const { settles } = require('./helpers/order.js');
const { child } = require('./helpers/child.js');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

/** Runs node with `args`: its exit status and what it printed (killed after a generous bound: a hang). */
function script(args) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, args);
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
    p.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status: status ?? signal, out: out.trim() });
    });
  });
}

describe('a pool of JavaScript workers from a task file', () => {
  test('calls made before the workers are ready wait for them; the file’s functions answer', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 2 });
    // Made at once, while the workers still load the file: none fails with MethodNotFound.
    const sums = await Promise.all(Array.from({ length: 50 }, (_, i) => pool.exec('add', { a: i, b: 1 })));
    expect(sums).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(pool.threads).toBe(2);
    expect(pool.stats().threads).toBe(0); // no native threads unless asked for
    await pool.ready(); // both workers serve
    expect(new Set(await Promise.all(Array.from({ length: 40 }, () => pool.exec('who')))).size).toBe(2);
    await pool.close();
  });

  test('a name the file does not export is MethodNotFound, also for calls made before it loaded', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 1 });
    const early = pool.exec('nope');
    expect((await outcome(early)).code).toBe(C.MethodNotFound);
    expect((await outcome(pool.exec('nope'))).code).toBe(C.MethodNotFound);
    // Native command names mean the file's functions here (the pool runs no native commands).
    expect(await pool.exec('render', 'x')).toBe('served x');
    await pool.close();
  });

  test('a built-in command on a task-file pool without native threads says why it is not found; with nativeThreads it runs', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 1 });
    const e = await outcome(pool.exec('fibonacci', 10));
    expect([e.code, e.message]).toEqual([C.MethodNotFound, expect.stringMatching(/"fibonacci" is a built-in command, and this pool runs no native threads .*nativeThreads ≥ 1/)]);
    // A name that is no command stays the plain MethodNotFound.
    expect((await outcome(pool.exec('nope'))).message).toMatch(/^Method not found: "nope" \(the task file \S+basic\.js exports: add, who, /);
    // A function in a view: the error does not point to pool.render as the way out.
    const f = await outcome(pool.render('{{x}}', { x: () => 1 }));
    expect([f.code, f.message]).toEqual([C.InvalidParams, expect.stringMatching(/except in pool\.render's view on a pool with native threads/)]);
    await pool.close();
    const both = new Pool({ filename: task('basic.js'), threads: 1, nativeThreads: 1 });
    expect(await both.exec('fibonacci', 10)).toBe('55');
    await both.close();
  });

  test('errors, timeouts, aborts and queue limits work as for native commands', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 1, maxQueue: 1 });
    await pool.exec('add', { a: 0, b: 0 }); // loaded: one server, so room for 1 running + 1 queued
    const calls = [pool.exec('slow', 100), pool.exec('slow', 1), pool.exec('slow', 1)];
    const codes = (await Promise.all(calls.map(outcome))).map((o) => o.code ?? 'ok');
    expect(codes).toEqual(['ok', 'ok', C.QueueFull]);
    // A task's own error reaches the caller as it was thrown (__test__/task-errors.test.js).
    const failed = await pool.exec('fail', 'boom').catch((e) => e);
    expect([failed.constructor, failed.message]).toEqual([Error, 'boom']);
    expect((await outcome(pool.call('slow', [500], { timeout: 20 }))).code).toBe(C.Timeout);
    const ac = new AbortController();
    const aborted = pool.call('slow', [500], { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    expect((await outcome(aborted)).code).toBe(C.Aborted);
    await pool.close();
  });

  test('maxQueue counts the workers the pool may still start as threads: with maxQueue 0, calls beyond the running worker make more start, up to maxThreads', async () => {
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const pool = new Pool({ filename: task('gate.js'), minThreads: 1, maxThreads: 3, maxQueue: 0, workerData: { gate } });
    await pool.exec('slow', 0); // one worker ready
    const calls = [1, 2, 3, 4].map((x) => outcome(pool.exec('gate', x)));
    const fourth = await calls[3];
    // Three run at once, so on three workers (each blocks its worker until the gate opens).
    // (Before, the second and third were refused, and no worker was started for them.)
    while (pool.stats().servers.filter((s) => s.running > 0).length < 3) {
      if ((await Promise.race([calls[1], calls[2], new Promise((resolve) => setTimeout(resolve, 10, null))])) !== null) break;
    }
    const runningAtOnce = pool.stats().servers.filter((s) => s.running > 0).length;
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    const results = await Promise.all(calls.slice(0, 3));
    expect([results.map((r) => r.value ?? r.code), fourth.code, runningAtOnce]).toEqual([[1, 2, 3], C.QueueFull, 3]);
    await pool.close();
  });

  test('ES modules: named exports, and the default export through run() as in Piscina', async () => {
    const pool = new Pool({ filename: task('esm.mjs'), threads: 1 });
    expect(await pool.exec('double', 21)).toBe(42);
    expect(await pool.run({ x: 1 })).toEqual({ task: { x: 1 }, kind: 'default' });
    expect(await pool.run(4, { name: 'double' })).toBe(8);
    await pool.close();
    const cjs = new Pool({ filename: task('cjs-default.js'), threads: 1 });
    expect(await cjs.run({ a: 6, b: 7 })).toBe(42);
    await cjs.close();
  });

  test('workerData, env and argv reach the task file; resourceLimits are applied', async () => {
    const pool = new Pool({
      filename: task('basic.js'),
      threads: 1,
      workerData: { hello: [1, 2] },
      env: { COREPOOL_TEST: 'yes' },
      argv: ['--flag'],
      resourceLimits: { maxOldGenerationSizeMb: 64 },
    });
    expect(await pool.exec('data')).toEqual({ workerData: { hello: [1, 2] }, env: 'yes', argv: ['--flag'] });
    await pool.close();
  });

  test('a file that cannot be loaded fails the calls waiting for it and later ones, with its error', async () => {
    const pool = new Pool({ filename: task('broken.js'), threads: 2 });
    const first = await outcome(pool.exec('anything', 1));
    expect(first.code).toBe(C.InternalError);
    // It names the file, and where in it the error was thrown.
    expect(first.message.split('\n')[0]).toBe(`corepool: the task file ${task('broken.js')} could not be loaded: this task file is broken (line 3, column 7)`);
    expect((await outcome(pool.ready())).message).toMatch(/this task file is broken/);
    // A later call loads the file once more (it might have been fixed) and gets the same error.
    expect(await outcome(pool.exec('anything', 2))).toMatchObject({ code: C.InternalError, message: first.message });
    await pool.close();
  });

  test('calls parked by maxQueue (onFull: wait) get the load error too, not MethodNotFound', async () => {
    const pool = new Pool({ filename: task('broken.js'), threads: 1, maxQueue: 1, onFull: 'wait' });
    const outcomes = await settles(Promise.all([1, 2, 3, 4, 5].map((i) => outcome(pool.exec('anything', i)))));
    for (const o of outcomes) expect(o).toMatchObject({ code: C.InternalError, message: expect.stringMatching(/this task file is broken/) });
    await pool.close();
  }, 30_000);

  test('a map whose items wait for room (maxQueue, onFull: reject) across close() gets the load error for each, not MethodNotFound', async () => {
    // The pool gives up loading while close() keeps it from loading again: the items map
    // starts after that still find no server, and say why (found by the file-pool model).
    for (const method of ['echo', 'anything']) {
      const pool = new Pool({ filename: task('broken.js'), threads: 1, maxQueue: 1, onFull: 'reject' });
      const mapped = pool.map(method, [0, 0, 0, 0], { settle: 'all' });
      const closed = pool.close();
      const results = await settles(mapped);
      expect(results).toHaveLength(4);
      for (const r of results) {
        expect(r.status).toBe('rejected');
        expect(r.reason).toMatchObject({ code: C.InternalError, message: expect.stringMatching(/this task file is broken/) });
        expect(r.reason.data).toMatchObject({ file: task('broken.js'), line: 3 });
      }
      await closed;
    }
  }, 30_000);

  test('a file broken from the start fails the waiting calls after one load per starting worker, not after retries (the exit code of a worker that exits while loading too)', async () => {
    // It used to retry RESPAWN.maxFailedLoads times, 50 ms doubling, before failing the calls
    // (~1 s on this machine), where Piscina rejects them at once: the retries failed alike.
    for (const threads of [1, 3]) {
      const loads = new Int32Array(new SharedArrayBuffer(8)); // [good loads, broken loads]
      const pool = new Pool({ filename: task('lifecycle-broken.js'), threads, workerData: { loads } });
      const outcomes = await settles(Promise.all([1, 2, 3, 4].map((i) => outcome(pool.exec('echo', i)))));
      for (const o of outcomes) expect(o).toMatchObject({ code: C.InternalError, message: expect.stringMatching(/the lifecycle task file is broken/) });
      expect(Atomics.load(loads, 1)).toBe(threads);
      await pool.close();
    }
    const exits = new Pool({ filename: task('exits-at-load.js'), threads: 2 });
    const o = await settles(outcome(exits.exec('anything')));
    expect([o.code, o.message]).toEqual([C.InternalError, `corepool: the task file ${task('exits-at-load.js')} could not be loaded: its worker exited with code 3 before it was ready`]);
    await exits.close();
  });

  test('a file broken after the start: the replacement of a crashed worker fails to load, and with no worker serving the pool gives up at once, failing the waiting calls and ready() with the load error; later loads back off; a fixed file recovers, by ready() too', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-tasks-'));
    const file = path.join(dir, 'tasks.js');
    fs.copyFileSync(task('lifecycle.js'), file);
    const loads = new Int32Array(new SharedArrayBuffer(8)); // [good loads, broken loads]
    const pool = new Pool({ filename: file, threads: 1, workerData: { loads } });
    const errors = [];
    pool.on('error', (e) => errors.push(e));
    try {
      expect(await pool.exec('echo', 1)).toBe(1);
      fs.copyFileSync(task('lifecycle-broken.js'), file);
      const crash = outcome(pool.exec('crash'));
      // Made while no worker can start: its timeout only counts once it runs, so it is the
      // give-up that settles it (it used to wait for ever while the file loaded in a loop).
      const waiting = outcome(pool.call('echo', [2], { timeout: 2000 }));
      expect((await crash).code).toBe(C.ServerGone);
      const w = await settles(waiting);
      expect(w.code).toBe(C.InternalError);
      expect(w.message).toContain(file);
      expect(w.message).toMatch(/the lifecycle task file is broken/);
      expect(Atomics.load(loads, 1)).toBe(1); // one load: nothing serves, so no retries
      expect(errors.map((e) => [e.code, e.message])).toEqual([[C.InternalError, w.message]]);
      // ready() after the give-up loads the file again (one load), as a call does, and gets its outcome.
      const r = await settles(outcome(pool.ready()));
      expect([r.code, r.message]).toEqual([C.InternalError, w.message]);
      expect(Atomics.load(loads, 1)).toBe(2);
      // So does a call.
      expect(await settles(outcome(pool.exec('echo', 3)))).toMatchObject({ code: C.InternalError, message: w.message });
      expect(Atomics.load(loads, 1)).toBe(3);
      // Calls in a loop load it at most once each, each load no sooner than a backoff after the
      // last (50 ms doubling to 1 s; RESPAWN): never hundreds a second.
      for (let i = 0; i < 3; i++) expect(await settles(outcome(pool.exec('echo', i)))).toMatchObject({ code: C.InternalError });
      expect(Atomics.load(loads, 1)).toBe(6);
      // The file is fixed: ready() loads it; the pool is whole again and serves.
      fs.copyFileSync(task('lifecycle.js'), file);
      await settles(pool.ready());
      expect(await settles(pool.exec('echo', 4))).toBe(4);
      expect(Atomics.load(loads, 0)).toBe(2);
      expect(errors.length).toBe(6); // one per give-up
      await settles(pool.close());
    } finally {
      await pool.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('loads made to grow the pool that keep failing give up without failing the calls or ready(): a worker still serves them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corepool-tasks-'));
    const file = path.join(dir, 'tasks.js');
    fs.copyFileSync(task('lifecycle.js'), file);
    const pool = new Pool({ filename: file, minThreads: 1, maxThreads: 2 });
    try {
      await pool.ready();
      fs.copyFileSync(task('lifecycle-broken.js'), file);
      const gaveUp = new Promise((resolve) => pool.once('error', resolve));
      // One call runs until aborted, the next waits behind it: the pool wants a second worker.
      const ac = new AbortController();
      const running = outcome(pool.call('slow', [600_000], { signal: ac.signal }));
      const waiting = outcome(pool.call('echo', ['served']));
      expect((await settles(gaveUp)).message).toMatch(/the lifecycle task file is broken/);
      await settles(pool.ready()); // minThreads workers serve
      ac.abort();
      expect((await settles(running)).code).toBe(C.Aborted);
      expect(await settles(waiting)).toEqual({ value: 'served' });
      await settles(pool.close());
    } finally {
      await pool.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a worker that cannot be made any more (workerData changed to something not cloneable) is a failed load, not an uncaught exception', async () => {
    const workerData = { n: 1 };
    const pool = new Pool({ filename: task('lifecycle.js'), threads: 1, workerData });
    try {
      expect(await pool.exec('echo', 1)).toBe(1);
      workerData.f = () => {}; // structured clone refuses functions: the next Worker cannot be made
      expect((await outcome(pool.exec('crash'))).code).toBe(C.ServerGone);
      const r = await settles(outcome(pool.exec('echo', 2)));
      expect(r.code).toBe(C.InternalError);
      expect(r.message).toMatch(/could not be loaded: .*could not be cloned/);
      delete workerData.f;
      expect(await settles(pool.exec('echo', 3))).toBe(3);
      await settles(pool.close());
    } finally {
      await pool.destroy();
    }
  }, 60_000);

  test('a worker that crashes is replaced: its queued calls run elsewhere, its running one is ServerGone, no call runs twice', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 2, strategy: 'roundrobin' });
    await pool.exec('add', { a: 1, b: 1 }); // loaded
    const counters = new Int32Array(new SharedArrayBuffer(4 * 400));
    const calls = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 100; i++) calls.push(outcome(pool.exec('count', counters, round * 100 + i, i % 10 === 0 ? 5 : 0)));
      calls.push(outcome(pool.exec('crash')));
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    const results = await Promise.all(calls);
    const done = results.filter((r) => 'value' in r && typeof r.value === 'number');
    // Every call settled: with its value, or ServerGone (it ran on a crashing worker, or was the crash).
    for (const r of results) if (!('value' in r)) expect(r.code).toBe(C.ServerGone);
    for (const r of done) expect(counters[r.value]).toBe(1);
    for (let i = 0; i < 400; i++) expect(counters[i]).toBeLessThanOrEqual(1);
    expect(done.length).toBeGreaterThan(300);
    expect(pool.threads).toBe(2); // replaced
    expect(await pool.exec('add', { a: 2, b: 3 })).toBe(5);
    await pool.close();
  }, 30_000);

  test('minThreads..maxThreads: more workers under load, back to minThreads when idle', async () => {
    const pool = new Pool({ filename: task('basic.js'), minThreads: 1, maxThreads: 3, idleTimeout: 50 });
    expect(pool.threads).toBe(1);
    await Promise.all(Array.from({ length: 30 }, () => pool.exec('slow', 30)));
    expect(pool.threads).toBeGreaterThan(1);
    const until = Date.now() + 10_000;
    while (pool.threads > 1 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(pool.threads).toBe(1);
    expect(await pool.exec('add', { a: 1, b: 2 })).toBe(3);
    await pool.close();
  }, 20_000);

  // Every way in grows the pool: calls that each block their worker until 3 of them run at
  // once can only all meet on 3 distinct workers (and would wait out the bound on fewer).
  const MEET = 3;
  const BOUND_MS = 10_000;
  const request = (i) => ({ jsonrpc: '2.0', method: 'meet', params: [MEET, BOUND_MS], id: i });
  const entryPoints = {
    exec: (pool) => Promise.all(Array.from({ length: MEET }, () => pool.exec('meet', MEET, BOUND_MS))),
    call: (pool) => Promise.all(Array.from({ length: MEET }, () => pool.call('meet', [MEET, BOUND_MS]))),
    run: (pool) => Promise.all(Array.from({ length: MEET }, () => pool.run(MEET, { name: 'meet' }))),
    map: (pool) => pool.map('meet', Array(MEET).fill(MEET)),
    request: async (pool) => (await pool.request(Array.from({ length: MEET }, (_, i) => request(i)))).map((r) => r.result ?? r.error),
    handle: async (pool) => JSON.parse(await pool.handle(JSON.stringify(Array.from({ length: MEET }, (_, i) => request(i))))).map((r) => r.result ?? r.error),
  };
  test.each(Object.keys(entryPoints))('%s grows a pool of minThreads..maxThreads workers while its calls wait', async (how) => {
    const arrived = new Int32Array(new SharedArrayBuffer(4));
    const pool = new Pool({ filename: task('meet.js'), minThreads: 1, maxThreads: MEET, workerData: { arrived } });
    await pool.ready(); // one worker: the calls below are all that can make more start
    const results = await entryPoints[how](pool);
    // map and run pass one param: the bound is the file's default there.
    expect(results.map((r) => r.met)).toEqual(Array(MEET).fill(true));
    expect(new Set(results.map((r) => r.thread)).size).toBe(MEET);
    await pool.close();
  }, 60_000);

  test('filename may be a file: URL, as import.meta.url gives', async () => {
    const { pathToFileURL } = require('node:url');
    for (const filename of [pathToFileURL(task('basic.js')), pathToFileURL(task('basic.js')).href]) {
      const pool = new Pool({ filename, threads: 1 });
      expect(pool.options.filename).toBe(task('basic.js'));
      expect(await pool.exec('add', { a: 1, b: 2 })).toBe(3);
      await pool.close();
    }
    expect(() => new Pool({ filename: 'file://elsewhere/x.js' })).toThrow(/options\.filename is not a file URL/);
  });

  test('bad options are refused with errors naming them', () => {
    expect(() => new Pool({ filename: 42 })).toThrow(/options\.filename/);
    expect(() => new Pool({ minThreads: 1 })).toThrow(/options\.minThreads is for a pool of JavaScript workers/);
    expect(() => new Pool({ filename: task('basic.js'), minThreads: 4, maxThreads: 2 })).toThrow(RangeError);
    expect(() => new Pool({ filename: task('basic.js'), threads: 2, maxThreads: 4 })).toThrow(/not both/);
    expect(() => new Pool({ filename: task('basic.js'), concurrency: 0 })).toThrow(/options\.concurrency/);
  });

  // A plain script (CommonJS, or an ES module awaiting at top level) that awaits ready() and
  // nothing else: ready() itself keeps the process alive until it settles. (It used to exit
  // with 0, or 13 for the module, before printing anything.)
  test.each([
    ['CommonJS', 'basic.js', 'ready'],
    ['ESM', 'basic.js', 'ready'],
    ['CommonJS', 'broken.js', `failed: ${C.InternalError} this task file is broken`],
    ['ESM', 'broken.js', `failed: ${C.InternalError} this task file is broken`],
  ])('a script (%s) that awaits ready() on %s prints %j before it exits', async (kind, file, expected) => {
    const body = `const pool = new Pool({ filename: ${JSON.stringify(task(file))} });
      try { await pool.ready(); console.log('ready'); }
      catch (e) { console.log('failed:', e.code, e.message.includes('this task file is broken') ? 'this task file is broken' : e.message); }`;
    const root = JSON.stringify(path.join(__dirname, '..', 'index.js'));
    const args =
      kind === 'ESM'
        ? ['--input-type=module', '-e', `import { Pool } from ${root};\n${body}`]
        : ['-e', `const { Pool } = require(${root});\n(async () => { ${body} })();`];
    expect(await script(args)).toEqual({ status: 0, out: expected });
  }, 30_000);

  test.each(['close', 'destroy'])('a script that uses a file pool exits after %s(), and also when it never closes it', async (how) => {
    const run = (body) =>
      new Promise((resolve) => {
        const code = `const { Pool } = require(${JSON.stringify(path.join(__dirname, '..'))});
          (async () => { const pool = new Pool({ filename: ${JSON.stringify(task('basic.js'))}, threads: 2 });
          console.log(await pool.exec('add', { a: 2, b: 2 })); ${body} })();`;
        const p = spawn(process.execPath, ['-e', code]);
        let out = '';
        p.stdout.on('data', (d) => (out += d));
        const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
        p.on('close', (status) => {
          clearTimeout(timer);
          resolve({ status, out: out.trim() });
        });
      });
    expect(await run(`await pool.${how}();`)).toEqual({ status: 0, out: '4' });
    expect(await run('')).toEqual({ status: 0, out: '4' });
  }, 30_000);
});

describe('structured-clone values in task-file pools (issue 30 §2)', () => {
  const fc = require('fast-check');
  const { check, LIMIT_MS } = require('./helpers/property/run.js');
  const VALUES = task('values.js');
  let pool;
  beforeAll(() => {
    pool = new Pool({ filename: VALUES, threads: 2 });
  });
  afterAll(() => pool.close());

  // Random structured-clone values: leaves of every kind postMessage carries, nested in
  // arrays (some sparse), objects, Maps and Sets, some of them reached twice or cyclic.
  const leaf = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.string(),
    fc.bigInt(),
    fc.integer().map((ms) => new Date(ms)),
    fc.constantFrom(/a+b/gi, /x/),
    fc.uint8Array({ maxLength: 16 }),
    fc.float64Array({ maxLength: 4 }),
    fc.uint8Array({ maxLength: 8 }).map((u) => u.buffer),
    fc.uint8Array({ minLength: 4, maxLength: 8 }).map((u) => new DataView(u.buffer, 1, 2)),
    fc.string().map((m) => new RangeError(m)),
  );
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('sparse'), tie('object'), tie('map'), tie('set')),
    array: fc.array(tie('tree'), { maxLength: 4 }),
    sparse: fc.sparseArray(tie('tree'), { maxLength: 20, maxNumElements: 3 }),
    object: fc.dictionary(fc.oneof(fc.string(), fc.constant('__proto__')), tie('tree'), { maxKeys: 4 }),
    map: fc.array(fc.tuple(tie('tree'), tie('tree')), { maxLength: 3 }).map((entries) => new Map(entries)),
    set: fc.array(tie('tree'), { maxLength: 3 }).map((items) => new Set(items)),
  }));
  // Shared references and a cycle: the same object twice, and the whole value inside itself.
  const value = fc.tuple(tree, tree, fc.boolean()).map(([a, b, cyclic]) => {
    const shared = { a };
    const v = { first: shared, second: shared, b };
    if (cyclic) v.self = v;
    return v;
  });

  /** The places of every object reached twice, as paths: identity structure of a value. */
  function identities(root) {
    const seen = new Map();
    const repeats = [];
    const walk = (v, path) => {
      if (v === null || typeof v !== 'object') return;
      if (seen.has(v)) {
        repeats.push(`${path} = ${seen.get(v)}`);
        return;
      }
      seen.set(v, path);
      if (v instanceof Map) [...v].forEach(([k, x], i) => (walk(k, `${path}.k${i}`), walk(x, `${path}.v${i}`)));
      else if (v instanceof Set) [...v].forEach((x, i) => walk(x, `${path}.s${i}`));
      else if (!ArrayBuffer.isView(v)) for (const k of Object.keys(v)) walk(v[k], `${path}.${JSON.stringify(k)}`);
    };
    walk(root, '$');
    return repeats;
  }

  test(
    'random structured-clone values round-trip as params and as results as structuredClone gives them',
    async () => {
      await check(
        fc.asyncProperty(value, async (v) => {
          const expected = structuredClone(v);
          const back = await pool.exec('echo', v);
          expect(util.isDeepStrictEqual(back, expected)).toBe(true);
          expect(identities(back)).toEqual(identities(expected));
          const [again] = await pool.exec('args', v);
          expect(util.isDeepStrictEqual(again, expected)).toBe(true);
        }),
        100,
      );
    },
    LIMIT_MS,
  );

  test(
    'random structured-clone values holding shared memory: the task gets a copy made when the call is made, the memory shared',
    async () => {
      const v8 = require('node:v8');
      const { describeShared, sharedViews } = require('./helpers/shared-tree.js');
      const sharedLeaf = fc.oneof(
        fc.integer({ min: 1, max: 8 }).map((n) => new Uint8Array(new SharedArrayBuffer(n))),
        fc.integer({ min: 1, max: 3 }).map((n) => new Int32Array(new SharedArrayBuffer(4 * n))),
        fc.integer({ min: 0, max: 8 }).map((n) => new SharedArrayBuffer(n)),
      );
      // A value of the random kind above with shared memory in it, somewhere.
      const holding = fc.tuple(value, fc.array(sharedLeaf, { minLength: 1, maxLength: 3 }), fc.boolean()).map(([v, leaves, twice]) => {
        v.leaves = twice ? [...leaves, leaves[0]] : leaves;
        v.map = new Map([['shared', leaves[leaves.length - 1]]]);
        return v;
      });
      await check(
        fc.asyncProperty(holding, async (v) => {
          const views = [...sharedViews(v)];
          const before = views.map((view) => new Uint8Array(view.buffer, view.byteOffset, 1)[0]);
          const expected = describeShared(structuredClone(v));
          const answer = pool.exec('touchShared', v);
          // Changed after the call was made: the task has its copy already.
          v.changedAfter = true;
          const back = await answer;
          // Compared as V8 writes them (shapes, values, which objects are one), whatever realm
          // each copy was made in.
          expect(v8.serialize(back).equals(v8.serialize(expected))).toBe(true);
          expect(views.map((view) => new Uint8Array(view.buffer, view.byteOffset, 1)[0])).toEqual(before.map((b) => (b + 1) & 0xff));
        }),
        50,
      );
    },
    LIMIT_MS,
  );

  test(
    'map: random structured-clone inputs reach the task as structuredClone gives them, each on its own call',
    async () => {
      const v8 = require('node:v8');
      await check(
        fc.asyncProperty(fc.array(fc.oneof(value, fc.integer(), fc.constant(undefined)), { minLength: 1, maxLength: 5 }), async (inputs) => {
          // (A task that returns nothing resolves with null for corepool's own calls: docs/values.md.)
          const expected = inputs.map((v) => (v === undefined ? null : structuredClone(v)));
          const back = await pool.map('echo', inputs);
          // Compared as V8 writes them (shapes, values, which objects are one), whatever realm
          // each copy was made in.
          expect(back.length).toBe(inputs.length);
          back.forEach((b, i) => expect([i, v8.serialize(b).equals(v8.serialize(expected[i]))]).toEqual([i, true]));
        }),
        50,
      );
    },
    LIMIT_MS,
  );

  test('map: an input holding shared memory beside a Date shares it; an input that cannot cross fails alone, named as an item', async () => {
    const view = new Int32Array(new SharedArrayBuffer(4));
    const got = await pool.map('touchShared', [{ view, when: new Date(3) }, { view, plain: 1 }, 7]);
    expect(got.map((g) => [g.view, g.when?.getTime?.(), g.plain])).toEqual([[{ shared: 4 }, 3, undefined], [{ shared: 4 }, undefined, 1], [undefined, undefined, undefined]]);
    expect(Atomics.load(view, 0)).toBe(2);
    const all = await pool.map('echo', [1, { f() {} }, new Map([[1, 2]])], { settle: 'all' });
    expect(all[0]).toEqual({ status: 'fulfilled', value: 1 });
    expect(all[1].status).toBe('rejected');
    expect([all[1].reason.name, all[1].reason.message, all[1].reason.data]).toEqual(['DataCloneError', 'item.f is a function, which structured clone cannot carry', { name: 'DataCloneError', path: 'item.f' }]);
    expect(util.types.isMap(all[2].value) && all[2].value.get(1)).toBe(2);
    await expect(pool.map('echo', [1, { f() {} }])).rejects.toMatchObject({ name: 'DataCloneError' });
    expect(await pool.exec('echo', 9)).toBe(9);
  });

  test('map: a function or a symbol input is refused as structured clone refuses it; what was sent for an input is let go once it settles', async () => {
    const all = await pool.map('echo', [() => 1, Symbol('s'), 3], { settle: 'all' });
    expect(all.map((r) => (r.status === 'fulfilled' ? r.value : [r.reason.name, r.reason.message]))).toEqual([
      ['DataCloneError', 'item is a function, which structured clone cannot carry'],
      ['DataCloneError', 'item is a symbol, which structured clone cannot carry'],
      3,
    ]);
    // 300 inputs of 512 KB each, sent as structured clone: kept until the map's end, their
    // bytes would grow the process's external memory by 150 MB.
    const r = await child(
      `const pool = new Pool({ filename: ${JSON.stringify(VALUES)}, threads: 1 });
       const inputs = Array.from({ length: 300 }, (_, i) => ({ when: new Date(i), data: new Float64Array(65536) }));
       let before = 0;
       let grownMb = 0;
       const got = await pool.map('whenOf', inputs, {
         concurrency: 2,
         onProgress(done) {
           if (done === 20) { globalThis.gc(); before = process.memoryUsage().external; }
           if (done === 280) { globalThis.gc(); grownMb = (process.memoryUsage().external - before) / 2 ** 20; }
         },
       });
       await pool.close();
       out({ right: got.every((g, i) => g === i), flat: grownMb < 60 });`,
      { args: ['--expose-gc'] },
    );
    expect(r.stderr).toBe('');
    expect(r.result).toEqual({ right: true, flat: true });
  }, 60_000);

  test('params holding shared memory beside a Date: a function among them is refused by name, moving buffers beside them is refused, a Proxy crosses as what it stands for', async () => {
    const view = new Int32Array(new SharedArrayBuffer(4));
    await expect(pool.exec('echo', { view, when: new Date(0), f() {} })).rejects.toMatchObject({ name: 'DataCloneError', message: expect.stringContaining('f is a function') });
    const moved = new ArrayBuffer(4);
    await expect(pool.call('echo', [{ view, when: new Date(0), moved }], { transfer: [moved] })).rejects.toMatchObject({ name: 'DataCloneError', message: 'params hold shared memory, which travels only in calls that move no ArrayBuffer' });
    expect(moved.byteLength).toBe(4);
    // A Proxy among them crosses as what it stands for (as without shared memory); a value
    // nested too deep is named so, not the Date beside it.
    const proxied = await pool.exec('touchShared', { view, when: new Date(2), p: new Proxy({ a: 1 }, {}) });
    expect([proxied.view, proxied.when.getTime(), proxied.p]).toEqual([{ shared: 4 }, 2, { a: 1 }]);
    let deep = {};
    for (let i = 0; i < 20000; i++) deep = { d: deep };
    await expect(pool.exec('echo', { view, when: new Date(0), deep })).rejects.toMatchObject({ name: 'DataCloneError', message: 'params is nested too deep for structured clone to write: send it flatter' });
  });

  test('a task returning a Date resolves with a Date (it was refused before)', async () => {
    // (util.types, not instanceof: jest runs this file in a realm of its own.)
    const d = await pool.exec('date');
    expect(util.types.isDate(d)).toBe(true);
    expect(d.getTime()).toBe(0);
  });

  test("a result whose getter throws names the getter's place and error, also beside a Date (which it did not before)", async () => {
    const said = "result.bad: reading it threw RangeError: getter says no";
    for (const name of ['getterResult', 'getterAfterDate']) {
      const e = await rejection(pool.exec(name), RpcError);
      expect([name, e.code, e.message]).toEqual([name, C.InvalidParams, said]);
    }
    expect(await pool.exec('echo', 5)).toBe(5);
    // The first read's throw is the one told (each read of this getter throws a new error).
    const counted = await rejection(pool.exec('getterCounting'), RpcError);
    expect(counted.message).toBe('result.bad: reading it threw RangeError: read #1');
    // A thrown object is described as the native side describes it.
    const object = await rejection(pool.exec('getterThrowsObject'), RpcError);
    expect(object.message).toBe('result.bad: reading it threw an object');
  });

  test('an Error inside a result is a cloned Error: name, message, stack and cause', async () => {
    const { e } = await pool.exec('error');
    const expected = structuredClone((() => new TypeError('inside', { cause: new Error('deeper') }))());
    expect([util.types.isNativeError(e), Object.prototype.toString.call(e.cause)]).toEqual([true, '[object Error]']);
    expect([e.name, e.message, e.cause.message, typeof e.stack]).toEqual([expected.name, expected.message, expected.cause.message, 'string']);
  });

  test('transfer moves an ArrayBuffer: detached on the sender, whole on the receiver, both ways', async () => {
    const sent = new Uint8Array(100_000).fill(3);
    sent[99_999] = 4;
    const answer = await pool.call('describeBuffer', [sent], { transfer: [sent.buffer] });
    expect(sent.buffer.byteLength).toBe(0);
    expect(answer).toEqual({ length: 100_000, first: 3, last: 4 });
    const back = await pool.exec('moveBack', 50_000);
    expect(util.types.isUint8Array(back)).toBe(true);
    expect(back.byteLength).toBe(50_000);
    expect(back.every((b) => b === 9)).toBe(true);
  });

  test('a bad transfer list rejects with a DataCloneError and detaches nothing', async () => {
    const kept = new ArrayBuffer(8);
    await expect(pool.call('echo', [kept], { transfer: [kept, new SharedArrayBuffer(4)] })).rejects.toMatchObject({ name: 'DataCloneError', message: expect.stringContaining('transferList[1]') });
    expect(kept.byteLength).toBe(8);
    await expect(pool.call('echo', [kept], { transfer: [kept, kept] })).rejects.toMatchObject({ name: 'DataCloneError' });
    await expect(pool.call('echo', [1], { transfer: 'no' })).rejects.toMatchObject({ code: C.InvalidRequest });
  });

  test('a moved buffer goes on moving: the receiver moves it back, detached there and whole here', async () => {
    const one = new Pool({ filename: VALUES, threads: 1 });
    try {
      const sent = new Uint8Array(100_000).map((_, i) => i & 255);
      const back = await one.call('moveOnAndKeep', [sent], { transfer: [sent.buffer] });
      expect(sent.buffer.byteLength).toBe(0);
      expect([util.types.isUint8Array(back), back.byteLength]).toEqual([true, 100_000]);
      expect(back.every((b, i) => b === (i & 255))).toBe(true);
      expect(await one.exec('keptLength')).toBe(0); // detached on the serving thread
      // And once more, the received buffer itself: it moves like any other.
      const again = await one.call('moveOnAndKeep', [back], { transfer: [back.buffer] });
      expect([back.buffer.byteLength, again.byteLength, again[255]]).toEqual([0, 100_000, 255]);
    } finally {
      await one.close();
    }
  });

  test('a received moved buffer is external memory: postMessage does not move it away; a WebAssembly memory is copied and stays', async () => {
    const back = await pool.exec('moveBack', 1000);
    const { port1, port2 } = new MessageChannel();
    try {
      // Node 20 copies an untransferable buffer; later versions throw. Either way it stays here.
      port1.postMessage(back.buffer, [back.buffer]);
      const { message } = require('node:worker_threads').receiveMessageOnPort(port2);
      expect(new Uint8Array(message).every((b) => b === 9)).toBe(true);
    } catch (e) {
      expect(e.name).toBe('DataCloneError');
    } finally {
      port1.close();
    }
    expect([back.buffer.byteLength, back.every((b) => b === 9)]).toEqual([1000, true]);
    const memory = new WebAssembly.Memory({ initial: 1 });
    new Uint8Array(memory.buffer).fill(3);
    const seen = await pool.call('describeBuffer', [new Uint8Array(memory.buffer)], { transfer: [memory.buffer] });
    expect([seen, memory.buffer.byteLength]).toEqual([{ length: 65_536, first: 3, last: 3 }, 65_536]);
  });

  test('two views over one moved buffer arrive over one buffer; a listed buffer the value does not hold is detached all the same', async () => {
    const buffer = new ArrayBuffer(16);
    const a = new Uint8Array(buffer, 0, 8).fill(1);
    const b = new Uint8Array(buffer, 8, 8).fill(2);
    const unused = new ArrayBuffer(4);
    const seen = await pool.call('views', [a, b], { transfer: [buffer, unused] });
    expect([buffer.byteLength, unused.byteLength]).toEqual([0, 0]);
    // An empty buffer moves too, and arrives empty.
    const empty = new Uint8Array(0);
    const back = await pool.call('echo', [[empty, new Uint8Array([1])]], { transfer: [empty.buffer] });
    expect([back[0].byteLength, back[1][0]]).toEqual([0, 1]);
    const none = new Uint8Array(0);
    const moved = await pool.call('moveOnAndKeep', [none], { transfer: [none.buffer] });
    expect([util.types.isUint8Array(moved), moved.byteLength]).toEqual([true, 0]);
    expect(seen).toEqual({ same: true, offsets: [0, 8], a: Array(8).fill(1), b: Array(8).fill(2) });
  });

  test('a moved resizable ArrayBuffer arrives resizable, its views whole, both ways, as structuredClone moves it', async () => {
    // (V8 refused a view over it once it arrived as a fixed buffer, after the sender's was detached.)
    const buffer = new ArrayBuffer(4, { maxByteLength: 16 });
    new Uint8Array(buffer).set([1, 2, 3, 4]);
    const views = [new Uint8Array(buffer), new Uint8Array(buffer, 1, 2)];
    const seen = await pool.call('describeResizable', [views], { transfer: [buffer] });
    expect(buffer.byteLength).toBe(0);
    expect(seen).toEqual([
      { resizable: true, max: 16, bytes: [1, 2, 3, 4] },
      { resizable: true, max: 16, bytes: [2, 3] },
    ]);
    const alone = new ArrayBuffer(2, { maxByteLength: 4 });
    const back = await pool.call('echo', [alone], { transfer: [alone] });
    expect([alone.byteLength, back.resizable, back.maxByteLength, back.byteLength]).toEqual([0, true, 4, 2]);
    const [tracking, fixed] = await pool.exec('moveResizable');
    expect([tracking.buffer === fixed.buffer, tracking.buffer.resizable, [...tracking], [...fixed]]).toEqual([true, true, [7, 7, 7, 7], [7, 7]]);
    tracking.buffer.resize(8);
    expect(tracking.length).toBe(8);
  });

  test('a moved buffer whose call fails, or is aborted, stays detached on the sender, and the pool goes on', async () => {
    const failing = new Uint8Array(1000).fill(5);
    const e = await rejection(pool.call('fail', [failing], { transfer: [failing.buffer] }), Error);
    expect(e.message).toContain('this task fails');
    expect(failing.buffer.byteLength).toBe(0);
    const ac = new AbortController();
    const aborted = new Uint8Array(1000).fill(6);
    const call = pool.call('slow', [200, aborted], { transfer: [aborted.buffer], signal: ac.signal });
    expect(aborted.buffer.byteLength).toBe(0);
    ac.abort();
    expect((await outcome(call)).code).toBe(C.Aborted);
    // An unknown method refuses the call after the params crossed: the sender's buffer is gone too.
    const refused = new Uint8Array(8);
    await rejection(pool.call('noSuchMethod', [refused], { transfer: [refused.buffer] }), RpcError);
    expect(refused.buffer.byteLength).toBe(0);
    expect(await pool.exec('echo', new Map([[1, 2]]))).toEqual(new Map([[1, 2]]));
  });

  test('received moved buffers stay whole after their calls settle and after collections, on both sides', async () => {
    const r = await child(
      `const pool = new Pool({ filename: ${JSON.stringify(VALUES)}, threads: 1 });
       const received = [];
       for (let i = 0; i < 20; i++) received.push(await pool.exec('moveBack', 100_000 + i));
       for (let i = 0; i < 20; i++) {
         const sent = new Uint8Array(50_000).fill(i);
         await pool.call('hold', [sent], { transfer: [sent.buffer] });
       }
       // Garbage in between, and collections on both threads.
       for (let i = 0; i < 50; i++) { new ArrayBuffer(1 << 20); globalThis.gc(); }
       const sums = await pool.exec('collectAndSum');
       globalThis.gc();
       const here = received.map((u8, i) => u8.length === 100_000 + i && u8.every((b) => b === 9));
       // Many received buffers dropped: their memory is freed (no growth of 500 MB).
       const before = process.memoryUsage().rss;
       for (let i = 0; i < 500; i++) { await pool.exec('moveBack', 1 << 20); if (i % 50 === 0) globalThis.gc(); }
       globalThis.gc();
       await new Promise((resolve) => setTimeout(resolve, 50));
       const grownMb = (process.memoryUsage().rss - before) / 2 ** 20;
       await pool.close();
       out({ here, sums, freed: grownMb < 250 });`,
      { args: ['--expose-gc'] },
    );
    expect(r.stderr).toBe('');
    expect(r.result).toEqual({ here: Array(20).fill(true), sums: Array.from({ length: 20 }, (_, i) => 50_000 * i), freed: true });
  }, 60_000);

  test('a received buffer moved on ping-pongs 1,000 times with its content right and memory flat', async () => {
    const r = await child(
      `const pool = new Pool({ filename: ${JSON.stringify(VALUES)}, threads: 1 });
       let u8 = new Uint8Array(1 << 20).map((_, i) => i & 255);
       let right = true;
       let before = 0;
       for (let round = 1; round <= 1000; round++) {
         const sent = u8;
         u8 = await pool.call('bump', [sent], { transfer: [sent.buffer] });
         if (sent.buffer.byteLength !== 0 || u8.length !== 1 << 20) right = false;
         if (u8[0] !== (round & 255) || u8[4097] !== ((4097 + round) & 255)) right = false;
         if (round === 100) { globalThis.gc(); before = process.memoryUsage().rss; }
         if (round % 100 === 0) globalThis.gc();
       }
       const whole = u8.every((b, i) => b === ((i + 1000) & 255));
       globalThis.gc();
       await new Promise((resolve) => setTimeout(resolve, 50));
       // 900 rounds of 1 MB each way: a leak of any side's buffer would grow by 900 MB or more.
       const grownMb = (process.memoryUsage().rss - before) / 2 ** 20;
       await pool.close();
       out({ right, whole, flat: grownMb < 200 });`,
      { args: ['--expose-gc'] },
    );
    expect(r.stderr).toBe('');
    expect(r.result).toEqual({ right: true, whole: true, flat: true });
  }, 120_000);

  test('a received buffer moved on detaches every view on it here; listed twice or once detached it is refused', async () => {
    const back = await pool.exec('moveBack', 5000);
    const second = new Uint8Array(back.buffer, 100, 50);
    const seen = await pool.call('describeBuffer', [back], { transfer: [back.buffer] });
    expect(seen).toEqual({ length: 5000, first: 9, last: 9 });
    expect([back.buffer.byteLength, back.byteLength, second.byteLength]).toEqual([0, 0, 0]);
    await expect(pool.call('echo', [1], { transfer: [back.buffer] })).rejects.toMatchObject({ name: 'DataCloneError' });
    const twice = await pool.exec('moveBack', 64);
    await expect(pool.call('echo', [twice], { transfer: [twice.buffer, twice.buffer] })).rejects.toMatchObject({ name: 'DataCloneError' });
    expect([twice.buffer.byteLength, twice[63]]).toEqual([64, 9]);
    // Two received buffers moved on in one call arrive each whole.
    const a = await pool.exec('moveBack', 3000);
    const b = await pool.exec('moveBack', 4000);
    const both = await pool.call('echo', [[a, b]], { transfer: [a.buffer, b.buffer] });
    expect([both[0].byteLength, both[1].byteLength, both[0].every((x) => x === 9), both[1].every((x) => x === 9)]).toEqual([3000, 4000, true, true]);
  });

  test('a received buffer moved on to a call that fails or is aborted is gone here, and the pool goes on', async () => {
    const failing = await pool.exec('moveBack', 20_000);
    const e = await rejection(pool.call('fail', [failing], { transfer: [failing.buffer] }), Error);
    expect(e.message).toContain('this task fails');
    expect(failing.buffer.byteLength).toBe(0);
    const ac = new AbortController();
    const aborted = await pool.exec('moveBack', 20_000);
    const call = pool.call('slow', [200, aborted], { transfer: [aborted.buffer], signal: ac.signal });
    expect(aborted.buffer.byteLength).toBe(0);
    ac.abort();
    expect((await outcome(call)).code).toBe(C.Aborted);
    const next = await pool.exec('moveBack', 20_000);
    expect(await pool.call('sumLater', [0, next], { transfer: [next.buffer] })).toBe(9 * 20_000);
  });

  test('detached originals collected while the buffers they moved on are in flight leave those buffers whole', async () => {
    const r = await child(
      `const pool = new Pool({ filename: ${JSON.stringify(VALUES)}, threads: 2 });
       const calls = [];
       for (let i = 0; i < 30; i++) {
         let got = await pool.exec('moveBack', 100_000 + i);
         const view = new Uint8Array(got.buffer, 10);
         calls.push(pool.call('sumLater', [30, got], { transfer: [got.buffer] }));
         if (view.byteLength !== 0) calls.push(Promise.resolve('a view stayed attached'));
         got = null;
       }
       for (let i = 0; i < 20; i++) { new ArrayBuffer(1 << 20); globalThis.gc(); await new Promise((resolve) => setImmediate(resolve)); }
       const sums = await Promise.all(calls);
       await pool.close();
       out(sums);`,
      { args: ['--expose-gc'] },
    );
    expect(r.stderr).toBe('');
    expect(r.result).toEqual(Array.from({ length: 30 }, (_, i) => 9 * (100_000 + i)));
  }, 60_000);

  test('what structured clone cannot carry rejects with a DataCloneError naming its place', async () => {
    const cases = [
      [{ handler() {} }, 'params[0].handler is a function'],
      [[1, [Symbol('s')]], 'params[0][1][0] is a symbol'],
      [{ w: new WeakMap() }, 'params[0].w is a WeakMap'],
      [new Map([['k', () => 1]]), 'params[0].get("k") is a function'],
    ];
    for (const [v, where] of cases) {
      const e = await rejection(pool.exec('echo', v), RpcError);
      expect([e.name, e.code, e.message.startsWith(where)]).toEqual(['DataCloneError', C.InvalidParams, true]);
    }
    const r = await rejection(pool.exec('withFunction'), RpcError);
    expect([r.name, r.code, r.message]).toEqual(['DataCloneError', C.InvalidParams, 'result.cb is a function, which structured clone cannot carry']);
    expect(await pool.exec('echo', 5)).toBe(5);
  });

  test('hostile params: a throwing getter rejects with its error, a Proxy crosses as what it stands for, a huge sparse length and __proto__ keys cross as they are', async () => {
    const thrown = new RangeError('getter says no');
    const e = await rejection(pool.exec('echo', { when: new Date(0), get bad() { throw thrown; } }));
    expect(e).toBe(thrown);
    const p = await pool.exec('echo', { d: new Date(0), p: new Proxy({}, {}) });
    expect([util.types.isDate(p.d), p.p]).toEqual([true, {}]);
    const sparse = [];
    sparse.length = 2 ** 32 - 1;
    sparse[5] = new Date(1);
    const back = await pool.exec('echo', sparse);
    expect([back.length, Object.keys(back), back[5].getTime()]).toEqual([2 ** 32 - 1, ['5'], 1]);
    const proto = JSON.parse('{"__proto__": {"polluted": true}, "d": 1}');
    proto.when = new Date(2);
    const got = await pool.exec('echo', proto);
    // Its prototype is an Object.prototype (the process's: jest runs this file in a realm of its own), not the key's value.
    expect([Object.getPrototypeOf(Object.getPrototypeOf(got)), got.polluted, got.__proto__]).toEqual([null, undefined, { polluted: true }]);
    expect(Object.keys(got)).toEqual(['__proto__', 'd', 'when']);
    expect(({}).polluted).toBeUndefined();
  });

  test('a Proxy or an arguments object next to a value only structured clone carries crosses as what it stands for (it was a DataCloneError)', async () => {
    // Each is read once, through its traps: own enumerable string keys, or an array's items.
    const reads = [];
    const logged = new Proxy({ a: 1, list: [2, 3] }, { get(t, k, r) { reads.push(k); return Reflect.get(t, k, r); } });
    const back = await pool.exec('echo', { n: 10n ** 20n, nan: NaN, when: new Date(5), p: logged, items: new Proxy([1, { b: 2 }], {}) });
    expect([back.n, back.nan, back.when.getTime(), back.p, back.items]).toEqual([10n ** 20n, NaN, 5, { a: 1, list: [2, 3] }, [1, { b: 2 }]]);
    expect(reads).toEqual(['a', 'list']);
    // An arguments object crosses as the plain object of its items (as it did value by value).
    const args = (function () {
      return arguments;
    })(1, new Date(3));
    const a = await pool.exec('echo', { bytes: new Uint8Array([1]), args });
    expect([Object.keys(a.args), a.args[0], a.args[1].getTime(), Array.isArray(a.args)]).toEqual([['0', '1'], 1, 3, false]);
    const whole = await pool.exec('echo', args);
    expect([whole[0], whole[1].getTime()]).toEqual([1, 3]);
    // A cycle through a Proxy stays a cycle; an object reached twice stays one object.
    const target = { d: new Date(0) };
    const cyclic = new Proxy(target, {});
    target.self = cyclic;
    const shared = { s: 1 };
    const c = await pool.exec('echo', { cyclic, twice: [shared, new Proxy({ shared }, {})] });
    expect([c.cyclic.self === c.cyclic, c.twice[1].shared === c.twice[0], c.cyclic.d.getTime()]).toEqual([true, true, 0]);
    // A Proxy of a Map stands for its own enumerable keys (none): postMessage has no Map to read.
    const m = await pool.exec('echo', { n: 1n, m: new Proxy(new Map([[1, 2]]), {}) });
    expect(m.m).toEqual({});
    // A result holding a Proxy crosses back the same way.
    const r = await pool.exec('proxyResult');
    expect([r.d.getTime(), r.p]).toEqual([1, { a: [1, 2] }]);
    // What the copy meets that structured clone cannot carry is still named in the caller's terms.
    const f = await rejection(pool.exec('echo', { n: 1n, p: new Proxy({ inner: { cb() {} } }, {}) }), RpcError);
    expect([f.name, f.code, f.message]).toEqual(['DataCloneError', C.InvalidParams, 'params[0].p.inner.cb is a function, which structured clone cannot carry']);
    // What structured clone never reads (a Date's or an Error's own fields) is not the culprit.
    const odd = { d: Object.assign(new Date(0), { p: new Proxy({}, {}) }), e: Object.assign(new Error('e'), { p: new Proxy({}, {}) }), cb() {} };
    const g = await rejection(pool.exec('echo', odd), RpcError);
    expect([g.name, g.message]).toEqual(['DataCloneError', 'params[0].cb is a function, which structured clone cannot carry']);
  });

  test('hostile Proxies next to a cloned value: a trap that throws rejects with its error, a revoked Proxy with its TypeError, a huge length is refused before it is read', async () => {
    const trapError = new Error('the get trap says no');
    const throwing = new Proxy({ x: 1 }, { get() { throw trapError; } });
    expect(await rejection(pool.exec('echo', { d: new Date(0), throwing }))).toBe(trapError);
    const keysError = new Error('the ownKeys trap says no');
    expect(await rejection(pool.exec('echo', { d: new Date(0), p: new Proxy({}, { ownKeys() { throw keysError; } }) }))).toBe(keysError);
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const revoked = await rejection(pool.exec('echo', { n: 1n, p: revocable.proxy }));
    expect([revoked instanceof RpcError, revoked.name, /revoked/.test(revoked.message)]).toEqual([false, 'TypeError', true]);
    let itemsRead = 0;
    const huge = new Proxy([], {
      get(t, k) {
        if (k === 'length') return 2 ** 40;
        itemsRead++;
        return 0;
      },
    });
    const big = await rejection(pool.exec('echo', { n: 1n, huge }), RpcError);
    expect([big.name, big.code, big.data.path, itemsRead]).toEqual(['DataCloneError', C.InvalidParams, 'params[0].huge', 0]);
    expect(big.message).toMatch(/^params\[0\]\.huge is an array of 1099511627776 elements: more than the \d+ values/);
    // A length that is no array's: not a number is refused; negative or NaN is 0, a fraction is cut.
    const withLength = (length) => new Proxy([7, 8, 9], { get: (t, k) => (k === 'length' ? length : t[k]) });
    const odd = await rejection(pool.exec('echo', { n: 1n, a: withLength('2') }), RpcError);
    expect([odd.name, odd.message]).toEqual(['DataCloneError', 'params[0].a is a Proxy of an array whose length is not a number']);
    const lengths = await pool.exec('echo', { n: 1n, a: [withLength(-1), withLength(NaN), withLength(2.5)] });
    expect(lengths.a).toEqual([[], [], [7, 8]]);
    // A Proxy whose every read makes a new Proxy nests without end: refused, never a hang or a crash.
    const endless = () => new Proxy({}, { ownKeys: () => ['next'], getOwnPropertyDescriptor: () => ({ value: 0, enumerable: true, configurable: true }), get: () => endless() });
    const deep = await rejection(pool.exec('echo', { n: 1n, endless: endless() }), RpcError);
    expect([deep.name, deep.code]).toEqual(['DataCloneError', C.InvalidParams]);
    expect(await pool.exec('echo', 5)).toBe(5);
  });

  test('plain params and results keep their path: undefined items stay undefined, numbers and strings as they were', async () => {
    expect(await pool.exec('echo', [1, undefined, 'x'])).toEqual([1, undefined, 'x']);
    expect(await pool.exec('args', 1, 'two', { three: 3 })).toEqual([1, 'two', { three: 3 }]);
  });

  test('a task-file pool with native threads clones for its workers and keeps native commands plain', async () => {
    const mixed = new Pool({ filename: task('values-beside-native.js'), threads: 1, nativeThreads: 1 });
    try {
      const [d] = await mixed.exec('args', { at: new Date(3) });
      expect(util.types.isDate(d.at) && d.at.getTime()).toBe(3);
      const e = await rejection(mixed.exec('square_sum', new Date(0)), RpcError);
      expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringContaining('params[0] is a Date')]);
    } finally {
      await mixed.close();
    }
  });

  test('native commands keep refusing what JSON cannot carry', async () => {
    const native = new Pool({ threads: 1 });
    try {
      const e = await outcome(native.exec('echo', new Date(0)));
      expect([e.code, e.message]).toEqual([C.InvalidParams, expect.stringContaining('params[0] is a Date')]);
    } finally {
      await native.close();
    }
  });
});
