'use strict';
// The oracle: what may come back for a described value.
//
// Which rules apply depends on where the value goes:
// - to a native command (exec, call, request, handle, broadcast): the plain-data rules below;
// - to a method served in JavaScript: structured clone's rules for what the fast path refuses
//   (docs/values.md; clone.js, with these rules still for plain data and shared memory);
// - to pool.render: mustache.js's own output for views that are not plain data, still refusing
//   bytes, buffers, cycles and views nested too deep (docs/rendering.md; entries.js).
//
// The plain-data rule is JSON.parse(JSON.stringify(x)), amended by the README:
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
const { types } = require('node:util');
const { RpcError } = require('../../..');
const { MAX_NESTING } = require('./run.js');
const { show } = require('./settle.js');
const { sparseIndex, hugeLength } = require('./values.js');

const C = RpcError.codes;

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

module.exports = { refuse, isPlainObject, valueSpec, objectSpec, arraySpec, bytesSpec, anyOf, jsonImage, spec, expectation, nestingOf, jsonSpec };
