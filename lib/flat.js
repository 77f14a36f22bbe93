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

const uncurry = (f) => Function.prototype.call.bind(f);
const mapSize = uncurry(Object.getOwnPropertyDescriptor(Map.prototype, 'size').get);
const mapForEach = uncurry(Map.prototype.forEach);
const mapSet = uncurry(Map.prototype.set);
const stringSlice = uncurry(String.prototype.slice);
const MapOfRealm = Map;

const align8 = (n) => (n + 7) & ~7;

/** A Map's flat parts, or null when it is not a Map of ASCII strings to numbers. */
function flatMap(map) {
  if (!types.isMap(map)) return null;
  const n = mapSize(map);
  if (n < MIN_ENTRIES) return null;
  const walk = { text: '', i: 0, at: 0, plain: true, like: likeKeys(n), keys: new Array(n), values: new Float64Array(n), lengths: new Uint32Array(n) };
  mapForEach(map, collect, walk);
  if (!walk.plain || walk.i !== n) return null;
  if (walk.like !== null) return { n, text: walk.like.text, values: walk.values, lengths: walk.like.lengths };
  const text = walk.text;
  // ASCII only: each character then takes one byte in UTF-8, and latin1 writes it as it is.
  if (Buffer.byteLength(text, 'utf8') !== text.length) return null;
  remember(text, walk.lengths, walk.keys);
  return { n, text, values: walk.values, lengths: walk.lengths };
}

/** One entry of a Map being made flat (`this` is the walk). */
function collect(value, key) {
  if (!this.plain) return;
  const i = this.i;
  if (typeof key !== 'string' || typeof value !== 'number' || i === this.keys.length) {
    this.plain = false;
    return;
  }
  this.values[i] = value;
  this.keys[i] = key;
  this.lengths[i] = key.length;
  this.i = i + 1;
  const like = this.like;
  if (like !== null) {
    if (like.keys[i] === key) {
      this.at += key.length;
      return;
    }
    // Keys known so far: the text begins as the known one does.
    this.text = stringSlice(like.text, 0, this.at);
    this.like = null;
  }
  this.text += key;
}

/** The items of `value` if it can be written flat: [array?, items (a number or flat parts)], else null. */
function flatItems(value) {
  if (value === null || typeof value !== 'object') return null;
  if (!Array.isArray(value)) {
    const map = flatMap(value);
    return map === null ? null : [false, [map]];
  }
  // (Array.isArray is true for a Proxy of an array: its traps must not run here.)
  if (types.isProxy(value) || Object.getPrototypeOf(value) !== Array.prototype) return null;
  const length = value.length;
  if (length === 0 || length > MAX_ITEMS) return null;
  const own = Object.getOwnPropertyNames(value);
  if (own.length !== length + 1) return null; // the indexes and `length`: no holes, no other keys
  const items = [];
  let maps = 0;
  for (let i = 0; i < length; i++) {
    const d = Object.getOwnPropertyDescriptor(value, i);
    if (d === undefined || !('value' in d) || !d.enumerable) return null;
    const item = d.value;
    if (typeof item === 'number') items.push(item);
    else {
      const map = flatMap(item);
      if (map === null) return null;
      items.push(map);
      maps++;
    }
  }
  return maps === 0 ? null : [true, items];
}

/** The flat bytes of `value`, or null when it is not of the shapes written flat. */
function flatBytes(value) {
  const found = flatItems(value);
  if (found === null) return null;
  const [array, items] = found;
  let size = HEAD + ITEM * items.length;
  for (const item of items) if (typeof item !== 'number') size += align8(item.n * 12 + item.text.length);
  const bytes = Buffer.alloc(size);
  bytes[0] = TAG;
  bytes[1] = array ? 1 : 0;
  bytes.writeUInt16LE(items.length, 2);
  let at = HEAD + ITEM * items.length;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const head = HEAD + ITEM * i;
    if (typeof item === 'number') {
      bytes.writeUInt32LE(NUMBER, head);
      bytes.writeDoubleLE(item, head + 8);
      continue;
    }
    bytes.writeUInt32LE(MAP, head);
    bytes.writeUInt32LE(item.n, head + 4);
    bytes.writeUInt32LE(item.text.length, head + 8);
    bytes.set(bytesOf(item.values), at);
    bytes.set(bytesOf(item.lengths), at + item.n * 8);
    bytes.write(item.text, at + item.n * 12, item.text.length, 'latin1');
    at += align8(item.n * 12 + item.text.length);
  }
  return bytes;
}

/**
 * The keys of the Maps written or read last on this thread, most recent first: `{ text,
 * lengths, keys }`. Maps of the same keys are the common case (a call made again and again, a
 * Map sent back): read, their keys are the strings made the first time, whose hashes V8 keeps
 * (rebuilding such a Map costs a third); written, their text is the one made the first time.
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
  for (let k = 0; k < known.length; k++) if (known[k].keys.length === n) return known[k];
  return null;
}

/** A Map's keys from their text and lengths (read from a message): the known ones when they are the same. */
function keysOf(text, lengths) {
  for (let k = 0; k < known.length; k++) {
    const entry = known[k];
    if (entry.text === text && entry.lengths.length === lengths.length && Buffer.compare(bytesOf(entry.lengths), bytesOf(lengths)) === 0) {
      if (k !== 0) known.unshift(...known.splice(k, 1));
      return entry.keys;
    }
  }
  const n = lengths.length;
  const keys = new Array(n);
  let from = 0;
  for (let e = 0; e < n; e++) {
    const to = from + lengths[e];
    if (to > text.length) throw new RangeError('flat message: a key runs past the keys');
    keys[e] = stringSlice(text, from, to);
    from = to;
  }
  // (The lengths are copied: those given lie in the message.)
  remember(text, lengths.slice(), keys);
  return keys;
}

const bytesOf = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);

/** Whether `bytes`, a message's bytes, are flat ones. */
function isFlat(bytes) {
  return bytes.length > 0 && bytes[0] === TAG;
}

/** The value of flat bytes. Throws when they do not read back. */
function readFlat(bytes) {
  // Typed arrays over the bytes need their offset aligned: a copy when it is not.
  if (bytes.byteOffset % 8 !== 0) bytes = Buffer.from(new Uint8Array(bytes));
  const count = bytes.readUInt16LE(2);
  if (bytes.length < HEAD + ITEM * count) throw new RangeError('flat message cut short');
  const items = new Array(count);
  let at = HEAD + ITEM * count;
  for (let i = 0; i < count; i++) {
    const head = HEAD + ITEM * i;
    const kind = bytes.readUInt32LE(head);
    if (kind === NUMBER) {
      items[i] = bytes.readDoubleLE(head + 8);
      continue;
    }
    if (kind !== MAP) throw new RangeError(`flat message: unknown item kind ${kind}`);
    const n = bytes.readUInt32LE(head + 4);
    const keyBytes = bytes.readUInt32LE(head + 8);
    const end = at + n * 12 + keyBytes;
    if (end > bytes.length) throw new RangeError('flat message cut short');
    const values = new Float64Array(bytes.buffer, bytes.byteOffset + at, n);
    const lengths = new Uint32Array(bytes.buffer, bytes.byteOffset + at + n * 8, n);
    const keys = keysOf(bytes.toString('latin1', at + n * 12, end), lengths);
    const map = new MapOfRealm();
    for (let e = 0; e < n; e++) mapSet(map, keys[e], values[e]);
    items[i] = map;
    at += align8(n * 12 + keyBytes);
  }
  return bytes[1] === 1 ? items : items[0];
}

module.exports = { flatBytes, isFlat, readFlat };
