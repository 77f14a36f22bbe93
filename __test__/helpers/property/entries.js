'use strict';
// Every entry point a value can be sent through (exec, call, request, handle, broadcast, render,
// served methods), each with what it must answer; and the served echoes they use.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const fc = require('fast-check');
const Mustache = require('mustache');
const { Pool, RpcError } = require('../../..');
const { MAX_NESTING, DEADLINE_MS } = require('./run.js');
const { DOCUMENTED, NAME, show, follow, within, allSettled, idle, judge } = require('./settle.js');
const { stringArb, hugeLength, holdsHugeLength, build } = require('./values.js');
const { refuse, isPlainObject, valueSpec, objectSpec, spec, expectation, nestingOf, jsonSpec } = require('./oracle.js');
const { live, STACK_OVERFLOW, nestsPastStack, nesting, getterErrors, holdsUndefinedOrHole, holdsShared, holdsExotic, trapErrors, clonedExpectation } = require('./clone.js');
const { optionsArb, makeOptions, optionEffects } = require('./options.js');

const C = RpcError.codes;
function fail(what, problems) {
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\n${what}`);
}

const names = (codes) => [...codes].map((c) => NAME[c]);

/** The served echoes: one on this thread, one on a worker_thread; both count their runs. */
const mainRuns = new Map();
let tags = 0;
let servers = null;

async function startServers() {
  if (servers !== null) return servers;
  const shared = Pool.shared();
  const main = shared.serve({
    prop_echo_main(tag, x) {
      mainRuns.set(tag, (mainRuns.get(tag) ?? 0) + 1);
      return x;
    },
  });
  const worker = new Worker(path.join(__dirname, '..', '..', 'fixtures', 'property-worker.js'), { workerData: { serve: ['prop_echo_worker', 'prop_runs'] } });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  servers = { shared, main, worker };
  return servers;
}

async function stopServers() {
  if (servers === null) return;
  const { main, worker, shared } = servers;
  servers = null;
  await main.close();
  await worker.terminate();
  await shared.close();
}

const idArb = fc.oneof(fc.integer(), fc.double(), stringArb, fc.constant(null), fc.constant('absent'), fc.constantFrom(true, { id: 1 }, [1]));

/**
 * Judges a request()/handle() answer (already parsed): `expect` is what echo may answer, `invalid`
 * the codes of an answer that says the request itself could not be read (InvalidRequest: id null),
 * `readable` whether it can be read (then a notification gets no answer).
 */
function judgeResponse(rec, { id, notification, readable, expect, invalid }) {
  const o = rec.outcome;
  if (o === undefined) return 'never settled';
  if ('threw' in o) return `threw synchronously: ${show(o.threw)}`;
  if ('error' in o) return `rejected (it never may): ${show(o.error)}`;
  const r = o.value;
  if (r === null) {
    if (!notification) return 'answered null to a request with an id';
    // A notification is answered only when it is not a valid request.
    return readable ? null : 'answered null to a notification that cannot be read';
  }
  if (!isPlainObject(r) || r.jsonrpc !== '2.0') return `not a JSON-RPC response: ${show(r)}`;
  if ('error' in r) {
    const e = r.error;
    if (!isPlainObject(e) || typeof e.message !== 'string' || e.message === '' || !DOCUMENTED.has(e.code)) return `a malformed error: ${show(r)}`;
    if (invalid.has(e.code)) return r.id !== null && e.code === C.InvalidRequest ? `an InvalidRequest answer with id ${show(r.id)}` : null;
    if (notification) return `answered a notification with ${NAME[e.code]} (${e.message.slice(0, 300)})`;
    if (!expect.codes.has(e.code)) {
      return `answered ${NAME[e.code]} (${e.message.slice(0, 300)}), expected ${[expect.check === null ? null : 'a result', ...names(expect.codes)].filter(Boolean).join(' or ')}`;
    }
  } else {
    if (!('result' in r)) return `neither result nor error: ${show(r)}`;
    if (notification) return `answered a notification: ${show(r)}`;
    if (expect.check === null) return `answered ${show(r.result)}, expected ${names(expect.codes).join(' or ')}`;
    const why = expect.check(r.result, 'result');
    if (why !== null) return why;
  }
  return id.check(r.id, 'id');
}

/**
 * handle() of the JSON text of an echo request, when that text can be made. `maxNesting`: texts
 * nested deeper are not sent.
 */
function sendText(pool, d, id, maxNesting) {
  if (holdsHugeLength(d)) return [];
  let text;
  try {
    const request = { jsonrpc: '2.0', method: 'echo', params: [build(d)] };
    if (id !== 'absent') request.id = id;
    text = JSON.stringify(request);
  } catch {
    return []; // no JSON text to send
  }
  // The oracle reads the text as JSON.parse does, then crosses it as any value crosses.
  const sent = JSON.parse(text);
  const x = sent.params[0];
  const depth = nestingOf(x) + 2;
  if (depth > maxNesting) return [];
  const notification = !('id' in sent);
  const validId = notification || sent.id === null || typeof sent.id === 'number' || typeof sent.id === 'string';
  const s = depth > MAX_NESTING + 8 ? refuse('nested too deep') : jsonSpec(x);
  const tooDeep = depth > MAX_NESTING - 8 ? [C.ParseError, C.InvalidRequest, C.InvalidParams] : [];
  const invalid = new Set([...tooDeep, ...(validId ? [] : [C.InvalidRequest])]);
  const expect = validId ? expectation(s, { nesting: 2 }) : { check: null, codes: new Set() };
  const ctx = { id: jsonSpec(validId && !notification ? sent.id : null), notification, readable: validId && expect.check !== null, expect, invalid };
  const rec = follow(() => pool.handle(text));
  const judgeText = () => {
    const o = rec.outcome;
    if (o === undefined || !('value' in o)) return judgeResponse(rec, ctx);
    if (typeof o.value !== 'string') return `answered ${show(o.value)}, not text`;
    let parsed = null; // '': nothing to answer
    try {
      if (o.value !== '') parsed = JSON.parse(o.value);
    } catch (e) {
      return `answered text that is not JSON (${e.message}): ${show(o.value)}`;
    }
    return judgeResponse({ outcome: { value: parsed } }, ctx);
  };
  return [{ name: `handle with id ${show(id)}`, rec, judge: judgeText }];
}

const TEMPLATES = ['{{a}}', '{{{a}}}|{{&a}}', '[{{#a}}<{{.}}>{{/a}}]', '{{^a}}none{{/a}}', '{{a.b}}|{{a.0}}|{{a.length}}', '{{#a}}{{#.}}({{.}}){{/.}}{{/a}}', 'no tags'];

/**
 * The entry points: `extra` generates what a call needs besides the value; `send(pool, d, extra)`
 * starts the call(s) and returns them as { name, rec, judge() → problem | null, after?() }.
 * (The served echoes use Pool.shared(), whatever `pool` is.)
 */
const ENTRIES = {
  exec: {
    extra: fc.constant(null),
    send(pool, d) {
      const expect = expectation(spec(d), { nesting: 1 });
      const rec = follow(() => pool.exec('echo', build(d)));
      return [{ name: 'exec', rec, judge: () => judge(rec, expect) }];
    },
  },

  call: {
    extra: optionsArb,
    send(pool, d, o) {
      const { options, abort } = makeOptions(o);
      const rec = follow(() => pool.call('echo', [build(d)], options));
      abort();
      const s = spec(d);
      const base = expectation(s, { nesting: 1 });
      // Params that cannot be converted are refused before the call is queued; a shared view
      // is refused by echo as it runs, which a timeout or an abort may come before.
      const converted = expectation(s, { nesting: 1, refuseViews: false }).check !== null;
      const effects = optionEffects(o);
      let expect;
      if (effects.only !== undefined) expect = { check: null, codes: new Set([effects.only]) };
      else if (effects.bad !== undefined) expect = { check: null, codes: new Set([effects.bad, ...base.codes]) }; // which is read first is not said
      else expect = { check: base.check, codes: new Set([...base.codes, ...(converted ? effects.codes : [])]) };
      return [{ name: `call with ${show(o)}`, rec, judge: () => judge(rec, expect) }];
    },
  },

  request: {
    extra: idArb,
    send(pool, d, id) {
      const request = { jsonrpc: '2.0', method: 'echo', params: [build(d)] };
      if (id !== 'absent') request.id = id;
      const s = spec(d);
      const validId = id === 'absent' || id === null || typeof id === 'number' || typeof id === 'string';
      // The whole request is converted first (InvalidRequest with id null); then echo runs.
      const read = expectation(s, { nesting: 2, refuseViews: false, code: C.InvalidRequest });
      const invalid = validId ? read.codes : new Set([C.InvalidRequest]);
      const expect = { check: validId && read.check !== null && !s.views ? s.check : null, codes: new Set(s.mayViews ? [C.InvalidParams] : []) };
      const rec = follow(() => pool.request(request));
      const ctx = { id: valueSpec(validId && id !== 'absent' ? id : null), notification: id === 'absent', readable: validId && read.check !== null, expect, invalid };
      return [{ name: `request with id ${show(id)}`, rec, judge: () => judgeResponse(rec, ctx) }];
    },
  },

  handle: {
    extra: idArb,
    // Texts nested up to 100 levels: deeper ones go to serde_json, which answers ParseError to
    // lone surrogate escapes and to nesting past 128 levels (reported on issue 13).
    send: (pool, d, id) => sendText(pool, d, id, 100),
  },

  broadcast: {
    extra: fc.constant(null),
    send(pool, d) {
      const e = expectation(spec(d), { nesting: 1 });
      const n = pool.threads;
      const check = e.check === null ? null : (a, at) => (Array.isArray(a) && a.length === n ? (a.map((v, i) => e.check(v, `${at}[${i}]`)).find((w) => w !== null) ?? null) : `expected ${n} answers, got ${show(a)}`);
      const rec = follow(() => pool.broadcast('echo', build(d)));
      return [{ name: 'broadcast', rec, judge: () => judge(rec, { check, codes: e.codes }) }];
    },
  },

  render: {
    extra: fc.record({ template: fc.constantFrom(...TEMPLATES, '{{.}}', '{{#.}}[{{.}}]{{/.}}'), wrap: fc.boolean() }),
    send(pool, d, { template, wrap }) {
      const s = wrap ? objectSpec([['a', spec(d)]]) : spec(d);
      const e = expectation(s, { nesting: 1, refuseNonJson: true });
      // Views that are not plain data: mustache.js is the oracle (docs/rendering.md, Views).
      // (So are objects without a prototype and arguments objects: mustache.js prints them
      // otherwise than the plain objects of their JSON image.)
      if (holdsCallable(d) || holdsNullProto(d) || holdsArguments(d) || s.must || s.mayNonJson || (e.check !== null && !s.exact)) return renderAsMustache(pool, d, template, wrap);
      let check = e.check;
      const codes = new Set(e.codes);
      let thrown = null; // what mustache.js throws for this data, if it throws
      if (check !== null) {
        let wanted = null;
        if (s.exact && !s.mayNonJson) {
          try {
            wanted = Mustache.render(template, s.make());
          } catch (error) {
            thrown = error.message;
          }
        } else {
          // No one value to render: mustache.js may throw for some of them ('{{.}}' of an
          // object whose toString is not a function), and then so does the native renderer.
          codes.add(C.CommandFailed);
        }
        if (thrown !== null) {
          // Where mustache.js throws, the native renderer fails the same way (CommandFailed).
          check = null;
          codes.add(C.CommandFailed);
        } else {
          // Output holding a lone surrogate ('{{a.0}}' of an emoji) cannot be a Rust string:
          // the native renderer refuses it (CommandFailed) instead of answering U+FFFD.
          if (wanted !== null && wanted !== wanted.toWellFormed()) codes.add(C.CommandFailed);
          check = (a) => {
            if (typeof a !== 'string') return `rendered ${show(a)}, not a string`;
            return wanted === null || a === wanted ? null : `rendered ${show(a)}, mustache.js renders ${show(wanted)}`;
          };
        }
      }
      const data = build(d);
      const rec = follow(() => pool.render(template, wrap ? { a: data } : data));
      const judgeRender = () => {
        const why = judge(rec, { check, codes });
        if (why !== null || thrown === null) return why;
        const { message, code } = rec.outcome.error;
        // CommandFailed is the render failing where mustache.js throws: with its message. (An
        // InvalidParams the codes allow, for a view near the nesting limit, is refused before.)
        if (code !== C.CommandFailed) return null;
        return message === thrown ? null : `failed with ${show(message)}, mustache.js throws ${show(thrown)}`;
      };
      return [{ name: `render ${show(template)} with ${wrap ? '{ a: x }' : 'x'}`, rec, judge: judgeRender }];
    },
  },

  // A served echo: the value crosses to the handler and back; a shared view cannot come back.
  'served here': {
    extra: fc.constant(null),
    send(_, d) {
      return served(d, 'prop_echo_main', async (tag) => mainRuns.get(tag) ?? 0);
    },
  },

  'served by a worker': {
    extra: fc.constant(null),
    send(_, d) {
      return served(d, 'prop_echo_worker', async (tag) => (await servers.shared.exec('prop_runs', [tag]))[0]);
    },
  },
};

/** Kinds of refused value that pool.render takes: functions, which its views may hold. */
const CALLABLE = new Set(['function', 'arrow', 'async function', 'class']);

/** Whether the description holds a function anywhere. */
function holdsCallable(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'refused' && CALLABLE.has(d.kind)) return true;
  return Object.values(d).some(holdsCallable);
}

/** What docs/rendering.md still refuses in a view: bytes, buffers, views, cycles, huge arrays. */
function holdsRefusedView(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'sparse' && live(d).at.length !== d.at.length) return holdsRefusedView(live(d));
  if (d.t === 'typed' || d.t === 'Buffer' || d.t === 'cycle' || hugeLength(d)) return true;
  if (d.t === 'refused' && ['ArrayBuffer', 'SharedArrayBuffer', 'DataView'].includes(d.kind)) return true;
  // (A 'toJSON' entry of the object is replaced by the toJSON method.)
  if (d.t === 'toJSON') return holdsRefusedView({ ...d.of, entries: d.of.entries.filter(([k]) => k !== 'toJSON') });
  return Object.values(d).some(holdsRefusedView);
}

/** Whether the description holds a Proxy one of whose traps throws (mustache.js's `in` asks `has`), or a revoked one. */
function holdsThrowingTrap(d) {
  if (d === null || typeof d !== 'object') return false;
  return (d.t === 'proxy' && d.trap !== 'none') || Object.values(d).some(holdsThrowingTrap);
}

function holdsNullProto(d) {
  if (d === null || typeof d !== 'object') return false;
  return (d.t === 'object' && d.nullProto) || Object.values(d).some(holdsNullProto);
}

function holdsArguments(d) {
  if (d === null || typeof d !== 'object') return false;
  return d.t === 'arguments' || Object.values(d).some(holdsArguments);
}

/** Whether the view holds a BigInt or a symbol (the prepared view prints them through a helper). */
function holdsPrintedByHelper(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'v') return typeof d.v === 'bigint';
  if (d.t === 'refused') return d.kind === 'symbol' || d.kind === 'BigInt object';
  return Object.values(d).some(holdsPrintedByHelper);
}

/** Whether an object of the description has two keys that are one key once made well-formed. */
function holdsMergedKeys(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'object' && new Set(d.entries.map(([k]) => k.toWellFormed())).size < d.entries.length) return true;
  return Object.values(d).some(holdsMergedKeys);
}

/** Whether a string of the description (a value, a key, a big string's unit) holds a lone surrogate. */
function holdsLoneSurrogate(d) {
  if (typeof d === 'string') return !d.isWellFormed();
  if (d === null || typeof d !== 'object') return false;
  return Object.values(d).some(holdsLoneSurrogate);
}

/** Whether a getter whose reads differ may return a BigInt. */
function flakyBigInt(d) {
  if (d === null || typeof d !== 'object') return false;
  if (d.t === 'getter' && d.mode === 'flaky') return d.values.some((v) => typeof v.v === 'bigint');
  return Object.values(d).some(flakyBigInt);
}

function holdsMode(d, mode) {
  if (d === null || typeof d !== 'object') return false;
  return (d.t === 'getter' && d.mode === mode) || Object.values(d).some((x) => holdsMode(x, mode));
}

/**
 * render of a view that is not plain data (docs/rendering.md, Views): pool.render takes every
 * view mustache.js takes, so the oracle is mustache.js itself. The render resolves with exactly
 * its output, or rejects as mustache.js throws (the same message: a function's or a getter's
 * own error, or CommandFailed with mustache.js's message); output holding a lone surrogate may
 * fail with CommandFailed (no Rust string holds it). Still refused (InvalidParams): typed
 * arrays, Buffers, ArrayBuffers, DataViews, cycles, views nested past the limit or of more
 * values than a call may carry. The documented differences: getters are read once when the
 * render is called (a getter whose reads differ: any string), and a throwing getter reached
 * through a dotted name deeper than itself renders nothing where mustache.js throws.
 */
function renderAsMustache(pool, d, template, wrap) {
  // Levels of the view as built (a getter or trap that throws while it is walked: not known).
  let depth = Infinity;
  try {
    depth = nesting(build(d)) + (wrap ? 1 : 0);
  } catch {
    // stays unknown: the view may be refused as nested too deep
  }
  // (What a Proxy whose trap throws hides may go unseen: then mustache.js's output may come.)
  // (Keys that become one key as UTF-8, '\ud800' and '\udbff', keep the last value: what an
  // earlier one held may go unseen.)
  const refused = (holdsRefusedView(d) && !holdsThrowingTrap(d) && !holdsMergedKeys(d)) || (depth > MAX_NESTING + 8 && depth !== Infinity);
  const mayRefuse0 = holdsRefusedView(d);
  const mayRefuse = refused || mayRefuse0 || depth > MAX_NESTING - 8;
  const flaky = holdsMode(d, 'flaky');
  let wanted = null;
  let thrown = null;
  // mustache.js is not run on a huge sparse array (its output: 2^28 commas and up; gigabytes);
  // hidden behind a Proxy whose trap throws, such a view may render: then any string.
  const huge = holdsHugeLength(d);
  if (!refused && !huge) {
    try {
      const view = build(d);
      wanted = Mustache.render(template, wrap ? { a: view } : view);
    } catch (error) {
      thrown = error;
    }
  }
  // A throwing getter met through a dotted name renders nothing there (docs: What differs).
  // Reported, not in docs/rendering.md: a view that is a Proxy whose trap throws may render
  // (here '') where mustache.js throws reading through the trap.
  const dotted = thrown !== null && (holdsThrowingTrap(d) || (holdsMode(d, 'throws') && /\{\{[^}]*\w\.\w/.test(template)));
  // docs/rendering.md (What differs): '{{n.length}}' of a BigInt or a symbol fails
  // (CommandFailed: "a built-in that JavaScript values inherit") where mustache.js renders ''.
  // (So does '{{f.length}}' of a function, as before: a function's properties are not seen.)
  const builtIn = (holdsPrintedByHelper(d) || holdsThrowingTrap(d) || holdsCallable(d)) && /\.length/.test(template);
  const data = build(d);
  const rec = follow(() => pool.render(template, wrap ? { a: data } : data));
  const judgeRender = () => {
    const o = rec.outcome;
    if (o !== undefined && 'error' in o && !(o.error instanceof RpcError)) {
      // (Reported, not in docs/rendering.md: a Proxy's trap that throws as a nested view is
      // prepared rejects with the trap's own error, as a getter's does.)
      if (holdsThrowingTrap(d) && /^the \w+ trap throws$/.test(o.error.message)) return null;
      // (Where the trap goes unseen, printing an object without a prototype behind it throws
      // what mustache.js would throw there, had the trap not thrown first.)
      if (holdsThrowingTrap(d) && holdsNullProto(d) && o.error.message === 'Cannot convert object to primitive value') return null;
      return thrown !== null && o.error.message === thrown.message ? null : `rejected with ${show(o.error)}, mustache.js ${thrown === null ? `renders ${show(wanted)}` : `throws ${show(thrown.message)}`}`;
    }
    // docs/rendering.md (What differs): output that would hold a lone surrogate fails where the
    // renderer meets it, which may be before the tag mustache.js throws at.
    const surrogate = o !== undefined && 'error' in o && holdsLoneSurrogate(d) && /^render: a function's output holds half of a surrogate pair/.test(o.error.message);
    if (o !== undefined && 'error' in o && thrown !== null && !dotted && !builtIn && !surrogate && o.error.code === C.CommandFailed && o.error.message !== thrown.message) {
      return `failed with ${show(o.error.message)}, mustache.js throws ${show(thrown.message)}`;
    }
    // Not in docs/rendering.md (reported): a Proxy whose trap throws as the view is prepared
    // is refused with InvalidParams naming the trap's error, whether or not mustache.js needs it.
    // Reported, against "read once": a getter on a plain object is read once by the walk and
    // again by the native conversion, which refuses the BigInt a second read may return.
    const codes = new Set(mayRefuse || holdsThrowingTrap(d) || flakyBigInt(d) ? [C.InvalidParams] : []);
    if (thrown !== null || flaky || builtIn || (wanted !== null && wanted !== wanted.toWellFormed())) codes.add(C.CommandFailed);
    let check = null;
    if (!refused && (thrown === null || dotted || flaky)) {
      check = (a) => {
        if (typeof a !== 'string') return `rendered ${show(a)}, not a string`;
        // Strings cross to the native renderer as UTF-8: a lone surrogate printed is U+FFFD.
        const alike = (w) => a === w || a === w.toWellFormed();
        return flaky || dotted || huge || alike(wanted) ? null : `rendered ${show(a)}, mustache.js renders ${show(wanted)}`;
      };
    }
    return judge(rec, { check, codes });
  };
  return [{ name: `render ${show(template)} of a view that is not plain data, in ${wrap ? '{ a: x }' : 'x'}`, rec, judge: judgeRender }];
}

/**
 * A served echo (docs/values.md): params the plain fast path takes cross as before, and so
 * does the result (the old plain-data oracle, nesting 1 for the tag); a value holding shared
 * memory keeps those rules; any other value crosses as structured clone (clone.js). Where the
 * path cannot be told from the description (a getter read a different number of times, nesting
 * within a few levels of the limit), either answer may come.
 */
function servedExpectation(d) {
  const s = spec(d);
  const old = expectation(s, { nesting: 1 });
  // Shared memory: the old rules; a getter that throws as the params are read (structured clone
  // is tried first) rejects with its own error (docs/values.md). (Beside values that are not
  // plain data, params holding shared memory are posted to the handler as a structuredClone
  // copy, no longer refused value by value; but the echo of them holds the shared memory, which
  // a result cannot: InvalidParams all the same.)
  // (A Proxy read, as structured clone is tried, before the shared memory is found may throw its
  // trap's error first: docs/values.md.)
  if (s.mayViews || holdsShared(d)) {
    const deep = nestsPastStack(d);
    const traps = holdsExotic(d) ? trapErrors(d) : [];
    return { check: old.check, codes: new Set([...old.codes, ...(deep ? [C.InternalError, C.CommandFailed] : [])]), messages: new Set([...getterErrors(d), ...traps, ...(deep ? [STACK_OVERFLOW] : [])]) };
  }
  const depth = s.depth + 1;
  const odd = holdsUndefinedOrHole(d);
  const plain = !s.must && !odd && depth <= MAX_NESTING + 8;
  // Known, and noted on issue #30 for a fix: lib/pool.js sends as structured clone whatever the packed
  // walk declines, not only what the fast paths refuse: plain data that only the value-by-value
  // path took (nested past some 60 levels, a `__proto__` key, a NaN, −0, BigInt or bytes inside)
  // now crosses as a clone too. So for plain data either image may come back (they differ in
  // lone surrogates, kept by the clone, and in an object reached twice, one object in the clone;
  // a Proxy or an arguments object crosses as what it stands for either way).
  const cloned = clonedExpectation(d);
  if (cloned === null) return null;
  if (!plain) return cloned;
  const checks = [old.check, cloned.check].filter((c) => c !== null);
  return {
    check: checks.length === 0 ? null : (a, at) => checks.map((c) => c(a, at)).reduce((w, why) => (w === null || why === null ? null : w)),
    codes: new Set([...old.codes, ...cloned.codes]),
    messages: cloned.messages,
  };
}

function served(d, method, runsOf) {
  const tag = ++tags;
  const expect = servedExpectation(d);
  const rec = follow(() => servers.shared.exec(method, tag, build(d)));
  const judgeServed = () => {
    if (expect === null) return null; // structured clone overflows this process's stack: no oracle
    const o = rec.outcome;
    if (o !== undefined && 'error' in o) {
      const e = o.error;
      if (!(e instanceof RpcError)) return expect.messages.has(e?.message) ? null : `rejected with ${show(e)}, expected ${[...expect.messages].map(show).join(' or ') || 'an RpcError'}`;
      if (expect.codes.has('DataCloneError') && (e.name === 'DataCloneError' || expect.check === null)) {
        if (e.code !== C.InvalidParams || e.name !== 'DataCloneError') return `rejected with ${e.name} ${NAME[e.code]} (${e.message}), expected a DataCloneError (InvalidParams)`;
        return null;
      }
    }
    const codes = new Set([...expect.codes].map((c) => (typeof c === 'string' ? C[c] : c)));
    return judge(rec, { check: expect.check, codes });
  };
  const after = async () => {
    const ran = await runsOf(tag);
    if (ran > 1) return `the handler ran ${ran} times for one call`;
    if ('value' in rec.outcome && ran !== 1) return `resolved, but the handler ran ${ran} times`;
    return null;
  };
  return [{ name: method, rec, judge: judgeServed, after, shared: true }];
}

/**
 * Sends every (description, entry, extra) of `sends` at once on a fresh pool of `threads`, then
 * judges every call; afterwards drained() and close() resolve and the pool is idle.
 */
async function sendAll(threads, sends) {
  const pool = new Pool({ threads });
  const calls = sends.flatMap(([d, entry, extra]) => ENTRIES[entry].send(pool, d, extra).map((c) => ({ ...c, d })));
  const problems = await allSettled(Object.fromEntries(calls.map((c, i) => [`${i}: ${c.name}`, c.rec])));
  for (const c of calls) {
    if (c.rec.settled !== 1) continue;
    const why = c.judge() ?? (c.after ? await c.after() : null);
    if (why !== null) problems.push(`${c.name}: ${why}\n  value: ${show(c.d)}`);
  }
  if (!(await within(pool.drained(), DEADLINE_MS))) problems.push(`drained() did not resolve within ${DEADLINE_MS} ms`);
  if (!(await within(pool.close(), DEADLINE_MS))) problems.push(`close() did not resolve within ${DEADLINE_MS} ms`);
  const s = pool.stats();
  if (s.queued !== 0 || s.running !== 0) problems.push(`after close(): queued ${s.queued}, running ${s.running}`);
  if (calls.some((c) => c.shared)) {
    const busy = await idle(servers.shared);
    if (busy !== null) problems.push(`Pool.shared(): ${busy}`);
  }
  return problems;
}

module.exports = { fail, startServers, stopServers, idArb, sendText, ENTRIES, sendAll };
