'use strict';
// What a call that must fail failed with, for tests that then check its code or message.
const { inspect } = require('node:util');

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

module.exports = { rejection };
