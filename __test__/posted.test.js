'use strict';
// Results posted on the pool thread's message ports (lib/posted.js): the mailbox on its own,
// with real MessageChannels, then through task-file pools.

const path = require('node:path');
const { types } = require('node:util');
const { Worker } = require('node:worker_threads');
const posted = require('../lib/posted.js');
const { native } = require('../lib/native.js');
const { Pool, RpcError } = require('../index.js');

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
    return box;
  };
  afterEach(() => {
    for (const box of opened.splice(0)) {
      posted.closeBox(box.thread, () => false);
      box.there.close();
    }
  });

  test('takes each call’s result by its id from its thread’s port, in any order', () => {
    const a = open();
    const b = open();
    a.there.postMessage([1, 'one']);
    b.there.postMessage([2, new Map([['two', 2]])]);
    a.there.postMessage([3, undefined]);
    const live = () => true;
    expect(posted.take(3, a.thread, live)).toBeUndefined();
    expect([...posted.take(2, b.thread, live)]).toEqual([['two', 2]]);
    expect(posted.take(1, a.thread, live)).toBe('one');
    expect(() => posted.take(1, a.thread, live)).toThrow(`not on the port of thread ${a.thread}`);
    // Another thread's port is not this result's.
    b.there.postMessage([4, 'four']);
    expect(() => posted.take(4, a.thread, live)).toThrow(/not on the port/);
    expect(posted.take(4, b.thread, live)).toBe('four');
  });

  test('a result left by a call that settled otherwise is never the one of a later call with the same id', () => {
    // Call ids come back after 2^26 calls: call 5's result, never taken (its call timed out),
    // was read ahead with call 6's; a later call 5 must get its own.
    const a = open();
    a.there.postMessage([5, 'stale']);
    a.there.postMessage([6, 'six']);
    expect(posted.take(6, a.thread, () => true)).toBe('six');
    a.there.postMessage([5, 'fresh']);
    expect(posted.take(5, a.thread, () => true)).toBe('fresh');
  });

  test('results of calls no longer waiting are dropped, not kept for ever', () => {
    const a = open();
    for (let id = 100; id < 200; id++) a.there.postMessage([id, { id }]);
    a.there.postMessage([7, 'wanted']);
    // Reading up to call 7 keeps the 100 earlier ones; none of their calls waits any more.
    expect(posted.take(7, a.thread, () => false)).toBe('wanted');
    expect(() => posted.take(150, a.thread, () => true)).toThrow(/not on the port/);
  });

  test('what a worker posted before it exited is still taken', () => {
    const a = open();
    a.there.postMessage([9, 'last words']);
    a.there.postMessage([10, 'stale']);
    posted.closeBox(a.thread, (id) => id === 9);
    expect(posted.take(9, a.thread, () => true)).toBe('last words');
    expect(() => posted.take(10, a.thread, () => true)).toThrow(/not on the port/);
  });

  test('a message that is not a result is ignored', () => {
    const a = open();
    a.there.postMessage('noise');
    a.there.postMessage([11]);
    a.there.postMessage(['12', 'x']);
    a.there.postMessage([12, 'twelve']);
    expect(posted.take(12, a.thread, () => true)).toBe('twelve');
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
