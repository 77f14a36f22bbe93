'use strict';
// Watching calls settle: how many times and how, within a hang guard, judged against what may
// come back.
const util = require('node:util');
const { RpcError } = require('../../..');
const { DEADLINE_MS } = require('./run.js');

const C = RpcError.codes;
const DOCUMENTED = new Set(Object.values(C));
const NAME = Object.fromEntries(Object.entries(C).map(([k, v]) => [v, k]));

const show = (v) => util.inspect(v, { depth: 3, maxArrayLength: 8, maxStringLength: 60, breakLength: Infinity });

/** Follows a call: how many times it settled and how. A synchronous throw is an outcome too. */
function follow(start) {
  const rec = { settled: 0, outcome: undefined, done: undefined };
  let p;
  try {
    p = start();
  } catch (e) {
    rec.outcome = { threw: e };
    rec.settled = 1;
    rec.done = Promise.resolve();
    return rec;
  }
  if (!(p instanceof Promise)) {
    rec.outcome = { threw: new Error(`returned ${show(p)}, not a Promise`) };
    rec.settled = 1;
    rec.done = Promise.resolve();
    return rec;
  }
  rec.done = p.then(
    (value) => {
      rec.settled++;
      rec.outcome = { value };
    },
    (error) => {
      rec.settled++;
      rec.outcome = { error };
    },
  );
  return rec;
}

function within(promise, ms) {
  let timer;
  return Promise.race([promise.then(() => true), new Promise((resolve) => (timer = setTimeout(resolve, ms, false)))]).finally(() => clearTimeout(timer));
}

/** Waits for every followed call (up to the deadline); names the ones that never settled. */
async function allSettled(recs, ms = DEADLINE_MS) {
  await within(Promise.all(Object.values(recs).map((r) => r.done)), ms);
  return Object.entries(recs)
    .filter(([, r]) => r.settled !== 1)
    .map(([name, r]) => `${name}: settled ${r.settled} times within ${ms} ms`);
}

/** Polls `stats()` (there is no event to await) until nothing is queued or running, for up to `ms`. */
async function idle(pool, ms = DEADLINE_MS) {
  const until = Date.now() + ms;
  let s = pool.stats();
  while ((s.queued !== 0 || s.running !== 0) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    s = pool.stats();
  }
  return s.queued === 0 && s.running === 0 ? null : `stats() still shows queued ${s.queued}, running ${s.running}`;
}

/**
 * What a call may end with: `check` (null: it must not resolve) judges a value; `codes` are the
 * RpcError codes it may reject with.
 */
function judge(rec, { check, codes }) {
  const o = rec.outcome;
  if (o === undefined) return 'never settled';
  if ('threw' in o) return `threw synchronously: ${show(o.threw)}`;
  if ('value' in o) {
    if (check === null) return `resolved with ${show(o.value)}, expected a rejection with ${[...codes].map((c) => NAME[c]).join(' or ')}`;
    const why = check(o.value, '');
    return why === null ? null : `resolved with a wrong value: ${why}`;
  }
  const e = o.error;
  if (!(e instanceof RpcError)) return `rejected with ${show(e)}, not an RpcError`;
  if (!DOCUMENTED.has(e.code)) return `rejected with an undocumented code ${e.code}: ${e.message}`;
  if (typeof e.message !== 'string' || e.message === '') return `rejected with code ${e.code} and no message`;
  if (!codes.has(e.code)) {
    const allowed = [check === null ? null : 'a value', ...[...codes].map((c) => NAME[c])].filter(Boolean).join(' or ');
    return `rejected with ${NAME[e.code]} (${e.message.slice(0, 300)}), expected ${allowed}`;
  }
  return null;
}

module.exports = { DOCUMENTED, NAME, show, follow, within, allSettled, idle, judge };
