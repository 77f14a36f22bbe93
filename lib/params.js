'use strict';
// How a call's params cross to the native side: value by value (which also produces the
// precise errors), or, for plain data holding an object or many values, packed: one walk
// checks the data is plain and writes it as it goes, numbers into a Float64Array (the tape)
// and strings into one text, which a pool thread unpacks (src/rpc/packed.rs states the
// format). That costs the calling thread far less than converting value by value through
// Node-API (a 200-row table: ~0.1 ms instead of ~2 ms; a two-key object: ~0.2 µs instead of
// ~1 µs), and about half of what JSON.stringify and the walk before it cost. The threshold,
// the flags, the tags and the rule that counts plain values are the contract's
// (src/bindings/contract.rs, JSON_MIN_VALUES). A render's params (pool.render) may hold
// functions too: each is packed as a numbered slot, and the walk lists the params' objects
// for the calling thread's part of the render (src/render/README.md).

const { contract } = require('./native.js');
const { RpcError, CODES } = require('./errors.js');
const { readMirror, thrower, returning, isBuffer } = require('./render.js');
const { isArgumentsObject } = require('node:util').types;

/**
 * Plain data of more values than this is refused: walking it here already takes seconds, and a
 * value that reaches one object many times may hold 2^64 of them. (Values that take the
 * value-by-value path have a smaller limit, the contract's maxValues, checked natively.)
 */
const JSON_MAX_VALUES = 2 ** 24;
/** Values the walk may still visit in the current call. */
let budget = 0;
/** pack's answer when the params hold more values than a call may carry. */
const TOO_MANY = -2;
/** pack's answer for a String object whose prototype was replaced (see there). */
const STRING_OBJECT = -3;
const stringValueOf = Function.prototype.call.bind(String.prototype.valueOf);
const hasOwn = Object.prototype.hasOwnProperty;

/** True for a String object only: Symbol.toStringTag can make any object look like one. */
function isStringObject(v) {
  try {
    stringValueOf(v);
    return true;
  } catch {
    return false;
  }
}

const { null: NULL, false: FALSE, true: TRUE, number: NUMBER, string: STRING, array: ARRAY, object: OBJECT, objectShape: OBJECT_SHAPE, shaped: SHAPED, function: FUNCTION } = contract.packedTags;

/**
 * Functions, for a call that may hold them (pool.render's lambdas, src/render/README.md): null
 * when functions are not plain data. Else the call's functions, in the order met (each packed
 * as its number here), and `objects`, every array and object of the params (not the params
 * array itself), depth first and in order, as the native conversion lists them: the render
 * finds a function's `this` there. Handed to the call as its handles when it held a function.
 */
let functions = null;
/** Whether the current walk may pack functions (a render's). */
let takesFunctions = false;
/** The mirrors read in this walk, by object: an object met twice is read once. */
const mirrorsRead = new Map();
/** Whether this walk packed a value of a render's view as mustache.js sees it (see packView). */
let preparedInView = false;
/** The objects met (`nMet` of them), kept between calls (emptied after each: no call keeps another's objects alive). */
let objectsMet = Array.from({ length: 256 }, () => null);
let nMet = 0;

/** Lists `v` among the objects met. */
function met(v) {
  if (nMet === objectsMet.length) objectsMet = objectsMet.concat(objectsMet.map(() => null));
  objectsMet[nMet++] = v;
}

/** Empties the list of objects met. */
function forgetMet() {
  if (nMet === 0) return;
  if (objectsMet.length > TAPE_KEPT) objectsMet = Array.from({ length: 256 }, () => null);
  else objectsMet.fill(null, 0, nMet);
  nMet = 0;
}

/**
 * Whether the function `f` has no enumerable property of its own (a function's built-ins are
 * not enumerable). One that has crosses value by value, where the conversion refuses it by
 * name: a render cannot see a function's properties. (Listing every own name instead cost
 * ~120 ns a function, a tenth of the calling thread's work on a list with a function per row.)
 */
function plainFunction(f) {
  for (const k in f) if (hasOwn.call(f, k)) return false;
  return true;
}

/** Tape entries kept between calls; a call that needed more gets a new tape of this size after. */
const TAPE_KEPT = 1 << 14;
/** The tape: entry 0 is how many entries are used, entry 1 how many values (both written last). */
let tape = new Float64Array(TAPE_KEPT);
/** Entries before the params array. */
const HEADER = 2;
/** The next free entry of the tape. */
let at = HEADER;
// Nothing below writes past the end of an array: an index accessor put on Array.prototype
// would see such a write, and could drop it or change it.
/** The text so far: the strings the tape met, in order (concatenated: V8 joins them once, when the text is read). */
let text = '';
/** The keys of the objects being walked, innermost last (written after each object's values). */
let keys = Array.from({ length: 256 }, () => '');
let nk = 0;
/** This call's shapes: key lists of objects written with OBJECT_SHAPE. */
let shapes = [];
let nShapes = 0;
/** At most this many shapes per call (past it, objects carry their keys). */
const MAX_SHAPES = 256;
/**
 * Shapes by first key, as `shapeBase + number` for this call's shapes: an entry below
 * `shapeBase` is an earlier call's, and means none. So a call needs no clear() of the map (which
 * cost small calls as much as their whole walk); it is cleared only when it holds many keys.
 */
const shapeByFirstKey = new Map();
let shapeBase = 0;
const SHAPE_KEYS_KEPT = 1024;
/** A first key longer than this names no shape: the map, kept between calls, holds no long key. */
const SHAPE_KEY_MAX = 64;
/** The objects walked so far, when the params go to JavaScript (see wireParams); else null. */
let seen = null;
const seenSet = new Set();
/** The first object the walk met below the params array (see packObject). */
let solo = null;

/** True when Object.prototype has enumerable keys: for-in then lists them, JSON does not. */
let inherited = false;

/** Makes room for `n` more tape entries: the tape grows with what was walked, never by a count read from the data. */
function room(n) {
  if (at + n > tape.length) {
    let length = tape.length * 2;
    while (length < at + n) length *= 2;
    const grown = new Float64Array(length);
    grown.set(tape.subarray(0, at));
    tape = grown;
  }
}

/** Objects and arrays the walk met in the current call, the params array included. */
let objects = 0;
/**
 * Writes `v` on the tape and returns how many values it holds if it is plain data (what JSON
 * text would carry unchanged), else -1 (then the value-by-value path converts it, or refuses
 * it with the precise error), or TOO_MANY, or STRING_OBJECT. A value with a `toJSON` method is
 * not plain: JSON would send what the method returns.
 */
function pack(v, depth) {
  switch (typeof v) {
    case 'string': // a lone surrogate becomes U+FFFD natively, as value by value
      room(2);
      tape[at++] = STRING;
      tape[at++] = v.length;
      text += v;
      return 1;
    case 'number':
      // JSON has no NaN, Infinity or -0.
      if (!(Number.isFinite(v) && (v !== 0 || 1 / v > 0))) return -1;
      room(2);
      tape[at++] = NUMBER;
      tape[at++] = v;
      return 1;
    case 'boolean':
      room(1);
      tape[at++] = v ? TRUE : FALSE;
      return 1;
    case 'undefined': // an array item or a hole (an object's is refused before): null, as value by value
      // (JavaScript handlers get it as it is: lib/pool.js sends such params as structured clone).
      sawUndefined = true;
      room(1);
      tape[at++] = NULL;
      return 1;
    case 'object':
      if (v === null) {
        room(1);
        tape[at++] = NULL;
        return 1;
      }
      return packObject(v, depth);
    default: // a function is packed in a render's walk; a symbol or a BigInt only in its view (packView)
      return takesFunctions ? packFunction(v) : -1;
  }
}

/**
 * pack for `v`, an object of a render's view that is not plain (a Date, a class instance…): its
 * mirror (lib/render.js), its values read once and packed as they are. The mirror is what the
 * handles list: a function called with it as `this` gets `v`.
 */
function packMirror(v, depth) {
  preparedInView = true;
  let read = mirrorsRead.get(v);
  if (read === undefined) {
    read = readMirror(v);
    mirrorsRead.set(v, read);
  }
  const [m, keys, values] = read;
  met(m);
  const count = keys.length;
  if (!(count <= budget)) return TOO_MANY;
  budget -= count;
  room(2);
  const head = at;
  at += 2;
  let n = 1;
  for (let i = 0; i < count; i++) {
    const c = packView(values[i], depth + 1);
    if (c < 0) return c;
    n += c;
  }
  tape[head] = OBJECT;
  tape[head + 1] = count;
  room(count);
  for (let i = 0; i < count; i++) {
    const k = keys[i];
    tape[at++] = k.length;
    text += k;
  }
  return n;
}

/** pack for the function `v`, in a walk that takes functions. */
function packFunction(v) {
  if (typeof v !== 'function' || !plainFunction(v)) return -1;
  if (functions === null) functions = [];
  room(2);
  tape[at++] = FUNCTION;
  tape[at++] = functions.length;
  functions.push(v);
  return 1;
}

/** pack for the object `v` (not null), counted already against the budget. */
function packObject(v, depth) {
  // (A render never makes JSON of its view: there a toJSON method is a function like any other.)
  if (depth >= contract.jsonMaxDepth || (!takesFunctions && typeof v.toJSON === 'function')) return -1;
  if (metTwice(v, depth)) return -1;
  if (Array.isArray(v)) return packArray(v, depth, 0);
  if (takesFunctions && depth > 0) met(v);
  let n = 1;
  const proto = Object.getPrototypeOf(v);
  // (A render's params outside its view: an object without a prototype goes the long way.)
  if (proto !== Object.prototype && (proto !== null || takesFunctions)) return -1;
  // A typed array given a plain prototype: never listed index by index (2^30 of them).
  if (ArrayBuffer.isView(v)) return -1;
  // Nor a String object: it has a key per character, and no conversion lists them. (Told by
  // its own `length`, looked up, never read: a getter of that name is read once, as a field.)
  if (hasOwn.call(v, 'length')) {
    if (isStringObject(v)) return STRING_OBJECT;
    if (takesFunctions && isArgumentsObject(v)) return -1;
  }
  room(2);
  const head = at;
  at += 2;
  const first = nk;
  for (const k in v) {
    // JSON lists own keys only (for-in also lists Object.prototype's enumerable ones).
    if (inherited && proto !== null && !hasOwn.call(v, k)) continue;
    if (--budget < 0) return TOO_MANY;
    const item = v[k];
    // JSON drops a key whose value is undefined; the value-by-value path keeps it (as null).
    if (item === undefined) return -1;
    const c = pack(item, depth + 1);
    if (c < 0) return c;
    n += c;
    if (nk === keys.length) keys = keys.concat(keys.map(() => ''));
    keys[nk++] = k;
  }
  closeObject(head, first);
  return n;
}

/**
 * Whether `v`, an object met at `depth`, was met before in params that go to JavaScript: JSON
 * would send two copies; structured clone keeps it one. (The first object is only remembered:
 * most params hold one, and pay no set for it.) Counts the object.
 */
function metTwice(v, depth) {
  objects++;
  if (seen !== null && depth > 0) {
    if (solo === null) solo = v;
    else {
      if (v === solo || seen.has(v)) return true;
      seen.add(v);
    }
  }
  return false;
}

/**
 * Ends the object whose head is at `head` and whose keys are keys[first .. nk]: keys an earlier
 * object of this call had, in the same order (a table's rows), as its shape's number, else the
 * keys themselves.
 */
function closeObject(head, first) {
  const count = nk - first;
  const entry = count > 0 ? shapeByFirstKey.get(keys[first]) : undefined;
  const id = entry !== undefined && entry >= shapeBase ? entry - shapeBase : -1;
  if (id >= 0 && sameKeys(shapes[id], first, count)) {
    tape[head] = SHAPED;
    tape[head + 1] = count;
    room(1);
    tape[at++] = id;
  } else {
    if (count > 0 && nShapes < MAX_SHAPES && keys[first].length <= SHAPE_KEY_MAX) {
      tape[head] = OBJECT_SHAPE;
      shapeByFirstKey.set(keys[first], shapeBase + nShapes);
      if (nShapes === shapes.length) shapes = shapes.concat(shapes.length === 0 ? [null] : shapes.map(() => null));
      shapes[nShapes++] = keys.slice(first, nk);
    } else {
      tape[head] = OBJECT;
    }
    tape[head + 1] = count;
    room(count);
    for (let i = first; i < nk; i++) {
      const k = keys[i];
      tape[at++] = k.length;
      text += k;
    }
  }
  nk = first;
}

/** pack for the array `v` from its item `from` on (the items before it travel apart). */
function packArray(v, depth, from) {
  const length = v.length;
  if (!(length <= budget)) return TOO_MANY;
  if (takesFunctions && depth > 0) met(v);
  budget -= length;
  room(2);
  tape[at++] = ARRAY;
  tape[at++] = length - from;
  let n = 1 + from;
  if (depth === 0 && takesFunctions) {
    // The params array of a render: its view (params[1]) is packed as mustache.js sees it.
    for (let i = from; i < length; i++) {
      const c = i === 1 ? packView(v[i], 1) : pack(v[i], 1);
      if (c < 0) return c;
      n += c;
    }
    return n;
  }
  for (let i = from; i < length; i++) {
    const c = pack(v[i], depth + 1);
    if (c < 0) return c;
    n += c;
  }
  return n;
}

// A render's view (params[1]) is walked by functions of its own (packView and those it calls):
// there values plain data cannot hold are packed as mustache.js sees them, as lib/render.js
// prepares a view (an object that is not plain as its mirror, a BigInt or a symbol as a
// function returning it, a getter that throws as a function throwing its error, undefined as
// null, NaN and ±Infinity and -0 as they are), so that each getter is read once, by this walk,
// and the view still crosses packed. (Apart: V8 optimised one walk for both worse, a plain
// table's view ~10% slower on Node 24 once views with functions had gone through it.)

/** pack for `v`, a value of a render's view. */
function packView(v, depth) {
  switch (typeof v) {
    case 'string':
      room(2);
      tape[at++] = STRING;
      tape[at++] = v.length;
      text += v;
      return 1;
    case 'number': // NaN, ±Infinity and -0 too: the renderer prints them
      room(2);
      tape[at++] = NUMBER;
      tape[at++] = v;
      return 1;
    case 'boolean':
      room(1);
      tape[at++] = v ? TRUE : FALSE;
      return 1;
    case 'undefined': // null, as mustache.js prints it
      sawUndefined = true;
      room(1);
      tape[at++] = NULL;
      return 1;
    case 'object':
      if (v === null) {
        room(1);
        tape[at++] = NULL;
        return 1;
      }
      return packViewObject(v, depth);
    case 'function':
      return packFunction(v);
    default: // a BigInt or a symbol: a function returning it
      preparedInView = true;
      return packFunction(returning(v));
  }
}

/** packObject for `v`, an object of a render's view. */
function packViewObject(v, depth) {
  if (depth >= contract.jsonMaxDepth) return -1;
  if (metTwice(v, depth)) return -1;
  if (Array.isArray(v)) return packViewArray(v, depth);
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype) {
    // An instance crosses as its mirror (lib/render.js), and so does an object without a
    // prototype (mustache.js cannot print it); what a mirror would not change (typed arrays,
    // buffers, objects of another realm) crosses value by value.
    if (ArrayBuffer.isView(v) || isBuffer(v) || (proto !== null && Object.getPrototypeOf(proto) === null)) return -1;
    return packMirror(v, depth);
  }
  if (ArrayBuffer.isView(v)) return -1;
  if (hasOwn.call(v, 'length')) {
    if (isStringObject(v)) return STRING_OBJECT;
    // An arguments object crosses as its mirror too: mustache.js prints it as
    // '[object Arguments]' and finds its `length`.
    if (isArgumentsObject(v)) return packMirror(v, depth);
  }
  met(v);
  let n = 1;
  room(2);
  const head = at;
  at += 2;
  const first = nk;
  for (const k in v) {
    if (inherited && !hasOwn.call(v, k)) continue;
    if (--budget < 0) return TOO_MANY;
    let item;
    try {
      item = v[k];
    } catch (e) {
      item = thrower(e); // a getter that throws: the render rejects with its error where the template reads it
    }
    const c = packView(item, depth + 1);
    if (c < 0) return c;
    n += c;
    if (nk === keys.length) keys = keys.concat(keys.map(() => ''));
    keys[nk++] = k;
  }
  closeObject(head, first);
  return n;
}

/** packArray for `v`, an array of a render's view. */
function packViewArray(v, depth) {
  const length = v.length;
  if (!(length <= budget)) return TOO_MANY;
  met(v);
  budget -= length;
  room(2);
  tape[at++] = ARRAY;
  tape[at++] = length;
  let n = 1;
  for (let i = 0; i < length; i++) {
    let item;
    try {
      item = v[i];
    } catch (e) {
      item = thrower(e); // (inline: a function here cost a plain table's walk ~15%)
    }
    const c = packView(item, depth + 1);
    if (c < 0) return c;
    n += c;
  }
  return n;
}

/** True when `shape` is keys[first .. first + count]. */
function sameKeys(shape, first, count) {
  if (shape.length !== count) return false;
  for (let i = 0; i < count; i++) if (shape[i] !== keys[first + i]) return false;
  return true;
}

/** Clears the walk's state for the next call (the tape is rewritten from its start). */
function clearWalk() {
  text = '';
  nk = 0;
  if (seen !== null) {
    if (seen.size > 0) seen.clear();
    seen = null;
    solo = null;
  }
  if (nShapes > 0) {
    for (let i = 0; i < nShapes; i++) shapes[i] = null;
    nShapes = 0;
    if (shapeByFirstKey.size > SHAPE_KEYS_KEPT || shapeBase >= Number.MAX_SAFE_INTEGER - 2 * MAX_SHAPES) {
      shapeByFirstKey.clear();
      shapeBase = 0;
    } else {
      shapeBase += MAX_SHAPES;
    }
  }
}

/** Whether Object.prototype has an enumerable key (for-in would list it). */
function hasInheritedKeys() {
  for (const _ in EMPTY) return true;
  return false;
}
const EMPTY = {};

/** True from a packed wireParams until released(): the native call has not copied the tape yet. */
let lent = false;
/** True while wireParams walks: a getter among the params may call the pool. */
let walking = false;

/**
 * What to hand the native call for `params`: `[sent, flags, tape, text, handles]`. With
 * `mayHoldFunctions` (pool.render's call), functions pack as numbered slots, and `handles` is
 * `[functions, objects]` when the packed params held one (else undefined). Plain params cross
 * packed (flag packed) when they hold at least jsonMinValues values, or an object or array;
 * `sent` is the text, or, when the first param is a string, that string, and `text` the text of
 * the others (flag packedAfterString). Packing here and unpacking on a pool thread cost the
 * calling thread a few hundred ns for small objects, against about a µs each value by value;
 * long strings too cost it less packed (its text is copied as it is, where Node-API would
 * transcode each string to UTF-8 here: render's 50 kB of JSON text, data: 'json', ~30 µs
 * instead of ~45 µs). Params that are not plain, or small and flat, cross value by value
 * (`sent` is the array, flags 0), and so do the params of a call made while another call's
 * params are walked (by a getter among them): the walk's state is not its. The tape is this
 * module's, reused: call released() once the native call has returned (it copies what it
 * needs). Params whose strings are longer together than one string can be cross value by value. Throws an RpcError InvalidParams when the params cannot
 * be sent (more values than a call may carry, a String object with a replaced prototype).
 * `toJs`: the params go to JavaScript (a task file's function): an object met twice makes them
 * not plain (so that lib/pool.js sends them as structured clone, which keeps it one object).
 */
function wireParams(params, mayHoldFunctions = false, toJs = false) {
  refused = true; // as far as the caller knows: the walk below may not run
  sawUndefined = false;
  tooMany = false;
  if (walking) return [params, 0, undefined];
  // A call started while the previous one's tape is still lent (a listener that calls the
  // pool from inside the call's start) gets a tape of its own.
  if (lent) tape = new Float64Array(TAPE_KEPT);
  let size;
  let first;
  let after = false;
  walking = true;
  takesFunctions = mayHoldFunctions;
  preparedInView = false;
  functions = null;
  forgetMet();
  try {
    budget = JSON_MAX_VALUES - 1;
    objects = 0;
    seen = toJs ? seenSet : null;
    at = HEADER;
    inherited = hasInheritedKeys();
    // A leading string (a template) travels apart, as it is: copied into the text, it would
    // cost a copy and a new string per call.
    first = params.length > 1 ? params[0] : undefined;
    after = typeof first === 'string';
    if (after) {
      objects++;
      size = typeof params.toJSON === 'function' ? -1 : packArray(params, 0, 1);
    } else {
      size = params.length > 0 ? packObject(params, 0) : 0;
    }
  } catch {
    size = -1; // a getter or a trap threw: the native conversion names it precisely
  } finally {
    walking = false;
    if (mirrorsRead.size > 0) mirrorsRead.clear();
  }
  const fns = functions;
  functions = null;
  takesFunctions = false;
  // A render's view that needed preparing and holds too many values: lib/render.js's
  // preparation refuses it, with its own bound and message.
  if (size === TOO_MANY && preparedInView) size = -1;
  if (size < 0 || (size < contract.jsonMinValues && objects < 2)) {
    forgetMet();
    clearWalk();
    if (size === TOO_MANY) {
      tooMany = true;
      // Walked no further than that: a value that reaches one object many times may hold 2^64.
      throw new RpcError(CODES.InvalidParams, `params hold more than the ${JSON_MAX_VALUES} values a call may carry: pass bulk data in a SharedArrayBuffer`);
    }
    if (size === STRING_OBJECT) {
      throw new RpcError(CODES.InvalidParams, 'params hold a String object whose prototype was replaced, which would cross as a key per character: pass its text (String(value)) instead');
    }
    refused = size < 0;
    return [params, 0, undefined];
  }
  refused = false;
  const sent = text;
  clearWalk();
  // The handles of a render whose params held functions (the objects copied: the list is reused).
  const handles = fns !== null ? [fns, objectsMet.slice(0, nMet)] : undefined;
  forgetMet();
  tape[0] = at;
  tape[1] = size;
  lent = true;
  // One byte per unit: read natively as Latin-1, half the bytes of UTF-16. (V8 answers this at
  // once for a string it stores as one byte per unit: no such string can match.)
  const flags = NOT_LATIN1.test(sent) ? PACKED_UTF16 : PACKED_LATIN1;
  if (!after) return [sent, flags, tape, undefined, handles];
  // The first param too (a template): a copy natively when it is one byte per unit, where
  // reading it as UTF-8 would transcode it.
  return [first, flags | PACKED_AFTER_STRING | (NOT_LATIN1.test(first) ? 0 : FIRST_LATIN1), tape, sent, handles];
}

/**
 * True when the last wireParams found values that are not plain data (they crossed value by
 * value), or undefined (an array item or a hole), which JSON would make null.
 */
let refused = false;
let sawUndefined = false;
function lastRefused() {
  return refused || sawUndefined;
}

/** True when the last wireParams threw for params holding more values than plain params may. */
let tooMany = false;
function lastTooMany() {
  return tooMany;
}


/** The native call that got wireParams's tape has returned: the tape may be written again. */
function released() {
  lent = false;
  if (tape.length > TAPE_KEPT) tape = new Float64Array(TAPE_KEPT);
}

const NOT_LATIN1 = /[\u0100-\uffff]/;
const PACKED_UTF16 = contract.callFlags.packed;
const PACKED_LATIN1 = contract.callFlags.packed | contract.callFlags.packedLatin1;
const PACKED_AFTER_STRING = contract.callFlags.packedAfterString;
const FIRST_LATIN1 = contract.callFlags.firstLatin1;

module.exports = { wireParams, released, lastRefused, lastTooMany };
