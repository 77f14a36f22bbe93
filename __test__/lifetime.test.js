'use strict';
// Process and thread lifetime: a pool never keeps a process alive, Pool.shared() across
// worker_threads, and workers terminated with calls in flight. (Task-file pools, lib/workers.js,
// are tested in file-pool.test.js.)
const path = require('node:path');
const { execFile } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Pool } = require('..');

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
    // A TypeError, as the README says, and as a bad option is.
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
