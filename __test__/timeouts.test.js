'use strict';
// A Timeout names the method and the limit ("sleep timed out after 30 ms"), whatever ran the
// call: a native command, an item of a map, a method served by a JavaScript thread, or a pool
// of JavaScript workers started from a task file.
const path = require('node:path');
const { Pool, RpcError } = require('..');
const { child, clean } = require('./helpers/child.js');
const { rejection, outcome } = require('./helpers/rejection.js');

const C = RpcError.codes;
const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

function expectTimeout(e, message) {
  expect(e).toBeInstanceOf(RpcError);
  expect(e.code).toBe(C.Timeout);
  expect(e.message).toBe(message);
}

describe('native commands', () => {
  const pool = new Pool({ threads: 2, timeout: 25 });
  afterAll(() => pool.close());

  test("a call's own limit, and the pool's default", async () => {
    expectTimeout(await rejection(pool.call('sleep', [5000], { timeout: 30 })), 'sleep timed out after 30 ms: raise the timeout or make the task shorter');
    expectTimeout(await rejection(pool.exec('sleep', 5000)), 'sleep timed out after 25 ms: raise the timeout or make the task shorter');
  });

  test('limits read back as given, fractions and tiny ones included', async () => {
    expectTimeout(await rejection(pool.call('sleep', [5000], { timeout: 33.2 })), 'sleep timed out after 33.2 ms: raise the timeout or make the task shorter');
    expectTimeout(await rejection(pool.call('sleep', [5000], { timeout: 1e-9 })), 'sleep timed out after 0.000001 ms: raise the timeout or make the task shorter');
  });

  test("a map's items, each with its limit", async () => {
    const out = await pool.map('sleep', [1, 5000], { timeout: 40, settle: 'all' });
    expect(out[0]).toEqual({ status: 'fulfilled', value: 1 });
    expectTimeout(out[1].reason, 'sleep timed out after 40 ms: raise the timeout or make the task shorter');
  });
});

describe('native commands: when the limit counts', () => {
  test('timeout counts from when the call starts, not while it waits', async () => {
    const pool = new Pool({ threads: 1 });
    const first = pool.exec('sleep', 150);
    const second = pool.call('sleep', [30], { timeout: 100 }); // waits ~150 ms, runs 30 ms
    const third = pool.call('sleep', [5000], { timeout: 50 });
    expect(await first).toBe(150);
    expect(await second).toBe(30);
    const e = await rejection(third, RpcError);
    expect(e.code).toBe(C.Timeout);
    await pool.close();
  });

  test('pool timeout applies by default; 0 per call lifts it', async () => {
    const pool = new Pool({ threads: 1, timeout: 40 });
    expect((await rejection(pool.exec('sleep', 5000), RpcError)).code).toBe(C.Timeout);
    expect(await pool.call('sleep', [80], { timeout: 0 })).toBe(80);
    await pool.close();
  });
});

describe('methods served by a JavaScript thread', () => {
  test("the caller's error and the handler's signal say the same", async () => {
    const pool = new Pool({ threads: 1 });
    let reason;
    const server = pool.serve({
      slowly: (ms, { signal }) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            resolve('late');
          });
          setTimeout(resolve, ms, ms);
        }),
    });
    expectTimeout(await rejection(pool.call('slowly', [5000], { timeout: 20 })), 'slowly timed out after 20 ms: raise the timeout or make the task shorter');
    await server.close(); // the handler has returned
    expect(reason).toBeInstanceOf(Error);
    expect([reason.name, reason.message]).toEqual(['TimeoutError', 'slowly timed out after 20 ms: raise the timeout or make the task shorter']);
    await pool.close();
  });

  test('a synchronous handler that blocks past its limit is answered with the same error when it returns', async () => {
    const pool = new Pool({ threads: 1 });
    const server = pool.serve({
      block(ms) {
        const until = Date.now() + ms;
        while (Date.now() < until);
        return ms;
      },
    });
    expectTimeout(await rejection(pool.call('block', [60], { timeout: 10 })), 'block timed out after 10 ms: raise the timeout or make the task shorter');
    await server.close();
    await pool.close();
  });

  test('names that would blur into the sentence are quoted', async () => {
    const pool = new Pool({ threads: 1 });
    const server = pool.serve({ 'take a while': () => new Promise((resolve) => setTimeout(resolve, 100)) });
    expectTimeout(await rejection(pool.call('take a while', [], { timeout: 5 })), '"take a while" timed out after 5 ms: raise the timeout or make the task shorter');
    await server.close();
    await pool.close();
  });
});

describe('a pool of JavaScript workers from a task file', () => {
  test("a call's limit, the pool's default and a map's items", async () => {
    const pool = new Pool({ filename: task('basic.js'), threads: 1, timeout: 50 });
    expectTimeout(await rejection(pool.call('slow', [200], { timeout: 20 })), 'slow timed out after 20 ms: raise the timeout or make the task shorter');
    expectTimeout(await rejection(pool.exec('slow', 200)), 'slow timed out after 50 ms: raise the timeout or make the task shorter');
    const out = await pool.map('slow', [200], { timeout: 15, settle: 'all' });
    expectTimeout(out[0].reason, 'slow timed out after 15 ms: raise the timeout or make the task shorter');
    await pool.destroy();
  });
});

test('one timeout rule: a pool option, a call option and a RemotePool option refuse the same values in the same words', async () => {
  // Issue #29: the pool's options.timeout was checked in lib/options.js and again natively,
  // by two rules with two texts; now every timeout is held to the calls' own rule.
  const { RemotePool } = require('../lib/nats.js');
  // RemotePool checks its options before it uses its connection: this one is never used.
  const fakeConnection = { request() {}, subscribe() {}, publish() {} };
  const pool = new Pool({ threads: 1 });
  for (const bad of [-1, NaN, -Infinity, '5', null, true, {}, 10n]) {
    let thrown;
    try {
      new Pool({ threads: 1, timeout: bad });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(RangeError);
    const rule = thrown.message.replace(/^corepool: options\.timeout /, '');
    expect(rule).toMatch(/^must be a number of ms ≥ 0 \(0 or Infinity: no limit\), got /);
    const refused = await rejection(pool.call('echo', [1], { timeout: bad }));
    expect([refused.code, refused.message]).toEqual([C.InvalidRequest, `options.timeout ${rule}`]);
    expect(() => new RemotePool(fakeConnection, { timeout: bad })).toThrow(`corepool/nats: RemotePool options.timeout ${rule}`);
  }
  // Limits too long to reach (and none) let an echo through; a tiny one is a limit, accepted.
  for (const fine of [undefined, 0, Infinity, 1e22, 2 ** 31, 1e300]) {
    const p = new Pool({ threads: 1, timeout: fine });
    expect(await p.call('echo', [1], { timeout: fine })).toBe(1);
    await p.close();
  }
  await new Pool({ threads: 1, timeout: 1e-9 }).close();
  await pool.close();
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §3: timeouts of any size', () => {
  test('1e22 and 1e300 ms mean "no limit in practice": the call answers and the pool thread survives', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const a = await pool.call('echo', ['a'], { timeout: 1e22 });
      const b = await pool.call('echo', ['b'], { timeout: 1e300 });
      const c = await pool.call('echo', ['c'], { timeout: Number.MAX_VALUE });
      const d = await pool.exec('echo', 'd');
      await pool.close();
      out([a, b, c, d]);
    `);
    expect(clean(r)).toEqual(['a', 'b', 'c', 'd']);
  });

  test('a pool timeout of 1e300 ms is accepted as effectively none; NaN, negatives and non-numbers are RangeErrors naming the option', async () => {
    const pool = new Pool({ threads: 1, timeout: 1e300 });
    expect(await pool.exec('sleep', 5)).toBe(5);
    await pool.close();
    for (const t of [NaN, -1, '5']) {
      expect(() => new Pool({ timeout: t })).toThrow(RangeError);
      expect(() => new Pool({ timeout: t })).toThrow(/options\.timeout/);
    }
  });

  test('a timeout of 1e-9 ms is a (tiny) limit, never "none": per call and as the pool option', async () => {
    const pool = new Pool({ threads: 1 });
    expect(await outcome(pool.call('sleep', [200], { timeout: 1e-9 }))).toMatchObject({ code: C.Timeout });
    expect(await outcome(pool.call('sleep', [200], { timeout: Number.MIN_VALUE }))).toMatchObject({ code: C.Timeout });
    await pool.close();
    const tight = new Pool({ threads: 1, timeout: 1e-9 });
    expect(await outcome(tight.exec('sleep', 200))).toMatchObject({ code: C.Timeout });
    await tight.close();
  });
});

describe('issue 13 §14: served calls with timeouts past 2^31−1 ms', () => {
  test('do not time out at once', async () => {
    const r = await child(`
      const pool = Pool.shared();
      const server = pool.serve({ async later(ms) { await new Promise((r) => setTimeout(r, ms)); return ms; } });
      const got = [];
      for (const timeout of [2 ** 31, 2 ** 40, 1e22]) got.push(await pool.call('later', [30], { timeout }).catch((e) => e.code));
      await server.close();
      out(got);
    `);
    expect(clean(r)).toEqual([30, 30, 30]);
  });
});
