'use strict';
// Tables: the Maps and Sets of primitives that a call's params or result are, sent in a form
// that reads back faster than V8's (lib/clone.js writes them; see "Tables" there).
//
// V8 reads a Map or Set back entry by entry, calling `set`/`add` from C++ each time (~0.2 µs an
// entry, about four times what reading an object with the same keys costs). A table is sent
// instead as one object of a few parts that V8 copies whole: every string of its entries in one
// string, their lengths, one tag per key or value saying what it is, and the numbers; the
// receiver cuts the string and rebuilds the Map or Set in order. Only Maps and Sets of at least
// TABLE_MIN entries whose keys and values are all strings, numbers, booleans, null or
// undefined are tables (anything else inside may be shared with, or hold, the rest of the
// value, which only V8's own writing keeps as it is).
//
// The builtins are taken when this file loads: a Map subclass, or Map.prototype changed later
// by user code, reads and rebuilds a table as V8 would (its internal entries, the original set
// and add), never through what was changed.

/** Fewer entries than this: V8's own form (the table's parts cost more than they save). */
const TABLE_MIN = 16;

const uncurry = (f) => Function.prototype.call.bind(f);
const mapSize = uncurry(Object.getOwnPropertyDescriptor(Map.prototype, 'size').get);
const setSize = uncurry(Object.getOwnPropertyDescriptor(Set.prototype, 'size').get);
const mapForEach = uncurry(Map.prototype.forEach);
const setForEach = uncurry(Set.prototype.forEach);
const mapSet = uncurry(Map.prototype.set);
const setAdd = uncurry(Set.prototype.add);
const { isMap, isSet, isProxy, isUint8Array, isUint32Array, isFloat64Array } = require('node:util').types;

// What each key or value of a table is.
const STRING = 0;
const NUMBER = 1;
const TRUE = 2;
const FALSE = 3;
const NULL = 4;
const UNDEFINED = 5;

/** Whether `v` is a Map or Set that travels as a table (not a Proxy of one: it has no entries of its own). */
function isTable(v) {
  if (v === null || typeof v !== 'object' || isProxy(v)) return false;
  if (isMap(v)) return mapSize(v) >= TABLE_MIN;
  if (isSet(v)) return setSize(v) >= TABLE_MIN;
  return false;
}

/**
 * The table of `v` (a Map or Set for which isTable holds): `{ set, text, lengths, tags, numbers }`,
 * or null when one of its keys or values is not a primitive it can hold.
 */
function tableOf(v) {
  const set = isSet(v);
  const count = set ? setSize(v) : 2 * mapSize(v);
  const tags = new Uint8Array(count);
  const lengths = new Uint32Array(count);
  const numbers = new Float64Array(count);
  let text = '';
  let at = 0;
  let s = 0;
  let n = 0;
  let fits = true;
  const put = (x) => {
    if (typeof x === 'string') {
      tags[at++] = STRING;
      text += x;
      lengths[s++] = x.length;
    } else if (typeof x === 'number') {
      tags[at++] = NUMBER;
      numbers[n++] = x;
    } else if (x === true) tags[at++] = TRUE;
    else if (x === false) tags[at++] = FALSE;
    else if (x === null) tags[at++] = NULL;
    else if (x === undefined) tags[at++] = UNDEFINED;
    else fits = false;
  };
  if (set) setForEach(v, put);
  else {
    mapForEach(v, (value, key) => {
      put(key);
      put(value);
    });
  }
  if (!fits || at !== count) return null;
  return { set, text, lengths: lengths.slice(0, s), tags, numbers: numbers.slice(0, n) };
}

/** The Map or Set a table stands for. Throws when its parts do not agree (it was not made by tableOf). */
function fromTable(table) {
  const bad = () => new Error('a table of the message does not hold together');
  if (table === null || typeof table !== 'object') throw bad();
  const { set, text, lengths, tags, numbers } = table;
  if (typeof set !== 'boolean' || typeof text !== 'string' || !isUint32Array(lengths) || !isUint8Array(tags) || !isFloat64Array(numbers)) throw bad();
  if (!set && tags.length % 2 !== 0) throw bad();
  let s = 0;
  let n = 0;
  let from = 0;
  const next = (i) => {
    switch (tags[i]) {
      case STRING: {
        if (s >= lengths.length) throw bad();
        const to = from + lengths[s++];
        if (to > text.length) throw bad();
        const x = text.slice(from, to);
        from = to;
        return x;
      }
      case NUMBER:
        if (n >= numbers.length) throw bad();
        return numbers[n++];
      case TRUE:
        return true;
      case FALSE:
        return false;
      case NULL:
        return null;
      case UNDEFINED:
        return undefined;
      default:
        throw bad();
    }
  };
  let out;
  if (set) {
    out = new Set();
    for (let i = 0; i < tags.length; i++) setAdd(out, next(i));
  } else {
    out = new Map();
    for (let i = 0; i < tags.length; i += 2) {
      const key = next(i);
      mapSet(out, key, next(i + 1));
    }
  }
  if (s !== lengths.length || n !== numbers.length || from !== text.length) throw bad();
  return out;
}

module.exports = { isTable, tableOf, fromTable, TABLE_MIN };
