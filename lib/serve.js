'use strict';
// Serving methods implemented in JavaScript from this thread (Pool#serve): the Server, the drain
// cycles that run its jobs (scheduling and wake-ups are native: src/bindings/serve.rs and
// src/pool/server/), and what a handler's outcome becomes.

const { threadId } = require('node:worker_threads');
const { performance } = require('node:perf_hooks'); // the global is a getter on every use
const { contract } = require('./native.js');
const { errorText, safely } = require('./errors.js');
const { after } = require('./timer.js');
const views = require('./views.js');
const { serialize, deserialize, needsClone, unreadable, isWriteRefusal, DataCloneError, Transfer, SHARED, SHARED_RESULT } = require('./clone.js');
const { flatBytes } = require('./flat.js');
const { withServerSpan } = require('./trace-context.js');
const { adopt } = require('./thenable.js');

// How long a serving thread runs drain cycles (and polls for calls), all its servers together,
// before its event loop gets a turn: 1 ms. A turn costs a busy worker_thread a few hundred µs
// of CPU all told (more context switches and interrupts, and the garbage collector's pending
// work, which the turn lets run), a small share next to 1 ms of short calls but a tenth of a
// flood of ~200 µs tasks (bench/heavy-js.js part 1). So a worker_thread whose calls take
// LONG_CALL_MS or more on average goes on up to LONG_BUDGET_MS: against 10 ms, 50 ms took about
// 2% less CPU and wall time in that benchmark (sys time a third less), and a worker's own
// timers and messages still run within about one budget. With short calls, as on the main
// thread (whose event loop serves the application), 1 ms stays the rule.
const REST_BUDGET_MS = 1;
const LONG_BUDGET_MS = threadId === 0 ? REST_BUDGET_MS : 50;
const LONG_CALL_MS = contract.longCallMs; // 0.1
let stretch = 0; // performance.now() when this thread's current run of drain cycles began
let started = 0; // calls started since then

/** Starts a run of drain cycles unless one is going on; it ends at the event loop's next turn. */
function startStretch() {
  if (stretch !== 0) return;
  stretch = performance.now();
  started = 0;
  setImmediate(endStretch);
}

function endStretch() {
  stretch = 0;
}

/** How long the current stretch has run, ms. */
function spentMs() {
  return performance.now() - stretch;
}

/** Whether the stretch may go on, `spent` ms into it. */
function budgetLeft(spent) {
  return spent < REST_BUDGET_MS || (spent < LONG_BUDGET_MS && averagesLong(spent));
}

/** The calls started in the stretch, `spent` ms into it, average LONG_CALL_MS or more (none: true). */
function averagesLong(spent) {
  return spent >= started * LONG_CALL_MS;
}

function abortError(message, name) {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** The last argument of every handler call: `{ signal, progress(value) }`. */
class CallContext {
  #controller = null;
  #reason = undefined;
  #report; // (value) => why-not | null, when the caller listens to progress; else null

  constructor(report) {
    this.#report = report;
  }

  /**
   * Reports how far the call has come to a caller that listens (`call(…, { onProgress })`);
   * nothing at all otherwise. Plain data only; a value that cannot be sent is a TypeError.
   */
  progress(value) {
    if (this.#report === null || this.#reason !== undefined) return;
    const why = this.#report(value);
    if (why !== null && why !== undefined) throw new TypeError(`corepool: ${why}`);
  }
  get signal() {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }
  abort(reason) {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    if (this.#controller !== null) this.#controller.abort(reason);
  }
}

class Running {
  constructor(context, post) {
    this.context = context;
    this.timer = null;
    this.post = post; // the call's id, to post its result under on #results; 0: not that way
  }
}

/** What `serve()` returns: this thread's registration as a server of some methods. */
class Server {
  #native;
  // The native side's hot functions for this server (src/bindings/serve/hot.rs): plain
  // functions, cheaper to call than the NativeServer's methods.
  #complete;
  #rest;
  #take;
  #handlers;
  #table;
  #running = new Map(); // token → Running
  #closing = null;
  #onIdle = null;
  #draining = false; // inside #drain: a handler slot freed now is refilled by its loop
  #resumePending = false; // a #resume is scheduled

  #fullErrors;
  #results = null; // the MessagePort results to one environment's calls are posted on (lib/posted.js)
  #unreadable;
  #shares;

  /**
   * What a task file's worker asks of its server (all off for `serve()`): `fullErrors`, a thrown
   * error's data carries its stack and causes too. `results`: `{ port, origin }`, the worker's
   * port to its pool's thread and that environment's origin number (lib/posted.js); its calls'
   * results that must travel as structured clone are posted there. `unreadable`: `(result,
   * thrown) => outcome`, what a result goes as when a getter or Proxy trap in it threw while it
   * was written (corepool/piscina's worker: the task's rejection with it, as Piscina's
   * `postMessage` gives); null: the call fails with InvalidParams naming the place. `shares`: a
   * result holding shared memory is posted, sharing it as `postMessage` does (corepool/piscina's,
   * as Piscina's), instead of being refused.
   */
  constructor(nativePool, handlers, names, concurrency, { fullErrors = false, results = null, unreadable = null, shares = false } = {}) {
    this.#handlers = handlers;
    this.#fullErrors = fullErrors === true;
    this.#unreadable = typeof unreadable === 'function' ? unreadable : null;
    this.#shares = shares === true;
    this.#table = new Map(names.map((n) => [n, handlers[n]]));
    try {
      this.#native = nativePool.serve(names, threadId, concurrency, (batch) => this.#drain(batch));
    } catch (e) {
      throw new TypeError(e.message, { cause: e });
    }
    try {
      [this.#complete, this.#rest, this.#take] = this.#native.hot();
    } catch (e) {
      // Nothing here could run a job: the server leaves, and the calls it was given meanwhile
      // settle with ServerGone.
      this.#native.close();
      this.#native.depart();
      this.#native.unref();
      throw e;
    }
    this.methods = Object.freeze([...names]);
    this.concurrency = concurrency;
    if (results !== null && typeof results === 'object' && typeof results.port?.postMessage === 'function' && typeof results.origin === 'number') {
      this.#results = results.port;
      this.#native.postTo(results.origin);
    }
  }

  get id() {
    return this.#native.id;
  }

  /** Stops taking new calls; resolves once the calls it already has are finished. */
  close() {
    if (this.#closing !== null) return this.#closing;
    this.#native.close();
    this.#closing = new Promise((resolve) => {
      this.#onIdle = resolve;
    });
    this.#checkIdle();
    return this.#closing;
  }

  /** Keeps this thread alive while it serves (the default). */
  ref() {
    if (this.#onIdle !== null || this.#closing === null) this.#native.ref();
    return this;
  }

  /** Lets this thread exit while serving when nothing else keeps it alive. */
  unref() {
    this.#native.unref();
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  orphans(tokens) {
    return this.#native.orphaned(tokens);
  }

  /**
   * Drain cycles: runs `batch` (the wake-up's, or null: take one), then takes more for as long
   * as there is some. Every cycle ends with rest(), which on a worker_thread first polls
   * briefly for the next call while no handler is running; calls placed during a cycle wake
   * nobody. Once this thread has spent its budget (budgetLeft) in cycles without its event loop
   * getting a turn, the next cycle waits for a setImmediate (and calls still wake nobody).
   */
  #drain(batch) {
    if (this.#take === undefined) return; // made without its functions (the constructor threw): departed
    startStretch();
    this.#draining = true;
    let owed = true; // a cycle is owed until rest() says idle (also if something throws)
    try {
      if (batch === null) batch = this.#take();
      for (;;) {
        this.#onJobs(batch);
        // Long calls also tell the native side how soon their callers must hear of their
        // outcomes (src/pool/origin.rs, `behind`).
        const spent = spentMs();
        const r = this.#rest(budgetLeft(spent), started > 0 && averagesLong(spent)); // contract.rest.idle or .later, or the next batch
        if (typeof r === 'number') {
          if (r === contract.rest.idle) owed = false;
          break;
        }
        batch = r;
      }
    } finally {
      this.#draining = false;
      if (owed) this.#later();
    }
    this.#checkIdle();
  }

  /** Runs a drain cycle once the event loop has had a turn (one at a time). */
  #later() {
    if (this.#resumePending) return;
    this.#resumePending = true;
    setImmediate(this.#resume);
  }

  #resume = () => {
    this.#resumePending = false;
    this.#drain(null);
  };

  /**
   * A handler slot was freed; `more`: jobs wait for it. A draining loop takes them itself;
   * otherwise (an async handler settled) a cycle runs now, or after the event loop's turn once
   * the budget is spent.
   */
  #freed(more) {
    if (!more || this.#draining) return;
    startStretch();
    if (this.#resumePending || !budgetLeft(spentMs())) this.#later();
    else this.#drain(null);
  }

  /**
   * A batch is one flat array: the numbers of stop notices and forgotten tokens, those tokens,
   * then six entries per job: token, method, params, timeout (ms; 0: none), listens (odd: the
   * caller listens to progress; its half rounded down: the call's id to post its result under
   * on #results, or 0), trace (the caller's trace context, or undefined).
   */
  #onJobs(batch) {
    const nStops = batch[0];
    const jobsFrom = 2 + nStops + batch[1];
    for (let i = 2 + nStops; i < jobsFrom; i++) views.forget(batch[i]);
    for (let i = 2; i < 2 + nStops; i++) {
      const token = batch[i];
      const run = this.#running.get(token);
      if (run !== undefined) run.context.abort(abortError('The call was aborted', 'AbortError'));
      else if (views.stopAwaiting(token)) {
        this.#freed(this.#complete(token, null)); // settled already; frees its slot
      }
    }
    for (let i = jobsFrom; i < batch.length; i += 6) {
      const token = batch[i];
      // Each job in isolation: whatever goes wrong with one, the others of the batch run.
      try {
        this.#start(token, batch[i + 1], batch[i + 2], batch[i + 3], batch[i + 4], batch[i + 5]);
      } catch (e) {
        this.#lose(token, `corepool: the call could not be started on the serving thread: ${errorText(e)}`);
      }
    }
  }

  #start(token, method, params, timeout, listens, trace) {
    started++;
    if (typeof params === 'string') {
      try {
        params = JSON.parse(params);
      } catch (e) {
        this.#lose(token, `corepool: the params could not be read: ${errorText(e)}`);
        return;
      }
    } else if (params === undefined) {
      params = this.#viewParams(token, method, timeout, listens, trace);
      if (params === null) return;
    } else if (!Array.isArray(params)) {
      // Structured-clone bytes of the params array (lib/clone.js).
      try {
        params = deserialize(params);
      } catch (e) {
        this.#lose(token, `corepool: the params could not be read: ${errorText(e)}`);
        return;
      }
      if (!Array.isArray(params)) {
        this.#lose(token, 'corepool: the params could not be read: they are not an array');
        return;
      }
    }
    this.#run(token, method, params, timeout, listens, trace);
  }

  /** Settles job `token` with InternalError: it cannot run here. */
  #lose(token, why) {
    if (this.#running.has(token)) return; // it did start: its handler settles it
    try {
      this.#freed(this.#native.lost(token, why));
    } catch {
      // The environment is going away: its departure settles the call (ServerGone).
    }
  }

  /** The params of a job with views, or null while waiting for them to be resent. */
  #viewParams(token, method, timeout, listens, trace) {
    const sent = views.takeReceived(token);
    if (sent !== undefined) {
      const params = this.#native.params(token, sent);
      if (params === false) {
        this.#freed(true); // settled natively: its slot is free
        return null;
      }
      if (params !== null) return params;
    }
    if (!this.#native.resend(token)) {
      this.#freed(this.#complete(token, null)); // its caller is gone: nobody listens
      return null;
    }
    views.awaitResend(
      token,
      this,
      (resent) => this.#viewsCame(token, method, timeout, listens, trace, resent),
      () => this.#orphaned(token),
    );
    return null;
  }

  /** The resent views of a job that waited for them have come. */
  #viewsCame(token, method, timeout, listens, trace, resent) {
    const params = this.#native.params(token, resent);
    if (params === false) this.#freed(true);
    else if (params === null) {
      // The caller sent every view its call holds, so this cannot happen; never answer null.
      this.#freed(this.#native.lost(token, "corepool: the serving thread could not reach the call's shared memory"));
    } else this.#run(token, method, params, timeout, listens, trace);
    this.#checkIdle();
  }

  /** A job waiting for views whose caller is gone: it completes, its outcome is dropped. */
  #orphaned(token) {
    this.#freed(this.#complete(token, null));
    this.#checkIdle();
  }

  /** Runs the handler, inside the caller's trace context when it sent one (lib/trace-context.js). */
  #run(token, method, params, timeout, listens, trace) {
    const watched = listens % 2 === 1;
    const context = new CallContext(watched ? (value) => (this.#running.has(token) ? this.#native.progress(token, value) : null) : null);
    const run = new Running(context, (listens - (listens % 2)) / 2);
    this.#running.set(token, run);
    if (timeout > 0) {
      run.timer = after(timeout, () => {
        run.timer = null;
        // The message is the caller's Timeout's (it names the method and the limit).
        const message = this.#native.stop(token);
        if (message !== null && message !== undefined) context.abort(abortError(message, 'TimeoutError'));
      }).unref();
    }
    params.push(context);
    let result;
    let adopted;
    try {
      const handler = this.#table.get(method);
      result = trace === undefined ? handler.apply(this.#handlers, params) : withServerSpan(trace, method, () => handler.apply(this.#handlers, params));
      // Reading `then` runs user code (a getter, a Proxy trap): inside the try.
      adopted = adopt(result);
    } catch (e) {
      this.#finish(token, false, e);
      return;
    }
    if (adopted === null) {
      this.#finish(token, true, result);
      return;
    }
    adopted.then(
      (v) => this.#finish(token, true, v),
      (e) => this.#finish(token, false, e),
    );
  }

  /** Hands a handler's outcome to the native side. Never throws: it runs in promise reactions. */
  #finish(token, ok, value) {
    const run = this.#running.get(token);
    if (run === undefined) return;
    this.#running.delete(token);
    if (run.timer !== null) run.timer.clear();
    let more = false;
    try {
      if (ok) {
        const clone = value instanceof Transfer || value === null || typeof value !== 'object' ? false : cloneCheck(value);
        if (value instanceof Transfer) more = this.#completeCloned(token, value.value, value.list);
        else if (clone instanceof Unreadable) more = this.#unreadableResult(token, value, clone.thrown, run.post, false);
        else if (clone) more = this.#completeCloned(token, value, undefined, undefined, run.post);
        else {
          more = this.#complete(token, value, true, this.#shares);
          // Refused as plain data (`more` says why): the caller is JavaScript, so it goes as
          // structured clone.
          if (typeof more === 'string') more = this.#completeCloned(token, value, undefined, more, run.post);
        }
      } else {
        const [message, data] = errorParts(value, this.#fullErrors ? MAX_CAUSES : 0);
        more = this.#native.fail(token, message, data);
      }
    } catch (e) {
      // Not expected (the native side turns bad values into errors): settle it all the same.
      try {
        more = this.#native.fail(token, `corepool: the handler's outcome could not be read: ${errorText(e)}`, {});
      } catch {
        // The environment is going away: its departure settles the call (ServerGone).
      }
    }
    this.#freed(more);
    if (this.#onIdle !== null && !this.#draining) this.#checkIdle();
  }

  /**
   * Completes job `token` with `value` as structured-clone bytes, moving the ArrayBuffers of
   * `list`. What structured clone cannot carry fails it with a DataCloneError naming the place;
   * a getter or Proxy trap that throws meanwhile fails it with `refused` (the native
   * conversion's words for the same throw, naming the place), or, for a value that never met
   * the conversion, as if the handler had thrown it. With `post` (the call's id; nothing is
   * moved), the value is posted on #results instead, then the call's id (lib/posted.js), while
   * the call still waits for it; what postMessage refuses goes the bytes' way, which names the
   * place. (Shared memory, which postMessage shares, is refused where the result is read.)
   * `replaced`: `value` is what #unreadable made of a result that could not be written.
   */
  #completeCloned(token, value, list, refused, post = 0, replaced = false) {
    if (post !== 0 && this.#results !== null && list === undefined && this.#native.live(token)) {
      // A Map of strings to numbers is read back faster flat than posted (lib/flat.js; the
      // bytes' way below, serialize, writes it flat itself).
      const flat = flatBytes(value);
      if (flat !== null) return this.#native.completeCloned(token, [flat]);
      let sent = true;
      try {
        this.#results.postMessage(value);
      } catch (e) {
        // What a getter or a Proxy trap threw is the result's fault, known now; what structured
        // clone refuses goes the bytes' way, which names the place.
        if (!isWriteRefusal(e)) return this.#unreadableResult(token, value, e, post, replaced);
        sent = false;
      }
      if (sent) {
        this.#results.postMessage(post);
        return this.#native.completePosted(token);
      }
    }
    let bytes;
    try {
      bytes = serialize(value, list, 'result', false, this.#shares);
    } catch (e) {
      if (e instanceof DataCloneError) return this.#native.refuse(token, e.message, true);
      if (e === SHARED) return this.#native.refuse(token, SHARED_RESULT, true);
      // A getter or a Proxy trap of the value threw `e`. (Not `refused`'s words: the native
      // conversion may have stopped earlier, at something else.)
      if (refused !== undefined || (this.#unreadable !== null && !replaced)) return this.#unreadableResult(token, value, e, post, replaced);
      const [message, data] = errorParts(e, this.#fullErrors ? MAX_CAUSES : 0);
      return this.#native.fail(token, message, data);
    }
    return this.#native.completeCloned(token, bytes);
  }

  /**
   * Completes job `token`, whose result `value` could not be read: a getter or a Proxy trap in it
   * threw `thrown` (the first such throw seen). The server's #unreadable says what it goes as
   * instead (`replaced`: `value` is already that); else the call fails with InvalidParams naming
   * the place.
   */
  #unreadableResult(token, value, thrown, post, replaced) {
    if (this.#unreadable !== null && !replaced) {
      const outcome = safely(() => ({ value: this.#unreadable(value, thrown) }));
      if (outcome !== undefined) return this.#completeCloned(token, outcome.value, undefined, undefined, post, true);
    }
    return this.#native.refuse(token, unreadable(value, 'result', thrown), false);
  }

  #checkIdle() {
    if (this.#onIdle === null || this.#native.busy !== 0) return;
    const resolve = this.#onIdle;
    this.#onIdle = null;
    this.#native.depart();
    this.#native.unref();
    resolve();
  }
}

/** What reading a result threw (cloneCheck). */
class Unreadable {
  constructor(thrown) {
    this.thrown = thrown;
  }
}

/**
 * Whether a handler's object result goes as structured clone (lib/clone.js's needsClone), or
 * an Unreadable when reading it threw (a getter, a Proxy trap): its first read's throw is the
 * one the call tells of.
 */
function cloneCheck(value) {
  try {
    return needsClone(value);
  } catch (e) {
    return new Unreadable(e);
  }
}

/** How many causes deep a task's error is carried (see errorParts). */
const MAX_CAUSES = 8;

/**
 * A thrown value → CommandFailed message and data (`name` and own enumerable fields). Total: a
 * getter or Proxy trap that throws while it is read leaves that part out; keys are defined, so a
 * `__proto__` field stays a field.
 *
 * With `causes` > 0 (a task file's worker: the caller makes the error again, lib/task-error.js),
 * the data of an Error also holds its `stack`, and its own `cause` as `{ error: data of the
 * cause, with its message }` for an Error (up to `causes` deep) or `{ value }` for anything else.
 */
function errorParts(e, causes = 0) {
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
    return [safely(() => String(e), 'a value that cannot be described'), safely(() => ({ value: e }), {})];
  }
  const name = safely(() => (typeof e.name === 'string' ? e.name : 'Error'), 'Error');
  const message = safely(() => (typeof e.message === 'string' ? e.message : String(e)), 'an exception that cannot be described');
  const data = { name };
  for (const key of safely(() => Object.keys(e), [])) {
    if (key === 'name') continue;
    safely(() => define(data, key, e[key]));
  }
  if (causes > 0 && safely(() => e instanceof Error, false)) {
    const stack = safely(() => e.stack, undefined);
    if (typeof stack === 'string') define(data, 'stack', userFrames(stack));
    if (safely(() => Object.hasOwn(e, 'cause'), false)) {
      const cause = safely(() => e.cause, undefined);
      if (causes > 1 && safely(() => cause instanceof Error, false)) {
        const [causeMessage, causeData] = errorParts(cause, causes - 1);
        define(causeData, 'message', causeMessage);
        define(data, 'cause', { error: causeData });
      } else if (causes > 1 || !safely(() => cause instanceof Error, false)) {
        define(data, 'cause', { value: cause });
      } else {
        delete data.cause; // deeper than carried (an own field's copy of it would be sent raw)
      }
    }
  }
  return [message, data];
}

/** A stack without the frames below the handler: this file's serving loop and what called it. */
function userFrames(stack) {
  const lines = stack.split('\n');
  const own = lines.findIndex((line) => /^\s+at /.test(line) && line.includes(`${__filename}:`));
  return own < 0 ? stack : lines.slice(0, own).join('\n');
}

function define(object, key, value) {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}


/** A serve() option of corepool's own (symbol keys are not options): Server's `fullErrors`. */
const kFullErrors = Symbol('fullErrors');
const kResults = Symbol('results');
const kUnreadable = Symbol('unreadable');
const kShares = Symbol('shares');

module.exports = { Server, kFullErrors, kResults, kUnreadable, kShares };
