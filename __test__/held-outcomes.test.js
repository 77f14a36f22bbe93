'use strict';
// Outcomes of long calls delivered while calls wait in the pool's queue may wait a little for
// the calling thread, which then hears of several at once (src/bindings/channel/mod.rs,
// "Outcomes behind a backlog"; a long call: src/pool/origin.rs, LONG_CALL). These tests hold
// that nothing is stranded there: an outcome held back reaches its caller although no other
// outcome comes after it to wake the calling thread. Were the put-off
// wake lost, the awaited call would never settle and the test would fail on its timeout.
const path = require('node:path');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

describe('outcomes behind a backlog', () => {
  // 6 queued: a backlog (held up to 1 ms); 70: a deep one (held up to 4 ms).
  test.each([6, 70])('a task-file pool: the last outcome before the pool stalls reaches its caller while %i calls still wait', async (n) => {
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const pool = new Pool({ filename: task('gate.js'), threads: 1, workerData: { gate } });
    try {
      // A long call first: its worker then counts its calls as long ones.
      expect(await pool.exec('slow', 'warm')).toBe('warm');
      // One worker, one call at a time, in order: `slow` runs first with the n gated calls
      // queued behind it, then the first gated call blocks the worker.
      const first = pool.exec('slow', 'first');
      const gated = Array.from({ length: n }, (_, i) => pool.exec('gate', i));
      expect(await first).toBe('first');
      // Nothing else settled meanwhile: the gated calls are still waiting.
      expect(pool.stats().queued + pool.stats().running).toBe(n);
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
      expect(await Promise.all(gated)).toEqual(Array.from({ length: n }, (_, i) => i));
    } finally {
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
      await pool.close();
    }
  }, 30_000);

  test('a native pool: an outcome delivered with calls queued behind a long one reaches its caller; aborting the rest settles them', async () => {
    const pool = new Pool({ threads: 1 });
    try {
      // A long call (2 ms) with six calls queued behind it.
      const first = pool.exec('sleep', 2);
      const controller = new AbortController();
      const held = Array.from({ length: 6 }, () => pool.call('sleep', [600_000], { signal: controller.signal }));
      expect(await first).toBe(2);
      expect(pool.stats().queued + pool.stats().running).toBe(6);
      controller.abort();
      for (const r of await Promise.allSettled(held)) {
        expect(r.status).toBe('rejected');
        expect(r.reason.code).toBe(C.Aborted);
      }
    } finally {
      await pool.close();
    }
  }, 30_000);

  test('two pools of one thread: outcomes held behind a deep backlog in one and a shallow one in the other all reach their callers', async () => {
    // Pool a: a long call with 70 queued behind it (its outcome's wake is put off for the
    // longer hold); pool b: one with 6 queued (the shorter hold: it must not wait for a's).
    const a = new Pool({ threads: 1 });
    const b = new Pool({ threads: 1 });
    const controller = new AbortController();
    try {
      const firstA = a.exec('sleep', 2);
      const heldA = Array.from({ length: 70 }, () => a.call('sleep', [600_000], { signal: controller.signal }));
      const firstB = b.exec('sleep', 3);
      const heldB = Array.from({ length: 6 }, () => b.call('sleep', [600_000], { signal: controller.signal }));
      expect(await Promise.all([firstA, firstB])).toEqual([2, 3]);
      expect(a.stats().queued + a.stats().running).toBe(70);
      expect(b.stats().queued + b.stats().running).toBe(6);
      controller.abort();
      for (const r of await Promise.allSettled([...heldA, ...heldB])) {
        expect(r.status).toBe('rejected');
        expect(r.reason.code).toBe(C.Aborted);
      }
    } finally {
      controller.abort();
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  test('a burst of 5,000 outcomes settles every call exactly once', async () => {
    const pool = new Pool({ threads: 2 });
    try {
      const n = 5000;
      const order = [];
      const calls = Array.from({ length: n }, (_, i) => pool.exec('echo', i).then((v) => order.push(v)));
      await Promise.all(calls);
      expect(order).toHaveLength(n);
      expect(new Set(order).size).toBe(n);
      expect(pool.stats().queued + pool.stats().running).toBe(0);
    } finally {
      await pool.close();
    }
  }, 60_000);
});
