'use strict';
// The options of call(), run() and map(): unknown names are refused as `new Pool` refuses
// unknown pool options, hostile option objects reject the call (never throw), and an options
// object counts by its own keys, each read once.
const fc = require('fast-check');
const { Pool, RpcError } = require('..');
const { rejection } = require('./helpers/rejection.js');

const C = RpcError.codes;

/** What docs/calls.md documents each kind of call to take. */
const CALL = ['signal', 'timeout', 'onProgress'];
const ACCEPTED = { call: [...CALL, 'transfer'], run: [...CALL, 'name', 'transfer'], map: [...CALL, 'settle', 'concurrency'] };

const pool = new Pool({ threads: 1 });
afterAll(() => pool.close());

/** Starts a call of `kind` with `options`; a synchronous throw fails the test. */
function start(kind, options) {
  if (kind === 'call') return pool.call('echo', [1], options);
  if (kind === 'run') return pool.run(1, options);
  return pool.map('echo', [1], options);
}

describe('unknown options', () => {
  test.each(['call', 'run', 'map'])("%s() rejects a misspelt option with InvalidRequest naming it and what is expected", async (kind) => {
    const e = await rejection(start(kind, { timout: 100 }));
    expect(e).toBeInstanceOf(RpcError);
    expect(e.code).toBe(C.InvalidRequest);
    expect(e.message).toBe(`unknown ${kind} option 'timout' (expected ${ACCEPTED[kind].slice(0, -1).join(', ')} or ${ACCEPTED[kind].at(-1)})`);
  });

  test('an unknown option whose value is undefined is refused too', async () => {
    expect((await rejection(pool.call('echo', [1], { timout: undefined }))).code).toBe(C.InvalidRequest);
  });

  test("each kind takes its own options and no other kind's", async () => {
    for (const key of ['name', 'settle', 'concurrency']) {
      expect((await rejection(pool.call('echo', [1], { [key]: undefined }))).message).toMatch(`unknown call option '${key}'`);
    }
    expect((await rejection(pool.run(1, { settle: 'all' }))).message).toMatch("unknown run option 'settle'");
    expect((await rejection(pool.map('echo', [1], { name: 'x' }))).message).toMatch("unknown map option 'name'");
    const onProgress = () => {};
    const signal = new AbortController().signal;
    expect(await pool.call('echo', [1], { signal, timeout: 1000, onProgress })).toBe(1);
    expect(await pool.map('echo', [1, 2], { signal, timeout: 1000, onProgress, settle: 'reject', concurrency: 1 })).toEqual([1, 2]);
    // This pool serves no 'add': the options were taken, the call went to the method named.
    expect((await rejection(pool.run(1, { signal, timeout: 1000, onProgress, name: 'add' }))).code).toBe(C.MethodNotFound);
  });

  test('any set of keys: a call rejects exactly when one of them is not an option of its kind', async () => {
    const keyArb = fc.oneof(fc.constantFrom(...new Set(Object.values(ACCEPTED).flat())), fc.string({ maxLength: 8 }));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('call', 'run', 'map'), fc.uniqueArray(keyArb, { maxLength: 5 }), async (kind, keys) => {
        const options = Object.fromEntries(keys.map((k) => [k, undefined]));
        const unknown = Object.keys(options).filter((k) => !ACCEPTED[kind].includes(k));
        let outcome;
        try {
          outcome = { value: await start(kind, options) };
        } catch (e) {
          outcome = { error: e };
        }
        if (unknown.length === 0) {
          // run() calls 'default', which this pool does not have.
          if (kind === 'run') return outcome.error?.code === C.MethodNotFound;
          return 'value' in outcome;
        }
        return outcome.error?.code === C.InvalidRequest && outcome.error.message.startsWith(`unknown ${kind} option '${unknown[0]}'`);
      }),
      { numRuns: 200 },
    );
  });
});

describe('what counts as an option', () => {
  test('inherited keys are not options: neither refused nor used', async () => {
    expect(await pool.call('echo', [1], Object.create({ timout: 100 }))).toBe(1);
    // An inherited tiny timeout sets no limit: the sleep finishes.
    expect(await pool.call('sleep', [30], Object.create({ timeout: 1e-9 }))).toBe(30);
    expect(await pool.map('echo', [1], Object.create({ settle: 'bogus' }))).toEqual([1]);
  });

  test('symbol keys and non-enumerable keys are not options', async () => {
    const options = { [Symbol('timout')]: 1 };
    Object.defineProperty(options, 'timout', { value: 1, enumerable: false });
    expect(await pool.call('echo', [1], options)).toBe(1);
  });

  test('each option is read once: a getter cannot answer the check one thing and the call another', async () => {
    let reads = 0;
    const options = {
      get timeout() {
        reads++;
        return reads === 1 ? 1e-9 : 0;
      },
    };
    expect((await rejection(pool.call('sleep', [200], options))).code).toBe(C.Timeout);
    expect(reads).toBe(1);
    const traps = [];
    const proxy = new Proxy(
      { timeout: 1000, signal: undefined },
      {
        ownKeys: (t) => (traps.push('ownKeys'), Reflect.ownKeys(t)),
        getOwnPropertyDescriptor: (t, k) => (traps.push(`describe ${String(k)}`), Reflect.getOwnPropertyDescriptor(t, k)),
        get: (t, k) => (traps.push(`get ${String(k)}`), Reflect.get(t, k)),
      },
    );
    expect(await pool.run(7, proxy).catch((e) => e.code)).toBe(C.MethodNotFound);
    expect(traps).toEqual(['ownKeys', 'describe timeout', 'describe signal', 'get timeout', 'get signal']);
  });
});

describe('hostile options reject the call, never throw', () => {
  const signal = new AbortController().signal;
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const cases = [
    ['null', null, /^call options must be an object, got null$/],
    ['a number', 5, /^call options must be an object, got 5$/],
    ['a string', 'timeout', /^call options must be an object, got "timeout"$/],
    ['a function', () => {}, /^call options must be an object/],
    [
      'a throwing getter',
      {
        get timeout() {
          throw new Error('boom');
        },
      },
      /^call options\.timeout could not be read: boom$/,
    ],
    ['a Proxy whose ownKeys trap throws', new Proxy({}, { ownKeys: () => { throw new Error('no keys'); } }), /^call options could not be read: no keys$/],
    ['a Proxy whose get trap throws', new Proxy({ timeout: 1 }, { get: () => { throw new Error('no get'); } }), /^call options\.timeout could not be read: no get$/],
    ['a revoked Proxy', revoked.proxy, /^call options could not be read: .*revoked/],
    ['a signal that is not an AbortSignal', { signal: { aborted: false, addEventListener() {} } }, /^call options\.signal must be an AbortSignal, got an object$/],
    ['a signal Proxy whose prototype trap throws', { signal: new Proxy({}, { getPrototypeOf: () => { throw new Error('no proto'); } }) }, /^call options\.signal could not be read: no proto$/],
    ['a signal Proxy whose get trap throws', { signal: new Proxy(signal, { get: () => { throw new Error('no aborted'); } }) }, /^call options\.signal could not be read: no aborted$/],
    ['onProgress that is not a function', { onProgress: 'yes' }, /^call options\.onProgress must be a function, got "yes"$/],
    ['a timeout that is not a number', { timeout: '5' }, /timeout/],
  ];
  test.each(cases)('%s → InvalidRequest saying what is wrong', async (_, options, message) => {
    let promise;
    expect(() => {
      promise = pool.call('echo', [1], options);
    }).not.toThrow();
    const e = await rejection(promise);
    expect(e).toBeInstanceOf(RpcError);
    expect(e.code).toBe(C.InvalidRequest);
    expect(e.message).toMatch(message);
  });

  test('params that are a revoked Proxy are refused by the params conversion, not thrown', async () => {
    const e = await rejection(pool.call('echo', revoked.proxy));
    expect(e.code).toBe(C.InvalidParams);
    expect(e.message).toMatch(/revoked/);
  });
});
