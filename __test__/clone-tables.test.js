'use strict';
// Tables (lib/clone-table.js): Maps and Sets of primitives that are a call's params or result
// travel in a form of corepool's own. They must arrive exactly as structuredClone makes them,
// whatever they hold, and what is not a table must keep V8's own form (identities, nesting).
const path = require('node:path');
const util = require('node:util');
const fc = require('fast-check');
const { Pool } = require('..');
const { serialize, deserialize } = require('../lib/clone.js');
const { isTable, tableOf, fromTable, TABLE_MIN } = require('../lib/clone-table.js');
const { check, LIMIT_MS } = require('./helpers/property/run.js');

const task = (name) => path.join(__dirname, 'fixtures', 'tasks', name);

/**
 * `v` in a form of this realm, Maps and Sets as their entries in order (jest runs this file in
 * a realm of its own: V8's reader and structuredClone make their objects in Node's).
 */
function plain(v) {
  if (util.types.isMap(v)) return { map: [...v].map(([k, x]) => [plain(k), plain(x)]) };
  if (util.types.isSet(v)) return { set: [...v].map(plain) };
  if (Array.isArray(v)) return { array: Array.from(v, plain) };
  if (v !== null && typeof v === 'object') return { object: Object.entries(v).map(([k, x]) => [k, plain(x)]) };
  return v;
}

/** Whether `a` and `b` are the same value (order of entries, -0 and NaN included), whatever their realms. */
const same = (a, b) => util.isDeepStrictEqual(plain(a), plain(b));

/** `v` written and read back as a call's message is, without a pool. */
const roundTrip = (v) => deserialize(Buffer.from(serialize(v, undefined, 'params')[0]));

const primitive = fc.oneof(
  fc.string({ unit: 'binary' }), // lone surrogates included
  fc.string(),
  fc.double(), // NaN, -0 and the infinities included
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);
const map = fc.array(fc.tuple(primitive, primitive), { maxLength: 3 * TABLE_MIN, size: 'max' }).map((entries) => new Map(entries));
const set = fc.array(primitive, { maxLength: 3 * TABLE_MIN, size: 'max' }).map((items) => new Set(items));

describe('tables', () => {
  test('Maps and Sets of primitives as values and as params items arrive as structuredClone makes them, random ones included', async () => {
    await check(
      fc.property(fc.oneof(map, set, fc.array(fc.oneof(map, set, primitive), { minLength: 1, maxLength: 5 })), (v) => {
        expect(same(roundTrip(v), structuredClone(v))).toBe(true);
      }),
      300,
    );
  });

  test('what a table holds keeps its exact value and order: -0, NaN, lone surrogates, empty strings, every primitive kind', () => {
    const m = new Map(Array.from({ length: TABLE_MIN }, (_, i) => [`k${i}`, i]));
    m.set(-0, NaN).set('', '\ud800x\udfff').set(true, false).set(null, undefined).set(undefined, null).set(Infinity, -Infinity).set(0.1, -0);
    expect(isTable(m)).toBe(true);
    expect(tableOf(m)).not.toBeNull();
    const back = roundTrip(m);
    expect([...back.keys()]).toEqual([...m.keys()]);
    expect(Object.is(back.get(0.1), -0)).toBe(true);
    expect(Number.isNaN(back.get(0))).toBe(true);
    expect(back.get('')).toBe('\ud800x\udfff');
    const s = new Set([...m.keys(), 'z']);
    expect([...roundTrip(s)]).toEqual([...s]);
  });

  test('a Map subclass, a Map with own properties and a patched Map.prototype arrive as structuredClone makes them', () => {
    class Lookup extends Map {
      forEach() {
        throw new Error('never called');
      }
    }
    const entries = Array.from({ length: TABLE_MIN + 1 }, (_, i) => [i, `v${i}`]);
    const sub = new Lookup(entries);
    const withProps = Object.assign(new Map(entries), { extra: 1 });
    for (const v of [sub, withProps]) {
      const back = roundTrip(v);
      expect(same(back, structuredClone(v))).toBe(true);
      expect(Object.getPrototypeOf(Object.getPrototypeOf(back))).toBe(Object.getPrototypeOf(Object.getPrototypeOf(new Map())));
      expect(Object.getPrototypeOf(back).constructor.name).toBe('Map');
    }
    const saved = { forEach: Map.prototype.forEach, set: Map.prototype.set };
    try {
      Map.prototype.forEach = () => {
        throw new Error('patched forEach');
      };
      Map.prototype.set = function () {
        throw new Error('patched set');
      };
      const back = roundTrip(sub);
      Map.prototype.set = saved.set;
      expect(same(back, new Map(entries))).toBe(true);
    } finally {
      Map.prototype.forEach = saved.forEach;
      Map.prototype.set = saved.set;
    }
  });

  test('what is not a table keeps V8\'s form: the same Map twice stays one, a Map holding objects or itself', () => {
    const m = new Map(Array.from({ length: TABLE_MIN }, (_, i) => [i, i]));
    const twice = roundTrip([m, m]);
    expect(twice[0]).toBe(twice[1]);
    const nested = roundTrip([m, { m }]);
    expect(nested[0]).toBe(nested[1].m);
    const self = new Map(m);
    self.set('self', self);
    const back = roundTrip(self);
    expect(back.get('self')).toBe(back);
    const holding = new Map(m).set('o', { a: [1] });
    expect(roundTrip(holding).get('o')).toEqual({ a: [1] });
  });

  test('params behind getters are read once, by V8, as before', () => {
    const m = new Map(Array.from({ length: TABLE_MIN }, (_, i) => [i, i]));
    let reads = 0;
    const params = [1];
    Object.defineProperty(params, 1, {
      get() {
        reads++;
        return m;
      },
      enumerable: true,
    });
    const back = roundTrip(params);
    expect(reads).toBe(1);
    expect(same(back, [1, m])).toBe(true);
  });

  test('a setter on Array.prototype is never called while params with tables are written', () => {
    const m = new Map(Array.from({ length: TABLE_MIN }, (_, i) => [i, `${i}`]));
    let calls = 0;
    Object.defineProperty(Array.prototype, '0', {
      configurable: true,
      get() {
        return undefined;
      },
      set() {
        calls++;
        throw new Error('polluted');
      },
    });
    let bytes;
    try {
      bytes = serialize([m, 2], undefined, 'params')[0];
    } finally {
      delete Array.prototype[0];
    }
    expect(calls).toBe(0);
    expect(same(deserialize(Buffer.from(bytes)), [m, 2])).toBe(true);
  });

  test('a table whose parts do not agree is refused with an error, never read past its parts', () => {
    const good = tableOf(new Map(Array.from({ length: TABLE_MIN }, (_, i) => [`k${i}`, i])));
    const forged = [
      null,
      { ...good, text: 5 },
      { ...good, lengths: Uint32Array.of(2 ** 32 - 1) },
      { ...good, text: good.text.slice(1) },
      { ...good, text: `${good.text}x` },
      { ...good, tags: Uint8Array.from(good.tags, () => 9) },
      { ...good, tags: good.tags.subarray(1) },
      { ...good, numbers: new Float64Array(0) },
      { ...good, set: 'no' },
    ];
    for (const t of forged) expect(() => fromTable(t)).toThrow(/does not hold together/);
  });

  test('through a task-file pool: a Map of 1,000 entries and a params array with a Set arrive whole, both ways', async () => {
    const pool = new Pool({ filename: task('values.js'), threads: 1 });
    try {
      const m = new Map(Array.from({ length: 1000 }, (_, i) => [`key-${i}`, i]));
      const s = new Set(Array.from({ length: 100 }, (_, i) => `item-${i}`));
      expect(same(await pool.exec('echo', m), m)).toBe(true);
      const args = await pool.exec('args', s, 7, 'x', m);
      expect(same(args, [s, 7, 'x', m])).toBe(true);
    } finally {
      await pool.close();
    }
  }, LIMIT_MS);
});
