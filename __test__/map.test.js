'use strict';
// Pool#map: one call per input, results in input order, native commands in chunks.
const path = require('node:path');
const { Pool, RpcError } = require('..');
const { outcome } = require('./helpers/rejection.js');
const { sleepEnd, first, settles } = require('./helpers/order.js');

const C = RpcError.codes;

describe('map over a native command', () => {
  const pool = new Pool({ threads: 2 });
  afterAll(() => pool.close());

  test('100,000 inputs: every result in input order', async () => {
    const inputs = Array.from({ length: 100_000 }, (_, i) => ({ i, s: `v${i}` }));
    const out = await pool.map('echo', inputs);
    expect(out.length).toBe(inputs.length);
    out.forEach((v, i) => expect(v).toEqual(inputs[i]));
  });

  test('onProgress after each input: done counts 1..n, with the input and its value or error', async () => {
    const seen = [];
    const out = await pool.map('fibonacci', [10, 20, -1, 30], {
      settle: 'all',
      onProgress: (done, total, info) => seen.push([done, total, info.index, info.input, 'value' in info, 'error' in info]),
    });
    expect(seen.map((s) => s[0])).toEqual([1, 2, 3, 4]);
    expect(seen.every((s) => s[1] === 4)).toBe(true);
    expect(seen.map((s) => s[2]).sort()).toEqual([0, 1, 2, 3]);
    const bad = seen.find((s) => s[2] === 2);
    expect(bad.slice(3)).toEqual([-1, false, true]);
    expect(out[0]).toEqual({ status: 'fulfilled', value: '55' });
    expect(out[2].status).toBe('rejected');
    expect(out[2].reason).toBeInstanceOf(RpcError);
    expect(out[2].reason.code).toBe(C.InvalidParams);
  });

  test('by default the first error rejects the map, and the inputs still running are cancelled', async () => {
    const sleepsEnd = sleepEnd(2000);
    const got = await outcome(pool.map('sleep', [2000, 'x', 2000, 2000], { concurrency: 4 }));
    expect(got.code).toBe(C.InvalidParams);
    // The sleeps were cancelled, not run to the end: the pool is drained before they could have ended.
    expect(await first(pool.drained().then(() => 'drained'), sleepsEnd)).toBe('drained');
  });

  test('an input that cannot cross fails alone; the others of its chunk still run', async () => {
    const inputs = Array.from({ length: 50 }, (_, i) => (i === 17 ? () => 1 : i));
    const out = await pool.map('echo', inputs, { settle: 'all' });
    out.forEach((r, i) => {
      if (i === 17) expect(r.reason.code).toBe(C.InvalidParams);
      else expect(r).toEqual({ status: 'fulfilled', value: i });
    });
  });

  test('a per-input timeout, a signal, a closed pool', async () => {
    const timed = await pool.map('sleep', [1, 300, 1], { settle: 'all', timeout: 50 });
    expect(timed.map((r) => r.value ?? r.reason.code)).toEqual([1, C.Timeout, 1]);
    const ac = new AbortController();
    const aborted = pool.map('sleep', [500, 500, 500], { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    expect((await outcome(aborted)).code).toBe(C.Aborted);
    expect((await outcome(pool.map('echo', [1], { signal: AbortSignal.abort() }))).code).toBe(C.Aborted);
    const closed = new Pool({ threads: 1 });
    await closed.close();
    expect((await outcome(closed.map('echo', [1, 2]))).code).toBe(C.PoolClosed);
  });

  test('a throwing onProgress rejects the map with what it threw; inputs of any iterable', async () => {
    const boom = new Error('progress');
    const got = await pool.map('echo', [1, 2, 3], { onProgress: () => { throw boom; } }).catch((e) => e);
    expect(got).toBe(boom);
    expect(await pool.map('echo', new Set([1, 2]))).toEqual([1, 2]);
    expect(await pool.map('echo', (function* () { yield 'a'; yield 'b'; })())).toEqual(['a', 'b']);
    expect(await pool.map('echo', [])).toEqual([]);
  });

  test('the inputs are read once: an array that shrinks or grows during the map changes nothing', async () => {
    // The map used to read inputs.length live: shrunk under it, it never settled.
    const shrinks = [1, 2, 3, 4, 5, 6];
    const seen = [];
    const out = await settles(
      pool.map('echo', shrinks, {
        concurrency: 1,
        onProgress: (done, total, info) => {
          seen.push([done, total, info.input]);
          shrinks.pop();
        },
      }),
    );
    expect(out).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6].map((v) => [v, 6, v]));
    const grows = [1, 2, 3];
    expect(await settles(pool.map('echo', grows, { concurrency: 1, onProgress: () => grows.push(0) }))).toEqual([1, 2, 3]);
    const emptied = ['a', 'b', 'c'];
    expect(await settles(pool.map('echo', emptied, { concurrency: 1, onProgress: () => (emptied.length = 0) }))).toEqual(['a', 'b', 'c']);
  });

  test('inputs whose reading throws (a getter, a Proxy, an iterable midway) reject the map with InvalidRequest naming it', async () => {
    const getter = [1, 2];
    Object.defineProperty(getter, 1, {
      get() {
        throw new Error('bad getter');
      },
    });
    const a = await outcome(pool.map('echo', getter));
    expect([a.code, a.message]).toEqual([C.InvalidRequest, expect.stringMatching(/bad getter/)]);
    const proxy = new Proxy([1, 2, 3], {
      get(target, key) {
        if (key === 'length') throw new Error('no length');
        return Reflect.get(target, key);
      },
    });
    expect(await outcome(pool.map('echo', proxy))).toMatchObject({ code: C.InvalidRequest, message: expect.stringMatching(/no length/) });
    function* midway() {
      yield 1;
      throw new Error('midway');
    }
    expect(await outcome(pool.map('echo', midway()))).toMatchObject({ code: C.InvalidRequest, message: expect.stringMatching(/midway/) });
  });

  test('bad arguments reject with InvalidRequest, never throw', async () => {
    expect((await outcome(pool.map(42, [1]))).code).toBe(C.InvalidRequest);
    expect((await outcome(pool.map('echo', 42))).code).toBe(C.InvalidRequest);
    expect((await outcome(pool.map('echo', [1], { settle: 'some' }))).code).toBe(C.InvalidRequest);
    expect((await outcome(pool.map('echo', [1], { timout: 5 }))).code).toBe(C.InvalidRequest);
    expect((await outcome(pool.map('echo', [1], { concurrency: 0 }))).code).toBe(C.InvalidRequest);
    expect((await outcome(pool.map('nope', [1, 2]))).code).toBe(C.MethodNotFound);
  });
});

describe('map and close()', () => {
  test('a map is in flight from its start to its end: drained() and close() wait for all of it', async () => {
    // Between one input settling and the next being sent, the map had nothing in flight:
    // drained() resolved (and 'drain' fired) in the middle of it.
    const pool = new Pool({ threads: 1 });
    let mapped = false;
    const map = pool.map('echo', Array.from({ length: 50 }, (_, i) => i), { concurrency: 1 }).then(() => (mapped = true));
    await settles(pool.drained());
    expect(mapped).toBe(true);
    await map;
    await pool.close();
  });

  // Found by __test__/file-pool-model.test.js: a map sends its inputs as room frees up
  // (concurrency, a full queue), and the ones it sent after close() were refused with
  // PoolClosed, which rejected the whole map. close() runs every call accepted before it.
  test('a map accepted before close() finishes; one started after it, or cut by destroy(), does not', async () => {
    const pool = new Pool({ threads: 1 });
    const mapped = pool.map('echo', Array.from({ length: 100 }, (_, i) => i), { concurrency: 1 });
    const closed = pool.close();
    const late = pool.map('echo', [1, 2, 3]).catch((e) => e.code);
    expect(await settles(mapped)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    await settles(closed);
    expect(await late).toBe(C.PoolClosed);
    expect(await pool.exec('echo', 1).catch((e) => e.code)).toBe(C.PoolClosed);
    // destroy() ends an accepted map: its later inputs are refused.
    const other = new Pool({ threads: 1 });
    const cut = other.map('sleep', Array.from({ length: 20 }, () => 1), { concurrency: 1 }).catch((e) => e.code);
    await other.destroy();
    expect(await cut).toBe(C.PoolClosed);
  });

  test('a map over a task file accepted before close() finishes', async () => {
    const pool = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), threads: 1 });
    const inputs = Array.from({ length: 50 }, (_, i) => ({ a: i, b: 1 }));
    const mapped = pool.map('add', inputs, { concurrency: 2 });
    const closed = pool.close();
    expect(await settles(mapped)).toEqual(inputs.map(({ a }) => a + 1));
    await settles(closed);
  });
});

describe('map over a JavaScript method', () => {
  test('a file pool: ordered results, at most `concurrency` inputs in flight', async () => {
    const pool = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), threads: 2 });
    const inputs = Array.from({ length: 300 }, (_, i) => ({ a: i, b: 1 }));
    expect(await pool.map('add', inputs)).toEqual(inputs.map(({ a }) => a + 1));
    let inflight = 0;
    let most = 0;
    const out = await pool.map('slow', Array.from({ length: 40 }, () => 2), {
      concurrency: 3,
      onProgress: () => {
        inflight--;
      },
    });
    expect(out).toEqual(Array(40).fill(2));
    // Checked from stats while another map runs: never more than 3 of its calls at once.
    const watched = pool.map('slow', Array.from({ length: 30 }, () => 5), { concurrency: 3 });
    const timer = setInterval(() => {
      const st = pool.stats();
      most = Math.max(most, st.queued + st.running);
    }, 1);
    await watched;
    clearInterval(timer);
    expect(most).toBeLessThanOrEqual(3);
    expect(inflight).toBe(-40);
    await pool.close();
  });
});

describe('map and a bounded queue (maxQueue, onFull: reject)', () => {
  const tasks = path.join(__dirname, 'fixtures', 'tasks', 'basic.js');

  test('a map never floods the queue it is given: every input runs once, none gets QueueFull', async () => {
    const counters = new Int32Array(new SharedArrayBuffer(4 * 60));
    const files = new Pool({ filename: tasks, threads: 2, maxQueue: 2 });
    const served = await files.map('countOne', Array.from({ length: 60 }, (_, i) => [counters, i, 1]), { settle: 'all' });
    expect(served.filter((r) => r.status === 'rejected').map((r) => r.reason.code)).toEqual([]);
    expect(served.map((r) => r.value)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect([...counters]).toEqual(Array(60).fill(1)); // each ran once
    await files.close();

    const native = new Pool({ threads: 2, maxQueue: 0 });
    const slept = await native.map('sleep', Array.from({ length: 40 }, () => 1), { settle: 'all' });
    expect(slept.map((r) => r.status)).toEqual(Array(40).fill('fulfilled'));
    await native.close();
  });

  test('when other callers hold the whole queue, the map’s inputs get QueueFull as their calls would', async () => {
    const pool = new Pool({ threads: 1, maxQueue: 1 });
    const running = pool.exec('sleep', 300);
    const queued = pool.exec('sleep', 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const r = await outcome(pool.map('echo', [1, 2, 3]));
    expect(r.code).toBe(C.QueueFull);
    await Promise.all([running, queued]);
    expect(await pool.map('echo', [1, 2, 3])).toEqual([1, 2, 3]);
    await pool.close();
  });
});
