'use strict';
// The options of a call, read one way for every kind of call: `call()` takes the options of one
// call, and `run()` and `map()` take those plus their own. The names live here and nowhere else.
//
// How an options object is read, whatever it is (a Proxy, an object with getters, a class
// instance):
// - Its own enumerable string keys are its options, as for `new Pool(options)`: inherited keys
//   are not options (an `Object.prototype` polluted with `timeout` sets no limit), and a key
//   that names no option of that kind of call is refused, so a misspelt `timout` is an error
//   instead of a call with no limit.
// - Each key is listed once and each value read once, into a snapshot the call then uses: a
//   getter cannot answer one thing to the check and another to the call.
// - Whatever throws while it is read (a getter, a Proxy trap) rejects the call with
//   InvalidRequest saying what was thrown; nothing throws out of the call.

const { RpcError, CODES, describe, errorText } = require('./errors.js');

/** The options of one call. */
const CALL_OPTIONS = Object.freeze(['signal', 'timeout', 'onProgress']);
/** Each kind of call's options: the call's, and the kind's own. */
const OPTION_NAMES = Object.freeze({
  call: Object.freeze([...CALL_OPTIONS, 'transfer']),
  run: Object.freeze([...CALL_OPTIONS, 'name', 'transfer']),
  map: Object.freeze([...CALL_OPTIONS, 'settle', 'concurrency']),
});

function invalid(message) {
  return new RpcError(CODES.InvalidRequest, message);
}

/**
 * The options `options` gives a call of `kind` ('call', 'run' or 'map'), as a snapshot with a
 * null prototype (an absent option is undefined; `signal: null` is no signal). Throws an
 * RpcError InvalidRequest naming what is wrong.
 */
function callOptions(kind, options) {
  const names = OPTION_NAMES[kind];
  const given = Object.create(null);
  if (options === undefined) return given;
  if (options === null || typeof options !== 'object') {
    throw invalid(`${kind} options must be an object, got ${describe(options)}`);
  }
  let key;
  let unknown;
  let isSignal = true;
  try {
    for (key of Object.keys(options)) {
      if (!names.includes(key)) {
        unknown = key;
        break;
      }
      given[key] = options[key];
    }
    if (given.signal === null) given.signal = undefined;
    // `instanceof` asks a Proxy for its prototype: inside the try too.
    key = 'signal';
    if (given.signal !== undefined) isSignal = given.signal instanceof AbortSignal;
  } catch (e) {
    const where = key === undefined ? `${kind} options` : `${kind} options.${key}`;
    throw invalid(`${where} could not be read: ${errorText(e)}`);
  }
  if (unknown !== undefined) {
    const expected = `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
    throw invalid(`unknown ${kind} option '${unknown}' (expected ${expected})`);
  }
  if (!isSignal) throw invalid(`${kind} options.signal must be an AbortSignal, got ${describe(given.signal)}`);
  if (given.onProgress !== undefined && typeof given.onProgress !== 'function') {
    throw invalid(`${kind} options.onProgress must be a function, got ${describe(given.onProgress)}`);
  }
  if (given.transfer !== undefined && !Array.isArray(given.transfer)) {
    throw invalid(`${kind} options.transfer must be an array of ArrayBuffers, got ${describe(given.transfer)}`);
  }
  return given;
}

module.exports = { callOptions, OPTION_NAMES };
