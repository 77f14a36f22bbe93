'use strict';
// How a call's params cross to the native side: value by value (which also produces the
// precise errors), or, for big plain data, as JSON text — JSON.stringify here and a parse on a
// pool thread cost the calling thread far less than converting value by value through Node-API
// (a 200-row table: ~0.3 ms instead of ~2 ms). The threshold, the flag and the rule that counts
// plain values are the contract's (src/bindings/contract.rs, JSON_MIN_VALUES).

const { contract } = require('./native.js');
const { RpcError, CODES, errorText } = require('./errors.js');

/** Arrays longer than this never travel as JSON text (walking them here would take seconds). */
const JSON_MAX_ELEMENTS = 2 ** 26;

/**
 * Counts the values in `v` if JSON text carries it unchanged, else returns -1 (then the
 * value-by-value path converts it, or refuses it with the precise error). A value with a
 * `toJSON` method is not carried unchanged: JSON would send what the method returns.
 */
function plainJsonSize(v, depth) {
  switch (typeof v) {
    case 'string': // JSON.stringify escapes lone surrogates; the native parse makes them U+FFFD
    case 'boolean':
    case 'undefined':
      return 1;
    case 'number':
      // JSON has no NaN, Infinity or -0.
      return Number.isFinite(v) && (v !== 0 || 1 / v > 0) ? 1 : -1;
    case 'object': {
      if (v === null) return 1;
      if (depth >= contract.jsonMaxDepth || typeof v.toJSON === 'function') return -1;
      let n = 1;
      if (Array.isArray(v)) {
        if (!(v.length <= JSON_MAX_ELEMENTS)) return -1;
        for (let i = 0; i < v.length; i++) {
          const c = plainJsonSize(v[i], depth + 1);
          if (c < 0) return -1;
          n += c;
        }
        return n;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return -1;
      for (const k in v) {
        const item = v[k];
        // JSON drops a key whose value is undefined; the value-by-value path keeps it (as null).
        if (item === undefined) return -1;
        const c = plainJsonSize(item, depth + 1);
        if (c < 0) return -1;
        n += c;
      }
      return n;
    }
    default:
      return -1;
  }
}

/**
 * What to hand the native call for `params`, and its flags: the array itself, or its JSON text
 * with the jsonParams flag. Throws an RpcError InvalidParams when the text cannot be made (a
 * getter that returns a BigInt on its second read, text longer than a string can be).
 */
function wireParams(params) {
  let size;
  try {
    size = params.length > 0 ? plainJsonSize(params, 0) : 0;
  } catch {
    size = -1; // a getter or a trap threw: the native conversion names it precisely
  }
  if (size < contract.jsonMinValues) return [params, 0];
  try {
    return [JSON.stringify(params), contract.callFlags.jsonParams];
  } catch (e) {
    throw new RpcError(CODES.InvalidParams, `params cannot be sent: JSON.stringify threw ${errorText(e)}`);
  }
}

module.exports = { wireParams, plainJsonSize };
