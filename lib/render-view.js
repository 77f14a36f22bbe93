'use strict';
// pool.render's views as mustache.js 4.2.0 sees them. mustache.js renders whatever object it is
// given: it looks a name up with `name in view` and reads `view[name]`, so a class instance
// shows its prototype getters and methods, a Date prints as String(date), a Map is an object
// whose `size` it can read. The native renderer takes plain data (and functions); this module
// turns a view into plain data that renders the same, on the calling thread, before the call:
//
// - an object that is not plain (a class instance, a Date, a Map, a Set, an Error…) becomes a
//   *mirror*: a plain object with every string-keyed property `in` would find on it below the
//   root prototype: own properties (non-enumerable too), then each prototype's (a getter is
//   read once, with the instance as receiver; a method is the method itself, which the
//   renderer calls as mustache.js does, with the context as `this`). A mirror always has a
//   `toString` function, so the renderer prints it through JavaScript, and the helpers of
//   lib/render.js print the original object instead (`original()`): `String(date)`, or
//   `'' + date` for `{{{date}}}`, exactly as mustache.js. Functions called with a mirror as
//   `this` get the original.
// - a getter that throws (a plain object's or an instance's) becomes a function that throws
//   that very error: the render rejects with it if, and only if, the template looks the name
//   up, as mustache.js throws only then.
// - a BigInt or a symbol becomes a function returning it: the helpers print it and test its
//   truth as mustache.js does (`String(1n)`, and `'' + symbol` throws for `{{{s}}}`).
//
// Plain data is left as it is (no copy): a container is copied only when something in it
// changed. Every object is prepared once per render (a second reference gets the same mirror).
// What stays refused is what the native renderer refuses in any view: typed arrays and
// ArrayBuffers, functions with properties of their own, cyclic views, views nested too deep.

/** Mirror → the object it stands for (lib/render.js passes these back to JavaScript). */
const originals = new WeakMap();

/** The object a mirror stands for, or `v` itself. */
function original(v) {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
  const o = originals.get(v);
  return o === undefined ? v : o;
}

const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyNames = Object.getOwnPropertyNames;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const hasOwn = Object.prototype.hasOwnProperty;
const objectToString = Object.prototype.toString;
const isView = ArrayBuffer.isView;
const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const sharedByteLength = typeof SharedArrayBuffer === 'function' ? getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get : undefined;

/** True for an ArrayBuffer or a SharedArrayBuffer (their brand, not their prototype). */
function isBuffer(v) {
  for (const get of [arrayBufferByteLength, sharedByteLength]) {
    if (get === undefined) continue;
    try {
      get.call(v);
      return true;
    } catch {
      // not this kind
    }
  }
  return false;
}

/** A function that throws `error` when the renderer calls it (a getter threw it). */
function thrower(error) {
  return function throwing() {
    throw error;
  };
}

/** A function returning `value` (a BigInt or a symbol, which only the helpers can print). */
function returning(value) {
  return function value_() {
    return value;
  };
}

/**
 * The params of `pool.render(template, view, partials, config)` with the view prepared: the
 * same array when the view needs nothing.
 */
function prepareRenderParams(params) {
  if (params.length < 2) return params;
  const view = params[1];
  let prepared;
  try {
    prepared = prepare(view, new Map());
  } catch {
    // A Proxy's trap threw: the native conversion reads the view as it is, and says where.
    return params;
  }
  if (prepared === view) return params;
  const copy = params.slice();
  copy[1] = prepared;
  return copy;
}

/** `v` as plain data that renders as `v` does in mustache.js (see the module doc). */
function prepare(v, seen) {
  switch (typeof v) {
    case 'bigint':
    case 'symbol':
      return returning(v);
    case 'object':
      break;
    default:
      return v;
  }
  if (v === null) return v;
  const known = seen.get(v);
  if (known !== undefined) return known;
  let isArray;
  try {
    isArray = Array.isArray(v); // throws for a revoked Proxy: the conversion then says so
  } catch {
    return v;
  }
  if (isArray) return prepareArray(v, seen);
  if (isView(v) || isBuffer(v)) return v; // refused natively, with its own message
  let proto;
  try {
    proto = getPrototypeOf(v);
  } catch {
    return v; // a Proxy whose trap throws: the conversion names it
  }
  if (proto === null || getPrototypeOf(proto) === null) {
    if (typeof v.toJSON !== 'function') return preparePlain(v, seen);
  }
  return mirror(v, seen);
}

function prepareArray(v, seen) {
  seen.set(v, v);
  let copy = null;
  const length = v.length;
  for (let i = 0; i < length; i++) {
    let item;
    let p;
    try {
      item = v[i];
      p = item !== null && typeof item === 'object' ? prepare(item, seen) : prepareScalar(item);
    } catch (e) {
      p = thrower(e);
    }
    if (copy === null && p !== item) {
      copy = v.slice(0, i);
      seen.set(v, copy);
    }
    if (copy !== null) copy.push(p);
  }
  return copy ?? v;
}

/** prepare for a value that is not an object. */
function prepareScalar(v) {
  return typeof v === 'bigint' || typeof v === 'symbol' ? returning(v) : v;
}

/** Keys and values read by preparePlain, innermost object last (a copy is made from them). */
const readKeys = [];
const readValues = [];

/** `o[k] = v`, for a key `__proto__` too (an own key, as JSON.parse makes it). */
function put(o, k, v) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/**
 * A plain object: its own enumerable keys, as the native conversion reads them, each read once
 * (a copy, when one is needed, is made of the values this walk read).
 */
function preparePlain(v, seen) {
  seen.set(v, v);
  let copy = null;
  const base = readKeys.length;
  try {
    for (const k in v) {
      if (!hasOwn.call(v, k)) continue;
      let item;
      let p;
      try {
        item = v[k];
        p = item !== null && typeof item === 'object' ? prepare(item, seen) : prepareScalar(item);
      } catch (e) {
        p = thrower(e); // (item stays undefined: never equal to a function)
      }
      if (copy === null && p !== item) {
        copy = {};
        for (let j = base; j < readKeys.length; j++) put(copy, readKeys[j], readValues[j]);
        seen.set(v, copy);
      }
      if (copy !== null) put(copy, k, p);
      else {
        readKeys.push(k);
        readValues.push(item);
      }
    }
  } finally {
    readKeys.length = base;
    readValues.length = base;
  }
  return copy ?? v;
}

/** Key lists per prototype: its own string keys but `constructor`, with their descriptors. */
const protoKeys = new WeakMap();

function keysOf(proto) {
  let keys = protoKeys.get(proto);
  if (keys === undefined) {
    keys = [];
    for (const k of getOwnPropertyNames(proto)) {
      if (k !== 'constructor') keys.push(k);
    }
    protoKeys.set(proto, keys);
  }
  return keys;
}

/**
 * The mirror of `v`, an object that is not plain: a plain object with what `k in v` finds
 * below the root prototype, read once (see the module doc).
 */
function mirror(v, seen) {
  const m = {};
  seen.set(v, m);
  originals.set(m, v);
  // (A Proxy whose ownKeys trap throws ends the walk: the caller then sends the view unprepared.)
  for (const k of getOwnPropertyNames(v)) {
    // An own `constructor` is as any other key (only prototypes' are left out).
    let item;
    try {
      item = v[k];
    } catch (e) {
      item = thrower(e);
    }
    put(m, k, prepare(item, seen));
  }
  let proto = getPrototypeOf(v);
  while (proto !== null && getPrototypeOf(proto) !== null) {
    for (const k of keysOf(proto)) {
      if (hasOwn.call(m, k)) continue; // shadowed by a nearer one
      const d = getOwnPropertyDescriptor(proto, k);
      let item;
      if (d === undefined) continue;
      if ('value' in d) {
        item = d.value;
      } else if (d.get === undefined) {
        item = undefined; // a setter alone: reads undefined
      } else {
        try {
          item = d.get.call(v);
        } catch (e) {
          item = thrower(e);
        }
      }
      put(m, k, typeof item === 'function' ? item : prepare(item, seen));
    }
    proto = getPrototypeOf(proto);
  }
  // Printed through JavaScript, as the original (lib/render.js's helpers print `original(m)`).
  if (!hasOwn.call(m, 'toString')) m.toString = objectToString;
  return m;
}

/** A section function's data result, prepared as a view is. */
function prepareValue(v) {
  if (v === null || typeof v !== 'object') return v;
  try {
    return prepare(v, new Map());
  } catch {
    return v; // a Proxy's trap threw: reading the result natively says so
  }
}

module.exports = { prepareRenderParams, prepareValue, original };
