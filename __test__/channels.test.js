'use strict';
// diagnostics_channel: the TracingChannels corepool:call and corepool:render publish start, end,
// asyncStart, asyncEnd (and error) for every call, with a context that names the call and its
// outcome; a subscriber's mistakes never change a call.
const path = require('node:path');
const diagnostics = require('node:diagnostics_channel');
const { Pool, RpcError } = require('..');
const { child } = require('./helpers/child.js');

const EVENTS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];

/** Subscribes to a TracingChannel; `events` lists [event, context] in publication order. */
function record(name) {
  const channel = diagnostics.tracingChannel(name);
  const events = [];
  const handlers = Object.fromEntries(EVENTS.map((e) => [e, (context) => events.push([e, context, { ...context }])]));
  channel.subscribe(handlers);
  return { events, stop: () => channel.unsubscribe(handlers) };
}

let pool;
beforeAll(() => {
  pool = new Pool({ threads: 2 });
});
afterAll(() => pool.close());

describe('corepool:call', () => {
  test('a call publishes start and end around its sending, then asyncStart and asyncEnd with its outcome', async () => {
    const r = record('corepool:call');
    try {
      const result = await pool.exec('echo', 41);
      expect(result).toBe(41);
      expect(r.events.map(([e]) => e)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
      const [, context, atStart] = r.events[0];
      expect(atStart).toMatchObject({ kind: 'exec', method: 'echo', code: null, ms: null });
      expect(context.pool).toBe(pool);
      // The same object travels through every event, and learned the outcome before asyncStart.
      for (const [, c] of r.events) expect(c).toBe(context);
      expect(r.events[2][2]).toMatchObject({ code: 0, result: 41 });
      expect(r.events[2][2].ms).toBeGreaterThanOrEqual(0);
    } finally {
      r.stop();
    }
  });

  test('a failed call publishes error before asyncStart, with the RpcError and its code', async () => {
    const r = record('corepool:call');
    try {
      await expect(pool.exec('no_such_method')).rejects.toMatchObject({ code: -32601 });
      expect(r.events.map(([e]) => e)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
      const context = r.events[0][1];
      expect(context.error).toBeInstanceOf(RpcError);
      expect(context.code).toBe(-32601);
    } finally {
      r.stop();
    }
  });

  test('every kind of call is published, named by its entry point', async () => {
    const r = record('corepool:call');
    try {
      await pool.exec('echo', 1);
      await pool.call('echo', [2]);
      await pool.map('echo', [1, 2, 3]);
      await pool.broadcast('echo', 3);
      await pool.request({ jsonrpc: '2.0', method: 'echo', params: [4], id: 1 });
      await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[5],"id":2}');
      await pool.call('echo', 6, { timeout: 1000 }).catch(() => {});
      const starts = r.events.filter(([e]) => e === 'start').map(([, , c]) => [c.kind, c.method]);
      expect(starts).toEqual([
        ['exec', 'echo'],
        ['call', 'echo'],
        ['map', 'echo'],
        ['broadcast', 'echo'],
        ['request', null],
        ['handle', null],
        ['call', 'echo'],
      ]);
      // Each call ended once, in order.
      expect(r.events.filter(([e]) => e === 'asyncEnd').length).toBe(starts.length);
    } finally {
      r.stop();
    }
  });

  test("argument mistakes are calls too: their rejection is published, and what the caller gets doesn't change", async () => {
    const r = record('corepool:call');
    let withSubscriber;
    try {
      withSubscriber = await pool.exec(42).catch((e) => e);
    } finally {
      r.stop();
    }
    const without = await pool.exec(42).catch((e) => e);
    expect(withSubscriber).toBeInstanceOf(RpcError);
    expect(withSubscriber.code).toBe(without.code);
    expect(withSubscriber.message).toBe(without.message);
    expect(r.events.map(([e]) => e)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(r.events[0][2].method).toBe(42);
    expect(r.events[3][2].code).toBe(without.code);
  });

  test('a subscriber that throws does not change the call (its exception is reported as uncaught)', async () => {
    const { status, result } = await child(`
      const channel = require('node:diagnostics_channel').tracingChannel('corepool:call');
      const boom = () => { throw new Error('subscriber bug'); };
      const uncaught = [];
      process.on('uncaughtException', (e) => uncaught.push(e.message));
      channel.subscribe({ start: boom, end: boom, asyncStart: boom, asyncEnd: boom });
      const pool = new Pool({ threads: 1 });
      const value = await pool.exec('echo', 'fine');
      await new Promise((r) => setImmediate(r));
      await pool.close();
      out({ value, uncaught });
    `);
    expect(status).toBe(0);
    expect(result).toEqual({ value: 'fine', uncaught: ['subscriber bug', 'subscriber bug', 'subscriber bug', 'subscriber bug'] });
  });

  test('a task-file pool publishes run() and exec() calls', async () => {
    const tasks = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), minThreads: 1, maxThreads: 1 });
    const r = record('corepool:call');
    try {
      await tasks.run({ a: 1, b: 2 }, { name: 'add' }).catch(() => {});
      await tasks.exec('nope').catch(() => {});
    } finally {
      r.stop();
      await tasks.close();
    }
    const ends = r.events.filter(([e]) => e === 'asyncEnd').map(([, , c]) => [c.kind, c.method, c.pool === tasks]);
    expect(ends).toEqual([
      ['run', 'add', true],
      ['exec', 'nope', true],
    ]);
  });
});

describe('how a call ran: thread, waitMs, runMs', () => {
  test('a call on a 2-thread pool tells the thread of pool.stats() that ran it, its wait and its run, before asyncStart', async () => {
    const r = record('corepool:call');
    try {
      await pool.exec('sleep', 20);
    } finally {
      r.stop();
    }
    const threads = pool.stats().workers.map((w) => w.id);
    expect(threads).toHaveLength(2);
    const [, , atStart] = r.events[0];
    expect(atStart).toMatchObject({ thread: null, waitMs: null, runMs: null });
    const [event, , atAsyncStart] = r.events[2];
    expect(event).toBe('asyncStart');
    expect(threads).toContain(atAsyncStart.thread);
    expect(atAsyncStart.waitMs).toBeGreaterThanOrEqual(0);
    // The command sleeps 20 ms: its run cannot be shorter.
    expect(atAsyncStart.runMs).toBeGreaterThanOrEqual(20);
  });

  test('a call queued behind a busy thread tells a wait, and settles after the call it waited for', async () => {
    const one = new Pool({ threads: 1 });
    const r = record('corepool:call');
    try {
      const controller = new AbortController();
      const first = one.call('sleep', [3_600_000], { signal: controller.signal });
      // The thread is busy with the first call before the second is sent; the second runs only
      // once the first was stopped, which is after the second was queued.
      while (one.stats().running === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      const second = one.exec('echo', 2);
      controller.abort();
      await expect(first).rejects.toMatchObject({ code: RpcError.codes.Aborted });
      await expect(second).resolves.toBe(2);
    } finally {
      r.stop();
      await one.close();
    }
    const ends = r.events.filter(([e]) => e === 'asyncEnd').map(([, , c]) => c);
    expect(ends.map((c) => c.kind)).toEqual(['call', 'exec']);
    expect(ends.map((c) => c.thread)).toEqual([0, 0]);
    expect(ends[1].waitMs).toBeGreaterThan(0);
    expect(ends[0].runMs).toBeGreaterThanOrEqual(0);
  });

  test("a task-file pool's call tells the threadId of the worker that ran it", async () => {
    const tasks = new Pool({ filename: path.join(__dirname, 'fixtures', 'tasks', 'basic.js'), minThreads: 1, maxThreads: 1 });
    const r = record('corepool:call');
    let who;
    try {
      who = await tasks.run(undefined, { name: 'who' });
    } finally {
      r.stop();
      await tasks.close();
    }
    const [, , ended] = r.events.find(([e]) => e === 'asyncEnd');
    expect(typeof who).toBe('number');
    expect(who).not.toBe(0);
    expect(ended).toMatchObject({ kind: 'run', method: 'who', thread: who });
    expect(ended.waitMs).toBeGreaterThanOrEqual(0);
    expect(ended.runMs).toBeGreaterThanOrEqual(0);
  });

  test('a render tells its thread; calls that no single thread runs (map, broadcast) leave them null', async () => {
    const renders = record('corepool:render');
    const calls = record('corepool:call');
    try {
      await pool.render('Hi {{name}}', { name: 'you' });
      await pool.map('echo', [1, 2]);
      await pool.broadcast('echo', 3);
    } finally {
      renders.stop();
      calls.stop();
    }
    const threads = pool.stats().workers.map((w) => w.id);
    const [, , rendered] = renders.events.find(([e]) => e === 'asyncEnd');
    expect(threads).toContain(rendered.thread);
    expect(rendered.runMs).toBeGreaterThanOrEqual(0);
    const ends = calls.events.filter(([e]) => e === 'asyncEnd').map(([, , c]) => [c.kind, c.thread, c.waitMs, c.runMs]);
    expect(ends).toEqual([
      ['map', null, null, null],
      ['broadcast', null, null, null],
    ]);
  });
});

describe('corepool:render', () => {
  test('pool.render publishes on corepool:render, not corepool:call', async () => {
    const calls = record('corepool:call');
    const renders = record('corepool:render');
    try {
      await expect(pool.render('Hi {{name}}', { name: 'you' })).resolves.toBe('Hi you');
      await expect(pool.render('{{#f}}x{{/f}}', { f: () => (text) => `<${text}>` })).resolves.toBe('<x>');
    } finally {
      calls.stop();
      renders.stop();
    }
    expect(calls.events).toEqual([]);
    expect(renders.events.map(([e]) => e)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd', 'start', 'end', 'asyncStart', 'asyncEnd']);
    expect(renders.events[2][2]).toMatchObject({ kind: 'render', method: 'render', code: 0, result: 'Hi you' });
  });
});

test('with nothing subscribed, no context is made: a subscriber added later sees only later calls', async () => {
  await pool.exec('echo', 'before');
  const r = record('corepool:call');
  try {
    await pool.exec('echo', 'after');
  } finally {
    r.stop();
  }
  await pool.exec('echo', 'after stop');
  expect(r.events.filter(([e]) => e === 'asyncEnd').map(([, c]) => c.result)).toEqual(['after']);
});
