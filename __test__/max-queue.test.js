'use strict';
// maxQueue counts the calls that wait for a thread: with 2 threads and maxQueue 3, exactly 5
// calls are accepted while every thread is busy and the 6th is QueueFull, the same for native
// commands, methods served by JavaScript threads and pools of JavaScript workers from a task file.
const path = require('node:path');
const { Pool, RpcError } = require('..');
const { child, clean } = require('./helpers/child.js');
const { rejection } = require('./helpers/rejection.js');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

/** Starts `n` calls; resolves with which were refused with QueueFull (true) once `settle()`. */
function start(n, call) {
  const calls = Array.from({ length: n }, (_, i) => call(i));
  return {
    outcomes: () =>
      Promise.all(
        calls.map((p) =>
          p.then(
            () => 'ok',
            (e) => (e instanceof RpcError && e.code === C.QueueFull ? 'QueueFull' : `${e.type}: ${e.message}`),
          ),
        ),
      ),
  };
}

/** Resolves once `done()` is true; rejects after 20 s (a hang guard: a test that fails instead of hanging). */
async function until(done) {
  const giveUp = Date.now() + 20_000;
  while (!done()) {
    if (Date.now() > giveUp) throw new Error(`not reached in 20 s: ${done}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const FIVE_AND_FULL = ['ok', 'ok', 'ok', 'ok', 'ok', 'QueueFull'];

test('native commands: 2 running + 3 waiting, the 6th is QueueFull', async () => {
  const pool = new Pool({ threads: 2, maxQueue: 3 });
  const calls = start(6, () => pool.exec('sleep', 50));
  expect(await calls.outcomes()).toEqual(FIVE_AND_FULL);
  await pool.close();
});

test("served methods: the same 5, whatever the pool's native threads", async () => {
  // 4 idle native threads and 2 servers that run one call at a time: the native threads are no
  // room for served calls (they used to be: 3 + 4 + 2 = 9 calls were accepted).
  const pool = new Pool({ threads: 4, maxQueue: 3 });
  let open;
  const gate = new Promise((resolve) => {
    open = resolve;
  });
  const servers = [pool.serve({ hold: () => gate }), pool.serve({ hold: () => gate })];
  const calls = start(6, () => pool.exec('hold'));
  try {
    // Each server takes one call when its thread drains its queue; the other 3 stay queued.
    await until(() => pool.stats().running === 2);
    expect(pool.stats()).toMatchObject({ running: 2, queued: 3 });
  } finally {
    open();
  }
  expect(await calls.outcomes()).toEqual(FIVE_AND_FULL);
  await Promise.all(servers.map((s) => s.close()));
  await pool.close();
});

test('a server of concurrency 3 runs 3 calls at once: 3 + 3 are accepted', async () => {
  const pool = new Pool({ threads: 1, maxQueue: 3 });
  let open;
  const gate = new Promise((resolve) => {
    open = resolve;
  });
  const server = pool.serve({ hold: () => gate }, { concurrency: 3 });
  const calls = start(7, () => pool.exec('hold'));
  open();
  expect(await calls.outcomes()).toEqual([...FIVE_AND_FULL.slice(0, 5), 'ok', 'QueueFull']);
  await server.close();
  await pool.close();
});

describe('a pool of JavaScript workers from a task file', () => {
  test('calls made while the workers start count them as running: the same 5', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 2, maxQueue: 3 });
    const calls = start(6, () => pool.exec('slow', 50));
    expect(await calls.outcomes()).toEqual(FIVE_AND_FULL);
    await pool.close();
  });

  test('and once they are up', async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 2, maxQueue: 3 });
    await pool.ready();
    const calls = start(6, () => pool.exec('slow', 50));
    expect(await calls.outcomes()).toEqual(FIVE_AND_FULL);
    await pool.close();
  });
});

test("onFull 'wait': what does not fit waits its turn and runs, in order", async () => {
  const pool = new Pool({ threads: 1, maxQueue: 0, onFull: 'wait' });
  const order = [];
  const server = pool.serve({
    hold: async (i) => {
      order.push(i);
      await new Promise((resolve) => setTimeout(resolve, 5));
    },
  });
  const calls = Array.from({ length: 5 }, (_, i) => pool.exec('hold', i));
  // One runs on the server; the native thread is no room for the others.
  expect(pool.stats().waiting).toBe(4);
  await Promise.all(calls);
  expect(order).toEqual([0, 1, 2, 3, 4]);
  await server.close();
  await pool.close();
});


describe('native commands: the bound and onFull', () => {
  test("maxQueue 'auto' is threads²", async () => {
    const pool = new Pool({ threads: 3, maxQueue: 'auto' });
    expect(pool.options.maxQueue).toBe(9);
    await pool.close();
  });

  test("maxQueue with onFull 'reject' → QueueFull beyond the bound", async () => {
    const pool = new Pool({ threads: 1, maxQueue: 2 });
    const running = pool.exec('sleep', 100);
    const q1 = pool.exec('echo', 1);
    const q2 = pool.exec('echo', 2);
    const e = await rejection(pool.exec('echo', 3), RpcError);
    expect(e.code).toBe(C.QueueFull);
    expect(await Promise.all([running, q1, q2])).toEqual([100, 1, 2]);
    await pool.close();
  });

  test('maxQueue 0: a call runs only when a thread is free', async () => {
    const pool = new Pool({ threads: 1, maxQueue: 0 });
    const running = pool.exec('sleep', 50);
    expect((await rejection(pool.exec('echo', 1), RpcError)).code).toBe(C.QueueFull);
    await running;
    expect(await pool.exec('echo', 2)).toBe(2);
    await pool.close();
  });

  test("onFull 'wait': calls wait for room, in order, and all complete", async () => {
    const pool = new Pool({ threads: 1, maxQueue: 1, onFull: 'wait' });
    const order = [];
    const calls = Array.from({ length: 30 }, (_, i) => pool.exec('sleep', 1).then(() => order.push(i)));
    const s = pool.stats();
    expect(s.queued + s.running).toBeLessThanOrEqual(2);
    expect(s.waiting).toBeGreaterThan(0);
    await Promise.all(calls);
    expect(order).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await pool.close();
  });

  test('abort also removes a call waiting for room', async () => {
    const pool = new Pool({ threads: 1, maxQueue: 0, onFull: 'wait' });
    const first = pool.exec('sleep', 100);
    const ac = new AbortController();
    const waiting = pool.call('echo', [1], { signal: ac.signal });
    ac.abort();
    expect((await rejection(waiting, RpcError)).code).toBe(C.Aborted);
    expect(pool.stats().waiting).toBe(0);
    await first;
    await pool.close();
  });
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §4: destroy() racing admission from the wait list', () => {
  test("60 calls on 4 threads with maxQueue 0 and onFull 'wait', then destroy(): every call settles, 40 rounds", async () => {
    const r = await child(
      `
      let unsettled = 0;
      for (let round = 0; round < 40; round++) {
        const pool = new Pool({ threads: 4, maxQueue: 0, onFull: 'wait' });
        let settled = 0;
        const calls = Array.from({ length: 60 }, (_, i) => pool.exec('sleep', i % 3).then(() => settled++, () => settled++));
        await new Promise((r) => setTimeout(r, round % 5));
        const destroyed = pool.destroy();
        const deadline = new Promise((r) => setTimeout(r, 5000, 'hung').unref());
        if ((await Promise.race([Promise.all(calls).then(() => destroyed), deadline])) === 'hung') unsettled += 60 - settled;
      }
      out({ unsettled });
      process.exit(0);
      `,
      { timeoutMs: 240_000 },
    );
    expect(clean(r)).toEqual({ unsettled: 0 });
  }, 250_000);
});
