'use strict';
// The shared-memory toolkit: Mutex, Semaphore, RingBuffer, AsyncLock, across worker_threads.
const path = require('node:path');
const { Mutex, Semaphore, RingBuffer, AsyncLock, RpcError } = require('..');
const { SharedRingBuffer } = require('../bench/peers/book-ring.js');
const { child, clean } = require('./helpers/child.js');
const { runTask } = require('./helpers/worker-task.js');

const WORKER = path.join(__dirname, 'workers', 'shm-worker.js');
const INVALID_PARAMS = RpcError.codes.InvalidParams;

jest.setTimeout(60_000);

/** Runs `task` in a worker of WORKER (helpers/worker-task.js). */
const run = (task, data) => runTask(WORKER, task, data);

function expectInvalid(fn, pattern) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(RpcError);
  expect(error.code).toBe(INVALID_PARAMS);
  expect(error.message).toMatch(pattern);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('Mutex', () => {
  test('refuses views that are not an Int32Array over a SharedArrayBuffer, and bad indices', () => {
    const sab = new SharedArrayBuffer(16);
    expectInvalid(() => new Mutex(new Int32Array(4)), /over a SharedArrayBuffer, not an ArrayBuffer/);
    expectInvalid(() => new Mutex(new Uint32Array(sab)), /expected an Int32Array .* got Uint32Array/);
    expectInvalid(() => new Mutex(sab), /expected an Int32Array/);
    expectInvalid(() => new Mutex(new Int32Array(sab), 4), /index 4 is out of range for an Int32Array of length 4/);
    expectInvalid(() => new Mutex(new Int32Array(sab), 1.5), /index 1.5 is out of range/);
    expectInvalid(() => new Mutex(new Int32Array(sab)).lock(-1), /timeoutMs must be a number ≥ 0/);
  });

  test('lock(timeoutMs) returns false on timeout; unlock() of an unlocked mutex throws', async () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    const m = new Mutex(words, 1);
    expect(() => m.unlock()).toThrow(/not locked/);
    expect(m.lock()).toBe(true);
    expect(words[1]).toBe(1);
    const t = performance.now();
    expect(m.lock(30)).toBe(false);
    expect(performance.now() - t).toBeGreaterThanOrEqual(29);
    expect(m.tryLock()).toBe(false);
    expect(await m.lockAsync(20)).toBe(false);
    m.unlock();
    expect(words[1]).toBe(0);
    expect(() => m.unlock()).toThrow(/not locked/);
    expect(m.withLock(() => words[1])).toBe(1);
    expect(() => m.withLock(() => { throw new Error('boom'); })).toThrow('boom');
    expect(m.locked).toBe(false);
    m.lock();
    let timeout;
    try {
      m.withLock(() => 1, 10);
    } catch (e) {
      timeout = e;
    }
    expect(timeout.code).toBe(RpcError.codes.Timeout);
    m.unlock();
  });

  test('4 threads on the book\'s mutex and 4 on corepool\'s never overlap (thread-product check, 1,000 runs each)', async () => {
    const sab = new SharedArrayBuffer(16);
    const product = new Float64Array(sab, 8, 1);
    product[0] = 1;
    const modulus = 1_000_000_007;
    const factors = [3, 5, 7, 11, 13, 17, 19, 23];
    const runs = 1000;
    const results = await Promise.all(
      factors.map((factor, i) => run('product', { sab, kind: i % 2 === 0 ? 'book' : 'corepool', runs, factor, modulus })),
    );
    expect(results.map((r) => r.overlaps)).toEqual(factors.map(() => 0));
    let expected = 1n;
    for (const f of factors) for (let r = 0; r < runs; r++) expected = (expected * BigInt(f)) % BigInt(modulus);
    expect(product[0]).toBe(Number(expected));
    expect(new Int32Array(sab, 0, 1)[0]).toBe(0);
  });

  test('the native protocol (src/shm/mutex.rs) excludes JS holders of either kind on the same word', async () => {
    const sab = new SharedArrayBuffer(16);
    const product = new Float64Array(sab, 8, 1);
    product[0] = 1;
    const modulus = 1_000_000_007;
    const kinds = ['native-op', 'book', 'corepool', 'native-op', 'book', 'corepool'];
    const factors = [3, 5, 7, 11, 13, 17];
    const runs = 1000;
    const results = await Promise.all(kinds.map((kind, i) => run('product', { sab, kind, runs, factor: factors[i], modulus })));
    expect(results.map((r) => r.overlaps)).toEqual(kinds.map(() => 0));
    let expected = 1n;
    for (const f of factors) for (let r = 0; r < runs; r++) expected = (expected * BigInt(f)) % BigInt(modulus);
    expect(product[0]).toBe(Number(expected));
  });

  test('lockAsync() leaves the event loop running while 4 workers hold the lock in turn', async () => {
    const sab = new SharedArrayBuffer(12);
    const m = new Mutex(new Int32Array(sab, 0, 1), 0);
    const inside = new Int32Array(sab, 4, 1);
    const started = new Int32Array(sab, 8, 1);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 2);
    const workers = Promise.all([0, 1, 2, 3].map(() => run('hold', { sab, holds: 8, holdMs: 10 })));
    while (Atomics.load(started, 0) < 4) await sleep(1);
    let mine = 0;
    let overlaps = 0;
    let ticksWhileWaiting = 0;
    for (let i = 0; i < 10; i++) {
      const before = ticks;
      expect(await m.lockAsync(20_000)).toBe(true);
      ticksWhileWaiting += ticks - before;
      if (Atomics.add(inside, 0, 1) !== 0) overlaps++;
      mine++;
      Atomics.sub(inside, 0, 1);
      m.unlock();
      await sleep(3);
    }
    const results = await workers;
    clearInterval(timer);
    expect(mine).toBe(10);
    expect(overlaps).toBe(0);
    expect(results.every((r) => r.overlaps === 0)).toBe(true);
    // 4 workers × 8 holds × 10 ms ≈ 320 ms of lock time: a blocking wait would stop the timer.
    expect(ticksWhileWaiting).toBeGreaterThan(10);
  });
});

describe('Semaphore', () => {
  test('counts permits; acquire(timeoutMs) returns false when none come back', async () => {
    const sab = new SharedArrayBuffer(8);
    const s = new Semaphore(new Int32Array(sab), 1, 2);
    expect(s.available).toBe(2);
    expect(s.tryAcquire()).toBe(true);
    expect(s.acquire(10)).toBe(true);
    expect(s.tryAcquire()).toBe(false);
    expect(s.acquire(20)).toBe(false);
    expect(await s.acquireAsync(20)).toBe(false);
    const waiting = s.acquireAsync(5_000);
    setTimeout(() => s.release(), 10);
    expect(await waiting).toBe(true);
    s.release();
    s.release();
    expect(s.available).toBe(2);
    expectInvalid(() => new Semaphore(new Int32Array(sab), 0, -1), /permits must be a whole number/);
    expectInvalid(() => new Semaphore(new Int32Array(2)), /not an ArrayBuffer/);
    expectInvalid(() => new Semaphore(new Int32Array(sab), 2), /index 2 is out of range/);
    new Int32Array(sab)[0] = 0x7fffffff;
    expect(() => new Semaphore(new Int32Array(sab), 0).release()).toThrow(/most permits/);
  });

  test('never more holders than permits among 8 threads under stress', async () => {
    const permits = 3;
    const sab = new SharedArrayBuffer(12);
    new Semaphore(new Int32Array(sab, 0, 1), 0, permits);
    await Promise.all(Array.from({ length: 8 }, () => run('semaphore', { sab, runs: 3000 })));
    const [free, holders, most] = new Int32Array(sab);
    expect(most).toBeLessThanOrEqual(permits);
    expect(most).toBeGreaterThanOrEqual(1);
    expect(holders).toBe(0);
    expect(free).toBe(permits);
  });
});

describe('RingBuffer', () => {
  test('keeps the book\'s layout and interoperates with the book\'s SharedRingBuffer', () => {
    const r = new RingBuffer(10);
    expect(r.buffer.byteLength).toBe(26);
    const book = new SharedRingBuffer(r.buffer);
    expect(r.write(Buffer.from('hello world'))).toBe(10);
    const [lock, head, tail, length] = new Uint32Array(r.buffer, 0, 4);
    expect([lock, head, tail, length]).toEqual([0, 0, 0, 10]);
    expect(Buffer.from(book.read(5)).toString()).toBe('hello');
    expect(book.write(Buffer.from('12345'))).toBe(5);
    expect(Buffer.from(r.read(100)).toString()).toBe(' worl12345');
    expect(r.length).toBe(0);
  });

  test('reads tail..tail+n where the book slices tail..n', () => {
    const r = new RingBuffer(16);
    r.write(new Uint8Array(10).fill(1));
    r.read(10);
    r.write(Buffer.from('abcd'));
    expect(Buffer.from(r.read(3)).toString()).toBe('abc');
    expect(Buffer.from(r.read(3)).toString()).toBe('d');
  });

  test('write takes what fits, read what is there; the blocking twins time out with partial results', async () => {
    const r = new RingBuffer(8);
    expect(r.write(new Uint8Array(12).fill(9))).toBe(8);
    expect(r.write(new Uint8Array(1))).toBe(0);
    expect(r.writeAll(new Uint8Array(4), 20)).toBe(0);
    expect(await r.writeAllAsync(new Uint8Array(4), 20)).toBe(0);
    expect(Array.from(r.read(3))).toEqual([9, 9, 9]);
    const target = new Uint8Array(new SharedArrayBuffer(8));
    expect(r.readInto(target)).toBe(5);
    expect(r.read(4).length).toBe(0);
    const t = performance.now();
    expect(r.readExactly(4, 25).length).toBe(0);
    expect(performance.now() - t).toBeGreaterThanOrEqual(24);
    r.write(Buffer.from('xy'));
    expect(Buffer.from(await r.readExactlyAsync(4, 20)).toString()).toBe('xy');
    const waiting = r.readExactlyAsync(3, 5_000);
    setTimeout(() => r.write(Buffer.from('abc')), 10);
    expect(Buffer.from(await waiting).toString()).toBe('abc');
  });

  test('a lock held elsewhere makes write/read wait, and time out with RpcError Timeout', async () => {
    const r = new RingBuffer(8);
    const lock = new Int32Array(r.buffer, 0, 1);
    r.write(Buffer.from('ab'));
    lock[0] = 1; // held by someone else, e.g. JavaScript following the book
    const timeoutCode = RpcError.codes.Timeout;
    for (const attempt of [() => r.write(Buffer.from('c'), 15), () => r.read(1, 15), () => r.readInto(new Uint8Array(1), 15)]) {
      expect(attempt).toThrow(expect.objectContaining({ code: timeoutCode }));
    }
    await expect(r.writeAsync(Buffer.from('c'), 15)).rejects.toMatchObject({ code: timeoutCode });
    await expect(r.readAsync(1, 15)).rejects.toMatchObject({ code: timeoutCode });
    await expect(r.readIntoAsync(new Uint8Array(1), 15)).rejects.toMatchObject({ code: timeoutCode });
    expect(r.length).toBe(2);
    const release = () => {
      Atomics.store(lock, 0, 0);
      Atomics.notify(lock, 0);
    };
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    setTimeout(release, 30);
    expect(await r.writeAsync(Buffer.from('cd'), 5_000)).toBe(2);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(3);
    expect(Buffer.from(await r.readAsync(8)).toString()).toBe('abcd');
    r.write(Buffer.from('e'));
    const into = new Uint8Array(4);
    expect(await r.readIntoAsync(into)).toBe(1);
    expect(into[0]).toBe('e'.charCodeAt(0));
  });

  test('refuses bad buffers and arguments with InvalidParams; reports a corrupt header', () => {
    expectInvalid(() => new RingBuffer(new ArrayBuffer(32)), /SharedArrayBuffer or a capacity/);
    expectInvalid(() => new RingBuffer(new SharedArrayBuffer(16)), /needs more than 16 bytes/);
    expectInvalid(() => new RingBuffer(0), /capacity must be a whole number/);
    expectInvalid(() => new RingBuffer(2.5), /capacity must be a whole number/);
    const r = new RingBuffer(8);
    expectInvalid(() => r.write([1, 2]), /data must be a Uint8Array/);
    expectInvalid(() => r.write(new Int8Array(2)), /got Int8Array/);
    expectInvalid(() => r.read(-1), /n must be a whole number/);
    expectInvalid(() => r.readExactly(1, 'soon'), /timeoutMs must be a number/);
    new Uint32Array(r.buffer)[3] = 5; // length 5 with head = tail = 0
    expect(() => r.read(1)).toThrow(/header is corrupt/);
    expect(new Int32Array(r.buffer)[0]).toBe(0);
  });

  test('4 producers and 4 consumers move 10 MB through a 100-byte ring: every unit exactly once, in order', async () => {
    const producers = 4;
    const unitsPerProducer = Math.ceil((10 * 1024 * 1024) / 4 / producers);
    const total = producers * unitsPerProducer;
    const ring = new RingBuffer(100).buffer;
    const seen = new SharedArrayBuffer(total);
    const received = new SharedArrayBuffer(4);
    const jobs = [];
    for (let id = 0; id < producers; id++) jobs.push(run('produce', { ring, id, units: unitsPerProducer, seed: 11 + id }));
    for (let c = 0; c < 4; c++) jobs.push(run('consume', { ring, seen, received, total, producers, unitsPerProducer, seed: 101 + c }));
    const results = await Promise.all(jobs);
    const consumers = results.slice(producers);
    expect(consumers.map((c) => c.outOfOrder + c.garbage)).toEqual([0, 0, 0, 0]);
    const marks = new Uint8Array(seen);
    expect(marks.every((m) => m === 1)).toBe(true);
    const expectedSum = (unitsPerProducer * (unitsPerProducer - 1)) / 2;
    for (let p = 0; p < producers; p++) {
      expect(consumers.reduce((s, c) => s + (c.sums[p] ?? 0), 0)).toBe(expectedSum);
    }
    expect(new Int32Array(received)[0]).toBe(total);
    expect(new RingBuffer(ring).length).toBe(0);
  });

  test('book writers and corepool writers share one ring without losing a unit', async () => {
    const producers = 4;
    const unitsPerProducer = 20_000;
    const total = producers * unitsPerProducer;
    const ring = new RingBuffer(256).buffer;
    const seen = new SharedArrayBuffer(total);
    const received = new SharedArrayBuffer(4);
    const jobs = [];
    for (let id = 0; id < producers; id++) jobs.push(run('produce', { ring, id, units: unitsPerProducer, seed: 7 + id, book: id % 2 === 0 }));
    for (let c = 0; c < 2; c++) jobs.push(run('consume', { ring, seen, received, total, producers, unitsPerProducer, seed: 3 + c }));
    const results = await Promise.all(jobs);
    expect(results.slice(producers).map((c) => c.outOfOrder + c.garbage)).toEqual([0, 0]);
    expect(new Uint8Array(seen).every((m) => m === 1)).toBe(true);
  });
});

describe('AsyncLock', () => {
  test('holders run one at a time, in the order they asked', async () => {
    const lock = new AsyncLock();
    const order = [];
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        lock.runExclusive(async () => {
          most = Math.max(most, ++inside);
          order.push(i);
          await sleep(i % 3);
          await null;
          inside--;
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(most).toBe(1);
    expect(lock.locked).toBe(false);
  });

  test('runExclusive releases when fn throws, and rejects with its error', async () => {
    const lock = new AsyncLock();
    const failing = lock.runExclusive(async () => {
      throw new Error('nope');
    });
    const next = lock.runExclusive(() => 'ran');
    await expect(failing).rejects.toThrow('nope');
    await expect(next).resolves.toBe('ran');
    const release = await lock.acquire();
    release();
    expect(() => release()).toThrow(/twice/);
    await expect(lock.runExclusive('x')).rejects.toThrow(/fn must be a function/);
  });

  test('a deposit racing a transfer gives the ordered result', async () => {
    const io = () => sleep(5);
    function bank(lock) {
      const checking = { balance: 100 };
      const savings = { balance: 0 };
      const guard = (fn) => (lock ? lock.runExclusive(fn) : fn());
      const deposit = (amount) =>
        guard(async () => {
          const balance = checking.balance;
          await io();
          checking.balance = balance + amount;
        });
      const transfer = (amount) =>
        guard(async () => {
          const balance = checking.balance;
          await io();
          if (balance < amount) throw new Error('insufficient funds');
          checking.balance = balance - amount;
          savings.balance += amount;
        });
      return { checking, savings, deposit, transfer };
    }
    // Without the lock the transfer reads the balance before the deposit lands, and fails.
    const racy = bank(null);
    const racing = await Promise.allSettled([racy.deposit(50), racy.transfer(120)]);
    expect(racing[1].status).toBe('rejected');
    // With it, the deposit completes first: 100 + 50 - 120.
    const safe = bank(new AsyncLock());
    const ordered = await Promise.allSettled([safe.deposit(50), safe.transfer(120)]);
    expect(ordered.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(safe.checking.balance).toBe(30);
    expect(safe.savings.balance).toBe(120);
  });
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §1: views inside params are kept alive by the call', () => {
  // The caller lets go of each buffer right after the call: only the call itself can keep it
  // alive. Fresh buffers allocated meanwhile must never receive coins, and nothing may crash.
  test('a reused options object whose view is replaced after each call: no write lands elsewhere, no crash', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const reference = await pool.exec('happycoin', { attempts: 200000, seed: 7 });
      const opts = { attempts: 200000, seed: 7 };
      const calls = [];
      let junk = [];
      let dirty = 0;
      const inspect = () => { dirty += junk.filter((a) => a.some((x) => x !== 0n)).length; junk = []; };
      for (let i = 0; i < 200; i++) {
        opts.into = new BigUint64Array(new SharedArrayBuffer(4096));
        calls.push(pool.exec('happycoin', opts).then((res) => res.count));
        opts.into = null;
        for (let j = 0; j < 100; j++) junk.push(new BigUint64Array(new SharedArrayBuffer(4096)));
        if (i % 20 === 0) { global.gc(); await new Promise((r) => setTimeout(r, 1)); inspect(); }
      }
      const counts = await Promise.all(calls);
      inspect();
      await pool.close();
      out({ wrong: counts.filter((c) => c !== reference.count).length, dirty, calls: calls.length });
      `,
      { args: ['--expose-gc'] },
    );
    expect(clean(r)).toEqual({ wrong: 0, dirty: 0, calls: 200 });
  });

  test('views nested in request() and broadcast() params are kept alive too', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const results = [];
      let junk = [];
      let dirty = 0;
      for (let i = 0; i < 100; i++) {
        const req = { jsonrpc: '2.0', method: 'happycoin', params: [{ attempts: 100000, seed: 3, into: new BigUint64Array(new SharedArrayBuffer(4096)) }], id: i };
        results.push(pool.request(req).then((resp) => resp.result.count));
        req.params[0].into = null;
        const b = { attempts: 50000, seed: 3, into: new BigUint64Array(new SharedArrayBuffer(4096)) };
        results.push(pool.broadcast('happycoin', b).then((all) => all[0].count));
        b.into = null;
        for (let j = 0; j < 100; j++) junk.push(new BigUint64Array(new SharedArrayBuffer(4096)));
        if (i % 10 === 0) { global.gc(); await new Promise((r) => setTimeout(r, 1)); dirty += junk.filter((a) => a.some((x) => x !== 0n)).length; junk = []; }
      }
      const counts = await Promise.all(results);
      dirty += junk.filter((a) => a.some((x) => x !== 0n)).length;
      await pool.close();
      out({ settled: counts.filter((c) => Number.isInteger(c)).length, dirty });
      `,
      { args: ['--expose-gc'] },
    );
    expect(clean(r)).toEqual({ settled: 200, dirty: 0 });
  });
});

describe('issue 13 §15: smaller inconsistencies', () => {
  test('a RingBuffer over a growable SharedArrayBuffer is refused', () => {
    const sab = new SharedArrayBuffer(32, { maxByteLength: 64 });
    expect(() => new RingBuffer(sab)).toThrow(RpcError);
    expect(() => new RingBuffer(sab)).toThrow(/growable/);
  });

  test('Mutex and Semaphore over growable buffers still work (the word never moves)', () => {
    const sab = new SharedArrayBuffer(8, { maxByteLength: 64 });
    const m = new Mutex(new Int32Array(sab), 0);
    const s = new Semaphore(new Int32Array(sab), 1, 1);
    sab.grow(64);
    expect(m.tryLock()).toBe(true);
    m.unlock();
    expect(s.tryAcquire()).toBe(true);
  });
});
