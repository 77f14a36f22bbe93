'use strict';
// Hostile values: descriptions (what fast-check generates, shrinks and prints) and their builds.
const fc = require('fast-check');
const { MAX_NESTING } = require('./run.js');
const { show } = require('./settle.js');
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

module.exports = { stringArb, jsonLeaf, sentArb, sparseIndex, hugeLength, holdsHugeLength, build };
