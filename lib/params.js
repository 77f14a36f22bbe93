'use strict';
// How a call's params cross to the native side: value by value (which also produces the
// precise errors), or, for plain data holding an object or many values, as JSON text —
// JSON.stringify here and a parse on a pool thread cost the calling thread far less than
// converting value by value through Node-API (a 200-row table: ~0.3 ms instead of ~2 ms; a
// two-key object: ~0.2 µs instead of ~1 µs). The threshold, the flags and the rule that counts
// plain values are the contract's (src/bindings/contract.rs, JSON_MIN_VALUES).

const { contract } = require('./native.js');
const { RpcError, CODES, errorText } = require('./errors.js');

/**
 * Plain data of more values than this is refused: walking it here already takes seconds, and a
 * value that reaches one object many times may hold 2^64 of them. (Values that take the
 * value-by-value path have a smaller limit, the contract's maxValues, checked natively.)
 */
const JSON_MAX_VALUES = 2 ** 24;
/** Values plainJsonSize may still visit in the current walk. */
let budget = 0;
/** plainJsonSize's answer when the params hold more values than a call may carry. */
const TOO_MANY = -2;
/** plainJsonSize's answer for a String object whose prototype was replaced (see there). */
const STRING_OBJECT = -3;
const stringValueOf = Function.prototype.call.bind(String.prototype.valueOf);

/** True for a String object only: Symbol.toStringTag can make any object look like one. */
function isStringObject(v) {
  try {
    stringValueOf(v);
    return true;
  } catch {
    return false;
  }
}

/**
 * A leaf's count: 1 for a value JSON text carries unchanged, -1 for one it does not, 0 for an
 * object (counted by plainJsonSize). Leaves are counted in their container's loop, without a
 * call of plainJsonSize each (a fifth of the walk's time on a 200-row table).
 */
function leafSize(v) {
  switch (typeof v) {
    case 'string': // JSON.stringify escapes lone surrogates; the native parse makes them U+FFFD
      units += v.length;
      return 1;
    case 'boolean':
    case 'undefined':
      return 1;
    case 'number':
      // JSON has no NaN, Infinity or -0.
      return Number.isFinite(v) && (v !== 0 || 1 / v > 0) ? 1 : -1;
    case 'object':
      return v === null ? 1 : 0;
    default:
      return -1;
  }
}

/**
 * Counts the values in `v` if JSON text carries it unchanged, else returns -1 (then the
 * value-by-value path converts it, or refuses it with the precise error), or TOO_MANY. A value
 * with a `toJSON` method is not carried unchanged: JSON would send what the method returns.
 */
function plainJsonSize(v, depth) {
  if (--budget < 0) return TOO_MANY;
  const leaf = leafSize(v);
  return leaf !== 0 ? leaf : objectSize(v, depth);
}

/** Objects and arrays plainJsonSize met in the current walk, the params array included. */
let objects = 0;
/** UTF-16 units of the strings plainJsonSize met in the current walk. */
let units = 0;
/**
 * Small params (under jsonMinValues values) cross as JSON text only while their strings, but a
 * leading one, hold at most this many units: JSON.stringify scans every string for escapes
 * (about 1-2 ns a unit), where Node-API copies it, and JSON text inside params (render's
 * `data: 'json'`) would have every quote escaped and the text parsed twice.
 */
const SMALL_JSON_UNITS = 1024;

/** plainJsonSize of the object `v` (not null), counted already against the budget. */
function objectSize(v, depth) {
  if (depth >= contract.jsonMaxDepth || typeof v.toJSON === 'function') return -1;
  objects++;
  let n = 1;
  if (Array.isArray(v)) {
    const length = v.length;
    if (!(length <= budget)) return TOO_MANY;
    budget -= length;
    for (let i = 0; i < length; i++) {
      const item = v[i];
      let c = leafSize(item);
      // An undefined item is written as null, as the value-by-value path sends it.
      if (c === 0) c = objectSize(item, depth + 1);
      if (c < 0) return c;
      n += c;
    }
    return n;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return -1;
  // A typed array given a plain prototype: never listed index by index (2^30 of them).
  if (ArrayBuffer.isView(v)) return -1;
  // Nor a String object: it has a key per character, and no conversion lists them.
  if (typeof v.length === 'number' && isStringObject(v)) return STRING_OBJECT;
  for (const k in v) {
    if (--budget < 0) return TOO_MANY;
    const item = v[k];
    // JSON drops a key whose value is undefined; the value-by-value path keeps it (as null).
    if (item === undefined) return -1;
    let c = leafSize(item);
    if (c === 0) c = objectSize(item, depth + 1);
    if (c < 0) return c;
    n += c;
  }
  return n;
}

/**
 * What to hand the native call for `params`: `[sent, flags, json]`. Plain params cross as JSON
 * text when they hold at least jsonMinValues values, or an object or array and few long
 * strings (SMALL_JSON_UNITS): JSON.stringify here and a parse on a pool thread cost the calling
 * thread a few hundred ns for small objects, against about a µs each value by value. Then,
 * when the first param is a string, it crosses as it is (`sent`) and `json` is the text of the
 * others (flag jsonAfterString): JSON.stringify would scan a long template for escapes. Else
 * `sent` is the text (flag jsonParams). Params
 * that are not plain, or small and flat, cross value by value (`sent` is the array, flags 0).
 * Throws an RpcError InvalidParams when the text cannot be made (a getter that returns a BigInt
 * on its second read, text longer than a string can be).
 */
function wireParams(params) {
  let size;
  try {
    budget = JSON_MAX_VALUES;
    objects = 0;
    units = 0;
    size = params.length > 0 ? plainJsonSize(params, 0) : 0;
  } catch {
    size = -1; // a getter or a trap threw: the native conversion names it precisely
  }
  if (size === TOO_MANY) {
    // Walked no further than that: a value that reaches one object many times may hold 2^64.
    throw new RpcError(CODES.InvalidParams, `params hold more than the ${JSON_MAX_VALUES} values a call may carry: pass bulk data in a SharedArrayBuffer`);
  }
  if (size === STRING_OBJECT) {
    throw new RpcError(CODES.InvalidParams, 'params hold a String object whose prototype was replaced, which would cross as a key per character: pass its text (String(value)) instead');
  }
  if (size < 0 || (size < contract.jsonMinValues && objects < 2)) return [params, 0, undefined];
  let first;
  let after;
  let text;
  try {
    first = params[0]; // read again, as JSON.stringify reads everything again
    after = typeof first === 'string' && params.length > 1;
    if (size < contract.jsonMinValues && units - (after ? first.length : 0) > SMALL_JSON_UNITS) return [params, 0, undefined];
    text = JSON.stringify(after ? params.slice(1) : params);
  } catch (e) {
    throw new RpcError(CODES.InvalidParams, `params cannot be sent: reading them again for JSON text threw ${errorText(e)}`);
  }
  // One byte per unit: read natively as Latin-1, half the bytes of UTF-16. (V8 answers this at
  // once for a string it stores as one byte per unit: no such string can match.)
  const flags = NOT_LATIN1.test(text) ? JSON_UTF16 : JSON_LATIN1;
  return after ? [first, flags | JSON_AFTER_STRING, text] : [text, flags, undefined];
}

const NOT_LATIN1 = /[\u0100-\uffff]/;
const JSON_UTF16 = contract.callFlags.jsonParams;
const JSON_LATIN1 = contract.callFlags.jsonParams | contract.callFlags.jsonLatin1;
const JSON_AFTER_STRING = contract.callFlags.jsonAfterString;

module.exports = { wireParams, plainJsonSize };
