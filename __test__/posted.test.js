'use strict';
// Results posted on the pool thread's message ports (lib/posted.js): the mailbox on its own,
// with real MessageChannels, then through task-file pools.

const path = require('node:path');
const { types } = require('node:util');
const { Worker } = require('node:worker_threads');
const posted = require('../lib/posted.js');
const { native } = require('../lib/native.js');
const { Pool, RpcError } = require('../index.js');
const { kWorkerExits } = require('../lib/pool.js');

const VALUES = path.join(__dirname, 'fixtures', 'tasks', 'values.js');

describe('the mailbox', () => {
  // Thread ids no worker has here.
  let nextThread = 1e6;
  const opened = [];
  const open = () => {
    const box = posted.openBox();
    box.thread = nextThread++;
    posted.keepBox(box.thread, box.here);
    opened.push(box);
    // As a worker posts a result: the value, then the call's id.
    box.post = (id, value) => {
      box.there.postMessage(value);
      box.there.postMessage(id);
    };
    return box;
  };
  afterEach(() => {
    for (const box of opened.splice(0)) {
      posted.closeBox(box.thread, () => false);
      box.there.close();
    }
  });
  const all = () => true;

  test('takes each call’s result by its id from its thread’s port, in any order', () => {
    const a = open();
    const b = open();
    a.post(1, 'one');
    b.post(2, new Map([['two', 2]]));
    a.post(3, undefined);
    expect(posted.take(3, a.thread, all)).toBeUndefined();
    expect([...posted.take(2, b.thread, all)]).toEqual([['two', 2]]);
    expect(posted.take(1, a.thread, all)).toBe('one');
    expect(() => posted.take(1, a.thread, all)).toThrow(`not on the port of thread ${a.thread}`);
    // Another thread's port is not this result's.
    b.post(4, 'four');
    expect(() => posted.take(4, a.thread, all)).toThrow(/not on the port/);
    expect(posted.take(4, b.thread, all)).toBe('four');
  });

  test('a result read while its worker is between its two messages (the value posted, its id not yet) is kept for its id', () => {
    // Found by the heavy-js benchmark: a sweep, or a take whose own result was read ahead,
    // reads a port to its end while a worker posts; it read the value, found no id after it
    // and dropped the value, so its call later failed with "not on the port".
    const a = open();
    a.there.postMessage('two'); // the worker is between its two messages
    posted.sweep(all);
    a.there.postMessage(2);
    expect(posted.take(2, a.thread, all)).toBe('two');
    // The same through a take whose own result was read ahead (it reads the port to its end).
    a.post(3, 'three');
    a.post(4, 'four');
    expect(posted.take(4, a.thread, all)).toBe('four'); // reads 3's result ahead
    a.there.postMessage('five');
    expect(posted.take(3, a.thread, all)).toBe('three');
    a.there.postMessage(5);
    expect(posted.take(5, a.thread, all)).toBe('five');
  });

  test('a result that cannot be read here fails its own call only, wherever it is read', () => {
    // Nested deeper than this thread's stack lets V8 read back (it could be written).
    let deep = { end: 1 };
    for (let i = 0; i < 3000; i++) deep = { next: deep };
    const a = open();
    a.post(40, deep);
    a.post(41, 'fine');
    expect(posted.take(41, a.thread, all)).toBe('fine');
    expect(() => posted.take(40, a.thread, all)).toThrow('Maximum call stack size exceeded');
    // And when the port is read out as its worker exits: nothing escapes.
    a.post(42, deep);
    a.post(43, 'also fine');
    expect(() => posted.closeBox(a.thread, all)).not.toThrow();
    expect(posted.take(43, a.thread, all)).toBe('also fine');
    expect(() => posted.take(42, a.thread, all)).toThrow('Maximum call stack size exceeded');
  });

  test('shared memory in a posted result is refused with a DataCloneError, however it is held', () => {
    const a = open();
    const cases = [
      { s: new SharedArrayBuffer(4) },
      [new Int32Array(new SharedArrayBuffer(8), 4)],
      new Map([['k', new Set([new DataView(new SharedArrayBuffer(4))])]]),
      { e: new Error('x', { cause: { v: new Uint8Array(new SharedArrayBuffer(1)) } }) },
    ];
    // (A shared WebAssembly.Memory: refused by postMessage itself on some versions of Node.)
    const memory = { memory: new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }) };
    try {
      a.there.postMessage(memory);
      a.there.postMessage(100 + cases.length);
      cases.push(memory);
    } catch (e) {
      expect(e.name).toBe('DataCloneError');
    }
    cases.slice(0, 4).forEach((value, i) => a.post(100 + i, value));
    cases.forEach((_, i) => expect(() => posted.take(100 + i, a.thread, all)).toThrow(expect.objectContaining({ name: 'DataCloneError', message: 'result holds shared memory, which a result cannot carry' })));
    // Memory of its own is not shared memory.
    a.post(200, { buffer: new ArrayBuffer(4), bytes: new Uint8Array(2) });
    const own = posted.take(200, a.thread, all);
    expect([types.isArrayBuffer(own.buffer), types.isUint8Array(own.bytes)]).toEqual([true, true]);
  });

  test('a result whose call no longer waits is dropped as it is read, and a later call of the same id gets its own', () => {
    // Call ids come back after 2^26 calls: call 5's result, left by a call that timed out,
    // must never be the result of a later call 5.
    const a = open();
    a.post(5, 'stale');
    a.post(6, 'six');
    expect(posted.take(6, a.thread, (id) => id !== 5)).toBe('six');
    a.post(5, 'fresh');
    expect(posted.take(5, a.thread, all)).toBe('fresh');
    // A result read ahead for a call that still waits is kept for it.
    a.post(20, 'twenty');
    a.post(21, 'twenty-one');
    expect(posted.take(21, a.thread, all)).toBe('twenty-one');
    expect(posted.take(20, a.thread, all)).toBe('twenty');
  });

  test('results of calls no longer waiting are dropped, not kept for ever', () => {
    const a = open();
    for (let id = 100; id < 200; id++) a.post(id, { id });
    a.post(7, 'wanted');
    expect(posted.take(7, a.thread, () => false)).toBe('wanted');
    expect(() => posted.take(150, a.thread, all)).toThrow(/not on the port/);
    // A sweep reads every port out.
    for (let id = 300; id < 310; id++) a.post(id, { id });
    const before = posted.stats().early;
    posted.sweep(() => false);
    expect(posted.stats().early).toBe(before);
    expect(() => posted.take(305, a.thread, all)).toThrow(/not on the port/);
  });

  test('what a worker posted before it exited is still taken', () => {
    const a = open();
    a.post(9, 'last words');
    a.post(10, 'stale');
    posted.closeBox(a.thread, (id) => id === 9);
    expect(posted.take(9, a.thread, all)).toBe('last words');
    expect(() => posted.take(10, a.thread, all)).toThrow(/not on the port/);
  });

  test('a message that is not a result never becomes one', () => {
    const a = open();
    a.there.postMessage('noise');
    a.there.postMessage('not an id');
    expect(() => posted.take(12, a.thread, all)).toThrow(/not on the port/);
    a.post(12, 'twelve');
    expect(posted.take(12, a.thread, all)).toBe('twelve');
  });
});

describe('through a task-file pool', () => {
  let pool;
  afterEach(async () => {
    await pool?.destroy();
    pool = undefined;
  });

  test('the pool thread’s calls take their results from the port; a call from another thread gets them as bytes', async () => {
    // (The pool's native id, which only its own workers are told: caught as it is made.)
    const Real = native.NativePool;
    let made;
    native.NativePool = new Proxy(Real, {
      construct(target, args) {
        made = Reflect.construct(target, args);
        return made;
      },
    });
    try {
      pool = new Pool({ filename: VALUES, threads: 1 });
    } finally {
      native.NativePool = Real;
    }
    const take = jest.spyOn(posted, 'take');
    try {
      const d = await pool.exec('date');
      expect([types.isDate(d), d.getTime(), take.mock.calls.length]).toEqual([true, 0, 1]);
    } finally {
      take.mockRestore();
    }
    // A worker_thread attaches the same pool: its calls are not this thread's, so the task's
    // worker must not post them here (that thread would find nothing on its ports).
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const { attach } = require(workerData.lib);
       attach(workerData.id).exec('date').then(
         (d) => parentPort.postMessage({ date: d instanceof Date, time: d.getTime() }),
         (e) => parentPort.postMessage({ error: e.message }));`,
      { eval: true, workerData: { lib: path.join(__dirname, '..', 'lib', 'pool.js'), id: made.id } },
    );
    const answer = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(answer).toEqual({ date: true, time: 0 });
  });

  test('a result that cannot be read here fails its own call only, and its worker’s exit throws nothing', async () => {
    pool = new Pool({ filename: VALUES, threads: 1, concurrency: 2 });
    // Nested deeper than this thread reads back: posted, read, refused for its own call.
    await expect(pool.exec('deepLater', 3000, 0)).rejects.toMatchObject({ code: RpcError.codes.InternalError, message: expect.stringContaining('Maximum call stack size exceeded') });
    // Another such result, for a call that timed out; then calls that must get their own.
    await expect(pool.call('deepLater', [3000, 50], { timeout: 5 })).rejects.toMatchObject({ code: RpcError.codes.Timeout });
    await pool.exec('slow', 100);
    expect([...(await pool.exec('small'))]).toEqual([[1, 'small']]);
    const [late, small] = await Promise.allSettled([pool.exec('deepLater', 3000, 20), pool.exec('small')]);
    expect([late.status, [...small.value]]).toEqual(['rejected', [[1, 'small']]]);
    // The worker exits with a result that cannot be read still in its port.
    const stuck = pool.exec('deepLater', 3000, 0);
    expect(await pool.exec('exitSoon')).toBe(1);
    await expect(stuck).rejects.toMatchObject({ code: RpcError.codes.InternalError });
    while (pool[kWorkerExits] === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect([...(await pool.exec('small'))]).toEqual([[1, 'small']]); // on its replacement
  });

  test('a call that no longer waits gets nothing posted: nothing is held for it here', async () => {
    pool = new Pool({ filename: VALUES, threads: 1, concurrency: Infinity });
    const timedOut = Array.from({ length: 20 }, (_, i) => pool.call('slowMap', [30, `late ${i}`], { timeout: 5 }));
    for (const call of timedOut) await expect(call).rejects.toMatchObject({ code: RpcError.codes.Timeout });
    await pool.exec('slow', 100); // the late results have been made meanwhile
    posted.sweep(() => true); // every posted result read, kept whatever its call
    expect(posted.stats().early).toBe(0);
    expect([...(await pool.exec('small'))]).toEqual([[1, 'small']]);
  });

  test.each(['sharedWasmMemory', 'viewWithOwnBuffer', 'sharedAfterFirstRead'])('shared memory in a result is refused however it hides (%s)', async (name) => {
    pool = new Pool({ filename: VALUES, threads: 1 });
    await expect(pool.exec(name)).rejects.toMatchObject({ name: 'DataCloneError', message: 'result holds shared memory, which a result cannot carry' });
  });

  test('a result posted for a call that timed out meanwhile is never another call’s', async () => {
    pool = new Pool({ filename: VALUES, threads: 1 });
    // `slowMap` ignores its abort and answers after 50 ms: its result is posted for a call
    // that settled long before, and the next call's comes after it on the same port.
    await expect(pool.call('slowMap', [50, 'old'], { timeout: 1 })).rejects.toMatchObject({ code: RpcError.codes.Timeout });
    for (let i = 0; i < 3; i++) {
      const back = await pool.exec('echo', new Map([['i', i]]));
      expect([...back]).toEqual([['i', i]]);
    }
  });
});
