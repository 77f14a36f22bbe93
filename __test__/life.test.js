'use strict';
// The `life` command and `happycoin` with `into`: native commands on SharedArrayBuffer views.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Pool, RpcError } = require('..');
const { lifeStep, randomGrid } = require('./workers/life-grid.js');
const { rejection } = require('./helpers/rejection.js');

const INVALID_PARAMS = RpcError.codes.InvalidParams;
jest.setTimeout(90_000);

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 4 });
});
afterAll(() => pool.close());

function grid(n) {
  const sab = new SharedArrayBuffer(2 * n * n);
  return { cells: new Uint8Array(sab, 0, n * n), next: new Uint8Array(sab, n * n, n * n) };
}

describe('life', () => {
  test('bands across the pool give exactly the single-threaded JS result for 50 generations of a 1000×1000 grid', async () => {
    const n = 1000;
    let { cells, next } = grid(n);
    cells.set(randomGrid(n, 2024));
    let reference = Uint8Array.from(cells);
    let referenceNext = new Uint8Array(n * n);
    // Uneven bands, in a different order every generation.
    const cuts = [[0, 1], [1, 137], [137, 500], [500, 501], [501, 777], [777, 999], [999, 1000]];
    for (let generation = 1; generation <= 50; generation++) {
      const order = generation % 2 ? cuts : [...cuts].reverse();
      const done = await Promise.all(order.map(([rowStart, rowEnd]) => pool.exec('life', { cells, next, size: n, rowStart, rowEnd })));
      expect(done).toEqual(order.map(([a, b]) => b - a));
      lifeStep(reference, referenceNext, n);
      if (Buffer.compare(next, referenceNext) !== 0) {
        const at = next.findIndex((c, i) => c !== referenceNext[i]);
        throw new Error(`generation ${generation}: cell (${at % n}, ${Math.floor(at / n)}) is ${next[at]}, expected ${referenceNext[at]}`);
      }
      [cells, next] = [next, cells];
      [reference, referenceNext] = [referenceNext, reference];
    }
    const alive = cells.reduce((s, c) => s + c, 0);
    expect(alive).toBeGreaterThan(1000); // the grid did not simply die out
  });

  test('a band of zero rows does nothing and answers 0', async () => {
    const { cells, next } = grid(8);
    next.fill(7);
    expect(await pool.exec('life', { cells, next, size: 8, rowStart: 3, rowEnd: 3 })).toBe(0);
    expect(next.every((c) => c === 7)).toBe(true);
  });

  test('bad params are InvalidParams with a reason, never a crash or a silent answer', async () => {
    const n = 4;
    const { cells, next } = grid(n);
    const ok = { cells, next, size: n, rowStart: 0, rowEnd: n };
    const sab = new SharedArrayBuffer(64);
    const cases = [
      [{ ...ok, cells: new Uint8Array(16) }, /cells must be a view over a SharedArrayBuffer/],
      [{ ...ok, next: new Int8Array(sab, 0, 16) }, /next must be a Uint8Array over a SharedArrayBuffer, got Int8Array/],
      [{ ...ok, next: new Int16Array(16) }, /Int16Array over an ordinary ArrayBuffer/],
      [{ ...ok, cells: new Uint8Array(sab, 0, 15) }, /cells has 15 cells, expected size² = 16/],
      [{ ...ok, next: cells }, /distinct, non-overlapping/],
      [{ ...ok, next: new Uint8Array(cells.buffer, 8, 16) }, /distinct, non-overlapping/],
      [{ ...ok, size: 4.5 }, /size must be a whole number/],
      [{ ...ok, size: '4' }, /size must be a number/],
      [{ ...ok, rowStart: -1 }, /rowStart must be between 0 and 4/],
      [{ ...ok, rowEnd: 5 }, /rowEnd must be between 0 and 4/],
      [{ ...ok, rowStart: 3, rowEnd: 2 }, /rowEnd must be between 3 and 4/],
      [{ ...ok, rowEnd: NaN }, /rowEnd must be a whole number/],
      [{ cells, next, size: n, rowStart: 0 }, /rowEnd is required/],
      [{ ...ok, generations: 2 }, /unknown param "generations"/],
    ];
    for (const [params, message] of cases) {
      const e = await rejection(pool.exec('life', params));
      expect(e).toBeInstanceOf(RpcError);
      expect(e.code).toBe(INVALID_PARAMS);
      expect(e.message).toMatch(message);
    }
    const detached = new Uint8Array(16);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const e = await rejection(pool.exec('life', { ...ok, cells: detached }));
    expect(e.code).toBe(INVALID_PARAMS);
    expect((await rejection(pool.exec('life'))).code).toBe(INVALID_PARAMS);
  });

  test('20 rounds of 4 workers terminated with life jobs in flight: no crash, no corruption in the survivors', async () => {
    const script = path.join(__dirname, 'workers', 'life-worker.js');
    let generationsChecked = 0;
    for (let round = 0; round < 20; round++) {
      const workers = [0, 1, 2, 3].map((i) => {
        const w = new Worker(script, { workerData: { n: 120, seed: round * 4 + i + 1, privatePool: i === 0 } });
        const state = { w, generation: 0, mismatches: 0, error: null, exited: new Promise((r) => w.once('exit', r)) };
        w.on('message', (m) => {
          state.generation = m.generation;
          state.mismatches += m.mismatches;
        });
        w.on('error', (e) => (state.error = e));
        return state;
      });
      const until = async (ok) => {
        while (!ok()) await new Promise((r) => setTimeout(r, 2));
      };
      await until(() => workers.every((s) => s.generation >= 1 || s.error));
      // Two go now, mid-generation; the other two must keep computing correctly.
      const doomed = round % 2 ? [0, 2] : [1, 3];
      await Promise.all(doomed.map((i) => workers[i].w.terminate()));
      const survivors = workers.filter((_, i) => !doomed.includes(i));
      const mark = survivors.map((s) => s.generation);
      await until(() => survivors.every((s, k) => s.generation >= mark[k] + 3 || s.error));
      await Promise.all(survivors.map((s) => s.w.terminate()));
      await Promise.all(workers.map((s) => s.exited));
      for (const s of workers) {
        expect(s.error).toBeNull();
        expect(s.mismatches).toBe(0);
        generationsChecked += s.generation;
      }
    }
    expect(generationsChecked).toBeGreaterThanOrEqual(20 * 10);
    // The pool in this thread still works after all that.
    const { cells, next } = grid(3);
    expect(await pool.exec('life', { cells, next, size: 3, rowStart: 0, rowEnd: 3 })).toBe(3);
  });
});

describe('happycoin with into', () => {
  test('a BigUint64Array over a SharedArrayBuffer receives the coins; the result says how many', async () => {
    const attempts = 2_000_000;
    const plain = await pool.exec('happycoin', { attempts, seed: 42 });
    expect(plain.count).toBeGreaterThan(0);
    const into = new BigUint64Array(new SharedArrayBuffer(8 * 64)).fill(7n);
    const result = await pool.exec('happycoin', { attempts, seed: 42, into });
    expect(result).toEqual({ count: plain.count });
    expect(Array.from(into.subarray(0, result.count), String)).toEqual(plain.coins);
    expect(into.subarray(result.count).every((c) => c === 7n)).toBe(true);
    for (const c of into.subarray(0, result.count)) expect(c % 10000n).toBe(0n);
  });

  test('too small a buffer is InvalidParams, not a truncated answer; so is the wrong kind of array', async () => {
    const { count } = await pool.exec('happycoin', { attempts: 2_000_000, seed: 42 });
    const small = new BigUint64Array(new SharedArrayBuffer(8 * (count - 1))).fill(5n);
    const e = await rejection(pool.exec('happycoin', { attempts: 2_000_000, seed: 42, into: small }));
    expect(e.code).toBe(INVALID_PARAMS);
    expect(e.message).toMatch(`into holds ${count - 1} coins but ${count} were found`);
    expect(small.every((c) => c === 5n)).toBe(true);
    const wrongKind = await rejection(pool.exec('happycoin', { attempts: 10, into: new Uint32Array(new SharedArrayBuffer(8)) }));
    expect(wrongKind.code).toBe(INVALID_PARAMS);
    expect(wrongKind.message).toMatch(/into must be a BigUint64Array over a SharedArrayBuffer, got Uint32Array/);
    const notShared = await rejection(pool.exec('happycoin', { attempts: 10, into: new BigUint64Array(4) }));
    expect(notShared.code).toBe(INVALID_PARAMS);
    expect(notShared.message).toMatch(/BigUint64Array over an ordinary ArrayBuffer/);
  });
});
