'use strict';
// What travels over NATS: JSON-RPC 2.0 text, and nothing JSON cannot carry. A value that JSON
// text would change silently (NaN → null, a Date → its string, a Map → {}, a dropped key) is
// refused with InvalidParams naming its place, as the local pool refuses what it cannot carry.

const { RpcError, CODES, describe, errorText } = require('../errors.js');

/** Why `v` (at `place`) cannot travel as JSON text, or null if it can. */
function refusal(v, place) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(v) ? null : `${place} is ${v}, which JSON text cannot carry`;
    case 'undefined':
      return null; // becomes null, as in a local call
    case 'bigint':
      return `${place} is a BigInt (${describe(v)}), which JSON text cannot carry: send it as a string`;
    case 'object': {
      if (v === null || Array.isArray(v)) return null;
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) return null;
      const kind = ArrayBuffer.isView(v) ? `a ${v.constructor?.name ?? 'typed array'}` : `a ${proto?.constructor?.name ?? 'non-plain object'}`;
      return `${place} is ${kind}, which cannot travel over NATS (only JSON data: objects, arrays, strings, finite numbers, booleans, null)`;
    }
    default:
      return `${place} is a ${typeof v}, which cannot travel over NATS`;
  }
}

/**
 * The JSON text of `value`, or an InvalidParams RpcError thrown. `root` names the value in
 * messages (`params`). Keys whose value is undefined are kept (as null), as a local call keeps
 * them. Cycles, throwing getters and Proxy traps are refused with what was thrown.
 */
function toJson(value, root) {
  const places = new Map();
  let text;
  try {
    text = JSON.stringify(value, function replacer(key, _v) {
      const parent = places.get(this);
      const place = parent === undefined ? root : Array.isArray(this) ? `${parent}[${key}]` : `${parent}.${key}`;
      // `_v` is what toJSON made of the value: judge the value itself.
      const own = key === '' ? value : this[key];
      const why = refusal(own, place);
      if (why !== null) throw new RpcError(CODES.InvalidParams, why);
      if (own !== null && typeof own === 'object') places.set(own, place);
      return own === undefined ? null : own;
    });
  } catch (e) {
    if (e instanceof RpcError) throw e;
    throw new RpcError(CODES.InvalidParams, `${root} could not be sent: ${errorText(e)}`);
  }
  return text;
}

/** A JSON-RPC request's text, with `params` validated by toJson. */
function requestText(method, params, id) {
  return `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${toJson(params, 'params')},"id":${id}}`;
}

/** The RpcError of a JSON-RPC error object (as a host answered it). */
function errorOf(error) {
  if (error === null || typeof error !== 'object' || typeof error.code !== 'number') {
    return new RpcError(CODES.InternalError, `the host answered a malformed error: ${describe(error)}`);
  }
  return new RpcError(error.code, typeof error.message === 'string' ? error.message : String(error.message), error.data);
}

module.exports = { toJson, requestText, errorOf };
