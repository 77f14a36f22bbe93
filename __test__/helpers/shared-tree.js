'use strict';
// For the tests of params that hold shared memory beside values only structured clone carries
// (__test__/file-pool.test.js): a copy of a value with its shared memory described instead of
// carried, identity and cycles kept, so that a task can send it back (a task-file pool's results
// never carry shared memory) and the caller can compare it with its own copy.
const { types } = require('node:util');

/** `v` with each SharedArrayBuffer and view over one replaced by `{ shared: byteLength }`. */
function describeShared(v, memo = new Map()) {
  if (v === null || typeof v !== 'object') return v;
  if (memo.has(v)) return memo.get(v);
  let r;
  if (types.isSharedArrayBuffer(v) || (ArrayBuffer.isView(v) && types.isSharedArrayBuffer(v.buffer))) r = { shared: v.byteLength };
  else if (types.isMap(v)) {
    r = new Map();
    memo.set(v, r);
    for (const [k, x] of v) r.set(describeShared(k, memo), describeShared(x, memo));
    return r;
  } else if (types.isSet(v)) {
    r = new Set();
    memo.set(v, r);
    for (const x of v) r.add(describeShared(x, memo));
    return r;
  } else if (Array.isArray(v)) {
    r = new Array(v.length);
    memo.set(v, r);
    for (const k of Object.keys(v)) r[k] = describeShared(v[k], memo);
    return r;
  } else if (isPlainObject(v)) {
    r = {};
    memo.set(v, r);
    for (const k of Object.keys(v)) Object.defineProperty(r, k, { value: describeShared(v[k], memo), enumerable: true, writable: true, configurable: true });
    return r;
  } else r = v; // a Date, a RegExp, an Error, bytes of its own: carried as it is
  memo.set(v, r);
  return r;
}

/** A plain object of any realm (structuredClone may make its copies in another one than jest's). */
function isPlainObject(v) {
  const proto = Object.getPrototypeOf(v);
  return proto === null || (Object.getPrototypeOf(proto) === null && Object.prototype.toString.call(v) === '[object Object]' && proto.constructor?.name === 'Object');
}

/** The distinct SharedArrayBuffer views in `v` (each once). */
function sharedViews(v, found = new Set(), seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v)) return found;
  seen.add(v);
  if (ArrayBuffer.isView(v)) {
    if (types.isSharedArrayBuffer(v.buffer)) found.add(v);
  } else if (types.isMap(v)) for (const [k, x] of v) sharedViews(k, found, seen), sharedViews(x, found, seen);
  else if (types.isSet(v)) for (const x of v) sharedViews(x, found, seen);
  else if (!types.isAnyArrayBuffer(v)) for (const k of Object.keys(v)) sharedViews(v[k], found, seen);
  return found;
}

module.exports = { describeShared, sharedViews };
