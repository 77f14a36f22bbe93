'use strict';
// Property-based tests of the JS API (issue 13, "make the classes impossible"), with fast-check.
//
// 1. Hostile values — getters, Proxies, cycles, sparse arrays of length 2^32−1, lone
//    surrogates, shared views, … — sent through every entry point settle exactly once, with
//    what JSON.parse(JSON.stringify(x)) would give as amended by the README's Values table, or
//    with an RpcError of a documented code; request() and handle() never reject; the pool
//    closes and is idle afterwards. The oracle works from a description of each value, never
//    from corepool's answers.
// 2. Random interleavings of calls, aborts, timeouts, close() and destroy() (and worker_threads
//    terminated mid-call) against a model that says which outcomes each call may have.
//
// COREPOOL_PROPERTY_RUNS=<n> multiplies the number of runs (default 1: about 15 s in all).
// A failure prints fast-check's seed and path; replay it with
//   COREPOOL_PROPERTY_SEED=<seed> COREPOOL_PROPERTY_PATH=<path> npx jest __test__/property.test.js -t '<name>'
const path = require('node:path');
const util = require('node:util');
const { Worker } = require('node:worker_threads');
const fc = require('fast-check');
const Mustache = require('mustache');
const { Pool, RpcError } = require('..');

const C = RpcError.codes;
const DOCUMENTED = new Set(Object.values(C));
const NAME = Object.fromEntries(Object.entries(C).map(([k, v]) => [v, k]));
const { types } = util;

const RUNS = Number(process.env.COREPOOL_PROPERTY_RUNS ?? 1);
if (!(RUNS > 0)) throw new RangeError(`COREPOOL_PROPERTY_RUNS must be a positive number, got ${process.env.COREPOOL_PROPERTY_RUNS}`);
const SEED = process.env.COREPOOL_PROPERTY_SEED;
const PATH = process.env.COREPOOL_PROPERTY_PATH;

/** The README's limit on the nesting of params. */
const MAX_NESTING = 512;

/** A call settles within this long, or it is a hang (a failure, never a stuck jest): a hang
 *  guard, generous so that a loaded machine never trips it (issue #28). */
const DEADLINE_MS = 20_000;

/**
 * Each check ends within this long (× COREPOOL_PROPERTY_RUNS); its runs take a few seconds. Only
 * a failure's shrinking gets near it (every try of a hang waits out the deadline): then the
 * failure is reported with the counterexample shrunk so far, its seed and its path.
 */
const BUDGET_MS = 120_000;

/** Runs `property` `runs` times (× COREPOOL_PROPERTY_RUNS). */
async function check(property, runs) {
  const settings = {
    numRuns: Math.max(1, Math.round(runs * RUNS)),
    interruptAfterTimeLimit: BUDGET_MS * RUNS,
    markInterruptAsFailure: false,
  };
  if (SEED !== undefined) settings.seed = Number(SEED);
  if (PATH !== undefined) settings.path = PATH;
  await fc.assert(property, settings);
}

/** Jest's limit for one check. */
const LIMIT_MS = BUDGET_MS * RUNS + 30_000;

// ---------------------------------------------------------------------------------------------
// Watching calls settle.

const show = (v) => util.inspect(v, { depth: 3, maxArrayLength: 8, maxStringLength: 60, breakLength: Infinity });

/** Follows a call: how many times it settled and how. A synchronous throw is an outcome too. */
function follow(start) {
  const rec = { settled: 0, outcome: undefined, done: undefined };
  let p;
  try {
    p = start();
  } catch (e) {
    rec.outcome = { threw: e };
    rec.settled = 1;
    rec.done = Promise.resolve();
    return rec;
  }
  if (!(p instanceof Promise)) {
    rec.outcome = { threw: new Error(`returned ${show(p)}, not a Promise`) };
    rec.settled = 1;
    rec.done = Promise.resolve();
    return rec;
  }
  rec.done = p.then(
    (value) => {
      rec.settled++;
      rec.outcome = { value };
    },
    (error) => {
      rec.settled++;
      rec.outcome = { error };
    },
  );
  return rec;
}

function within(promise, ms) {
  let timer;
  return Promise.race([promise.then(() => true), new Promise((resolve) => (timer = setTimeout(resolve, ms, false)))]).finally(() => clearTimeout(timer));
}

/** Waits for every followed call (up to the deadline); names the ones that never settled. */
async function allSettled(recs, ms = DEADLINE_MS) {
  await within(Promise.all(Object.values(recs).map((r) => r.done)), ms);
  return Object.entries(recs)
    .filter(([, r]) => r.settled !== 1)
    .map(([name, r]) => `${name}: settled ${r.settled} times within ${ms} ms`);
}

/** Polls `stats()` (there is no event to await) until nothing is queued or running, for up to `ms`. */
async function idle(pool, ms = DEADLINE_MS) {
  const until = Date.now() + ms;
  let s = pool.stats();
  while ((s.queued !== 0 || s.running !== 0) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    s = pool.stats();
  }
  return s.queued === 0 && s.running === 0 ? null : `stats() still shows queued ${s.queued}, running ${s.running}`;
}

/**
 * What a call may end with: `check` (null: it must not resolve) judges a value; `codes` are the
 * RpcError codes it may reject with.
 */
function judge(rec, { check, codes }) {
  const o = rec.outcome;
  if (o === undefined) return 'never settled';
  if ('threw' in o) return `threw synchronously: ${show(o.threw)}`;
  if ('value' in o) {
    if (check === null) return `resolved with ${show(o.value)}, expected a rejection with ${[...codes].map((c) => NAME[c]).join(' or ')}`;
    const why = check(o.value, '');
    return why === null ? null : `resolved with a wrong value: ${why}`;
  }
  const e = o.error;
  if (!(e instanceof RpcError)) return `rejected with ${show(e)}, not an RpcError`;
  if (!DOCUMENTED.has(e.code)) return `rejected with an undocumented code ${e.code}: ${e.message}`;
  if (typeof e.message !== 'string' || e.message === '') return `rejected with code ${e.code} and no message`;
  if (!codes.has(e.code)) {
    const allowed = [check === null ? null : 'a value', ...[...codes].map((c) => NAME[c])].filter(Boolean).join(' or ');
    return `rejected with ${NAME[e.code]} (${e.message.slice(0, 300)}), expected ${allowed}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Hostile values: descriptions (what fast-check generates, shrinks and prints) and their builds.

const codeUnits = (max, units = fc.integer({ min: 0, max: 0xffff })) => fc.array(units, { maxLength: max }).map((a) => String.fromCharCode(...a));
const surrogatey = fc.constantFrom(0xd800, 0xdbff, 0xdc00, 0xdfff, 0xd83d, 0xde00, 0x41, 0xe9, 0x0);

const stringArb = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  codeUnits(6),
  codeUnits(6, surrogatey),
  fc.constantFrom('', '"\\\n\t\r\b\f', '\u2028\u2029', '</script><b>&amp;', '{{a}}{{{b}}}', "'`=/", 'e\u0301', '\u{1F600}'),
);

const numberArb = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(-0, NaN, Infinity, -Infinity, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, Number.EPSILON),
  fc.constantFrom(2 ** 53, 2 ** 53 + 2, -(2 ** 53) - 2, 2 ** 31, 2 ** 32, 2 ** 64, 1e21, 1e-7, 1e-6, 0.1, 0.3, 123456789012345680000, 1.5e300),
);

const bigintArb = fc.oneof(fc.bigInt(), fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }), fc.constantFrom(0n, -1n, 2n ** 64n, -(2n ** 63n)));

/** Plain JSON leaves (the kind big plain data is made of). */
const jsonLeaf = fc.oneof(
  { weight: 4, arbitrary: numberArb },
  { weight: 4, arbitrary: stringArb },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
).map((v) => ({ t: 'v', v }));

const REFUSED_KINDS = [
  'function', 'arrow', 'async function', 'class', 'symbol', 'Date', 'invalid Date', 'Map', 'Set', 'RegExp', 'Error',
  'Number object', 'String object', 'BigInt object', 'class instance', 'Promise', 'WeakMap', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView',
];
const TYPED = [
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
  'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
];
const HUGE_LENGTHS = [2 ** 28, 2 ** 30, 2 ** 31, 2 ** 32 - 1];
const TRAPS = ['none', 'get', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'has', 'revoked'];
const KEYS = [
  '__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', 'length', 'then', 'a', 'b',
  '0', '1', '7', '10', '4294967294', '4294967295', '9007199254740993', '-1', '01', '1.5', '', ' ',
  '\u0000', '\ud800', '\udfff', '\ud83d\ude00', '\ud83d', 'é', 'e\u0301',
];

const keyArb = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...KEYS) }, { weight: 2, arbitrary: fc.string({ maxLength: 5 }) }, { weight: 1, arbitrary: codeUnits(3, surrogatey) });
const bytesArb = fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 8 });

/** A string of n copies of a unit (a cycle converts it some 33 times before it is refused: keep n small inside values). */
const bigString = (max) =>
  fc.record({ t: fc.constant('big string'), unit: fc.constantFrom('x', 'é', '\u{1F600}', '\ud800', '"\\\n\u0001', '<&>'), n: fc.integer({ min: 200, max }) });

const leafArb = fc.oneof(
  { weight: 10, arbitrary: jsonLeaf },
  { weight: 1, arbitrary: fc.constant({ t: 'v', v: undefined }) },
  { weight: 2, arbitrary: bigintArb.map((v) => ({ t: 'v', v })) },
  { weight: 1, arbitrary: bigString(20_000) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('refused'), kind: fc.constantFrom(...REFUSED_KINDS) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('typed'),
      ctor: fc.constantFrom(...TYPED),
      buffer: fc.constantFrom('ArrayBuffer', 'resizable ArrayBuffer', 'SharedArrayBuffer', 'growable SharedArrayBuffer'),
      bytes: bytesArb,
      offset: fc.integer({ min: 0, max: 2 }),
      tracking: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('Buffer'), bytes: bytesArb }) },
);

/** A getter's result on each read: the same value, a throw, or a different value each time. */
const flakyLeaf = fc.oneof(fc.integer(), fc.string({ maxLength: 3 }), fc.boolean(), fc.constant(null), fc.bigInt({ min: -5n, max: 5n }), fc.constantFrom(NaN, -0)).map((v) => ({ t: 'v', v }));

const { value: hostileArb } = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthIdentifier: 'hostile', withCrossShrink: true },
    { weight: 8, arbitrary: leafArb },
    { weight: 3, arbitrary: tie('array') },
    { weight: 3, arbitrary: tie('object') },
    { weight: 1, arbitrary: tie('many') },
    { weight: 1, arbitrary: tie('sparse') },
    { weight: 2, arbitrary: tie('proxy') },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('cycle'), via: fc.constantFrom('array', 'object'), of: tie('value') }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('toJSON'), of: tie('object'), enumerable: fc.boolean() }) },
    { weight: 2, arbitrary: tie('deep') },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('twice'), of: tie('value') }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('arguments'), items: fc.array(jsonLeaf, { maxLength: 3 }) }) },
  ),
  array: fc.record({ t: fc.constant('array'), items: fc.array(tie('value'), { maxLength: 5 }) }),
  object: fc.record({
    t: fc.constant('object'),
    nullProto: fc.boolean(),
    hidden: fc.boolean(),
    entries: fc.uniqueArray(fc.tuple(keyArb, tie('entry')), { maxLength: 5, selector: (e) => e[0] }),
  }),
  entry: fc.oneof({ depthIdentifier: 'hostile' }, { weight: 6, arbitrary: tie('value') }, { weight: 1, arbitrary: tie('getter') }),
  getter: fc.oneof(
    fc.record({ t: fc.constant('getter'), mode: fc.constant('value'), of: tie('value') }),
    fc.record({ t: fc.constant('getter'), mode: fc.constant('throws') }),
    fc.record({ t: fc.constant('getter'), mode: fc.constant('flaky'), values: fc.array(flakyLeaf, { minLength: 2, maxLength: 3 }) }),
  ),
  // At least 32 values: big plain data travels as JSON text, with a few hostile values inside.
  many: fc.record({
    t: fc.constant('many'),
    as: fc.constantFrom('array', 'object'),
    items: fc.array(fc.oneof({ depthIdentifier: 'hostile' }, { weight: 12, arbitrary: jsonLeaf }, { weight: 1, arbitrary: tie('value') }, { weight: 1, arbitrary: tie('getter') }), {
      minLength: 30,
      maxLength: 70,
    }),
  }),
  sparse: fc.oneof(
    fc.record({ t: fc.constant('sparse'), length: fc.integer({ min: 1, max: 40 }), at: fc.array(fc.tuple(fc.nat(), tie('value')), { maxLength: 3 }) }),
    fc.record({
      t: fc.constant('sparse'),
      length: fc.constantFrom(...HUGE_LENGTHS),
      at: fc.array(fc.tuple(fc.constantFrom(0, 1, 'last'), tie('value')), { maxLength: 2 }),
    }),
  ),
  proxy: fc.record({ t: fc.constant('proxy'), of: fc.oneof(tie('array'), tie('object')), trap: fc.constantFrom(...TRAPS) }),
  deep: fc.record({
    t: fc.constant('deep'),
    via: fc.constantFrom('array', 'object', 'both'),
    depth: fc.oneof(
      { weight: 2, arbitrary: fc.integer({ min: 1, max: 40 }) },
      { weight: 2, arbitrary: fc.integer({ min: 41, max: MAX_NESTING }) },
      { weight: 1, arbitrary: fc.constantFrom(63, 64, 65, 127, 128, 129, 511, 512, 513, 600, 2000, 20_000) },
    ),
    leaf: jsonLeaf,
  }),
}));

/** What is sent: a hostile value, now and then a string of up to a million units. */
const sentArb = fc.oneof({ weight: 30, arbitrary: hostileArb }, { weight: 1, arbitrary: bigString(1_000_000) });

function sparseIndex(d, i) {
  if (i === 'last') return d.length - 1;
  return typeof i === 'number' && d.length <= 40 ? i % d.length : i;
}

function hugeLength(d) {
  return d.t === 'sparse' && d.length > 40;
}

/** Whether a huge sparse array is anywhere in `d` (JSON.stringify would take seconds to fail). */
function holdsHugeLength(d) {
  if (d === null || typeof d !== 'object') return false;
  if (hugeLength(d)) return true;
  return Object.values(d).some(holdsHugeLength);
}

function refusedValue(kind) {
  switch (kind) {
    case 'function':
      return function f() {};
    case 'arrow':
      return () => 1;
    case 'async function':
      return async () => 1;
    case 'class':
      return class K {};
    case 'symbol':
      return Symbol('s');
    case 'Date':
      return new Date(0);
    case 'invalid Date':
      return new Date(NaN);
    case 'Map':
      return new Map([[1, 2]]);
    case 'Set':
      return new Set([1]);
    case 'RegExp':
      return /x/g;
    case 'Error':
      return new Error('e');
    case 'Number object':
      return Object(1);
    case 'String object':
      return Object('s');
    case 'BigInt object':
      return Object(1n);
    case 'class instance':
      return new (class Point {
        constructor() {
          this.x = 1;
        }
      })();
    case 'Promise':
      return Promise.resolve(1);
    case 'WeakMap':
      return new WeakMap();
    case 'ArrayBuffer':
      return new ArrayBuffer(8);
    case 'SharedArrayBuffer':
      return new SharedArrayBuffer(8);
    case 'DataView':
      return new DataView(new ArrayBuffer(8));
    default:
      throw new Error(`unknown kind ${kind}`);
  }
}

function typedArray(d) {
  const Ctor = globalThis[d.ctor];
  const size = Ctor.BYTES_PER_ELEMENT;
  const bytes = (d.offset + d.bytes.length) * size;
  const buffer =
    d.buffer === 'ArrayBuffer'
      ? new ArrayBuffer(bytes)
      : d.buffer === 'resizable ArrayBuffer'
        ? new ArrayBuffer(bytes, { maxByteLength: bytes + 64 })
        : d.buffer === 'SharedArrayBuffer'
          ? new SharedArrayBuffer(bytes)
          : new SharedArrayBuffer(bytes, { maxByteLength: bytes + 64 });
  const resizable = d.buffer.startsWith('resizable') || d.buffer.startsWith('growable');
  const view = d.tracking && resizable ? new Ctor(buffer, d.offset * size) : new Ctor(buffer, d.offset * size, d.bytes.length);
  d.bytes.forEach((b, i) => (view[i] = size === 8 && d.ctor.startsWith('Big') ? BigInt(b) : b));
  if (d.buffer === 'growable SharedArrayBuffer') buffer.grow(bytes + 8); // a length-tracking view grows with it
  return view;
}

/** Builds a fresh value from its description (getters keep state, so every send builds anew). */
function build(d) {
  switch (d.t) {
    case 'v':
      return d.v;
    case 'big string':
      return d.unit.repeat(d.n);
    case 'refused':
      return refusedValue(d.kind);
    case 'typed':
      return typedArray(d);
    case 'Buffer':
      return Buffer.from(d.bytes);
    case 'array':
      return d.items.map(build);
    case 'many': {
      if (d.as === 'array') return d.items.map((item) => (item.t === 'getter' ? build({ t: 'object', entries: [['g', item]] }) : build(item)));
      return build({ t: 'object', entries: d.items.map((item, i) => [`k${i}`, item]) });
    }
    case 'object': {
      const o = d.nullProto ? Object.create(null) : {};
      for (const [key, entry] of d.entries) {
        if (entry.t === 'getter') Object.defineProperty(o, key, { get: getter(key, entry), enumerable: true, configurable: true });
        else Object.defineProperty(o, key, { value: build(entry), enumerable: true, writable: true, configurable: true });
      }
      if (d.hidden) {
        o[Symbol('hidden')] = 'symbol keys are not sent';
        if (!Object.hasOwn(o, 'hidden!')) Object.defineProperty(o, 'hidden!', { value: () => 'neither are non-enumerable ones', enumerable: false });
      }
      return o;
    }
    case 'sparse': {
      const a = [];
      a.length = d.length;
      for (const [i, item] of d.at) a[sparseIndex(d, i)] = build(item);
      return a;
    }
    case 'proxy': {
      const target = build(d.of);
      if (d.trap === 'revoked') {
        const r = Proxy.revocable(target, {});
        r.revoke();
        return r.proxy;
      }
      const handler = {};
      if (d.trap !== 'none') {
        handler[d.trap] = () => {
          throw new Error(`the ${d.trap} trap throws`);
        };
      }
      return new Proxy(target, handler);
    }
    case 'cycle': {
      if (d.via === 'array') {
        const a = [build(d.of)];
        a.push(a);
        return a;
      }
      const o = { x: build(d.of) };
      o.self = { back: o };
      return o;
    }
    case 'toJSON': {
      const o = build(d.of);
      Object.defineProperty(o, 'toJSON', { value: () => 'replaced', enumerable: d.enumerable, configurable: true });
      return o;
    }
    case 'deep': {
      let v = build(d.leaf);
      for (let i = 0; i < d.depth; i++) v = d.via === 'array' || (d.via === 'both' && i % 2 === 0) ? [v] : { k: v };
      return v;
    }
    case 'twice': {
      const v = build(d.of);
      return [v, v];
    }
    case 'arguments':
      return (function () {
        return arguments;
      })(...d.items.map(build));
    default:
      throw new Error(`unknown description ${d.t}`);
  }
}

function getter(key, d) {
  if (d.mode === 'value') {
    const v = build(d.of);
    return () => v;
  }
  if (d.mode === 'throws') {
    return () => {
      throw new Error(`the getter of ${show(key)} throws`);
    };
  }
  let reads = 0;
  return () => build(d.values[reads++ % d.values.length]);
}

// ---------------------------------------------------------------------------------------------
// The oracle: what may come back for a described value.
//
// The rule is JSON.parse(JSON.stringify(x)), amended by the README:
// - Values: BigInts cross by value; Uint8Arrays/Buffers over ordinary memory are copied (a
//   Uint8Array comes back); typed arrays over SharedArrayBuffers are lent by reference (echo and
//   results refuse them); undefined becomes null and an object's key is kept; a Proxy crosses as
//   what it stands for, read through its traps; functions, Dates, class instances, Maps,
//   symbols, objects with a toJSON method, other typed arrays over ordinary memory and cyclic
//   values are refused with InvalidParams, and so is a value whose getter or Proxy trap throws.
// - Limits: strings are UTF-8 in native code, so a lone surrogate becomes U+FFFD (two keys that
//   become the same key are one key: the first one's place, the last one's value, as JSON.parse
//   treats a repeated key); params nest at most 512 levels; an array too long for its JSON text
//   is refused.
// - Numbers: NaN, ±Infinity and −0 cross unchanged (they never take the JSON text path). The
//   README lists NaN among what is converted value by value but does not say what becomes of it;
//   every value path keeps it, and the oracle holds them to that.
//
// A spec is { must, may, views, mayViews, nonJson, mayNonJson, exact, depth, check, make }:
// `must`: refused whatever path it takes; `may`: might be refused (a getter whose reads differ);
// `views`/`nonJson`: it holds a shared view / a BigInt, bytes or view (render refuses those);
// `exact`: there is one right answer, which make() builds; `depth`: levels of arrays and
// objects; check(actual, at) → null or what is wrong.

function refuse(why) {
  return { must: true, may: true, views: false, mayViews: false, nonJson: false, mayNonJson: false, exact: false, depth: 0, why, check: null, make: null };
}

function leafSpec(check, make, extra = {}) {
  return { must: false, may: false, views: false, mayViews: false, nonJson: false, mayNonJson: false, exact: true, depth: 0, check, make, ...extra };
}

const isPlainObject = (a) => {
  if (a === null || typeof a !== 'object' || Array.isArray(a) || types.isProxy(a)) return false;
  const p = Object.getPrototypeOf(a);
  return p !== null && Object.getPrototypeOf(p) === null && Object.hasOwn(p, 'hasOwnProperty');
};

function valueSpec(v) {
  if (v === undefined || v === null) return leafSpec((a, at) => (a === null ? null : `${at || 'value'}: expected null, got ${show(a)}`), () => null);
  switch (typeof v) {
    case 'number':
      return leafSpec((a, at) => (Object.is(a, v) ? null : `${at || 'value'}: expected ${show(v)}, got ${show(a)}`), () => v);
    case 'boolean':
      return leafSpec((a, at) => (a === v ? null : `${at || 'value'}: expected ${v}, got ${show(a)}`), () => v);
    case 'string':
      return stringSpec(() => v);
    case 'bigint':
      return leafSpec((a, at) => (a === v ? null : `${at || 'value'}: expected ${v}n, got ${show(a)}`), () => v, { nonJson: true, mayNonJson: true });
    default:
      throw new Error(`no spec for ${typeof v}`);
  }
}

function stringSpec(source) {
  let wanted;
  const want = () => (wanted ??= source().toWellFormed());
  return leafSpec((a, at) => {
    if (typeof a !== 'string') return `${at || 'value'}: expected a string, got ${show(a)}`;
    if (a === want()) return null;
    let i = 0;
    while (a[i] === want()[i]) i++;
    return `${at || 'value'}: expected ${show(want())} (length ${want().length}), got ${show(a)} (length ${a.length}), first difference at ${i}`;
  }, want);
}

function bytesSpec(bytes) {
  return leafSpec(
    (a, at) => {
      if (!types.isUint8Array(a) || Object.getPrototypeOf(a)?.constructor?.name !== 'Uint8Array') return `${at || 'value'}: expected a Uint8Array, got ${show(a)}`;
      if (types.isSharedArrayBuffer(a.buffer)) return `${at || 'value'}: a copy over a SharedArrayBuffer`;
      return a.length === bytes.length && bytes.every((b, i) => a[i] === b) ? null : `${at || 'value'}: expected bytes ${bytes}, got ${show(a)}`;
    },
    () => Uint8Array.from(bytes),
    { nonJson: true, mayNonJson: true },
  );
}

const VIEW = leafSpec((a, at) => `${at || 'value'}: a shared view cannot come back, got ${show(a)}`, null, {
  views: true,
  mayViews: true,
  nonJson: true,
  mayNonJson: true,
  exact: false,
});

/**
 * The spec of a container of `children`; `shape` checks the container, `make` builds it.
 * `shadowed`: entries read but not kept (a repeated key's earlier values): they can still refuse
 * the whole value, and a view or BigInt among them may or may not be seen (native echo and
 * render look at every entry; a JS handler gets the object with the last value only).
 */
function container(children, shape, make, shadowed = []) {
  const all = [...children, ...shadowed];
  const refused = all.find((c) => c.must);
  if (refused) return refused;
  return {
    must: false,
    may: all.some((c) => c.may),
    views: children.some((c) => c.views),
    mayViews: all.some((c) => c.mayViews),
    nonJson: children.some((c) => c.nonJson),
    mayNonJson: all.some((c) => c.mayNonJson),
    exact: children.every((c) => c.exact),
    depth: 1 + Math.max(0, ...all.map((c) => c.depth)),
    check: shape,
    make,
  };
}

function arraySpec(items) {
  return container(
    items,
    (a, at) => {
      if (!Array.isArray(a) || types.isProxy(a)) return `${at || 'value'}: expected an array of ${items.length}, got ${show(a)}`;
      if (a.length !== items.length) return `${at || 'value'}: expected ${items.length} elements, got ${a.length}: ${show(a)}`;
      for (let i = 0; i < items.length; i++) {
        if (!Object.hasOwn(a, i)) return `${at}[${i}]: a hole`;
        const why = items[i].check(a[i], `${at}[${i}]`);
        if (why !== null) return why;
      }
      return null;
    },
    () => items.map((s) => s.make()),
  );
}

/** JavaScript's own order of `keys` (integer-like keys first, ascending). */
function jsOrder(keys) {
  const o = Object.create(null);
  for (const k of keys) o[k] = true;
  return Object.keys(o);
}

/** `entries` ([key, spec], in the object's own order) as they cross: keys made well-formed. */
function objectSpec(entries) {
  const last = new Map(entries.map(([k], i) => [k.toWellFormed(), i])); // first place, last value
  const merged = new Map([...last].map(([k, i]) => [k, entries[i][1]]));
  const keys = jsOrder([...merged.keys()]);
  return container(
    [...merged.values()],
    (a, at) => {
      if (!isPlainObject(a)) return `${at || 'value'}: expected a plain object, got ${show(a)}`;
      const got = Object.keys(a);
      if (got.length !== keys.length || got.some((k, i) => k !== keys[i])) return `${at || 'value'}: expected keys ${show(keys)}, got ${show(got)}`;
      for (const k of keys) {
        const d = Object.getOwnPropertyDescriptor(a, k);
        if (!('value' in d)) return `${at}.${k}: not a data property`;
        const why = merged.get(k).check(d.value, `${at}.${k}`);
        if (why !== null) return why;
      }
      return null;
    },
    () => {
      const o = {};
      for (const k of keys) Object.defineProperty(o, k, { value: merged.get(k).make(), enumerable: true, writable: true, configurable: true });
      return o;
    },
    entries.filter(([k], i) => last.get(k.toWellFormed()) !== i).map(([, s]) => s),
  );
}

/** A value that may be any one of `specs` (a getter read a different number of times). */
function anyOf(specs) {
  const open = specs.filter((s) => !s.must);
  if (open.length === 0) return specs[0];
  return {
    must: false,
    may: specs.some((s) => s.may),
    views: open.every((s) => s.views),
    mayViews: open.some((s) => s.mayViews),
    nonJson: open.every((s) => s.nonJson),
    mayNonJson: open.some((s) => s.mayNonJson),
    exact: false,
    depth: Math.max(...open.map((s) => s.depth)),
    check: (a, at) => (open.some((s) => s.check(a, at) === null) ? null : `${at || 'value'}: ${show(a)} is none of the values the getter returned`),
    make: null,
  };
}

/** What JSON text makes of a leaf: NaN and ±Infinity are null, −0 is 0, a BigInt throws. */
function jsonImage(d) {
  const v = d.v;
  if (typeof v === 'bigint') return refuse('JSON.stringify throws on a BigInt');
  if (typeof v === 'number' && !Number.isFinite(v)) return valueSpec(null);
  if (Object.is(v, -0)) return valueSpec(0);
  return valueSpec(v);
}

function entrySpec(e) {
  if (e.t !== 'getter') return spec(e);
  if (e.mode === 'value') return spec(e.of);
  if (e.mode === 'throws') return refuse('a getter throws');
  // Read once value by value, or twice on the JSON text path (once to size it, once to write it).
  return anyOf(e.values.flatMap((v) => [spec(v), jsonImage(v)]));
}

function hasOwnStringKeys(d) {
  return d.t === 'object' && (d.entries.length > 0 || d.hidden);
}

function spec(d) {
  switch (d.t) {
    case 'v':
      return valueSpec(d.v);
    case 'big string':
      return stringSpec(() => d.unit.repeat(d.n));
    case 'refused':
      return refuse(`${d.kind} cannot be sent`);
    case 'typed':
      if (d.buffer.includes('SharedArrayBuffer')) return VIEW;
      return d.ctor === 'Uint8Array' ? bytesSpec(d.bytes) : refuse(`a ${d.ctor} over ordinary memory cannot be sent`);
    case 'Buffer':
      return bytesSpec(d.bytes);
    case 'array':
      return arraySpec(d.items.map(spec));
    case 'many':
      if (d.as === 'array') return arraySpec(d.items.map((item) => (item.t === 'getter' ? objectSpec([['g', entrySpec(item)]]) : spec(item))));
      return objectSpec(d.items.map((item, i) => [`k${i}`, entrySpec(item)]));
    case 'object':
      return objectSpec(jsOrder(d.entries.map(([k]) => k)).map((k) => [k, entrySpec(d.entries.find(([key]) => key === k)[1])]));
    case 'sparse': {
      // JSON.stringify of 2^28 elements or more would be longer than a string can be.
      if (hugeLength(d)) return refuse(`an array of ${d.length} elements`);
      const items = Array.from({ length: d.length }, () => valueSpec(null));
      for (const [i, item] of d.at) items[sparseIndex(d, i)] = spec(item);
      return arraySpec(items);
    }
    case 'proxy': {
      const target = spec(d.of);
      const isArray = d.of.t === 'array';
      switch (d.trap) {
        case 'none':
        case 'has':
          return target; // neither JSON.stringify nor the conversion needs these traps
        case 'getPrototypeOf':
          // An array is one by Array.isArray (no trap); any other Proxy is asked its prototype, to
          // refuse what it stands for when that is refused (a Proxy of a Map): JSON asks nothing.
          return isArray ? target : refuse('a Proxy whose getPrototypeOf trap throws');
        case 'get':
        case 'revoked':
          return refuse(`a Proxy whose ${d.trap} trap throws`);
        case 'ownKeys':
          return isArray ? target : refuse('a Proxy whose ownKeys trap throws');
        case 'getOwnPropertyDescriptor':
          return isArray || !hasOwnStringKeys(d.of) ? target : refuse('a Proxy whose getOwnPropertyDescriptor trap throws');
        default:
          throw new Error(`unknown trap ${d.trap}`);
      }
    }
    case 'cycle':
      return refuse('a cyclic value');
    case 'toJSON':
      return refuse('a value with a toJSON method');
    case 'deep':
      return deepSpec(d);
    case 'twice': {
      const one = spec(d.of);
      return arraySpec([one, spec(d.of)]);
    }
    case 'arguments':
      return objectSpec(d.items.map((item, i) => [String(i), spec(item)]));
    default:
      throw new Error(`unknown description ${d.t}`);
  }
}

/** Nested `depth` levels around a leaf: checked and built without recursion. */
function deepSpec(d) {
  const leaf = spec(d.leaf);
  const arrayAt = (i) => d.via === 'array' || (d.via === 'both' && (d.depth - 1 - i) % 2 === 0); // level i from the outside
  return {
    ...leaf,
    depth: d.depth,
    check(a, at) {
      let v = a;
      for (let i = 0; i < d.depth; i++) {
        if (arrayAt(i)) {
          if (!Array.isArray(v) || v.length !== 1) return `${at || 'value'} at level ${i}: expected [x], got ${show(v)}`;
          v = v[0];
        } else {
          if (!isPlainObject(v) || Object.keys(v).join() !== 'k') return `${at || 'value'} at level ${i}: expected { k }, got ${show(v)}`;
          v = v.k;
        }
      }
      return leaf.check(v, `${at} at level ${d.depth}`);
    },
    make() {
      let v = leaf.make();
      for (let i = d.depth - 1; i >= 0; i--) v = arrayAt(i) ? [v] : { k: v };
      return v;
    },
  };
}

/**
 * What a call may end with, given the spec of its value and where the value sits: `nesting`
 * levels of params around it, whether a shared view or non-JSON data is refused there.
 */
function expectation(s, { nesting, refuseViews = true, refuseNonJson = false, code = C.InvalidParams }) {
  const depth = s.depth + nesting;
  // Within a few levels of the limit, which side a value falls on depends on the entry point.
  const must = s.must || (refuseViews && s.views) || (refuseNonJson && s.nonJson) || depth > MAX_NESTING + 8;
  const may = must || s.may || (refuseViews && s.mayViews) || (refuseNonJson && s.mayNonJson) || depth > MAX_NESTING - 8;
  return { check: must ? null : s.check, codes: new Set(may ? [code] : []) };
}

// ---------------------------------------------------------------------------------------------
// The oracle for JSON text (handle()): the value a JSON.parse of the text would give, with
// lone surrogates made U+FFFD and repeated keys merged.

function nestingOf(v) {
  let deepest = 0;
  const stack = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop();
    if (x !== null && typeof x === 'object') {
      deepest = Math.max(deepest, d + 1);
      for (const k of Object.keys(x)) stack.push([x[k], d + 1]);
    }
  }
  return deepest;
}

function jsonSpec(v) {
  if (Array.isArray(v)) return arraySpec(v.map(jsonSpec));
  if (v !== null && typeof v === 'object') return objectSpec(Object.keys(v).map((k) => [k, jsonSpec(v[k])]));
  return valueSpec(v);
}

// ---------------------------------------------------------------------------------------------
// Call options: timeouts of every size and kind, signals aborted before or during the call.

const TIMEOUTS = {
  none: [0, Infinity, 1e22, 1e300, Number.MAX_VALUE, 2 ** 31, 86_400_000],
  tiny: [1e-9, Number.MIN_VALUE, 0.001, 1, 2],
  bad: [NaN, -1, -Infinity, '5', null, true, 10n, {}],
};

const timeoutOf = (kind) => fc.constantFrom(...TIMEOUTS[kind]).map((value) => ({ kind, value }));
const optionsArb = fc.record({
  wrap: fc.oneof(
    { weight: 12, arbitrary: fc.constant('object') },
    { weight: 1, arbitrary: fc.constantFrom('none', 'null', 'number', 'string', 'throwing getter', 'throwing Proxy') },
  ),
  timeout: fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: 'absent' }) },
    { weight: 2, arbitrary: timeoutOf('none') },
    { weight: 2, arbitrary: timeoutOf('tiny') },
    { weight: 1, arbitrary: timeoutOf('bad') },
  ),
  signal: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('absent', 'aborted later', 'aborted at once', 'never aborted') },
    { weight: 1, arbitrary: fc.constantFrom('aborted', 'not a signal', 'null') },
  ),
});

/** Builds the options object; `abort()` fires the signals meant to fire during the call. */
function makeOptions(o) {
  let controller = null;
  const later = [];
  const opts = {};
  if (o.timeout.kind !== 'absent') opts.timeout = o.timeout.value;
  switch (o.signal) {
    case 'aborted':
      opts.signal = AbortSignal.abort();
      break;
    case 'aborted later':
    case 'aborted at once':
    case 'never aborted':
      controller = new AbortController();
      opts.signal = controller.signal;
      if (o.signal !== 'never aborted') later.push(o.signal === 'aborted at once' ? 0 : 1);
      break;
    case 'not a signal':
      opts.signal = { aborted: false, addEventListener() {} };
      break;
    case 'null':
      opts.signal = null;
      break;
    default:
  }
  let options;
  switch (o.wrap) {
    case 'none':
      options = undefined;
      break;
    case 'null':
      options = null;
      break;
    case 'number':
      options = 5;
      break;
    case 'string':
      options = 'timeout';
      break;
    case 'throwing getter':
      options = {
        get timeout() {
          throw new Error('the timeout getter throws');
        },
      };
      break;
    case 'throwing Proxy':
      options = new Proxy(opts, {
        get() {
          throw new Error('the options trap throws');
        },
      });
      break;
    default:
      options = opts;
  }
  const abort = () => {
    if (controller === null) return;
    if (later[0] === 0) controller.abort();
    else if (later[0] === 1) setTimeout(() => controller.abort(), 1);
  };
  return { options, abort };
}

/** The codes a call with options `o` may add, or { only } when the options decide alone. */
function optionEffects(o) {
  // The options are the object's own keys (README, Calls): a Proxy of an object with none
  // is asked for no value, so its throwing `get` trap never runs and the call has no options.
  const hasKeys = o.timeout.kind !== 'absent' || o.signal !== 'absent';
  if (o.wrap === 'throwing Proxy' && !hasKeys) return { codes: [] };
  if (o.wrap === 'null' || o.wrap === 'number' || o.wrap === 'string' || o.wrap === 'throwing getter' || o.wrap === 'throwing Proxy') return { only: C.InvalidRequest };
  if (o.wrap === 'none') return { codes: [] };
  if (o.signal === 'not a signal') return { only: C.InvalidRequest };
  if (o.signal === 'aborted') return { only: C.Aborted };
  const codes = [];
  if (o.timeout.kind === 'bad') return { bad: C.InvalidRequest };
  if (o.timeout.kind === 'tiny') codes.push(C.Timeout);
  if (o.signal === 'aborted later' || o.signal === 'aborted at once') codes.push(C.Aborted);
  return { codes };
}

// ---------------------------------------------------------------------------------------------
// 1. Hostile values through every entry point.

function fail(what, problems) {
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\n${what}`);
}

const names = (codes) => [...codes].map((c) => NAME[c]);

/** The served echoes: one on this thread, one on a worker_thread; both count their runs. */
const mainRuns = new Map();
let tags = 0;
let servers = null;

async function startServers() {
  if (servers !== null) return servers;
  const shared = Pool.shared();
  const main = shared.serve({
    prop_echo_main(tag, x) {
      mainRuns.set(tag, (mainRuns.get(tag) ?? 0) + 1);
      return x;
    },
  });
  const worker = new Worker(path.join(__dirname, 'fixtures', 'property-worker.js'), { workerData: { serve: ['prop_echo_worker', 'prop_runs'] } });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  servers = { shared, main, worker };
  return servers;
}

async function stopServers() {
  if (servers === null) return;
  const { main, worker, shared } = servers;
  servers = null;
  await main.close();
  await worker.terminate();
  await shared.close();
}

const idArb = fc.oneof(fc.integer(), fc.double(), stringArb, fc.constant(null), fc.constant('absent'), fc.constantFrom(true, { id: 1 }, [1]));

/**
 * Judges a request()/handle() answer (already parsed): `expect` is what echo may answer, `invalid`
 * the codes of an answer that says the request itself could not be read (InvalidRequest: id null),
 * `readable` whether it can be read (then a notification gets no answer).
 */
function judgeResponse(rec, { id, notification, readable, expect, invalid }) {
  const o = rec.outcome;
  if (o === undefined) return 'never settled';
  if ('threw' in o) return `threw synchronously: ${show(o.threw)}`;
  if ('error' in o) return `rejected (it never may): ${show(o.error)}`;
  const r = o.value;
  if (r === null) {
    if (!notification) return 'answered null to a request with an id';
    // A notification is answered only when it is not a valid request.
    return readable ? null : 'answered null to a notification that cannot be read';
  }
  if (!isPlainObject(r) || r.jsonrpc !== '2.0') return `not a JSON-RPC response: ${show(r)}`;
  if ('error' in r) {
    const e = r.error;
    if (!isPlainObject(e) || typeof e.message !== 'string' || e.message === '' || !DOCUMENTED.has(e.code)) return `a malformed error: ${show(r)}`;
    if (invalid.has(e.code)) return r.id !== null && e.code === C.InvalidRequest ? `an InvalidRequest answer with id ${show(r.id)}` : null;
    if (notification) return `answered a notification with ${NAME[e.code]} (${e.message.slice(0, 300)})`;
    if (!expect.codes.has(e.code)) {
      return `answered ${NAME[e.code]} (${e.message.slice(0, 300)}), expected ${[expect.check === null ? null : 'a result', ...names(expect.codes)].filter(Boolean).join(' or ')}`;
    }
  } else {
    if (!('result' in r)) return `neither result nor error: ${show(r)}`;
    if (notification) return `answered a notification: ${show(r)}`;
    if (expect.check === null) return `answered ${show(r.result)}, expected ${names(expect.codes).join(' or ')}`;
    const why = expect.check(r.result, 'result');
    if (why !== null) return why;
  }
  return id.check(r.id, 'id');
}

/**
 * handle() of the JSON text of an echo request, when that text can be made. `maxNesting`: texts
 * nested deeper are not sent.
 */
function sendText(pool, d, id, maxNesting) {
  if (holdsHugeLength(d)) return [];
  let text;
  try {
    const request = { jsonrpc: '2.0', method: 'echo', params: [build(d)] };
    if (id !== 'absent') request.id = id;
    text = JSON.stringify(request);
  } catch {
    return []; // no JSON text to send
  }
  // The oracle reads the text as JSON.parse does, then crosses it as any value crosses.
  const sent = JSON.parse(text);
  const x = sent.params[0];
  const depth = nestingOf(x) + 2;
  if (depth > maxNesting) return [];
  const notification = !('id' in sent);
  const validId = notification || sent.id === null || typeof sent.id === 'number' || typeof sent.id === 'string';
  const s = depth > MAX_NESTING + 8 ? refuse('nested too deep') : jsonSpec(x);
  const tooDeep = depth > MAX_NESTING - 8 ? [C.ParseError, C.InvalidRequest, C.InvalidParams] : [];
  const invalid = new Set([...tooDeep, ...(validId ? [] : [C.InvalidRequest])]);
  const expect = validId ? expectation(s, { nesting: 2 }) : { check: null, codes: new Set() };
  const ctx = { id: jsonSpec(validId && !notification ? sent.id : null), notification, readable: validId && expect.check !== null, expect, invalid };
  const rec = follow(() => pool.handle(text));
  const judgeText = () => {
    const o = rec.outcome;
    if (o === undefined || !('value' in o)) return judgeResponse(rec, ctx);
    if (typeof o.value !== 'string') return `answered ${show(o.value)}, not text`;
    let parsed = null; // '': nothing to answer
    try {
      if (o.value !== '') parsed = JSON.parse(o.value);
    } catch (e) {
      return `answered text that is not JSON (${e.message}): ${show(o.value)}`;
    }
    return judgeResponse({ outcome: { value: parsed } }, ctx);
  };
  return [{ name: `handle with id ${show(id)}`, rec, judge: judgeText }];
}

const TEMPLATES = ['{{a}}', '{{{a}}}|{{&a}}', '[{{#a}}<{{.}}>{{/a}}]', '{{^a}}none{{/a}}', '{{a.b}}|{{a.0}}|{{a.length}}', '{{#a}}{{#.}}({{.}}){{/.}}{{/a}}', 'no tags'];

/**
 * The entry points: `extra` generates what a call needs besides the value; `send(pool, d, extra)`
 * starts the call(s) and returns them as { name, rec, judge() → problem | null, after?() }.
 * (The served echoes use Pool.shared(), whatever `pool` is.)
 */
const ENTRIES = {
  exec: {
    extra: fc.constant(null),
    send(pool, d) {
      const expect = expectation(spec(d), { nesting: 1 });
      const rec = follow(() => pool.exec('echo', build(d)));
      return [{ name: 'exec', rec, judge: () => judge(rec, expect) }];
    },
  },

  call: {
    extra: optionsArb,
    send(pool, d, o) {
      const { options, abort } = makeOptions(o);
      const rec = follow(() => pool.call('echo', [build(d)], options));
      abort();
      const s = spec(d);
      const base = expectation(s, { nesting: 1 });
      // Params that cannot be converted are refused before the call is queued; a shared view
      // is refused by echo as it runs, which a timeout or an abort may come before.
      const converted = expectation(s, { nesting: 1, refuseViews: false }).check !== null;
      const effects = optionEffects(o);
      let expect;
      if (effects.only !== undefined) expect = { check: null, codes: new Set([effects.only]) };
      else if (effects.bad !== undefined) expect = { check: null, codes: new Set([effects.bad, ...base.codes]) }; // which is read first is not said
      else expect = { check: base.check, codes: new Set([...base.codes, ...(converted ? effects.codes : [])]) };
      return [{ name: `call with ${show(o)}`, rec, judge: () => judge(rec, expect) }];
    },
  },

  request: {
    extra: idArb,
    send(pool, d, id) {
      const request = { jsonrpc: '2.0', method: 'echo', params: [build(d)] };
      if (id !== 'absent') request.id = id;
      const s = spec(d);
      const validId = id === 'absent' || id === null || typeof id === 'number' || typeof id === 'string';
      // The whole request is converted first (InvalidRequest with id null); then echo runs.
      const read = expectation(s, { nesting: 2, refuseViews: false, code: C.InvalidRequest });
      const invalid = validId ? read.codes : new Set([C.InvalidRequest]);
      const expect = { check: validId && read.check !== null && !s.views ? s.check : null, codes: new Set(s.mayViews ? [C.InvalidParams] : []) };
      const rec = follow(() => pool.request(request));
      const ctx = { id: valueSpec(validId && id !== 'absent' ? id : null), notification: id === 'absent', readable: validId && read.check !== null, expect, invalid };
      return [{ name: `request with id ${show(id)}`, rec, judge: () => judgeResponse(rec, ctx) }];
    },
  },

  handle: {
    extra: idArb,
    // Texts nested up to 100 levels: deeper ones go to serde_json, which answers ParseError to
    // lone surrogate escapes and to nesting past 128 levels (reported on issue 13).
    send: (pool, d, id) => sendText(pool, d, id, 100),
  },


  broadcast: {
    extra: fc.constant(null),
    send(pool, d) {
      const e = expectation(spec(d), { nesting: 1 });
      const n = pool.threads;
      const check = e.check === null ? null : (a, at) => (Array.isArray(a) && a.length === n ? (a.map((v, i) => e.check(v, `${at}[${i}]`)).find((w) => w !== null) ?? null) : `expected ${n} answers, got ${show(a)}`);
      const rec = follow(() => pool.broadcast('echo', build(d)));
      return [{ name: 'broadcast', rec, judge: () => judge(rec, { check, codes: e.codes }) }];
    },
  },

  render: {
    extra: fc.record({ template: fc.constantFrom(...TEMPLATES, '{{.}}', '{{#.}}[{{.}}]{{/.}}'), wrap: fc.boolean() }),
    send(pool, d, { template, wrap }) {
      if (holdsCallable(d)) return renderWithFunctions(pool, d, template, wrap);
      const s = wrap ? objectSpec([['a', spec(d)]]) : spec(d);
      const e = expectation(s, { nesting: 1, refuseNonJson: true });
      let check = e.check;
      const codes = new Set(e.codes);
      let thrown = null; // what mustache.js throws for this data, if it throws
      if (check !== null) {
        let wanted = null;
        if (s.exact && !s.mayNonJson) {
          try {
            wanted = Mustache.render(template, s.make());
          } catch (error) {
            thrown = error.message;
          }
        } else {
          // No one value to render: mustache.js may throw for some of them ('{{.}}' of an
          // object whose toString is not a function), and then so does the native renderer.
          codes.add(C.CommandFailed);
        }
        if (thrown !== null) {
          // Where mustache.js throws, the native renderer fails the same way (CommandFailed).
          check = null;
          codes.add(C.CommandFailed);
        } else {
          // Output holding a lone surrogate ('{{a.0}}' of an emoji) cannot be a Rust string:
          // the native renderer refuses it (CommandFailed) instead of answering U+FFFD.
          if (wanted !== null && wanted !== wanted.toWellFormed()) codes.add(C.CommandFailed);
          check = (a) => {
            if (typeof a !== 'string') return `rendered ${show(a)}, not a string`;
            return wanted === null || a === wanted ? null : `rendered ${show(a)}, mustache.js renders ${show(wanted)}`;
          };
        }
      }
      const data = build(d);
      const rec = follow(() => pool.render(template, wrap ? { a: data } : data));
      const judgeRender = () => {
        const why = judge(rec, { check, codes });
        if (why !== null || thrown === null) return why;
        const { message } = rec.outcome.error;
        return message === thrown ? null : `failed with ${show(message)}, mustache.js throws ${show(thrown)}`;
      };
      return [{ name: `render ${show(template)} with ${wrap ? '{ a: x }' : 'x'}`, rec, judge: judgeRender }];
    },
  },

  // A served echo: the value crosses to the handler and back; a shared view cannot come back.
  'served here': {
    extra: fc.constant(null),
    send(_, d) {
      return served(d, 'prop_echo_main', async (tag) => mainRuns.get(tag) ?? 0);
    },
  },

  'served by a worker': {
    extra: fc.constant(null),
    send(_, d) {
      return served(d, 'prop_echo_worker', async (tag) => (await servers.shared.exec('prop_runs', [tag]))[0]);
    },
  },
};

/** Kinds of refused value that pool.render takes: functions, which its views may hold. */
const CALLABLE = new Set(['function', 'arrow', 'async function', 'class']);

/** Whether the description holds a function anywhere. */
function holdsCallable(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'refused' && CALLABLE.has(d.kind)) return true;
  return Object.values(d).some(holdsCallable);
}

/**
 * Whether the description is plain data and functions only (arrays, ordinary objects of plain
 * entries, primitives): then both renderers see the very same view.
 */
function plainWithFunctions(d) {
  switch (d.t) {
    case 'v':
    case 'big string':
      return true;
    case 'refused':
      return CALLABLE.has(d.kind);
    case 'array':
      return d.items.every(plainWithFunctions);
    case 'object':
      return !d.nullProto && !d.hidden && d.entries.every(([, e]) => plainWithFunctions(e));
    default:
      return false;
  }
}

/**
 * render of a view holding functions: mustache.js calls them too, so the oracle is mustache.js
 * itself. The render resolves with exactly its output, or rejects with the exception a function
 * threw (the same message as mustache.js's), or with a documented RpcError (InvalidParams for
 * another value that cannot be sent, CommandFailed for a result that cannot cross or print).
 * Where the view also holds values that cross as something else (a null-prototype object, a
 * getter, a Proxy: what the plain-data oracle calls not exact), any string may come back.
 */
function renderWithFunctions(pool, d, template, wrap) {
  // No oracle for a view with a huge sparse array: the render is refused (more values than a
  // call may carry), while mustache.js would build its output, 2^28 commas and up, for
  // nothing. Views with several of them took gigabytes, and once the test process's whole heap.
  const huge = holdsHugeLength(d);
  const exact = !huge && plainWithFunctions(d);
  let wanted = null;
  let thrown = null;
  if (!huge) {
    try {
      const view = build(d);
      wanted = Mustache.render(template, wrap ? { a: view } : view);
    } catch (error) {
      thrown = error;
    }
  }
  const data = build(d);
  const rec = follow(() => pool.render(template, wrap ? { a: data } : data));
  const judgeRender = () => {
    const o = rec.outcome;
    if (o !== undefined && 'error' in o && !(o.error instanceof RpcError)) {
      return (thrown !== null && o.error.message === thrown.message) || !exact ? null : `rejected with ${show(o.error)}, mustache.js ${thrown === null ? `renders ${show(wanted)}` : `throws ${show(thrown.message)}`}`;
    }
    const check = !exact
      ? (a) => (typeof a === 'string' ? null : `rendered ${show(a)}, not a string`)
      : thrown !== null
        ? null
        : (a) => (a === wanted ? null : `rendered ${show(a)}, mustache.js renders ${show(wanted)}`);
    return judge(rec, { check, codes: new Set([C.InvalidParams, C.CommandFailed]) });
  };
  return [{ name: `render ${show(template)} with functions in ${wrap ? '{ a: x }' : 'x'}`, rec, judge: judgeRender }];
}

function served(d, method, runsOf) {
  const tag = ++tags;
  const expect = expectation(spec(d), { nesting: 1 });
  const rec = follow(() => servers.shared.exec(method, tag, build(d)));
  const after = async () => {
    const ran = await runsOf(tag);
    if (ran > 1) return `the handler ran ${ran} times for one call`;
    if ('value' in rec.outcome && ran !== 1) return `resolved, but the handler ran ${ran} times`;
    return null;
  };
  return [{ name: method, rec, judge: () => judge(rec, expect), after, shared: true }];
}

/**
 * Sends every (description, entry, extra) of `sends` at once on a fresh pool of `threads`, then
 * judges every call; afterwards drained() and close() resolve and the pool is idle.
 */
async function sendAll(threads, sends) {
  const pool = new Pool({ threads });
  const calls = sends.flatMap(([d, entry, extra]) => ENTRIES[entry].send(pool, d, extra).map((c) => ({ ...c, d })));
  const problems = await allSettled(Object.fromEntries(calls.map((c, i) => [`${i}: ${c.name}`, c.rec])));
  for (const c of calls) {
    if (c.rec.settled !== 1) continue;
    const why = c.judge() ?? (c.after ? await c.after() : null);
    if (why !== null) problems.push(`${c.name}: ${why}\n  value: ${show(c.d)}`);
  }
  if (!(await within(pool.drained(), DEADLINE_MS))) problems.push(`drained() did not resolve within ${DEADLINE_MS} ms`);
  if (!(await within(pool.close(), DEADLINE_MS))) problems.push(`close() did not resolve within ${DEADLINE_MS} ms`);
  const s = pool.stats();
  if (s.queued !== 0 || s.running !== 0) problems.push(`after close(): queued ${s.queued}, running ${s.running}`);
  if (calls.some((c) => c.shared)) {
    const busy = await idle(servers.shared);
    if (busy !== null) problems.push(`Pool.shared(): ${busy}`);
  }
  return problems;
}

const RUNS_OF = { exec: 600, call: 600, request: 600, handle: 600, broadcast: 300, render: 600, 'served here': 300, 'served by a worker': 300 };

describe('1. hostile values through every entry point settle once, with what JSON would give or a documented RpcError', () => {
  beforeAll(startServers);
  afterAll(stopServers);

  test.each(Object.keys(ENTRIES))('%s (echo of x)', async (entry) => {
    await check(
      fc.asyncProperty(sentArb, fc.integer({ min: 1, max: 2 }), ENTRIES[entry].extra, async (d, threads, extra) => {
        fail(`value: ${show(d)}`, await sendAll(threads, [[d, entry, extra]]));
      }),
      RUNS_OF[entry],
    );
  }, LIMIT_MS);

  test('many at once, through every entry point, on 1–3 threads: each call gets its own answer', async () => {
    const send = fc.oneof(...Object.entries(ENTRIES).map(([entry, { extra }]) => fc.tuple(sentArb, fc.constant(entry), extra)));
    await check(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(send, { minLength: 2, maxLength: 12 }), async (threads, sends) => {
        fail(`sends: ${show(sends.map(([d, entry]) => [entry, d]))}`, await sendAll(threads, sends));
      }),
      200,
    );
  }, LIMIT_MS);
});
describe('1b. handle() of JSON text nested deeper than 100 levels', () => {
  // request() takes values nested up to 512 levels (the README's limit); handle() must take the
  // same requests as JSON text, lone surrogate escapes included, and answer them the same way.
  const deepArb = fc.record({
    t: fc.constant('array'),
    items: fc.tuple(
      fc.record({ t: fc.constant('deep'), via: fc.constantFrom('array', 'object', 'both'), depth: fc.integer({ min: 99, max: MAX_NESTING - 10 }), leaf: jsonLeaf }),
      jsonLeaf,
    ),
  });

  test('answers what request() answers (up to 512 levels, lone surrogates as U+FFFD)', async () => {
    await check(
      fc.asyncProperty(deepArb, idArb, async (d, id) => {
        const pool = new Pool({ threads: 1 });
        const calls = sendText(pool, d, id, Infinity);
        const problems = await allSettled(Object.fromEntries(calls.map((c) => [c.name, c.rec])));
        for (const c of calls) if (c.rec.settled === 1) problems.push(...[c.judge()].filter((w) => w !== null).map((w) => `${c.name}: ${w}`));
        await within(pool.close(), DEADLINE_MS);
        fail(`value: ${show(d)}`, problems);
      }),
      50,
    );
  }, LIMIT_MS);
});

describe('1d. handle() of text nested past the limit: a parse error exactly when JSON.parse throws', () => {
  // Brackets nested 500–3,000 deep around a leaf, sometimes with one character changed: text
  // that is not JSON is -32700 however deep, as JSON.parse says; JSON is never -32700.
  const textArb = fc
    .record({
      depth: fc.integer({ min: 500, max: 3000 }),
      opens: fc.array(fc.constantFrom('[', '{"":', '{"a":1,"b":'), { minLength: 1, maxLength: 3 }),
      leaf: fc.constantFrom('1', '"x"', '[]', '{}', 'null', '-0.5e3', '"\\u00e9"'),
      cut: fc.option(fc.tuple(fc.nat(), fc.constantFrom('', 'x', ',', ']', '}', '[', '"', ':', ' ')), { nil: undefined }),
    })
    .map(({ depth, opens, leaf, cut }) => {
      let open = '';
      let close = '';
      for (let i = 0; i < depth; i++) {
        const o = opens[i % opens.length];
        open += o;
        close = (o === '[' ? ']' : '}') + close;
      }
      let text = open + leaf + close;
      if (cut !== undefined) {
        const at = cut[0] % text.length;
        text = text.slice(0, at) + cut[1] + text.slice(at + 1);
      }
      return text;
    });

  test('-32700 for every text JSON.parse refuses, never for one it takes', async () => {
    const pool = new Pool({ threads: 1 });
    await check(
      fc.asyncProperty(textArb, async (text) => {
        let json = true;
        try {
          JSON.parse(text);
        } catch {
          json = false;
        }
        const answer = JSON.parse(await pool.handle(text));
        const code = Array.isArray(answer) || answer === null ? undefined : answer.error?.code;
        if (json) expect(code).not.toBe(-32700);
        else expect([code, answer.id]).toEqual([-32700, null]);
      }),
      100,
    );
    await pool.close();
  }, LIMIT_MS);
});

describe('1c. packed params: tables of objects that share keys, in any order, arrive as JSON would carry them', () => {
  // Plain params holding objects cross packed (src/rpc/packed.rs): an object whose keys an
  // earlier object of the call had, in the same order, names that earlier key list. Objects
  // here draw their keys from a few lists in shuffled orders, so that keys are shared, shared
  // in another order, or share only a first key; strings include every plane and lone
  // surrogates (U+FFFD natively); there may be more than the 256 key lists a call names.
  const KEYS = ['id', 'name', 'a', 'é', '😀', '__proto__', '0', '10', 'x'.repeat(30), ''];
  const stringArb = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('\ud800', 'a\udc00b', '"\\', 'ÿ'));
  const leafArb = fc.oneof(stringArb, fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)), fc.integer(), fc.boolean(), fc.constant(null));
  const objectArb = (valueArb) =>
    fc.tuple(fc.shuffledSubarray(KEYS, { minLength: 0, maxLength: 5 }), fc.array(valueArb, { minLength: 5, maxLength: 5 })).map(([keys, values]) => {
      const o = {};
      // __proto__ as an own key, as JSON.parse makes it.
      keys.forEach((k, i) => Object.defineProperty(o, k, { value: values[i], enumerable: true, writable: true, configurable: true }));
      return o;
    });
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafArb, objectArb(tie('tree')), fc.array(tie('tree'), { maxLength: 4 })),
  }));
  const tableArb = fc.oneof(fc.array(objectArb(leafArb), { minLength: 1, maxLength: 300 }), fc.array(tree, { minLength: 1, maxLength: 6 }));
  const wellFormed = (v) => JSON.parse(JSON.stringify(v), (_, x) => (typeof x === 'string' ? x.toWellFormed() : x));

  test('natively (echo) and to a served method, key order and all', async () => {
    const pool = new Pool({ threads: 2 });
    const server = pool.serve({ packedEcho: (rows) => rows });
    try {
      await check(
        fc.asyncProperty(tableArb, fc.constantFrom('echo', 'packedEcho'), async (rows, method) => {
          let back;
          const settled = await within(
            pool.exec(method, rows).then((v) => (back = v)),
            DEADLINE_MS,
          );
          expect(settled).toBe(true);
          expect(JSON.stringify(back)).toBe(JSON.stringify(wellFormed(rows)));
        }),
        150,
      );
    } finally {
      await server.close();
      await pool.close();
    }
  }, LIMIT_MS);
});

// ---------------------------------------------------------------------------------------------
// 2. Lifecycle interleavings against a model.

const configArb = fc.record({
  threads: fc.integer({ min: 1, max: 3 }),
  maxQueue: fc.constantFrom(0, 1, 2, 3, Infinity),
  onFull: fc.constantFrom('reject', 'wait'),
  strategy: fc.constantFrom('roundrobin', 'random', 'leastbusy'),
  end: fc.constantFrom('close', 'destroy'),
});

const opArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('submit'),
      method: fc.constantFrom('sleep', 'echo'),
      ms: fc.integer({ min: 0, max: 5 }),
      timeout: fc.option(fc.constantFrom(1e-9, 0.01, 1, 3), { freq: 3, nil: undefined }),
      abortable: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('abort'), which: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('await'), which: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('tick'), ms: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'close' }) },
  { weight: 1, arbitrary: fc.constant({ op: 'destroy' }) },
);

/**
 * The model's view of one call: the outcomes it may have (`ok` or codes), which grows as
 * operations happen while the call has not been seen to settle.
 */
function modelCall(index, op, allowed) {
  return { index, op, allowed, rec: null, controller: null };
}

function judgeModelCall(c) {
  const o = c.rec.outcome;
  const expectValue = c.op.method === 'sleep' ? c.op.ms : c.index;
  const codes = new Set([...c.allowed].filter((a) => a !== 'ok'));
  const check = c.allowed.has('ok') ? (a) => (a === expectValue ? null : `expected ${expectValue}, got ${show(a)}`) : null;
  const why = judge(c.rec, { check, codes });
  return why === null ? null : `call #${c.index} ${c.op.method}(${c.op.ms}) ${show({ timeout: c.op.timeout, abortable: c.op.abortable })}: ${why} (outcome ${show(o)})`;
}

describe('2. lifecycle interleavings against a model', () => {
  test('calls, aborts, timeouts, close() and destroy() in any order: every call settles once, as the model allows', async () => {
    await check(
      fc.asyncProperty(configArb, fc.array(opArb, { minLength: 1, maxLength: 30 }), async (cfg, ops) => {
        const pool = new Pool({ threads: cfg.threads, maxQueue: cfg.maxQueue, onFull: cfg.onFull, strategy: cfg.strategy });
        const calls = [];
        const ends = []; // close()/destroy(): { what, rec, before: the calls it must wait for }
        const problems = [];
        let phase = 'open';
        const unsettled = () => calls.filter((c) => c.rec.settled === 0);
        const end = (what) => {
          if (what === 'destroy') for (const c of unsettled()) c.allowed.add(C.PoolClosed);
          if (phase !== 'destroyed') phase = what === 'destroy' ? 'destroyed' : 'closed';
          // close() waits for the calls accepted before it; later ones are refused (PoolClosed).
          const before = calls.filter((c) => c.allowed.has('ok'));
          const rec = follow(() => pool[what]());
          rec.done.then(() => {
            const early = before.filter((c) => c.rec.settled === 0);
            if (early.length > 0) problems.push(`${what}() resolved before calls ${early.map((c) => `#${c.index}`).join(', ')} settled`);
          });
          ends.push({ what, rec });
        };
        for (const op of ops) {
          switch (op.op) {
            case 'submit': {
              const allowed = new Set();
              if (phase !== 'open') allowed.add(C.PoolClosed);
              else {
                allowed.add('ok');
                if (op.timeout !== undefined) allowed.add(C.Timeout);
                // QueueFull only when the bound may be reached: every call not yet seen to
                // settle may still hold a thread or a place in the queue.
                if (cfg.onFull === 'reject' && unsettled().length >= cfg.threads + cfg.maxQueue) allowed.add(C.QueueFull);
              }
              const c = modelCall(calls.length, op, allowed);
              const options = {};
              if (op.timeout !== undefined) options.timeout = op.timeout;
              if (op.abortable) {
                c.controller = new AbortController();
                options.signal = c.controller.signal;
              }
              c.rec = follow(() => pool.call(op.method, [op.method === 'sleep' ? op.ms : c.index], options));
              calls.push(c);
              break;
            }
            case 'abort': {
              const abortable = calls.filter((c) => c.controller !== null);
              if (abortable.length === 0) break;
              const c = abortable[op.which % abortable.length];
              if (c.rec.settled === 0) c.allowed.add(C.Aborted);
              c.controller.abort();
              break;
            }
            case 'await': {
              if (calls.length === 0) break;
              const c = calls[op.which % calls.length];
              if (!(await within(c.rec.done, DEADLINE_MS))) problems.push(`call #${c.index} did not settle within ${DEADLINE_MS} ms`);
              break;
            }
            case 'tick':
              await new Promise((resolve) => (op.ms === 0 ? setImmediate(resolve) : setTimeout(resolve, op.ms)));
              break;
            default:
              end(op.op);
          }
        }
        problems.push(...(await allSettled(Object.fromEntries(calls.map((c) => [`call #${c.index}`, c.rec])))));
        if (phase === 'open') end(cfg.end);
        problems.push(...(await allSettled(Object.fromEntries(ends.map((e, i) => [`${e.what}() #${i}`, e.rec])))));
        for (const e of ends) {
          const o = e.rec.outcome;
          if (o && !('value' in o)) problems.push(`${e.what}() did not resolve: ${show(o)}`);
        }
        for (const c of calls) {
          if (c.rec.settled !== 1) continue;
          const why = judgeModelCall(c);
          if (why !== null) problems.push(why);
        }
        const s = pool.stats();
        if (s.queued !== 0 || s.running !== 0) problems.push(`after ${ends.map((e) => e.what).join(', ')}: queued ${s.queued}, running ${s.running}`);
        if (problems.length > 0) throw new Error(problems.join('\n'));
      }),
      500,
    );
  }, LIMIT_MS);

  test('terminating a worker_thread with calls in flight on Pool.shared() and a method it serves: no crash, every call settles as allowed', async () => {
    const shared = Pool.shared();
    try {
      await check(
        fc.asyncProperty(
          fc.record({
            alsoHere: fc.boolean(), // this thread serves prop_hold too
            inflight: fc.integer({ min: 0, max: 40 }),
            holds: fc.array(fc.record({ ms: fc.integer({ min: 0, max: 20 }), timeout: fc.option(fc.constantFrom(1, 5, 1e22), { nil: undefined }) }), { minLength: 1, maxLength: 12 }),
            terminateAfter: fc.integer({ min: 0, max: 10 }),
            during: fc.integer({ min: 0, max: 4 }), // calls made while terminate() runs
          }),
          async (r) => {
            const problems = [];
            const worker = new Worker(path.join(__dirname, 'fixtures', 'property-worker.js'), { workerData: { serve: ['prop_hold'] } });
            await new Promise((resolve, reject) => {
              worker.once('message', resolve);
              worker.once('error', reject);
            });
            worker.postMessage({ inflight: r.inflight });
            await new Promise((resolve) => worker.once('message', resolve));
            const here = r.alsoHere
              ? shared.serve(
                  {
                    prop_hold(ms) {
                      return new Promise((resolve) => setTimeout(resolve, ms, ms));
                    },
                  },
                  { concurrency: Infinity },
                )
              : null;
            const calls = [];
            const hold = (h, phase) => {
              const codes = new Set();
              let ok = true;
              if (h.timeout !== undefined && h.timeout < 1e9) codes.add(C.Timeout);
              if (phase !== 'after') codes.add(C.ServerGone); // it was running on the worker
              if (!r.alsoHere) codes.add(C.MethodNotFound); // re-dispatched, or sent, with no server left
              if (phase === 'after' && !r.alsoHere) ok = false;
              const options = h.timeout === undefined ? undefined : { timeout: h.timeout };
              calls.push({ name: `prop_hold(${h.ms}) ${phase} ${show(options)}`, rec: follow(() => shared.call('prop_hold', [h.ms], options)), expect: { check: ok ? (a) => (a === h.ms ? null : `expected ${h.ms}, got ${show(a)}`) : null, codes } });
            };
            const echo = (i) => calls.push({ name: `echo ${i}`, rec: follow(() => shared.exec('echo', { i })), expect: { check: (a) => (isPlainObject(a) && a.i === i ? null : `expected { i: ${i} }, got ${show(a)}`), codes: new Set() } });
            r.holds.forEach((h, i) => (hold(h, 'before'), echo(i)));
            await new Promise((resolve) => setTimeout(resolve, r.terminateAfter));
            const terminated = worker.terminate();
            for (let i = 0; i < r.during; i++) hold(r.holds[i % r.holds.length], 'during');
            await terminated;
            hold(r.holds[0], 'after');
            problems.push(...(await allSettled(Object.fromEntries(calls.map((c, i) => [`${i}: ${c.name}`, c.rec])))));
            for (const c of calls) {
              if (c.rec.settled !== 1) continue;
              const why = judge(c.rec, c.expect);
              if (why !== null) problems.push(`${c.name}: ${why}`);
            }
            if (here !== null && !(await within(here.close(), DEADLINE_MS))) problems.push('server.close() on this thread did not resolve');
            const busy = await idle(shared);
            if (busy !== null) problems.push(`after the worker was terminated: ${busy}`);
            if (problems.length > 0) throw new Error(`${problems.join('\n')}\nrun: ${show(r)}`);
          },
        ),
        15,
      );
    } finally {
      await shared.close();
    }
  }, LIMIT_MS);
});
