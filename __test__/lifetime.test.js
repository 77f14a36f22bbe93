'use strict';
// Process and thread lifetime: a pool never keeps a process alive, Pool.shared() across
// worker_threads, and workers terminated with calls in flight. (Task-file pools, lib/workers.js,
// are tested in file-pool.test.js.)
const path = require('node:path');
const { execFile } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Pool, RpcError } = require('..');
const { child, clean } = require('./helpers/child.js');

const fixture = (name) => path.join(__dirname, 'fixtures', name);

/** Runs `file` in a node of its own; a process still running after 20 s (a hang guard) is
 *  killed, and its code is then the signal's name. */
function run(file) {
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { timeout: 20000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr });
    });
  });
}

function once(worker, event) {
  return new Promise((resolve, reject) => {
    worker.once(event, resolve);
    if (event !== 'error') worker.once('error', reject);
  });
}

const C = RpcError.codes;

describe('process lifetime', () => {
  test('a script that awaits one call and never closes its pool exits promptly', async () => {
    const r = await run(fixture('exit-without-close.js'));
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('done 50');
    expect(r.code).toBe(0); // it exited on its own, not killed by the hang guard
  });

  test('the shared pool used from main and a worker does not keep the process alive', async () => {
    const r = await run(fixture('exit-shared.js'));
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('worker main');
    expect(r.code).toBe(0);
  });
});

describe('worker_threads', () => {
  test('Pool.shared() from the main thread and 4 workers at once: every result is right', async () => {
    const pool = Pool.shared();
    const calls = 5000;
    const workers = [0, 1, 2, 3].map((k) => new Worker(fixture('shared-worker.js'), { workerData: { calls, base: k * calls } }));
    const mainSum = Promise.all(Array.from({ length: calls }, (_, i) => pool.exec('echo', 4 * calls + i))).then((rs) => rs.reduce((a, b) => a + b, 0));
    const reports = await Promise.all(workers.map((w) => once(w, 'message')));
    await Promise.all(workers.map((w) => w.terminate()));
    const expected = (k) => k * calls * calls + (calls * (calls - 1)) / 2;
    reports.forEach((r, k) => {
      expect(r.sum).toBe(expected(k));
      expect(r.threads).toBe(pool.threads); // one pool for the whole process
    });
    expect(await mainSum).toBe(expected(4));
  });

  test('Pool.shared() refuses different options once it exists', () => {
    const pool = Pool.shared();
    expect(Pool.shared()).toBe(pool);
    expect(() => Pool.shared({ threads: pool.threads + 1 })).toThrow(/already exists/);
    // A TypeError, as docs/api.md says, and as a bad option is.
    expect(() => Pool.shared({ threads: pool.threads + 1 })).toThrow(TypeError);
    expect(() => Pool.shared({ strategy: pool.options.strategy === 'random' ? 'roundrobin' : 'random' })).toThrow(TypeError);
    expect(Pool.shared({ threads: pool.threads, strategy: pool.options.strategy })).toBe(pool);
  });

  test('20 rounds of worker.terminate() with 100 calls in flight never crash the process', async () => {
    const pool = Pool.shared();
    for (let round = 0; round < 20; round++) {
      const workers = [0, 1].map(() => new Worker(fixture('busy-worker.js'), { workerData: { inflight: 100 } }));
      await Promise.all(workers.map((w) => once(w, 'message')));
      await new Promise((r) => setTimeout(r, 5 + (round % 4) * 10));
      await Promise.all(workers.map((w) => w.terminate()));
    }
    // The pool still serves, and the dead workers' calls drain away (skipped, never run).
    expect(await pool.exec('echo', 'alive')).toBe('alive');
    const deadline = Date.now() + 20_000; // a hang guard
    let s = pool.stats();
    while (s.queued + s.running > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
      s = pool.stats();
    }
    expect(s.queued + s.running).toBe(0);
  }, 60000);
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §12: Pool.shared() after close()', () => {
  test('returns a working handle again, and different options are a TypeError', async () => {
    const r = await child(`
      const a = Pool.shared({ threads: 2 });
      await a.exec('echo', 1);
      await a.close();
      const b = Pool.shared();
      const works = await b.exec('echo', 2);
      let mismatch;
      try { Pool.shared({ threads: 3 }); } catch (e) { mismatch = e.constructor.name; }
      await b.close();
      out({ different: a !== b, works, mismatch, closedRejects: await a.exec('echo', 3).catch((e) => e.code) });
    `);
    expect(clean(r)).toEqual({ different: true, works: 2, mismatch: 'TypeError', closedRejects: C.PoolClosed });
  });
});

describe('issue 13 §13: async waits with a timeout keep the process alive until they time out', () => {
  test.each([
    ['RingBuffer.readExactlyAsync', `const got = await new corepool.RingBuffer(8).readExactlyAsync(4, 200); out(got.length);`, 0],
    ['RingBuffer.writeAllAsync', `const r = new corepool.RingBuffer(2); out(await r.writeAllAsync(new Uint8Array(4), 200));`, 2],
    ['Mutex.lockAsync', `const m = new corepool.Mutex(new Int32Array(new SharedArrayBuffer(4))); m.tryLock(); out(await m.lockAsync(200));`, false],
    ['Semaphore.acquireAsync', `const s = new corepool.Semaphore(new Int32Array(new SharedArrayBuffer(4)), 0, 0); out(await s.acquireAsync(200));`, false],
  ])('%s', async (_, body, expected) => {
    expect(clean(await child(body))).toBe(expected);
  });
});

describe('issue 13, review of the fixes: what a polluted prototype, a Proxy or a getter can still do', () => {
  test.each(['close', 'destroy'])('a private pool that serves methods lets the process exit after %s()', async (how) => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      pool.serve({ f(x) { return x; } });
      const v = await pool.exec('f', 1);
      await pool.${how}();
      out(v);
    `);
    expect(clean(r)).toBe(1);
  });
});
