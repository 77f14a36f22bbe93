'use strict';
// RpcError and the error table (defined in Rust, src/rpc/error.rs), and how messages name
// values and thrown exceptions.

const { contract } = require('./native.js');

const CODES = Object.freeze(Object.fromEntries(contract.errorCodes.map((c) => [c.name, c.code])));
const NAMES = new Map(contract.errorCodes.map((c) => [c.code, c.name]));

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.type = NAMES.get(code) ?? 'Unknown';
    if (data !== undefined) this.data = data;
  }

  toJSON() {
    const out = { code: this.code, message: this.message };
    if (this.data !== undefined) out.data = this.data;
    return out;
  }
}
RpcError.codes = CODES;

function invalidParams(message) {
  return new RpcError(CODES.InvalidParams, message);
}

function rejected(code, message) {
  return Promise.reject(new RpcError(code, message));
}

/** Errors thrown by the native shm functions carry an error-table name (or napi's InvalidArg). */
function fromNative(e) {
  if (e !== null && typeof e === 'object' && typeof e.code === 'string') {
    if (e.code === 'InvalidArg') return invalidParams(e.message);
    if (Object.hasOwn(CODES, e.code)) return new RpcError(CODES[e.code], e.message);
  }
  return e;
}

/** How an error message names a value it refuses. */
function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  // Never String() a function (its own toString runs, and may throw) or Array.isArray a
  // revoked Proxy (it throws): describing a bad argument must not fail in turn.
  if (typeof v === 'function') return 'a function';
  if (v === null || typeof v !== 'object') return String(v);
  try {
    return Array.isArray(v) ? 'an array' : 'an object';
  } catch {
    return 'a revoked Proxy';
  }
}

/** A thrown value's message, read without letting a hostile getter throw again. */
function errorText(e) {
  try {
    if (e !== null && typeof e === 'object' && typeof e.message === 'string') return e.message;
    return String(e);
  } catch {
    return 'an exception that cannot be described';
  }
}

/** `f()`, or `fallback` when it throws (reading a part of a thrown value, a getter, a trap). */
function safely(f, fallback = undefined) {
  try {
    return f();
  } catch {
    return fallback;
  }
}

module.exports = { RpcError, CODES, invalidParams, rejected, fromNative, describe, errorText, safely };
