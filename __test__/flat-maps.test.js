'use strict';
// Maps of strings to numbers cross as flat bytes of corepool's own (lib/flat.js) where
// structured clone would be slow to read them back: they must arrive exactly as structured
// clone gives them, whatever their keys, and whatever Maps were sent before.
const path = require('node:path');
const util = require('node:util');
const fc = require('fast-check');
const { Pool } = require('..');
const Piscina = require('../lib/piscina.js');
const { flatBytes, isFlat, readFlat } = require('../lib/flat.js');
const { check, LIMIT_MS } = require('./helpers/property/run.js');
const { child, clean } = require('./helpers/child.js');

const VALUES = path.join(__dirname, 'fixtures', 'tasks', 'values.js');

/** A Map's entries in order, as an array (isDeepStrictEqual does not compare a Map's order). */
const entries = (v) => (util.types.isMap(v) ? [...v].map(([k, x]) => [k, Object.is(x, -0) ? '-0' : x]) : v);
/** `v` and what came back alike: the same value, and each Map's entries in the same order. */
function same(back, expected) {
  const order = (x) => (Array.isArray(x) ? x.map(entries) : entries(x));
  return util.isDeepStrictEqual(back, expected) && util.isDeepStrictEqual(order(back), order(expected));
}

/** A Map of `n` keys named `key-<i>` (and `tag`) to numbers. */
const numbered = (n, tag = '') => new Map(Array.from({ length: n }, (_, i) => [`key-${i}${tag}`, i / 3]));

// Keys from a few characters (ASCII mostly), so that different Maps often have keys that run
// together into the same text, split differently; sizes on both sides of the smallest Map
// written flat; numbers of every kind, and now and then a value that is not a number.
const key = fc.string({ unit: fc.constantFrom('a', 'b', '-', '0', 'é', '😀'), maxLength: 3 });
const number = fc.oneof(fc.double(), fc.constantFrom(-0, NaN, Infinity, 2 ** 53));
const map = fc
  .tuple(fc.array(fc.tuple(key, number), { maxLength: 80 }), fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('x', undefined, 1n, {}) }))
  .map(([pairs, odd]) => {
    const m = new Map(pairs);
    if (odd !== null) m.set('odd', odd);
    return m;
  });
// What a call carries: a Map, or an array of a few numbers and Maps (a Map sent again as it
// was, or with a key added or changed, to meet the keys known from the Map before).
const shaped = fc.oneof(map, fc.array(fc.oneof(map, number), { minLength: 1, maxLength: 5 }));
const calls = fc
  .array(fc.tuple(shaped, fc.constantFrom('as is', 'again', 'one key more', 'one key renamed')), { minLength: 1, maxLength: 6 })
  .map((drawn) => {
    const out = [];
    for (const [v, how] of drawn) {
      const before = out.at(-1);
      if (how === 'as is' || !util.types.isMap(before)) out.push(v);
      else if (how === 'again') out.push(new Map(before));
      else if (how === 'one key more') out.push(new Map([...before, ['more', 1]]));
      else out.push(new Map([...before].map(([k, x], i) => [i === before.size - 1 ? `${k}!` : k, x])));
    }
    return out;
  });

describe('Maps of strings to numbers (lib/flat.js)', () => {
  let pool;
  let piscina;
  beforeAll(() => {
    pool = new Pool({ filename: VALUES, threads: 2 });
    piscina = new Piscina({ filename: VALUES, name: 'echo', minThreads: 1, maxThreads: 1 });
  });
  afterAll(() => Promise.all([pool.close(), piscina.destroy()]));

  test(
    'random Maps and arrays of them arrive as structuredClone gives them, in order, one after another, as params and results, in a task-file pool and corepool/piscina',
    async () => {
      await check(
        fc.asyncProperty(calls, async (values) => {
          for (const v of values) {
            const expected = structuredClone(v);
            const [back, args, piscinaBack] = await Promise.all([pool.exec('echo', v), pool.exec('args', v), piscina.run(v)]);
            if (util.types.isMap(v)) expect(await pool.exec('keys', v)).toEqual([...v.keys()]);
            expect(same(back, expected)).toBe(true);
            expect(same(args[0], expected)).toBe(true);
            expect(same(piscinaBack, expected)).toBe(true);
          }
        }),
        60,
      );
    },
    LIMIT_MS,
  );

  test('Maps whose keys run together into the same text, split differently, each arrive as sent, however they alternate', async () => {
    const a = new Map(Array.from({ length: 40 }, (_, i) => (i === 0 ? ['ab', 0] : i === 1 ? ['c', 1] : [`k${i}`, i])));
    const b = new Map(Array.from({ length: 40 }, (_, i) => (i === 0 ? ['a', 0] : i === 1 ? ['bc', 1] : [`k${i}`, i])));
    expect(flatBytes(a).toString('latin1').includes('abck2')).toBe(true);
    const others = [1, 2, 3, 4, 5].map((t) => numbered(40, `/${t}`));
    const sent = [a, b, a, ...others, b, a, b];
    const back = [];
    const seen = [];
    for (const m of sent) {
      back.push(await pool.exec('echo', m));
      seen.push(await pool.exec('keys', m));
    }
    // As the worker saw each, and as it came back.
    expect(seen).toEqual(sent.map((m) => [...m.keys()]));
    expect(back.map((m) => [...m.keys()])).toEqual(sent.map((m) => [...m.keys()]));
    expect(back.every((m, i) => same(m, sent[i]))).toBe(true);
  });

  test('the worker writes and reads them with the methods Map and String had, not ones its code put there since', async () => {
    const one = new Pool({ filename: VALUES, threads: 1 });
    try {
      const m = numbered(100);
      const back = [await one.exec('echoPatched', m)];
      // Read and written by the patched thread: the same keys, and new ones (cut from their text).
      back.push(await one.exec('echo', m), await one.exec('echo', numbered(100, '/new')), await one.exec('echo', [1, numbered(60, '/newer')]));
      const calls = await one.exec('patchedCalls');
      expect(back.every((b, i) => same(b, [m, m, numbered(100, '/new'), [1, numbered(60, '/newer')]][i]))).toBe(true);
      expect(calls).toBe(0);
    } finally {
      await one.close();
    }
  });

  test('an array whose items are read by getters goes as structured clone does, with no read more than before', async () => {
    // (One thread, so that the reads are asked of the thread that ran it.)
    const one = new Pool({ filename: VALUES, threads: 1 });
    try {
      const back = await one.exec('gotten', numbered(50));
      const reads = await one.exec('gottenReads');
      expect(same(back, structuredClone([7, numbered(50)]))).toBe(true);
      // One read by the look for what needs structured clone, one by structured clone (as
      // docs/values.md says); none by the flat writer, which reads descriptors only.
      expect(reads).toEqual([2, 2]);
    } finally {
      await one.close();
    }
  });

  test('only the shapes it is made for are written flat; the rest go to V8, as they did', () => {
    const m = numbered(40);
    const holey = [m, , 1]; // eslint-disable-line no-sparse-arrays
    const extra = Object.assign([m], { extra: 1 });
    const proxied = new Proxy([m], {});
    class Counts extends Map {}
    const flat = (v) => flatBytes(v) !== null;
    expect([flat(m), flat([m]), flat([1.5, m]), flat([m, 2, numbered(40, '/2')]), flat(new Counts(m))]).toEqual([true, true, true, true, true]);
    // Keys of more than 64 Mi characters in all: V8's (one string cannot hold them all).
    const base = `${'k'.repeat(3_000_000)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.repeat(2)}`;
    const huge = new Map(Array.from({ length: 32 }, (_, i) => [base.slice(i, i + 3_000_000), i]));
    expect([
      flat(numbered(31)),
      flat(new Map([...m, ['é', 1]])),
      flat(new Map([...m, ['s', 's']])),
      flat(new Map([...m, [1, 1]])),
      flat([]),
      flat([1, 2]),
      flat([m, m, m, m, m]),
      flat(holey),
      flat(extra),
      flat(proxied),
      flat([m, 'text']),
      flat({ m }),
      flat([m, 2, m]),
      flat(huge),
    ]).toEqual(Array(14).fill(false));
    expect(isFlat(flatBytes(m))).toBe(true);
    expect(util.types.isMap(readFlat(flatBytes(new Counts(m))))).toBe(true);
    expect(Object.getPrototypeOf(readFlat(flatBytes(new Counts(m))))).toBe(Map.prototype);
  });

  test('a Map reached twice arrives as one Map reached twice, as structured clone gives it, as params and as a result', async () => {
    const m = numbered(40);
    const echoed = await pool.exec('echo', [m, 2, m]);
    const args = await pool.exec('args', m, m);
    const expected = structuredClone([m, 2, m]);
    expect([echoed[0] === echoed[2], args[0] === args[1], same(echoed, expected)]).toEqual([expected[0] === expected[2], true, true]);
  });

  test("the keys kept for Maps to come are cut from the keys' text: a key cut from a long string does not keep that string", async () => {
    // (A key of 13 characters or more cut from a longer string keeps all of it alive.)
    const r = await child(
      `
      const { flatBytes } = require('./lib/flat.js');
      const heap = () => (globalThis.gc(), globalThis.gc(), process.memoryUsage().heapUsed);
      const before = heap();
      (() => {
        const long = 'x'.repeat(100_000_000) + Array.from({ length: 40 }, (_, i) => 'key-number-' + String(i).padStart(3, '0')).join('');
        const m = new Map(Array.from({ length: 40 }, (_, i) => [long.slice(100_000_000 + 14 * i, 100_000_000 + 14 * (i + 1)), i]));
        if (flatBytes(m) === null) throw new Error('not written flat');
      })();
      out({ grewMb: Math.round((heap() - before) / 1e6) });
      `,
      { args: ['--expose-gc'] },
    );
    expect(clean(r).grewMb).toBeLessThan(50);
  });

  test('bytes cut short or of an unknown kind are refused with a RangeError, never read past their end', () => {
    const bytes = flatBytes([1, numbered(40)]);
    for (const n of [8, 24, 40, 100, bytes.length - 9]) expect(() => readFlat(bytes.subarray(0, n))).toThrow(RangeError);
    const odd = Buffer.from(bytes);
    odd.writeUInt32LE(7, 8 + 16);
    expect(() => readFlat(odd)).toThrow(/unknown item kind 7/);
    const long = Buffer.from(bytes);
    long.writeUInt32LE(1e9, 8 + 16 + 4 + 4);
    expect(() => readFlat(long)).toThrow(RangeError);
  });

  test('flat bytes at an odd offset read back the same', () => {
    const m = numbered(40);
    const bytes = flatBytes(m);
    const shifted = Buffer.alloc(bytes.length + 3).subarray(3);
    bytes.copy(shifted);
    expect(same(readFlat(shifted), m)).toBe(true);
  });
});
