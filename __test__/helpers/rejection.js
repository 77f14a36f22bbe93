'use strict';
// How a call settled, for tests that then check a rejection's code or message.
const { inspect } = require('node:util');
const { RpcError } = require('../..');

/**
 * The value `promise` rejects with. Given `type`, a rejection that is not an instance of it is
 * thrown on (the test fails with the unexpected error itself); a promise that resolves fails
 * the test, naming what it resolved with.
 */
async function rejection(promise, type) {
  let value;
  try {
    value = await promise;
  } catch (e) {
    if (type !== undefined && !(e instanceof type)) throw e;
    return e;
  }
  throw new Error(`resolved with ${inspect(value)}; a rejection was expected`);
}

/**
 * How `promise` settled, never throwing: `{ value }`, or `{ code, message }` of its rejection
 * (`code` says so when the rejection is not an RpcError).
 */
async function outcome(promise) {
  try {
    return { value: await promise };
  } catch (e) {
    return { code: e instanceof RpcError ? e.code : `not an RpcError: ${e?.constructor?.name}`, message: String(e?.message) };
  }
}

module.exports = { rejection, outcome };
