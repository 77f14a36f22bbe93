'use strict';
// Maps of strings to numbers, written flat: the structured-clone messages of lib/clone.js in a
// form of their own for the one shape of value that V8's serializer is slowest to read back.
//
// Why: a Map of 1,000 string keys and numbers costs V8's deserializer about 140 µs to rebuild
// (each key a new string, each entry one at a time through its generic reader), and the
// calling thread pays that for every result. Written as its keys in one string, their lengths
// and the numbers in one array each, it is rebuilt in about half that, and written in less.
//
// What: a value that is such a Map (a Map or a Map subclass's instance, which structured clone
// makes a Map too; at least MIN_ENTRIES entries, every key a string of ASCII characters, every
// value a number), or an array of up to MAX_ITEMS numbers and such Maps with at least one Map
// (a call's params `[map]`, a Piscina task's result `[ms, map]`), an ordinary array: no holes,
// no other own keys, no accessors. Anything else, and a transfer list, goes to V8 as before.
// What arrives is what structured clone gives: a new Map with the same entries in the same
// order (a Map's own properties are not carried by either), numbers as they were (-0, NaN).
// Nothing of the value's own code runs: the Map is read with Map.prototype's own methods as
// they were when this module loaded, and the arrays' elements are read from their descriptors.
//
// The bytes (little-endian; a Buffer of its own, so every part keeps its alignment):
//
//   u8  TAG (0; V8's bytes begin with its version tag, 0xFF)
//   u8  1 when the value is an array of the items, 0 when it is the one item itself
//   u16 how many items
//   u32 0
//   per item, 16 bytes: u32 kind (NUMBER or MAP), u32 entries (MAP), f64 the number (NUMBER)
//       or u32 the keys' byte length (MAP)
//   per Map, from a multiple of 8: f64 × entries values, u32 × entries key lengths, the keys'
//       bytes, zeros to the next multiple of 8

const { types } = require('node:util');

const TAG = 0;
const NUMBER = 0;
const MAP = 1;
/** Smaller Maps go to V8: the flat form pays for itself on many entries. */
const MIN_ENTRIES = 32;
/** Items of an array written flat (a call's params, a task's `[ms, result]`). */
const MAX_ITEMS = 4;
const HEAD = 8;
const ITEM = 16;

/** Keys texts longer than this go to V8 (a string can hold some 2^29 characters at most). */
const MAX_TEXT = 64 * 1024 * 1024;

// What this module calls, as it was when it loaded: code that replaces a method of Map,
// String, Buffer, a typed array, DataView, Array or Object later does not run here (V8's
// serializer runs none).
const uncurry = (f) => Function.prototype.call.bind(f);
const mapSize = uncurry(Object.getOwnPropertyDescriptor(Map.prototype, 'size').get);
const mapForEach = uncurry(Map.prototype.forEach);
const mapSet = uncurry(Map.prototype.set);
const stringSlice = uncurry(String.prototype.slice);
const startsWith = uncurry(String.prototype.startsWith);
const bufferToString = uncurry(Buffer.prototype.toString);
const bufferWrite = uncurry(Buffer.prototype.write);
const bytesSet = uncurry(Uint8Array.prototype.set);
const typedSlice = uncurry(Uint32Array.prototype.slice);
const { byteLength, alloc, compare, isBuffer } = Buffer;
const getUint16 = uncurry(DataView.prototype.getUint16);
const getUint32 = uncurry(DataView.prototype.getUint32);
const getFloat64 = uncurry(DataView.prototype.getFloat64);
const setUint16 = uncurry(DataView.prototype.setUint16);
const setUint32 = uncurry(DataView.prototype.setUint32);
const setFloat64 = uncurry(DataView.prototype.setFloat64);
const { isArray } = Array;
const { getOwnPropertyDescriptor, getOwnPropertyNames, getPrototypeOf } = Object;
const ArrayPrototype = Array.prototype;
const MapOfRealm = Map;
const BufferFrom = Buffer.from;

const align8 = (n) => (n + 7) & ~7;

/** A Map's flat parts, or null when it is not a Map of ASCII strings to numbers. */
function flatMap(map) {
  if (!types.isMap(map)) return null;
  const n = mapSize(map);
  if (n < MIN_ENTRIES) return null;
  const walk = { text: '', i: 0, at: 0, plain: true, like: likeKeys(n), values: new Float64Array(n), lengths: new Uint32Array(n) };
  mapForEach(map, collect, walk);
  if (!walk.plain || walk.i !== n) return null;
  if (walk.like !== null) return { n, text: walk.like.text, values: walk.values, lengths: walk.like.lengths };
  const text = walk.text;
  // ASCII only: each character then takes one byte in UTF-8, and latin1 writes it as it is.
  if (byteLength(text, 'utf8') !== text.length) return null;
  // (The keys kept are cut from the text, not the Map's own: one of those may hold on to a
  // much longer string it was cut from. They are cut when a Map of them is first read.)
  remember(text, walk.lengths, null);
  return { n, text, values: walk.values, lengths: walk.lengths };
}

/** One entry of a Map being made flat (`this` is the walk). */
function collect(value, key) {
  if (!this.plain) return;
  const i = this.i;
  if (typeof key !== 'string' || typeof value !== 'number' || i === this.values.length) {
    this.plain = false;
    return;
  }
  this.values[i] = value;
  this.lengths[i] = key.length;
  this.i = i + 1;
  const like = this.like;
  if (like !== null) {
    // (The same string, or one of the same characters: compared where the known text has it,
    // without cutting the known keys out of it.)
    if ((like.keys !== null && like.keys[i] === key) || (like.lengths[i] === key.length && startsWith(like.text, key, this.at))) {
      this.at += key.length;
      return;
    }
    // Keys known so far: the text begins as the known one does.
    this.text = stringSlice(like.text, 0, this.at);
    this.like = null;
  }
  if (this.text.length + key.length > MAX_TEXT) {
    this.plain = false;
    return;
  }
  this.text += key;
}

/** The items of `value` if it can be written flat: [array?, items (a number or flat parts)], else null. */
function flatItems(value) {
  if (value === null || typeof value !== 'object') return null;
  if (!isArray(value)) {
    const map = flatMap(value);
    return map === null ? null : [false, [map]];
  }
  // (isArray is true for a Proxy of an array: its traps must not run here.)
  if (types.isProxy(value) || getPrototypeOf(value) !== ArrayPrototype) return null;
  const length = value.length;
  if (length === 0 || length > MAX_ITEMS) return null;
  const own = getOwnPropertyNames(value);
  if (own.length !== length + 1) return null; // the indexes and `length`: no holes, no other keys
  const items = new Array(length);
  const maps = [];
  for (let i = 0; i < length; i++) {
    const d = getOwnPropertyDescriptor(value, i);
    if (d === undefined || !('value' in d) || !d.enumerable) return null;
    const item = d.value;
    if (typeof item === 'number') items[i] = item;
    else {
      // A Map reached twice arrives as one Map reached twice: V8's serializer keeps that.
      if (maps.includes(item)) return null;
      const map = flatMap(item);
      if (map === null) return null;
      items[i] = map;
      maps[maps.length] = item;
    }
  }
  return maps.length === 0 ? null : [true, items];
}

/** The flat bytes of `value`, or null when it is not of the shapes written flat. */
function flatBytes(value) {
  const found = flatItems(value);
  if (found === null) return null;
  const [array, items] = found;
  let size = HEAD + ITEM * items.length;
  for (let i = 0; i < items.length; i++) if (typeof items[i] !== 'number') size += align8(items[i].n * 12 + items[i].text.length);
  const bytes = alloc(size);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  bytes[0] = TAG;
  bytes[1] = array ? 1 : 0;
  setUint16(view, 2, items.length, true);
  let at = HEAD + ITEM * items.length;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const head = HEAD + ITEM * i;
    if (typeof item === 'number') {
      setUint32(view, head, NUMBER, true);
      setFloat64(view, head + 8, item, true);
      continue;
    }
    setUint32(view, head, MAP, true);
    setUint32(view, head + 4, item.n, true);
    setUint32(view, head + 8, item.text.length, true);
    bytesSet(bytes, bytesOf(item.values), at);
    bytesSet(bytes, bytesOf(item.lengths), at + item.n * 8);
    bufferWrite(bytes, item.text, at + item.n * 12, item.text.length, 'latin1');
    at += align8(item.n * 12 + item.text.length);
  }
  return bytes;
}

/**
 * The keys of the Maps written or read last on this thread, most recent first: `{ text,
 * lengths, keys }` (`keys` null until a Map of them is read). Maps of the same keys are the
 * common case (a call made again and again, a Map sent back): read, their keys are the strings
 * made the first time, whose hashes V8 keeps (rebuilding such a Map costs a third); written,
 * their text is the one made the first time.
 */
const known = [];
const KNOWN = 4;
/** Keys texts longer than this are not kept. */
const KNOWN_TEXT = 256 * 1024;

function remember(text, lengths, keys) {
  if (text.length > KNOWN_TEXT) return;
  known.unshift({ text, lengths, keys });
  if (known.length > KNOWN) known.pop();
}

/** The known keys of `n` entries most recently used, or null: a Map being written may have those. */
function likeKeys(n) {
  for (let k = 0; k < known.length; k++) if (known[k].lengths.length === n) return known[k];
  return null;
}

/** The keys `text` holds, of `lengths`. Throws when they run past it. */
function cut(text, lengths) {
  const n = lengths.length;
  const keys = new Array(n);
  let from = 0;
  for (let e = 0; e < n; e++) {
    const to = from + lengths[e];
    if (to > text.length) throw new RangeError('flat message: a key runs past the keys');
    keys[e] = stringSlice(text, from, to);
    from = to;
  }
  return keys;
}

/** A Map's keys from their text and lengths (read from a message): the known ones when they are the same. */
function keysOf(text, lengths) {
  for (let k = 0; k < known.length; k++) {
    const entry = known[k];
    if (entry.text === text && entry.lengths.length === lengths.length && compare(bytesOf(entry.lengths), bytesOf(lengths)) === 0) {
      if (k !== 0) {
        known.splice(k, 1);
        known.unshift(entry);
      }
      entry.keys ??= cut(entry.text, entry.lengths);
      return entry.keys;
    }
  }
  const keys = cut(text, lengths);
  // (The lengths are copied: those given lie in the message.)
  remember(text, typedSlice(lengths), keys);
  return keys;
}

const bytesOf = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);

/** Whether `message`, a message's bytes, are flat ones. */
function isFlat(message) {
  return isBuffer(message) && message.length > 0 && message[0] === TAG;
}

/** The value of flat bytes. Throws when they do not read back. */
function readFlat(bytes) {
  // Typed arrays over the bytes need their offset aligned: a copy when it is not.
  if (bytes.byteOffset % 8 !== 0) bytes = BufferFrom(new Uint8Array(bytes));
  if (bytes.length < HEAD) throw new RangeError('flat message cut short');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const count = getUint16(view, 2, true);
  if (bytes.length < HEAD + ITEM * count) throw new RangeError('flat message cut short');
  const items = new Array(count);
  let at = HEAD + ITEM * count;
  for (let i = 0; i < count; i++) {
    const head = HEAD + ITEM * i;
    const kind = getUint32(view, head, true);
    if (kind === NUMBER) {
      items[i] = getFloat64(view, head + 8, true);
      continue;
    }
    if (kind !== MAP) throw new RangeError(`flat message: unknown item kind ${kind}`);
    const n = getUint32(view, head + 4, true);
    const keyBytes = getUint32(view, head + 8, true);
    const end = at + n * 12 + keyBytes;
    if (end > bytes.length) throw new RangeError('flat message cut short');
    const values = new Float64Array(bytes.buffer, bytes.byteOffset + at, n);
    const lengths = new Uint32Array(bytes.buffer, bytes.byteOffset + at + n * 8, n);
    const keys = keysOf(bufferToString(bytes, 'latin1', at + n * 12, end), lengths);
    const map = new MapOfRealm();
    for (let e = 0; e < n; e++) mapSet(map, keys[e], values[e]);
    items[i] = map;
    at += align8(n * 12 + keyBytes);
  }
  return bytes[1] === 1 ? items : items[0];
}

module.exports = { flatBytes, isFlat, readFlat };
