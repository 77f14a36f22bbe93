'use strict';
// Each error code's common case, provoked through the public API: its message says the fix in
// one clause (docs/errors.md says more), and links to nothing.
const path = require('node:path');
const { Pool, RpcError, Mutex } = require('..');
const { connect } = require('@nats-io/transport-node');
const { serve, RemotePool } = require('../lib/nats.js');
const { rejection } = require('./helpers/rejection.js');
const { startNats, natsServerPath } = require('./helpers/nats/server.js');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

function expectError(e, code, message) {
  expect(e).toBeInstanceOf(RpcError);
  expect([e.code, e.message]).toEqual([code, message]);
  expect(e.message).not.toMatch(/https?:|\.md\b/);
}

describe('a pool of native threads', () => {
  let pool;
  beforeEach(() => {
    pool = new Pool({ threads: 1, maxQueue: 1 });
  });
  afterEach(() => pool.destroy());

  test('InvalidRequest: an unknown call option names the expected ones', async () => {
    const e = await rejection(pool.call('echo', [1], { timout: 100 }));
    expectError(e, C.InvalidRequest, "unknown call option 'timout' (expected signal, timeout, onProgress or transfer)");
  });

  test('MethodNotFound: says where the names are', async () => {
    const e = await rejection(pool.call('fibonaci', [10]));
    expectError(e, C.MethodNotFound, 'Method not found: "fibonaci": check the name against pool.methods()');
  });

  test('InvalidParams: a value that cannot cross says what to send instead', async () => {
    const date = await rejection(pool.call('echo', [{ when: new Date(0) }]));
    expect(date.code).toBe(C.InvalidParams);
    expect(date.message).toContain('params[0].when is a Date, which JSON would turn into a string: pass date.toISOString()');
    const symbol = await rejection(pool.call('echo', [Symbol('s')]));
    expectError(symbol, C.InvalidParams, 'params[0] is a symbol, which cannot be sent: send a string instead');
  });

  test('QueueFull: names maxQueue and the ways out', async () => {
    // One thread runs one call and the queue holds one more: of three calls made at once, at
    // least the third is refused.
    const outcomes = await Promise.allSettled([0, 1, 2].map(() => pool.call('sleep', [20])));
    const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => o.reason);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const e of refused) {
      expectError(e, C.QueueFull, "The queue is full: 1 calls wait for a thread (maxQueue = 1): retry later, raise maxQueue, or use onFull: 'wait'");
    }
  });

  test('PoolClosed: a call after close() says to make calls before it', async () => {
    await pool.close();
    expectError(await rejection(pool.call('echo', [1])), C.PoolClosed, 'The pool is closed: make calls before close(), or make a new pool');
  });

  test('PoolClosed: calls ended by destroy() point at close()', async () => {
    const calls = [pool.call('sleep', [5000]), pool.call('sleep', [5000])].map((call) => rejection(call));
    await pool.destroy();
    for (const call of calls) {
      const e = await call;
      expect(e.code).toBe(C.PoolClosed);
      expect(e.message).toMatch(/^The pool was destroyed (before|while) the call ran: close\(\) lets accepted calls finish$/);
    }
  });

  test('Timeout: names the method, the limit and the fix', async () => {
    const e = await rejection(pool.call('sleep', [5000], { timeout: 20 }));
    expectError(e, C.Timeout, 'sleep timed out after 20 ms: raise the timeout or make the task shorter');
  });
});

describe('a task-file pool', () => {
  test('ServerGone: the worker running the call exited, and when to retry', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 1 });
    try {
      const e = await rejection(pool.exec('crash'));
      expectError(e, C.ServerGone, 'The JavaScript thread serving the call exited before it finished: retry only if the call is safe to run twice');
    } finally {
      await pool.destroy();
    }
  });

  test('MethodNotFound: lists the exports and the closest one', async () => {
    const file = task('primes.js');
    const pool = new Pool({ filename: file, threads: 1 });
    try {
      const e = await rejection(pool.exec('prime'));
      expectError(e, C.MethodNotFound, `Method not found: "prime" (the task file ${file} exports: primes, isPrime; did you mean "primes"?)`);
    } finally {
      await pool.destroy();
    }
  });
});

test('Timeout of a lock: names timeoutMs and the fix', () => {
  const word = new Int32Array(new SharedArrayBuffer(4));
  const holder = new Mutex(word);
  const other = new Mutex(word);
  holder.lock();
  try {
    let thrown;
    try {
      other.withLock(() => 'ran', 10);
    } catch (e) {
      thrown = e;
    }
    expectError(thrown, C.Timeout, 'Mutex.withLock: the lock stayed taken for 10 ms: raise timeoutMs or hold the lock for less time');
  } finally {
    holder.unlock();
  }
});

const maybeNats = natsServerPath() === null ? describe.skip : describe;

maybeNats('corepool/nats', () => {
  let server;
  let nc;
  let pool;
  let host;
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    pool = new Pool({ threads: 1 });
    host = await serve(pool, nc, { name: 'fixes' });
  });
  afterAll(async () => {
    await host?.close();
    await nc?.close();
    await pool?.destroy();
    await server?.stop();
  });

  test('Unavailable: no host serves the subject, so start one', async () => {
    const remote = new RemotePool(nc, { name: 'nobody' });
    try {
      const e = await rejection(remote.call('echo', [1]));
      expectError(e, C.Unavailable, "no host serves 'nobody' (NATS: no responders): start a host with that name, then retry");
    } finally {
      await remote.close();
    }
  });

  test("Timeout: the remote call's limit and the fix", async () => {
    const remote = new RemotePool(nc, { name: 'fixes' });
    try {
      const e = await rejection(remote.call('sleep', [5000], { timeout: 30 }));
      expectError(e, C.Timeout, 'The call timed out after 30 ms (its host is asked to stop it): raise the timeout or make the task shorter');
    } finally {
      await remote.close();
    }
  });

  test('PoolClosed: a call on a closed RemotePool', async () => {
    const remote = new RemotePool(nc, { name: 'fixes' });
    await remote.close();
    expectError(await rejection(remote.call('echo', [1])), C.PoolClosed, 'The remote pool is closed: make calls before close()');
  });
});
