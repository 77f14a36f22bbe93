'use strict';
// Pool: options, calls, JSON-RPC 2.0, scheduling, call options and abort, close() and destroy().
// What values cross is values.test.js; timeouts and maxQueue have files of their own too.
const fs = require('node:fs');
const os = require('node:os');
const { Pool, RpcError, poolSize } = require('..');
const { sleepEnd, first } = require('./helpers/order.js');
const { rejection: rejectionOf } = require('./helpers/rejection.js');
const { child, clean } = require('./helpers/child.js');

const C = RpcError.codes;
const cores = os.availableParallelism();

/** Every call here that fails, fails with an RpcError: any other rejection fails the test. */
const rejection = (promise) => rejectionOf(promise, RpcError);

describe('options', () => {
  test('threads: 0 → cores, negative → cores + n (min 1), positive → n', async () => {
    const pools = [new Pool({ threads: 0 }), new Pool({ threads: -1 }), new Pool({ threads: -1000 }), new Pool({ threads: 3 })];
    expect(pools.map((p) => p.threads)).toEqual([cores, Math.max(cores - 1, 1), 1, 3]);
    expect(pools[3].stats().workers).toHaveLength(3);
    await Promise.all(pools.map((p) => p.close()));
  });

  test.each([
    [{ strategy: 'fastest' }, TypeError, /strategy/],
    [{ strategy: 'LeastBusy' }, TypeError, /strategy/],
    [{ threads: 1.5 }, TypeError, /threads/],
    [{ threads: '2' }, TypeError, /threads/],
    [{ maxQueue: -1 }, RangeError, /maxQueue/],
    [{ maxQueue: 1.5 }, RangeError, /maxQueue/],
    [{ maxQueue: 'lots' }, RangeError, /maxQueue/],
    [{ onFull: 'drop' }, TypeError, /onFull/],
    [{ timeout: -1 }, RangeError, /timeout/],
    [{ timeout: NaN }, RangeError, /timeout/],
    [{ niceIncrement: -1 }, RangeError, /niceIncrement/],
    [{ niceIncrement: 20 }, RangeError, /niceIncrement/],
    [{ niceIncrement: 2.5 }, RangeError, /niceIncrement/],
    [{ thread: 2 }, TypeError, /unknown option 'thread'/],
    [42, TypeError, /options must be an object/],
  ])('bad option %j → %p naming it', (options, type, message) => {
    expect(() => new Pool(options)).toThrow(type);
    expect(() => new Pool(options)).toThrow(message);
  });

  // Linux reports each thread's nice value in /proc/self/task/<tid>/stat (field 19).
  (process.platform === 'linux' ? test : test.skip)('niceIncrement lowers every pool thread, not the JS threads', async () => {
    const nices = () => {
      const out = {};
      for (const tid of fs.readdirSync('/proc/self/task')) {
        const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
        if (Number(tid) === process.pid) out.main = nice;
        else if (name.startsWith('corepool-')) (out.pool ??= []).push(nice);
      }
      return out;
    };
    // Threads of closed pools may linger a moment, all at the process's own nice.
    const plain = new Pool({ threads: 2 });
    await plain.broadcast('echo', 1); // every thread has started
    const before = nices();
    expect(new Set(before.pool)).toEqual(new Set([before.main]));
    const pool = new Pool({ threads: 5, niceIncrement: 7 });
    expect(pool.options.niceIncrement).toBe(7);
    await pool.broadcast('echo', 1);
    const after = nices();
    expect(after.pool.filter((n) => n === before.main + 7)).toHaveLength(5);
    expect(after.pool.filter((n) => n !== before.main && n !== before.main + 7)).toEqual([]);
    expect(after.main).toBe(before.main);
    await Promise.all([pool.close(), plain.close()]);
  });

  test('poolSize follows cores · (1 + wait/compute)', () => {
    expect(poolSize({ cores: 4, waitMs: 30, computeMs: 10 })).toBe(16);
    expect(poolSize({ cores: 2 })).toBe(2);
    expect(poolSize({ cores: 0 })).toBe(1);
    expect(() => poolSize({ cores: 2, computeMs: 0 })).toThrow(RangeError);
    expect(() => poolSize({ cores: -1 })).toThrow(RangeError);
  });
});

describe('calls', () => {
  let pool;
  beforeAll(() => {
    pool = new Pool({ threads: 2 });
  });
  afterAll(() => pool.close());

  test('exec runs the built-in commands', async () => {
    expect(await pool.exec('echo', { a: [1, 'x', null, true], b: 1e21, c: -0 })).toEqual({ a: [1, 'x', null, true], b: 1e21, c: -0 });
    expect(await pool.exec('fibonacci', 90)).toBe('2880067194370816120');
    expect(await pool.exec('fibonacci', 0)).toBe('0');
    let sum = 0;
    for (let i = 0; i < 100000; i++) sum += Math.sqrt(i);
    expect(await pool.exec('square_sum', 100000)).toBe(sum);
    expect(await pool.exec('sleep', 5)).toBe(5);
  });

  test('call takes a params array (or one value) and options', async () => {
    expect(await pool.call('echo', [7])).toBe(7);
    expect(await pool.call('echo', 'x')).toBe('x');
    expect(await pool.call('sleep', [1], { timeout: 1000 })).toBe(1);
  });

  test('happycoin: every coin is happy and divisible by 10000; seed makes it repeatable', async () => {
    const isHappy = (n) => {
      const seen = new Set();
      while (n !== 1n && n !== 4n && !seen.has(n)) {
        seen.add(n);
        let s = 0n;
        for (const d of n.toString()) s += BigInt(d) ** 2n;
        n = s;
      }
      return n === 1n;
    };
    const [a, b] = await Promise.all([pool.exec('happycoin', { attempts: 2e6, seed: 7 }), pool.exec('happycoin', { attempts: 2e6, seed: 7 })]);
    expect(a).toEqual(b);
    expect(a.count).toBe(a.coins.length);
    expect(a.count).toBeGreaterThan(5);
    for (const c of a.coins) {
      const n = BigInt(c);
      expect(n % 10000n).toBe(0n);
      expect(isHappy(n)).toBe(true);
    }
    const other = await pool.exec('happycoin', { attempts: 2e6, seed: 8 });
    expect(other.coins).not.toEqual(a.coins);
  });

  test.each([NaN, Infinity, -1, 2 ** 60, 1.5, '100', null])('happycoin attempts %p → InvalidParams', async (attempts) => {
    const e = await rejection(pool.exec('happycoin', { attempts }));
    expect(e.code).toBe(C.InvalidParams);
    expect(e.message).toMatch(/attempts/);
  });

  test('unknown methods, prototype names and non-string methods are refused', async () => {
    for (const m of ['nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '']) {
      const e = await rejection(pool.exec(m));
      expect(e.code).toBe(C.MethodNotFound);
      expect(e.type).toBe('MethodNotFound');
    }
    for (const m of [42, null, undefined, {}, Symbol('x')]) {
      const e = await rejection(pool.exec(m));
      expect(e.code).toBe(C.InvalidRequest);
      expect(e.message).toMatch(/method must be a string/);
    }
  });

  test('wrong param count or type → InvalidParams, never a crash', async () => {
    const cases = [
      ['echo'],
      ['echo', 1, 2],
      ['sleep', 'soon'],
      ['sleep', -1],
      ['sleep', 1e12],
      ['fibonacci', 1e9],
      ['fibonacci', -1],
      ['square_sum', 2 ** 60],
      ['happycoin', 5],
      ['happycoin', { attempts: 1, colour: 'red' }],
      ['happycoin', { attempts: 1, into: new BigUint64Array(4) }],
    ];
    for (const [m, ...params] of cases) {
      const e = await rejection(pool.exec(m, ...params));
      expect([m, e.code]).toEqual([m, C.InvalidParams]);
    }
  });

  test('a panicking command rejects with InternalError and the pool keeps serving', async () => {
    const e = await rejection(pool.exec('panic', 'on purpose'));
    expect(e.code).toBe(C.InternalError);
    expect(e.message).toMatch(/on purpose/);
    const again = await Promise.all([1, 2, 3, 4].map((i) => pool.exec('echo', i)));
    expect(again).toEqual([1, 2, 3, 4]);
  });

  test('broadcast runs once on every thread', async () => {
    const before = pool.stats().workers.map((w) => w.completed);
    expect(await pool.broadcast('echo', 'hi')).toEqual(['hi', 'hi']);
    const after = pool.stats().workers.map((w) => w.completed);
    expect(after.map((c, i) => c - before[i])).toEqual([1, 1]);
    expect((await rejection(pool.broadcast('nope'))).code).toBe(C.MethodNotFound);
  });

  test('methods() lists the built-in commands', () => {
    const names = pool.methods().map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'sleep', 'square_sum', 'fibonacci', 'happycoin']));
    for (const m of pool.methods()) {
      expect(typeof m.params).toBe('string');
      expect(m.summary.length).toBeGreaterThan(5);
    }
  });

  test('100k calls submitted at once all settle with their own result', async () => {
    const n = 100000;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => pool.exec('echo', i)));
    let bad = 0;
    for (let i = 0; i < n; i++) if (results[i] !== i) bad++;
    expect(bad).toBe(0);
  });

  test('waves of calls, some aborted, reuse the slots of finished calls and each settles once with its own outcome', async () => {
    // Calls in flight live in slots that later calls reuse; a call's id tells a reused slot's
    // new call from the old one. Waves of different sizes, with every third call aborted while
    // queued or running, each settle exactly once with their own result.
    let bad = 0;
    let settledTwice = 0;
    let checksum = 0;
    let expected = 0;
    for (let wave = 0; wave < 30; wave++) {
      const n = 50 + ((wave * 997) % 3000);
      const controllers = [];
      const outcomes = Array.from({ length: n }, (_, i) => {
        const value = wave * 1e6 + i;
        if (i % 3 !== 0) {
          expected += value;
          return pool.exec('echo', value);
        }
        const c = new AbortController();
        controllers.push(c);
        return pool.call('echo', [value], { signal: c.signal });
      });
      for (const c of controllers) c.abort();
      const seen = new Array(n).fill(0);
      await Promise.all(
        outcomes.map((p, i) =>
          p.then(
            (v) => {
              if (++seen[i] > 1) settledTwice++;
              if (v !== wave * 1e6 + i) bad++;
              checksum += v;
              if (i % 3 === 0) expected += v; // an aborted call may finish first, with its result
            },
            (e) => {
              if (++seen[i] > 1) settledTwice++;
              if (i % 3 !== 0 || e.code !== C.Aborted) bad++;
            },
          ),
        ),
      );
    }
    expect(bad).toBe(0);
    expect(settledTwice).toBe(0);
    expect(checksum).toBe(expected);
  });
});

describe('JSON-RPC 2.0', () => {
  let pool;
  beforeAll(() => {
    pool = new Pool({ threads: 2 });
  });
  afterAll(() => pool.close());

  test('request answers with result xor error and echoes the id', async () => {
    expect(await pool.request({ jsonrpc: '2.0', method: 'fibonacci', params: [90], id: 7 })).toEqual({
      jsonrpc: '2.0',
      result: '2880067194370816120',
      id: 7,
    });
    expect(await pool.request({ jsonrpc: '2.0', method: 'nope', id: 'a' })).toEqual({
      jsonrpc: '2.0',
      error: { code: -32601, message: 'Method not found: "nope": check the name against pool.methods()' },
      id: 'a',
    });
    const bad = await pool.request({ jsonrpc: '2.0', method: 'sleep', params: ['x'], id: null });
    expect(bad.error.code).toBe(-32602);
    expect(bad.id).toBe(null);
  });

  test('by-name params reach the command as one object', async () => {
    const r = await pool.request({ jsonrpc: '2.0', method: 'happycoin', params: { attempts: 1000, seed: 1 }, id: 1 });
    expect(r.result.count).toBe(r.result.coins.length);
  });

  test('invalid requests get -32600', async () => {
    for (const req of [
      { jsonrpc: '1.0', method: 'echo', params: [1], id: 1 },
      { jsonrpc: '2.0', method: 5, id: 1 },
      { jsonrpc: '2.0', method: 'echo', params: 'x', id: 1 },
      { method: 'echo', id: 1 },
      'echo',
      42,
      { jsonrpc: '2.0', method: 'echo', params: [() => 1], id: 1 },
    ]) {
      const r = await pool.request(req);
      expect(r.error.code).toBe(-32600);
      expect(r.result).toBeUndefined();
    }
  });

  test('notifications run and get no response', async () => {
    expect(await pool.request({ jsonrpc: '2.0', method: 'echo', params: [1] })).toBeNull();
    expect(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[1]}')).toBe('');
  });

  test('batches: one response per non-notification, in order; empty batch is invalid', async () => {
    const out = await pool.request([
      { jsonrpc: '2.0', method: 'echo', params: [1], id: 1 },
      { jsonrpc: '2.0', method: 'echo', params: [2] },
      { jsonrpc: '2.0', method: 'sleep', params: [20], id: 2 },
      { jsonrpc: '2.0', method: 'nope', id: 3 },
      { foo: 'boo' },
    ]);
    expect(out).toEqual([
      { jsonrpc: '2.0', result: 1, id: 1 },
      { jsonrpc: '2.0', result: 20, id: 2 },
      { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found: "nope": check the name against pool.methods()' }, id: 3 },
      { jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(/jsonrpc/) }, id: null },
    ]);
    const empty = await pool.request([]);
    expect(empty.error.code).toBe(-32600);
    expect(await pool.request([{ jsonrpc: '2.0', method: 'echo', params: [1] }])).toBeNull();
  });

  test('handle: text in, text out; parse errors are -32700', async () => {
    expect(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}')).toBe('{"jsonrpc":"2.0","result":1,"id":1}');
    const parse = JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":'));
    expect(parse.error.code).toBe(-32700);
    expect(parse.id).toBe(null);
    expect(JSON.parse(await pool.handle('[]')).error.code).toBe(-32600);
    expect(JSON.parse(await pool.handle(42)).error.code).toBe(-32600);
    // Text that is not JSON is a parse error however deep it nests, as JSON.parse says
    // (JSONTestSuite n_structure_100000_opening_arrays, n_structure_open_array_object); JSON
    // nested past the 512 levels of every value is an invalid request.
    for (const text of ['['.repeat(100000), '[{"":'.repeat(50000), '['.repeat(600) + ']'.repeat(599), '['.repeat(600) + 'x' + ']'.repeat(600)]) {
      expect(() => JSON.parse(text)).toThrow(SyntaxError);
      const answer = JSON.parse(await pool.handle(text));
      expect([answer.error.code, answer.id]).toEqual([-32700, null]);
    }
    const tooDeep = JSON.parse(await pool.handle('['.repeat(600) + ']'.repeat(600)));
    expect([tooDeep.error.code, tooDeep.error.message]).toEqual([-32600, 'Invalid Request: it is nested more than 512 levels deep']);
    const batch = JSON.parse(await pool.handle('[1,{"jsonrpc":"2.0","method":"echo","params":["x"],"id":9}]'));
    expect(batch).toEqual([
      { jsonrpc: '2.0', error: { code: -32600, message: expect.any(String) }, id: null },
      { jsonrpc: '2.0', result: 'x', id: 9 },
    ]);
  });
});

describe('scheduling', () => {
  test('roundrobin serves 0,1,2,0,1,2…', async () => {
    const pool = new Pool({ threads: 3, strategy: 'roundrobin' });
    const served = [];
    for (let i = 0; i < 9; i++) {
      const before = pool.stats().workers.map((w) => w.completed);
      await pool.exec('echo', i);
      const after = pool.stats().workers.map((w) => w.completed);
      served.push(after.findIndex((c, w) => c > before[w]));
    }
    expect(served).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    await pool.close();
  });

  test('leastbusy never queues behind a busy worker while another is idle, and breaks ties among sleeping workers at random', async () => {
    const pool = new Pool({ threads: 4, strategy: 'leastbusy' });
    const firstPicks = new Set();
    for (let round = 0; round < 40; round++) {
      // Past the idle workers' polling window, so all sleep (an awake one would win the tie).
      await new Promise((r) => setTimeout(r, 2));
      const before = pool.stats().workers.map((w) => w.completed);
      await pool.exec('echo', round);
      const after = pool.stats().workers.map((w) => w.completed);
      firstPicks.add(after.findIndex((c, w) => c > before[w]));
    }
    // All idle and asleep: ties. The book's version always picks worker 0; ours spreads.
    expect(firstPicks.size).toBeGreaterThan(1);

    // Three long calls occupy three workers; every short call must go to the fourth.
    const long = [0, 1, 2].map(() => pool.exec('sleep', 400));
    await new Promise((r) => setTimeout(r, 50));
    const busy = pool.stats().workers.map((w) => w.running);
    expect(busy.reduce((a, b) => a + b)).toBe(3);
    const idle = busy.indexOf(0);
    const before = pool.stats().workers[idle].completed;
    for (let i = 0; i < 10; i++) await pool.exec('sleep', 1);
    expect(pool.stats().workers[idle].completed - before).toBe(10);
    await Promise.all(long);
    await pool.close();
  });

  test('random reaches every worker', async () => {
    const pool = new Pool({ threads: 4, strategy: 'random' });
    await Promise.all(Array.from({ length: 400 }, (_, i) => pool.exec('echo', i)));
    const per = pool.stats().workers.map((w) => w.completed);
    for (const c of per) expect(c).toBeGreaterThan(40);
    await pool.close();
  });

  test('stats reports counts and latencies', async () => {
    const pool = new Pool({ threads: 2 });
    await Promise.all([pool.exec('sleep', 20), pool.exec('sleep', 20), pool.exec('nope').catch(() => {})]);
    const s = pool.stats();
    expect(s).toMatchObject({ threads: 2, strategy: 'leastbusy', queued: 0, running: 0, completed: 2 });
    expect(s.workers.reduce((a, w) => a + w.busyMs, 0)).toBeGreaterThanOrEqual(35);
    expect(s.runTime.max).toBeGreaterThanOrEqual(19);
    expect(s.runTime.p50).toBeLessThanOrEqual(s.runTime.p99);
    await pool.close();
  });
});

describe('limits: call options and abort (timeouts and maxQueue: timeouts.test.js, max-queue.test.js)', () => {
  test('bad call options reject (never throw)', async () => {
    const pool = new Pool({ threads: 1 });
    for (const options of [{ timeout: -1 }, { timeout: 'soon' }, { signal: {} }, 5]) {
      let threw = false;
      let p;
      try {
        p = pool.call('echo', [1], options);
      } catch {
        threw = true;
      }
      expect(threw).toBe(false);
      expect((await rejection(p)).code).toBe(C.InvalidRequest);
    }
    await pool.close();
  });

  test('a pre-aborted signal rejects at once; abort removes a queued call and stops a running one', async () => {
    const pool = new Pool({ threads: 1 });
    const pre = new AbortController();
    pre.abort();
    expect((await rejection(pool.call('echo', [1], { signal: pre.signal }))).code).toBe(C.Aborted);

    const running = new AbortController();
    const queued = new AbortController();
    const sleepEnds = sleepEnd(10000);
    const r = pool.call('sleep', [10000], { signal: running.signal });
    const q = pool.call('echo', ['never'], { signal: queued.signal });
    queued.abort();
    expect((await rejection(q)).code).toBe(C.Aborted);
    const s = pool.stats();
    expect(s.queued + s.running).toBe(1); // only the sleep is left
    running.abort();
    // Stopped, not run to its end: the one thread serves the next call before the sleep could have ended.
    expect(await first(rejection(r).then((e) => e.code), sleepEnds)).toBe(C.Aborted);
    expect(await first(pool.exec('echo', 'still serving'), sleepEnds)).toBe('still serving');
    await pool.close();
  });
});

describe('lifecycle', () => {
  test('close() settles every accepted call, then rejects new ones; twice is fine', async () => {
    const pool = new Pool({ threads: 2 });
    const calls = Array.from({ length: 50 }, (_, i) => pool.exec('sleep', 2).then(() => i));
    const closing = pool.close();
    expect((await rejection(pool.exec('echo', 1))).code).toBe(C.PoolClosed);
    await Promise.all([closing, pool.close()]);
    expect(await Promise.all(calls)).toHaveLength(50);
    expect((await rejection(pool.exec('echo', 1))).code).toBe(C.PoolClosed);
    expect(JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":4}')).error.code).toBe(C.PoolClosed);
  });

  test('destroy() rejects queued calls with PoolClosed and stops running ones', async () => {
    const pool = new Pool({ threads: 1 });
    const sleepEnds = sleepEnd(10000);
    const running = pool.exec('sleep', 10000);
    const queued = Array.from({ length: 20 }, () => pool.exec('echo', 1));
    const codes = Promise.all([running, ...queued].map((p) => rejection(p).then((e) => e.code)));
    await new Promise((r) => setTimeout(r, 20));
    // The running sleep is stopped, not waited for: all is settled before it could have ended.
    const settled = Promise.all([pool.destroy(), codes]).then(([, c]) => new Set(c));
    expect(await first(settled, sleepEnds)).toEqual(new Set([C.PoolClosed]));
  });

  test("drained() and the 'drain' event", async () => {
    const pool = new Pool({ threads: 2 });
    await pool.drained(); // nothing in flight
    let drains = 0;
    pool.on('drain', () => drains++);
    const calls = Array.from({ length: 10 }, () => pool.exec('sleep', 5));
    await pool.drained();
    expect(pool.stats().completed).toBe(10);
    expect(drains).toBe(1);
    await Promise.all(calls);
    await pool.close();
  });

  test('Symbol.asyncDispose closes the pool', async () => {
    const pool = new Pool({ threads: 1 });
    const p = pool.exec('sleep', 10);
    await pool[Symbol.asyncDispose]();
    expect(await p).toBe(10);
    expect((await rejection(pool.exec('echo', 1))).code).toBe(C.PoolClosed);
  });

  test('RpcError carries code, type and data and serialises as a JSON-RPC error', () => {
    const e = new RpcError(C.CommandFailed, 'nope', { why: 1 });
    expect(e).toBeInstanceOf(Error);
    expect(e.type).toBe('CommandFailed');
    expect(JSON.parse(JSON.stringify(e))).toEqual({ code: -32000, message: 'nope', data: { why: 1 } });
    expect(Object.isFrozen(RpcError.codes)).toBe(true);
  });
});

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §10: user callbacks never run inside the settle loop', () => {
  test("a throwing 'drain' listener surfaces as an uncaught exception, and every other call in the batch settles", async () => {
    const r = await child(`
      const uncaught = [];
      process.on('uncaughtException', (e) => uncaught.push(e.message));
      const a = new Pool({ threads: 1 });
      const b = new Pool({ threads: 1 });
      a.on('drain', () => { throw new Error('listener'); });
      let settled = 0;
      for (let round = 0; round < 20; round++) {
        const calls = [a.exec('echo', round), ...Array.from({ length: 20 }, (_, i) => b.exec('echo', i))];
        await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 3000).unref())]).then((v) => { if (v) settled += v.length; });
      }
      await new Promise((r) => setTimeout(r, 20));
      await a.close(); await b.close();
      out({ settled, uncaught: uncaught.length, message: uncaught[0] });
    `);
    expect(clean(r)).toEqual({ settled: 20 * 21, uncaught: 20, message: 'listener' });
  });
});

describe('issue 13 §11: aborted calls let go of their params at once', () => {
  test('2,000 aborted 1 MB calls queued behind a busy thread do not hold 2 GB', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 1 });
      const busy = pool.exec('sleep', 600000);
      global.gc();
      const before = process.memoryUsage().rss;
      const calls = [];
      // One string for all: every call copies it into native memory, which is what must go.
      // (Fresh 1 MB strings would each leave V8's own heap bigger, corepool or not.)
      const big = 'x'.repeat(1 << 20) + '!';
      for (let i = 0; i < 2000; i++) {
        const ac = new AbortController();
        calls.push(pool.call('echo', [big], { signal: ac.signal }).catch((e) => e.code));
        ac.abort();
      }
      const codes = await Promise.all(calls);
      global.gc();
      const grownMb = (process.memoryUsage().rss - before) / 2 ** 20;
      const queued = pool.stats().queued;
      await pool.destroy();
      await busy.catch(() => {});
      out({ aborted: codes.filter((c) => c === C.Aborted).length, queued, held: grownMb < 500 ? 'no' : 'held ' + Math.round(grownMb) + ' MB' });
      `,
      { args: ['--expose-gc'] },
    );
    expect(clean(r)).toEqual({ aborted: 2000, queued: 0, held: 'no' });
  });
});

describe('arrays made natively, with the addon loaded twice in one thread', () => {
  test('each load keeps its own packer: calls alternating between them compile nothing more and hold no more memory', async () => {
    // Each load of the addon is its own Node-API env on the same thread. A cache of one env per
    // thread made and kept a new packer (and a reference to it) at every switch.
    const r = await child(`
      for (const k of Object.keys(require.cache)) delete require.cache[k];
      const other = require(${JSON.stringify(require('node:path').join(__dirname, '..'))});
      const a = new Pool({ threads: 1 });
      const b = new other.Pool({ threads: 1 });
      const rounds = async (n) => { for (let i = 0; i < n; i++) { await a.exec('echo', [1, [2]]); await b.exec('echo', [3, [4]]); } };
      await rounds(2000);
      gc();
      const before = process.memoryUsage().heapUsed;
      await rounds(20000);
      gc();
      const grew = process.memoryUsage().heapUsed - before;
      const echoed = [await a.exec('echo', [1, [2]]), await b.exec('echo', [3, [4]])];
      await a.close();
      await b.close();
      out({ distinct: other.Pool !== Pool, echoed, grewUnder1MB: grew < 1e6 });
    `, { args: ['--expose-gc'] });
    expect(clean(r)).toEqual({ distinct: true, echoed: [[1, [2]], [3, [4]]], grewUnder1MB: true });
  });

  test('each load keeps its own references to what conversions look up: alternating calls hold no more handles', async () => {
    // Converting an object value by value (NaN keeps it off the packed path) looks up
    // Object.prototype and the key "toJSON", kept by reference
    // per env. A cache of one env per thread made new references at every switch.
    const r = await child(`
      const v8 = require('node:v8');
      for (const k of Object.keys(require.cache)) delete require.cache[k];
      const other = require(${JSON.stringify(require('node:path').join(__dirname, '..'))});
      const a = new Pool({ threads: 1 });
      const b = new other.Pool({ threads: 1 });
      const rounds = async (n) => { for (let i = 0; i < n; i++) { await a.exec('echo', { a: 1, n: NaN }); await b.exec('echo', { b: 2, n: NaN }); } };
      await rounds(2000);
      gc();
      const before = v8.getHeapStatistics().used_global_handles_size;
      await rounds(20000);
      gc();
      const grew = v8.getHeapStatistics().used_global_handles_size - before;
      const echoed = [await a.exec('echo', { a: 1, n: NaN }), await b.exec('echo', { b: 2, n: NaN })].map((o) => ({ ...o, n: String(o.n) }));
      await a.close();
      await b.close();
      out({ echoed, grewUnder64KB: grew < 65536 });
    `, { args: ['--expose-gc'] });
    expect(clean(r)).toEqual({ echoed: [{ a: 1, n: 'NaN' }, { b: 2, n: 'NaN' }], grewUnder64KB: true });
  });
});
