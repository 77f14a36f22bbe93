'use strict';
// Lifecycle interleavings: the operations (calls, aborts, timeouts, close(), destroy()) and
// the model that says which outcomes each call may have.
const fc = require('fast-check');

const { show, judge } = require('./settle.js');
const configArb = fc.record({
  threads: fc.integer({ min: 1, max: 3 }),
  maxQueue: fc.constantFrom(0, 1, 2, 3, Infinity),
  onFull: fc.constantFrom('reject', 'wait'),
  strategy: fc.constantFrom('roundrobin', 'random', 'leastbusy'),
  end: fc.constantFrom('close', 'destroy'),
});

const opArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('submit'),
      method: fc.constantFrom('sleep', 'echo'),
      ms: fc.integer({ min: 0, max: 5 }),
      timeout: fc.option(fc.constantFrom(1e-9, 0.01, 1, 3), { freq: 3, nil: undefined }),
      abortable: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('abort'), which: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('await'), which: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('tick'), ms: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'close' }) },
  { weight: 1, arbitrary: fc.constant({ op: 'destroy' }) },
);

/**
 * The model's view of one call: the outcomes it may have (`ok` or codes), which grows as
 * operations happen while the call has not been seen to settle.
 */
function modelCall(index, op, allowed) {
  return { index, op, allowed, rec: null, controller: null };
}

function judgeModelCall(c) {
  const o = c.rec.outcome;
  const expectValue = c.op.method === 'sleep' ? c.op.ms : c.index;
  const codes = new Set([...c.allowed].filter((a) => a !== 'ok'));
  const check = c.allowed.has('ok') ? (a) => (a === expectValue ? null : `expected ${expectValue}, got ${show(a)}`) : null;
  const why = judge(c.rec, { check, codes });
  return why === null ? null : `call #${c.index} ${c.op.method}(${c.op.ms}) ${show({ timeout: c.op.timeout, abortable: c.op.abortable })}: ${why} (outcome ${show(o)})`;
}

module.exports = { configArb, opArb, modelCall, judgeModelCall };
