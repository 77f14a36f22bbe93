'use strict';
// RemotePool#map: one call of a method per input, `concurrency` of them in flight at most,
// results in input order, as Pool#map answers (its inputs read once, when it starts).

const { CODES, rejected, describe, errorText } = require('../errors.js');
const { knownOptions, wholeOption } = require('./names.js');

const MAP_OPTIONS = ['settle', 'onProgress', 'signal', 'timeout', 'concurrency'];

/**
 * Maps `inputs` through `call(method, [input], callOptions)` (a RemotePool's call):
 * `{ settle, onProgress, signal, timeout, concurrency }` as Pool#map takes them; rejects with
 * the first error unless `settle: 'all'`, and with InvalidRequest for bad arguments.
 */
function mapCalls(call, method, inputs, options) {
  let o;
  try {
    o = knownOptions(options, MAP_OPTIONS, 'map()');
    if (inputs === null || typeof inputs !== 'object' || typeof inputs[Symbol.iterator] !== 'function') {
      throw new TypeError(`corepool/nats: map() takes an iterable of inputs, got ${describe(inputs)}`);
    }
    inputs = Array.from(inputs);
    o = {
      settle: o.settle ?? 'reject',
      onProgress: o.onProgress,
      signal: o.signal,
      timeout: o.timeout,
      concurrency: wholeOption(o.concurrency, 1024, 1, 2 ** 30, 'map() options.concurrency'),
    };
    if (o.settle !== 'reject' && o.settle !== 'all') throw new TypeError(`corepool/nats: map() options.settle must be 'reject' or 'all', got ${describe(o.settle)}`);
    if (o.onProgress !== undefined && typeof o.onProgress !== 'function') throw new TypeError('corepool/nats: map() options.onProgress must be a function');
  } catch (e) {
    return rejected(CODES.InvalidRequest, errorText(e));
  }
  const callOptions = {};
  if (o.signal !== undefined) callOptions.signal = o.signal;
  if (o.timeout !== undefined) callOptions.timeout = o.timeout;
  return new Promise((resolve, reject) => {
    const out = new Array(inputs.length);
    let next = 0;
    let done = 0;
    let failed = false;
    const launch = () => {
      while (!failed && next < inputs.length && next - done < o.concurrency) {
        const index = next++;
        call(method, [inputs[index]], callOptions).then(
          (value) => finish(index, true, value),
          (error) => finish(index, false, error),
        );
      }
      if (done === inputs.length && !failed) resolve(out);
    };
    const finish = (index, ok, v) => {
      if (failed) return;
      done++;
      if (ok) out[index] = o.settle === 'all' ? { status: 'fulfilled', value: v } : v;
      else if (o.settle === 'all') out[index] = { status: 'rejected', reason: v };
      else {
        failed = true;
        reject(v);
        return;
      }
      if (o.onProgress) {
        try {
          o.onProgress(done, inputs.length, ok ? { index, input: inputs[index], value: v } : { index, input: inputs[index], error: v });
        } catch (e) {
          failed = true;
          reject(e);
          return;
        }
      }
      launch();
    };
    launch();
  });
}

module.exports = { mapCalls };
