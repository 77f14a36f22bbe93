'use strict';
// Values crossing between JavaScript and the pool (lib/params.js, src/bindings/convert/, src/rpc/):
// what params may hold, how results come back, and what hostile values (getters, Proxies,
// polluted prototypes, untrusted lengths) can and cannot do.
const { Pool, RpcError } = require('..');
const { child, clean } = require('./helpers/child.js');
const { outcome } = require('./helpers/rejection.js');

const C = RpcError.codes;

// Regressions from issue 13's hostile review, each under the defect it pins (§ numbers are the
// review's). Inputs that could take the process down run in a child process (helpers/child.js).

describe('issue 13 §2: untrusted lengths size no allocation', () => {
  test('a sparse array of length 2^32−1 is refused with InvalidParams on every entry point', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const s = []; s.length = 2 ** 32 - 1;
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e.code; } };
      const exec = await code(pool.exec('echo', [NaN, s]));
      const call = await code(pool.call('echo', [s]));
      const broadcast = await code(pool.broadcast('echo', s));
      const request = (await pool.request({ jsonrpc: '2.0', method: 'echo', params: s, id: 1 })).error.code;
      const nested = await code(pool.exec('echo', { a: [1, { b: s }] }));
      const after = await pool.exec('echo', [1, 2]);
      await pool.close();
      out({ exec, call, broadcast, request, nested, after });
    `);
    const p = C.InvalidParams;
    expect(clean(r)).toEqual({ exec: p, call: p, broadcast: p, request: C.InvalidRequest, nested: p, after: [1, 2] });
  });

  test('an object claiming 2^32−1 keys through a Proxy is refused, not allocated for', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const keys = { length: 2 ** 32 - 1 };
      const huge = new Proxy({}, { ownKeys: () => { const k = []; k.length = 2 ** 25; return k.fill('x'); } });
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e.code; } };
      out({ proxy: await code(pool.exec('echo', huge)), after: await pool.exec('echo', 5) });
      await pool.close();
    `);
    const res = clean(r);
    expect(res.after).toBe(5);
    expect([C.InvalidParams, 'resolved']).toContain(res.proxy);
  });
});

describe('issue 13 §5: results whose JSON text is too long for a JavaScript string', () => {
  // 10^8 control characters are a short enough string, but 6·10^8 characters of JSON text
  // ("\u0001" each): too long for one JavaScript string (2^29 − 24 units).
  test('exec: the result still arrives (value by value), and the calls settled beside it too', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const s = '\x01'.repeat(1e8);
      const big = { s, u: undefined, ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => ['k' + i, i])) };
      const calls = [pool.exec('echo', big), ...Array.from({ length: 50 }, (_, i) => pool.exec('echo', i))];
      const [got, ...small] = await Promise.all(calls);
      await pool.close();
      out({ same: got.s === s && got.u === null && got.k39 === 39, small: small.length, sum: small.reduce((a, b) => a + b) });
      `,
      { timeoutMs: 120_000 },
    );
    expect(clean(r)).toEqual({ same: true, small: 50, sum: 1225 });
  }, 130_000);

  test('handle(): an answer too long for a string is an InternalError answer with the id, never a rejection', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 1 });
      const template = '{{#a}}' + '\x01'.repeat(1 << 20) + '{{/a}}';
      const text = JSON.stringify({ jsonrpc: '2.0', method: 'render', params: [template, { a: Array(100).fill(1) }], id: 'big' });
      const answer = JSON.parse(await pool.handle(text));
      const after = await pool.exec('echo', 'after');
      await pool.close();
      out({ id: answer.id, code: answer.error.code, tooLong: /too long/.test(answer.error.message), after });
      `,
      { timeoutMs: 120_000 },
    );
    expect(clean(r)).toEqual({ id: 'big', code: C.InternalError, tooLong: true, after: 'after' });
  }, 130_000);
});

describe('issue 13 §6: __proto__ keys are own data properties, as JSON.parse makes them', () => {
  const pool = new Pool({ threads: 1 });
  afterAll(() => pool.close());

  const hostile = () => JSON.parse('{"__proto__":{"isAdmin":true},"x":1}');
  const check = (v) => {
    // Object.prototype of whichever realm made it (the test runner has a realm of its own).
    expect(Object.getPrototypeOf(Object.getPrototypeOf(v))).toBe(null);
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(v.isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(v, '__proto__').value).toEqual({ isAdmin: true });
  };

  test('small results (built value by value)', async () => {
    check(await pool.exec('echo', hostile()));
    check((await pool.exec('echo', [hostile()]))[0]);
  });

  test('big results (JSON text) and JSON-RPC answers', async () => {
    const big = await pool.exec('echo', { ...hostile(), rows: Array.from({ length: 40 }, (_, i) => i) });
    check(big);
    check((await pool.request({ jsonrpc: '2.0', method: 'echo', params: [hostile()], id: 1 })).result);
    check(JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[{"__proto__":{"isAdmin":true}}],"id":1}')).result);
  });
});

describe('issue 13 §9: nothing thrown between tracking and submission leaks a call', () => {
  test('throwing getters, Proxy traps: RpcError InvalidParams; a getter is read once; text too long goes value by value; close() resolves', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 1 });
      const results = {};
      const code = async (p) => { try { await p; return 'resolved'; } catch (e) { return e instanceof RpcError ? e.code : 'plain ' + e.constructor.name; } };
      const getter = { get x() { throw new Error('boom'); } };
      const trap = new Proxy({}, { ownKeys() { throw new Error('trap'); } });
      let reads = 0;
      const second = Array.from({ length: 40 }, (_, i) => i);
      const flaky = { rows: second, get v() { return ++reads > 1 ? 1n : 1; } };
      results.getter = await code(pool.exec('echo', getter));
      results.trap = await code(pool.exec('echo', trap));
      // Plain data is read once, by the walk that packs it: what a getter gave it is what is
      // sent (a second read would give a BigInt).
      results.flaky = await pool.exec('echo', flaky).then((v) => ({ v: v.v, rows: v.rows.length, reads }));
      // Strings longer together than one string can be: packing gives up on them, and they
      // cross value by value, each its own string.
      const long = 'a'.repeat(2 ** 28);
      results.tooLong = await pool.exec('echo', [long, long, long, ...second]).then((v) => v.length === 43 && v[2] === long);
      results.bigGetter = await code(pool.exec('echo', { rows: second, get x() { throw new Error('late'); } }));
      // A params array whose first item throws on its second read: read once.
      const firstAgain = ['', { a: 1 }];
      let firstReads = 0;
      Object.defineProperty(firstAgain, 0, { enumerable: true, get() { if (++firstReads > 1) throw new Error('again'); return '{{a}}'; } });
      results.firstAgain = await pool.call('render', firstAgain).then((v) => ({ v, firstReads }));
      results.requestGetter = (await pool.request({ jsonrpc: '2.0', method: 'echo', get id() { throw new Error('id'); } })).error.code;
      results.broadcastTrap = await code(pool.broadcast('echo', trap));
      const drained = await Promise.race([pool.drained().then(() => 'drained'), new Promise((r) => setTimeout(r, 3000, 'leaked').unref())]);
      const closed = await Promise.race([pool.close().then(() => 'closed'), new Promise((r) => setTimeout(r, 3000, 'leaked').unref())]);
      out({ ...results, drained, closed });
      `,
      { timeoutMs: 60_000 },
    );
    const p = C.InvalidParams;
    expect(clean(r)).toEqual({
      getter: p,
      trap: p,
      flaky: { v: 1, rows: 40, reads: 1 },
      tooLong: true,
      bigGetter: p,
      firstAgain: { v: '1', firstReads: 1 },
      requestGetter: C.InvalidRequest,
      broadcastTrap: p,
      drained: 'drained',
      closed: 'closed',
    });
  });

  test('request() and handle() never reject, even on a closed pool with a hostile request', async () => {
    const pool = new Pool({ threads: 1 });
    await pool.close();
    const hostile = new Proxy({}, { has() { throw new Error('has'); }, get() { throw new Error('get'); } });
    // A request that cannot even be read is invalid, closed pool or not.
    const answer = await pool.request(hostile);
    expect(answer.error.code).toBe(C.InvalidRequest);
    const echoed = await pool.request({ jsonrpc: '2.0', method: 'echo', params: [1], id: 42 });
    expect(echoed).toEqual({ jsonrpc: '2.0', error: { code: C.PoolClosed, message: expect.any(String) }, id: 42 });
    const text = JSON.parse(await pool.handle('{"jsonrpc":"2.0","method":"echo","params":[1],"id":"seven"}'));
    expect(text.id).toBe('seven');
    expect(text.error.code).toBe(C.PoolClosed);
  });
});

describe('issue 13 §16: packed params (plain data walked once, src/rpc/packed.rs)', () => {
  test('a call started from inside another call’s start (an abort listener) does not overwrite its params', async () => {
    // The packing tape is reused between calls: the outer call's is lent until its native call
    // has copied it, so the inner call, packed in between, must get a tape of its own.
    const pool = new Pool({ threads: 2 });
    try {
      const outer = Array.from({ length: 40 }, (_, i) => ({ i, s: `outer ${i}` }));
      const inner = Array.from({ length: 60 }, (_, i) => ({ j: -i, t: [i, 'inner'] }));
      let innerCall;
      const signal = new AbortController().signal;
      const add = signal.addEventListener;
      signal.addEventListener = function (...args) {
        innerCall = pool.exec('echo', inner);
        return add.apply(this, args);
      };
      const outerCall = pool.call('echo', [outer], { signal });
      expect(await outerCall).toEqual(outer);
      expect(await innerCall).toEqual(inner);
    } finally {
      await pool.close();
    }
  });

  test('a getter among the params that calls the pool while they are walked: both calls get their own params', async () => {
    // The walk's state is module state: a call made from inside the walk goes value by value.
    const pool = new Pool({ threads: 2 });
    try {
      const inner = Array.from({ length: 50 }, (_, i) => ({ k: i, v: `inner ${i}` }));
      let innerCall;
      const rows = Array.from({ length: 50 }, (_, i) => ({ i, s: `outer ${i}` }));
      const outer = {
        head: rows.slice(0, 25),
        get middle() {
          innerCall = pool.exec('echo', inner);
          return 'middle';
        },
        tail: rows.slice(25),
      };
      const back = await pool.exec('echo', outer);
      expect(back).toEqual({ head: rows.slice(0, 25), middle: 'middle', tail: rows.slice(25) });
      expect(await innerCall).toEqual(inner);
    } finally {
      await pool.close();
    }
  });

  test('polluted prototypes: an enumerable Object.prototype key is not sent, index accessors on Array.prototype change nothing', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      // Rows of three shapes, and an object of 300 keys (past the walk's first 256 key slots).
      const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => ['k' + i, i]));
      const rows = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? { i, name: 'n' + i, tags: ['a', 'b'] } : i % 3 === 1 ? { i, other: true } : { j: i }));
      rows.push(wide);
      const want = JSON.stringify(rows);
      Object.prototype.polluted = 'yes';
      const withKey = JSON.stringify(await pool.exec('echo', rows));
      delete Object.prototype.polluted;
      // Accessors that drop writes past an array's end and answer junk, at indexes the walk's
      // own arrays reach (its key slots, its shapes). (Indexes 0-3 break Node's own timers, and
      // corepool's settling: see the stop notes.)
      const at = ['5', '17', '256', '300', '511'];
      for (const i of at) {
        Object.defineProperty(Array.prototype, i, { configurable: true, get() { return 'junk'; }, set() {} });
      }
      const withAccessors = JSON.stringify(await pool.exec('echo', rows));
      for (const i of at) delete Array.prototype[i];
      out({ withKey: withKey === want, withAccessors: withAccessors === want });
      await pool.close();
    `);
    expect(clean(r)).toEqual({ withKey: true, withAccessors: true });
  });
});

describe('issue 13 §15: smaller inconsistencies', () => {
  const pool = new Pool({ threads: 1 });
  afterAll(() => pool.close());

  test('toJSON is treated the same on the small and the big path', async () => {
    const withToJson = (extra) => {
      const o = { a: 1, ...extra };
      Object.defineProperty(o, 'toJSON', { value: () => 'replaced', enumerable: false });
      return o;
    };
    const small = await outcome(pool.exec('echo', withToJson()));
    const big = await outcome(pool.exec('echo', withToJson({ rows: Array.from({ length: 40 }, (_, i) => i) })));
    expect(small.code).toBe(C.InvalidParams);
    expect(big.code).toBe(C.InvalidParams);
    expect(small.message).toMatch(/toJSON/);
  });

  test('a Proxy of an array crosses as an array', async () => {
    expect(await pool.exec('echo', new Proxy([1, 2, 3], {}))).toEqual([1, 2, 3]);
    expect(await pool.exec('echo', { list: new Proxy(['a'], {}) })).toEqual({ list: ['a'] });
  });

  test('echo of a shared view is refused clearly instead of answering null', async () => {
    const view = new Int32Array(new SharedArrayBuffer(8));
    const got = await outcome(pool.exec('echo', view));
    expect(got.code).toBe(C.InvalidParams);
    expect(got.message).toMatch(/SharedArrayBuffer/);
  });
});

describe('issue 13, review of the fixes: what a polluted prototype, a Proxy or a getter can still do', () => {
  test('an Array.prototype index setter that drops values cannot free a call’s shared memory', async () => {
    const r = await child(
      `
      const pool = new Pool({ threads: 2 });
      const reference = await pool.exec('happycoin', { attempts: 200000, seed: 7 });
      // Keeps whatever corepool puts in arrays of one element to itself (the views it keeps).
      Object.defineProperty(Array.prototype, '0', { configurable: true, get() { return undefined; },
        set(v) { if (this.length === 1) return; Object.defineProperty(this, '0', { value: v, writable: true, enumerable: true, configurable: true }); } });
      const opts = { attempts: 200000, seed: 7 };
      const calls = [];
      let junk = [];
      let dirty = 0;
      const inspect = () => { dirty += junk.filter((a) => a.some((x) => x !== 0n)).length; junk = []; };
      for (let i = 0; i < 100; i++) {
        opts.into = new BigUint64Array(new SharedArrayBuffer(4096));
        calls.push(pool.exec('happycoin', opts).then((res) => res.count, (e) => 'rejected'));
        opts.into = null;
        for (let j = 0; j < 100; j++) junk.push(new BigUint64Array(new SharedArrayBuffer(4096)));
        if (i % 20 === 0) { global.gc(); await new Promise((r) => setTimeout(r, 1)); inspect(); }
      }
      const counts = await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 30000, null))]);
      inspect();
      delete Array.prototype[0];
      out({ settled: counts !== null, dirty });
      process.exit(0);
      `,
      { args: ['--expose-gc'] },
    );
    // Memory safety holds (no crash, no write into freed memory); that calls settle under such a
    // prototype is not promised (README, Limits).
    expect(clean(r).dirty).toBe(0);
  });

  test('a toJSON on Array.prototype or Object.prototype (inherited) refuses nothing', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      const o = (p) => p.then((v) => v, (e) => 'rejected ' + e.code);
      Object.defineProperty(Array.prototype, 'toJSON', { value() { return Array.from(this); }, configurable: true, writable: true });
      const arrays = [await o(pool.exec('echo', 1)), await o(pool.exec('echo', { a: [1] })), (await pool.request({ jsonrpc: '2.0', method: 'echo', params: [1], id: 1 })).result, await o(pool.broadcast('echo', 1))];
      delete Array.prototype.toJSON;
      Object.defineProperty(Object.prototype, 'toJSON', { value() { return this; }, configurable: true, writable: true });
      const objects = [await o(pool.exec('echo', { a: 1 })), await o(pool.exec('square_sum', 4))];
      delete Object.prototype.toJSON;
      await pool.close();
      out({ arrays, objects });
    `);
    const got = clean(r);
    expect(got.arrays).toEqual([1, { a: [1] }, 1, [1]]);
    expect(got.objects[0]).toEqual({ a: 1 });
    expect(typeof got.objects[1]).toBe('number');
  });

  test('a Proxy of a Map, a Set, a class instance or a Promise is refused like what it stands for', async () => {
    const pool = new Pool({ threads: 1 });
    class Point {
      x = 3;
    }
    for (const v of [new Proxy(new Map([['k', 1]]), {}), new Proxy(new Set([1]), {}), new Proxy(new Point(), {}), new Proxy(Promise.resolve(1), {})]) {
      const got = await outcome(pool.exec('echo', v));
      expect(got.code).toBe(C.InvalidParams);
      expect(got.message).toMatch(/instance of/);
    }
    // A Proxy of a plain object still crosses, through its traps.
    expect(await pool.exec('echo', new Proxy({ a: 1 }, {}))).toEqual({ a: 1 });
    await pool.close();
  });

  test('a signal that fires while the call is being sent (a getter in its params) aborts it', async () => {
    const pool = new Pool({ threads: 1 });
    const ac = new AbortController();
    const params = [300];
    Object.defineProperty(params, 0, { get: () => (ac.abort(), 300), enumerable: true });
    expect(await outcome(pool.call('sleep', params, { signal: ac.signal }))).toMatchObject({ code: C.Aborted });
    await pool.close();
  });

  test('a value that reaches one object 2^30 times is refused without walking it', async () => {
    const r = await child(`
      const pool = new Pool({ threads: 1 });
      let o = { leaf: 1 };
      for (let i = 0; i < 30; i++) o = { a: o, b: o };
      const got = await Promise.race([pool.exec('echo', o).then(() => 'resolved', (e) => e.code), new Promise((r) => setTimeout(r, 50000, 'hung').unref())]);
      await pool.close();
      out(got);
    `);
    expect(clean(r)).toBe(C.InvalidParams);
  });
});
