'use strict';
// Call options: timeouts of every size and kind, signals aborted before or during the call.
const fc = require('fast-check');
const { RpcError } = require('../../..');

const C = RpcError.codes;
const TIMEOUTS = {
  none: [0, Infinity, 1e22, 1e300, Number.MAX_VALUE, 2 ** 31, 86_400_000],
  tiny: [1e-9, Number.MIN_VALUE, 0.001, 1, 2],
  bad: [NaN, -1, -Infinity, '5', null, true, 10n, {}],
};

const timeoutOf = (kind) => fc.constantFrom(...TIMEOUTS[kind]).map((value) => ({ kind, value }));
const optionsArb = fc.record({
  wrap: fc.oneof(
    { weight: 12, arbitrary: fc.constant('object') },
    { weight: 1, arbitrary: fc.constantFrom('none', 'null', 'number', 'string', 'throwing getter', 'throwing Proxy') },
  ),
  timeout: fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: 'absent' }) },
    { weight: 2, arbitrary: timeoutOf('none') },
    { weight: 2, arbitrary: timeoutOf('tiny') },
    { weight: 1, arbitrary: timeoutOf('bad') },
  ),
  signal: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('absent', 'aborted later', 'aborted at once', 'never aborted') },
    { weight: 1, arbitrary: fc.constantFrom('aborted', 'not a signal', 'null') },
  ),
});

/** Builds the options object; `abort()` fires the signals meant to fire during the call. */
function makeOptions(o) {
  let controller = null;
  const later = [];
  const opts = {};
  if (o.timeout.kind !== 'absent') opts.timeout = o.timeout.value;
  switch (o.signal) {
    case 'aborted':
      opts.signal = AbortSignal.abort();
      break;
    case 'aborted later':
    case 'aborted at once':
    case 'never aborted':
      controller = new AbortController();
      opts.signal = controller.signal;
      if (o.signal !== 'never aborted') later.push(o.signal === 'aborted at once' ? 0 : 1);
      break;
    case 'not a signal':
      opts.signal = { aborted: false, addEventListener() {} };
      break;
    case 'null':
      opts.signal = null;
      break;
    default:
  }
  let options;
  switch (o.wrap) {
    case 'none':
      options = undefined;
      break;
    case 'null':
      options = null;
      break;
    case 'number':
      options = 5;
      break;
    case 'string':
      options = 'timeout';
      break;
    case 'throwing getter':
      options = {
        get timeout() {
          throw new Error('the timeout getter throws');
        },
      };
      break;
    case 'throwing Proxy':
      options = new Proxy(opts, {
        get() {
          throw new Error('the options trap throws');
        },
      });
      break;
    default:
      options = opts;
  }
  const abort = () => {
    if (controller === null) return;
    if (later[0] === 0) controller.abort();
    else if (later[0] === 1) setTimeout(() => controller.abort(), 1);
  };
  return { options, abort };
}

/** The codes a call with options `o` may add, or { only } when the options decide alone. */
function optionEffects(o) {
  // The options are the object's own keys (README, Calls): a Proxy of an object with none
  // is asked for no value, so its throwing `get` trap never runs and the call has no options.
  const hasKeys = o.timeout.kind !== 'absent' || o.signal !== 'absent';
  if (o.wrap === 'throwing Proxy' && !hasKeys) return { codes: [] };
  if (o.wrap === 'null' || o.wrap === 'number' || o.wrap === 'string' || o.wrap === 'throwing getter' || o.wrap === 'throwing Proxy') return { only: C.InvalidRequest };
  if (o.wrap === 'none') return { codes: [] };
  if (o.signal === 'not a signal') return { only: C.InvalidRequest };
  if (o.signal === 'aborted') return { only: C.Aborted };
  const codes = [];
  if (o.timeout.kind === 'bad') return { bad: C.InvalidRequest };
  if (o.timeout.kind === 'tiny') codes.push(C.Timeout);
  if (o.signal === 'aborted later' || o.signal === 'aborted at once') codes.push(C.Aborted);
  return { codes };
}

module.exports = { optionsArb, makeOptions, optionEffects };
