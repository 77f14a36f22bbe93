'use strict';
// RemotePool: the calls of a Pool (exec, call, request, handle, map), answered by the hosts that
// serve a subject on NATS (lib/nats/host.js). Errors are the pool's RpcError codes, plus:
// - Unavailable: no host serves the subject (NATS answered "no responders" at once), or the
//   connection to NATS is down or closed;
// - ServerGone: the host that took the call stopped answering (it died, or lost its
//   connection): nothing was heard of the call for `liveness` ms, though a host says "working"
//   every HEARTBEAT_MS for each message it holds. The call may or may not have run.
// - InvalidParams: params (or a result request) that JSON text cannot carry, or bigger than
//   the server's max payload.
//
// Invariants:
// - Calls started in the same tick travel together: one JSON-RPC batch per message, at most
//   `maxBatch` calls and the server's max payload each, so many small calls cost few messages;
//   a lone call travels as a lone request, with no added wait. While fewer messages are in
//   flight than hosts answered the last $SRV.PING (asked every SURVEY_MS while calls are made),
//   a tick's calls are split into one message per host without one.
// - With two or more hosts known from that survey, each message goes to one host's own subject
//   (names.js: host): the one with the fewest of this client's messages in flight, taking
//   turns among equals; the count of each host is the messages sent to it and not settled.
//   "No responders" for such a message (its host left) drops that host and sends it again the
//   same way; with fewer than two hosts known, messages go to the queue group.
// - Every call settles exactly once: by its answer, its timeout, its signal, its host's silence
//   or the connection's end — whichever comes first; later news of it is dropped.
// - A message a host refused as busy is sent again after a short, growing, random pause,
//   without the calls settled meanwhile.
// - A call given up on (its timeout or signal) after its message was sent is cancelled on the
//   host: its id goes out in a cancel (lib/nats/wire.js) on <subject>.cancel, with those of the
//   other calls given up on in the same turn of the event loop. A cancel is advice: the caller
//   settles at once, and a host that does not hold the message (it answered already, or refused
//   it as busy) ignores it. Each message of calls carries the proof of a secret that only this
//   client knows, and a cancel reveals it (and commits to the next): hosts ignore cancels that
//   anyone else makes up.

const { natsClient } = require('./peer.js');
const { RpcError, CODES, rejected, describe, errorText } = require('../errors.js');
const { toJson, requestText, errorOf, cancelSecret, proofOf, cancelText } = require('./wire.js');
const { after, every } = require('../timer.js');
const { mapCalls } = require('./remote-map.js');
const { setTraceHeaders, startCallSpan, endCallSpan } = require('../trace-context.js');
const { callChannel, CallContext, traced } = require('../channels.js');
const { serviceOptions, knownOptions, wholeOption, timeoutOption, checkConnection, STATUS_HEADER, CANCEL_HEADER, BUSY, WORKING, HEARTBEAT_MS } = require('./names.js');

const CLIENT_OPTIONS = ['name', 'subject', 'timeout', 'liveness', 'maxBatch'];
const CALL_OPTIONS = ['signal', 'timeout'];
/** How often the number of hosts is asked again, while calls are made (ms). */
const SURVEY_MS = 5000;
/** A host id that can be a subject token (hosts make theirs in base64url). */
const HOST_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Longest pause before a message refused as busy is sent again. */
const MAX_BACKOFF_MS = 50;

/** The calls of a message once none waits (see #forget). */
const NO_CALLS = Object.freeze([]);

/** One call waiting for its answer. */
class Call {
  constructor(id, text, resolve, reject, trace) {
    this.id = id;
    this.text = text;
    this.resolve = resolve;
    this.reject = reject;
    this.message = null;
    this.timer = null;
    this.signal = null;
    this.onAbort = null;
    /** The trace context of the call's span (lib/trace-context.js), or null. */
    this.trace = trace;
  }
}

/** The services id of a parsed $SRV.PING answer, if it can be a subject token; else null. */
function hostId(answer) {
  const id = answer?.id;
  return typeof id === 'string' && HOST_ID.test(id) ? id : null;
}

/** hostId of a $SRV.PING answer message (null when it is not JSON). */
function hostIdOf(msg) {
  try {
    return hostId(JSON.parse(msg.string()));
  } catch {
    return null;
  }
}

/** One message sent: its calls, or for handle(), the one resolver of its answer text. */
class Message {
  constructor(seq, text, calls, answer, trace = null) {
    this.seq = seq;
    this.text = text;
    /** The calls in `text`, in its order (a host answers in that order), or null for handle(). */
    this.calls = calls;
    /** How many of `calls` are not settled yet. */
    this.waiting = calls === null ? 0 : calls.length;
    this.answer = answer; // handle(): (text) => void
    this.lastNews = 0;
    this.busy = 0;
    /** The host it was sent to (its id), or null: sent to the queue group. */
    this.host = null;
    /** The secret its next cancel reveals (its proof travels with it); null for handle(). */
    this.secret = calls === null ? null : cancelSecret();
    /** The trace context its headers carry: its calls' (they share one), or handle()'s caller's. */
    this.trace = calls === null ? trace : calls[0].trace;
  }
}

class RemotePool {
  #nc;
  #n;
  #timeout;
  #liveness;
  #maxBatch;
  #prefix;
  #inbox;
  #seq = 0;
  #nextId = 1;
  /** Messages sent and not settled, by sequence number. */
  #messages = new Map();
  /** Calls started this tick, not sent yet. */
  #outgoing = [];
  #flushing = false;
  #watch = null;
  #connected = true;
  #closed = false;
  #closing = null;
  #idle = [];
  #jobs = null;
  /** Calls given up on this turn, to cancel on their hosts: ids by Message. */
  #cancels = new Map();
  /** Hosts that answered the last $SRV.PING (1 until one is counted). */
  #hostCount = 1;
  /** Those hosts by id, with the number of messages sent to each and not settled. */
  #hosts = new Map();
  /** Where the search for the least busy host starts next (see #pickHost). */
  #turn = 0;
  #surveyedAt = -Infinity;

  /**
   * @param nc a NATS connection (connect() of @nats-io/transport-node)
   * @param options name, subject (as the hosts'), timeout (ms, 0: none), liveness (ms of
   *   silence after which a call's host is taken for gone), maxBatch (calls per message)
   */
  constructor(nc, options) {
    checkConnection(nc, 'RemotePool');
    const o = knownOptions(options, CLIENT_OPTIONS, 'RemotePool');
    this.#n = serviceOptions(o, 'RemotePool');
    this.#timeout = timeoutOption(o.timeout, 'RemotePool options.timeout');
    this.#liveness = wholeOption(o.liveness, 6 * HEARTBEAT_MS, 2 * HEARTBEAT_MS, 2 ** 31 - 1, 'RemotePool options.liveness');
    this.#maxBatch = wholeOption(o.maxBatch, 32, 1, 65536, 'RemotePool options.maxBatch');
    this.#nc = nc;
    this.#prefix = natsClient().createInbox(nc.options?.inboxPrefix);
    this.#inbox = nc.subscribe(`${this.#prefix}.*`, { callback: this.#onReply });
    nc.closed().then(() => this.#lost(CODES.Unavailable, 'the NATS connection is closed'));
    this.#followStatus();
  }

  get name() {
    return this.#n.name;
  }

  get subject() {
    return this.#n.subject;
  }

  async #followStatus() {
    try {
      for await (const s of this.#nc.status()) {
        if (s.type === 'disconnect') this.#connected = false;
        else if (s.type === 'reconnect') this.#connected = true;
      }
    } catch {
      // The connection closed: #lost settles what is pending.
    }
  }

  /** `exec(method, ...params)`. */
  exec(method, ...params) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('exec', method, this), () => this.#start(method, params, this.#timeout, null));
    return this.#start(method, params, this.#timeout, null);
  }

  /** `call(method, params, { signal, timeout })`. */
  call(method, params, options) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('call', method, this), () => this.#callChecked(method, params, options));
    return this.#callChecked(method, params, options);
  }

  #callChecked(method, params, options) {
    let timeout = this.#timeout;
    let signal = null;
    try {
      if (params === undefined) params = [];
      else if (!Array.isArray(params)) params = [params];
      if (options !== undefined) {
        if (options === null || typeof options !== 'object') {
          return rejected(CODES.InvalidRequest, `call options must be an object, got ${describe(options)}`);
        }
        for (const key of Object.keys(options)) {
          if (!CALL_OPTIONS.includes(key)) return rejected(CODES.InvalidRequest, `unknown call option '${key}' (expected ${CALL_OPTIONS.join(', ')})`);
        }
        if (options.timeout !== undefined) timeout = timeoutOption(options.timeout, 'options.timeout');
        signal = options.signal ?? null;
        if (signal !== null && !(signal instanceof AbortSignal)) {
          return rejected(CODES.InvalidRequest, `options.signal must be an AbortSignal, got ${describe(signal)}`);
        }
        if (signal?.aborted) return rejected(CODES.Aborted, 'The call was aborted before it started');
      }
    } catch (e) {
      if (e instanceof RangeError) return rejected(CODES.InvalidRequest, e.message);
      return rejected(CODES.InvalidRequest, `call options could not be read: ${errorText(e)}`);
    }
    return this.#start(method, params, timeout, signal);
  }

  /** A JSON-RPC 2.0 request object or batch → response object(s); never rejects. */
  request(request) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('request', null, this), () => this.#request(request));
    return this.#request(request);
  }

  async #request(request) {
    let text;
    try {
      text = toJson(request, 'request');
    } catch (e) {
      return { jsonrpc: '2.0', error: { code: e.code ?? CODES.InvalidRequest, message: errorText(e) }, id: null };
    }
    const answer = await this.#handle(text, 'request');
    return answer === '' ? null : JSON.parse(answer);
  }

  /** JSON-RPC 2.0 text → response text ('' when there is nothing to answer); never rejects. */
  handle(text) {
    if (callChannel.hasSubscribers) return traced(callChannel, new CallContext('handle', null, this), () => this.#handle(text, 'handle'));
    return this.#handle(text, 'handle');
  }

  /** handle(), its span named `kind` (request() calls it too). */
  #handle(text, kind) {
    if (typeof text !== 'string') return Promise.resolve(errorAnswer(CODES.InvalidRequest, 'Invalid Request: handle() takes a string of JSON'));
    const problem = this.#unsendable(text, 'the request');
    if (problem !== null) return Promise.resolve(errorAnswer(problem.code, problem.message));
    const span = startCallSpan(kind);
    return endCallSpan(
      span,
      new Promise((resolve) => {
        const m = new Message(++this.#seq, text, null, resolve, span?.carried ?? null);
        this.#send(m);
      }),
    );
  }

  /**
   * `map(method, inputs, { settle, onProgress, signal, timeout, concurrency })`: `method` once
   * per input, results in input order; rejects with the first error unless `settle: 'all'`.
   */
  map(method, inputs, options) {
    return mapCalls((m, params, o) => this.call(m, params, o), method, inputs, options);
  }

  /** The hosts of this service that answer $SRV.PING within `ms`: `[{ name, id, version, metadata }]`. */
  async hosts(ms = 500) {
    const found = await this.#survey('PING', ms);
    this.#hostCount = Math.max(1, found.length);
    this.#knowHosts(found.map(hostId));
    this.#surveyedAt = performance.now();
    return found;
  }

  /** $SRV.STATS of this service's hosts: per host, calls, errors and per-method figures. */
  stats(ms = 500) {
    return this.#survey('STATS', ms);
  }

  async #survey(verb, ms) {
    ms = wholeOption(ms, 500, 1, 60000, `${verb === 'PING' ? 'hosts' : 'stats'}() wait`);
    const found = [];
    const iter = await this.#nc.requestMany(`$SRV.${verb}.${this.#n.name}`, '', { maxWait: ms, strategy: 'timer' });
    for await (const m of iter) {
      try {
        found.push(JSON.parse(m.string()));
      } catch {
        // Not a services answer: ignored.
      }
    }
    return found;
  }

  // ---- durable jobs (lib/nats/jobs.js; needs @nats-io/jetstream) ----

  #jobClient() {
    if (this.#jobs === null) {
      const { JobClient } = require('./jobs.js');
      this.#jobs = new JobClient(this.#nc, this.#n);
    }
    return this.#jobs;
  }

  /** `submit(method, params, { id })`: a durable job; resolves with `{ id, duplicate }` once stored. */
  async submit(method, params, options) {
    return this.#jobClient().submit(method, params, options);
  }

  /** Job `id`'s result once recorded (rejects with its RpcError); options timeout, signal. */
  async waitFor(id, options) {
    return this.#jobClient().waitFor(id, options);
  }

  /** Job `id`'s stored outcome `{ id, result | error, method, host, deliveries }`, or null. */
  async outcome(id) {
    return this.#jobClient().outcome(id);
  }

  /** Every recorded outcome, then each new one: an async iterable (break to stop). */
  results() {
    return this.#jobClient().results();
  }

  /** Every dead-lettered job, then each new one: `{ job, error, deliveries, host }`. */
  deadLetters() {
    return this.#jobClient().deadLetters();
  }

  /** Resolves when no call or message is pending. */
  drained() {
    if (this.#messages.size === 0 && this.#outgoing.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Waits for pending calls, then stops listening; later calls reject with PoolClosed. */
  close() {
    this.#closed = true;
    this.#closing ??= this.drained().then(() => {
      this.#inbox.unsubscribe();
      this.#watch?.clear();
    });
    return this.#closing;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }

  // ---- calls and messages ----

  #start(method, params, timeout, signal) {
    if (this.#closed) return rejected(CODES.PoolClosed, 'The remote pool is closed: make calls before close()');
    if (typeof method !== 'string') return rejected(CODES.InvalidRequest, `the method must be a string, got ${describe(method)}`);
    const id = this.#nextId++;
    let text;
    try {
      text = requestText(method, params, id);
    } catch (e) {
      return Promise.reject(e);
    }
    const problem = this.#unsendable(text, 'the call');
    if (problem !== null) return Promise.reject(problem);
    const span = startCallSpan(method);
    const answer = new Promise((resolve, reject) => {
      const call = new Call(id, text, resolve, reject, span?.carried ?? null);
      if (timeout > 0) {
        call.timer = after(timeout, () => this.#giveUp(call, new RpcError(CODES.Timeout, `The call timed out after ${timeout} ms (its host is asked to stop it): raise the timeout or make the task shorter`)));
      }
      if (signal !== null) {
        call.signal = signal;
        call.onAbort = () => this.#giveUp(call, new RpcError(CODES.Aborted, 'The call was aborted (its host is asked to stop it)'));
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.#outgoing.push(call);
      if (!this.#flushing) {
        this.#flushing = true;
        process.nextTick(this.#flush);
      }
    });
    return endCallSpan(span, answer);
  }

  /** Why `text` cannot be sent (an RpcError), or null. */
  #unsendable(text, what) {
    if (this.#nc.isClosed()) return new RpcError(CODES.Unavailable, 'the NATS connection is closed');
    const max = this.#nc.info?.max_payload;
    // A UTF-16 unit takes at most 3 bytes: only long texts are measured.
    if (max !== undefined && text.length * 3 > max) {
      const bytes = Buffer.byteLength(text);
      if (bytes > max) return new RpcError(CODES.InvalidParams, `${what} takes ${bytes} bytes of JSON, more than the NATS server's max payload of ${max} bytes`);
    }
    return null;
  }

  /** Sends the calls started this tick, a batch of at most maxBatch calls (and max payload) per message. */
  #flush = () => {
    this.#flushing = false;
    const calls = this.#outgoing.filter((c) => c.resolve !== null);
    this.#outgoing = [];
    if (performance.now() - this.#surveyedAt > SURVEY_MS) this.#countHosts();
    // Calls per message: at most maxBatch; and while fewer messages are in flight than there
    // are hosts, split so that each idle host may get one. (Splitting every tick instead would
    // shrink the batches of closed-loop callers to a call each: every answer's callers would
    // call again in their own tick, to be split again.)
    const idleHosts = this.#hostCount - this.#messages.size;
    const perMessage = idleHosts > 1 ? Math.min(this.#maxBatch, Math.ceil(calls.length / idleHosts)) : this.#maxBatch;
    const max = this.#nc.info?.max_payload ?? Infinity;
    let batch = [];
    let bytes = 2;
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i];
      // Lengths in UTF-16 units times 3 bound the bytes without measuring them.
      const size = c.text.length * 3 + 1;
      // A message carries one trace context: calls made in different ones go apart.
      if (batch.length >= perMessage || (batch.length > 0 && (bytes + size > max || c.trace !== batch[0].trace))) {
        this.#sendCalls(batch);
        batch = [];
        bytes = 2;
      }
      batch.push(c);
      bytes += size;
    }
    if (batch.length > 0) this.#sendCalls(batch);
  };

  /** Sends `calls` as one message. */
  #sendCalls(calls) {
    const m = new Message(++this.#seq, batchText(calls), calls, null);
    for (let i = 0; i < calls.length; i++) calls[i].message = m;
    this.#send(m);
  }

  /** Counts the hosts in the background: the first answers, then 20 ms without more. */
  #countHosts() {
    this.#surveyedAt = performance.now();
    this.#nc
      .requestMany(`$SRV.PING.${this.#n.name}`, '', { strategy: 'stall', stall: 20, maxWait: 1000 })
      .then(async (answers) => {
        const ids = [];
        for await (const m of answers) {
          if (m.data.length === 0) continue;
          ids.push(hostIdOf(m));
        }
        this.#hostCount = Math.max(1, ids.length);
        this.#knowHosts(ids);
      })
      .catch(() => {
        // No hosts, or the connection is down: the count stays until the next survey.
      });
  }

  /**
   * The hosts the last survey found (ids; null for an answer without a usable one): messages
   * go to them one by one, least busy first, once there are two; else to the queue group.
   */
  #knowHosts(ids) {
    const hosts = new Map();
    if (ids.length > 1 && ids.every((id) => id !== null)) for (const id of ids) hosts.set(id, this.#hosts.get(id) ?? 0);
    this.#hosts = hosts;
  }

  /** The id of a host with the fewest messages in flight, taking turns among equals; or null. */
  #pickHost() {
    if (this.#hosts.size < 2) return null;
    const ids = [...this.#hosts.keys()];
    let best = null;
    let least = Infinity;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[(this.#turn + k) % ids.length];
      const n = this.#hosts.get(id);
      if (n < least) {
        least = n;
        best = id;
      }
    }
    this.#turn = (this.#turn + 1) % ids.length;
    return best;
  }

  /** `m` is no longer in flight on its host. */
  #release(m) {
    if (m.host === null) return;
    const n = this.#hosts.get(m.host);
    if (n !== undefined) this.#hosts.set(m.host, n - 1);
    m.host = null;
  }

  #send(m) {
    this.#messages.set(m.seq, m);
    m.lastNews = performance.now();
    this.#release(m);
    const host = this.#pickHost();
    if (host !== null) {
      m.host = host;
      this.#hosts.set(host, this.#hosts.get(host) + 1);
    }
    const options = { reply: `${this.#prefix}.${m.seq}` };
    if (m.secret !== null) {
      options.headers = natsClient().headers();
      options.headers.set(CANCEL_HEADER, proofOf(m.secret));
    }
    if (m.trace !== null) setTraceHeaders((options.headers ??= natsClient().headers()), m.trace);
    try {
      this.#nc.publish(host === null ? this.#n.subject : this.#n.host(host), m.text, options);
    } catch (e) {
      this.#fail(m, new RpcError(CODES.Unavailable, `the message could not be sent to NATS: ${errorText(e)}`));
      return;
    }
    if (this.#watch === null) {
      this.#watch = every(Math.max(50, this.#liveness / 4), this.#checkLiveness).unref();
    }
  }

  #onReply = (err, msg) => {
    if (err) return;
    const seq = Number(msg.subject.slice(this.#prefix.length + 1));
    const m = this.#messages.get(seq);
    if (m === undefined) return; // settled already (timeout, abort, silence): late news is dropped
    m.lastNews = performance.now();
    const h = msg.headers;
    if (h !== undefined) {
      const status = h.get(STATUS_HEADER);
      if (status === WORKING) return;
      if (status === BUSY) {
        const pause = Math.random() * Math.min(MAX_BACKOFF_MS, 2 ** m.busy++);
        after(pause, () => {
          if (this.#messages.get(m.seq) !== m) return;
          if (m.calls !== null && m.waiting !== m.calls.length) {
            // Calls given up on while it waited stay behind.
            m.calls = m.calls.filter((c) => c.resolve !== null);
            m.text = batchText(m.calls);
          }
          this.#send(m);
        });
        return;
      }
      if (h.code === 503 && msg.data.length === 0) {
        if (m.host !== null) {
          // Its host is gone since the survey (no host got the message): another host takes
          // it, or the queue group once fewer than two are known; the hosts are asked again.
          this.#hosts.delete(m.host);
          m.host = null;
          this.#surveyedAt = -Infinity;
          this.#send(m);
          return;
        }
        this.#fail(m, new RpcError(CODES.Unavailable, `no host serves '${this.#n.subject}' (NATS: no responders): start a host with that name, then retry`));
        return;
      }
    }
    this.#answered(m, msg.string());
  };

  #answered(m, text) {
    this.#forget(m);
    if (m.calls === null) {
      m.answer(text);
    } else {
      let answers;
      try {
        answers = JSON.parse(text);
      } catch {
        this.#fail(m, new RpcError(CODES.InternalError, `the host answered text that is not JSON: ${text.slice(0, 80)}`));
        return;
      }
      if (!Array.isArray(answers)) answers = [answers];
      const calls = m.calls;
      // Answers come in request order: the call at `next` is the one answered, unless the
      // host answered otherwise (then calls are looked up by id).
      let next = 0;
      let byId = null;
      for (let i = 0; i < answers.length; i++) {
        const a = answers[i];
        if (a === null || typeof a !== 'object') continue;
        let call = calls[next];
        if (call !== undefined && call.id === a.id) next++;
        else {
          byId ??= new Map(calls.map((c) => [c.id, c]));
          call = byId.get(a.id);
        }
        if (call === undefined || call.resolve === null) continue; // not ours, or settled already
        if (a.error !== undefined) this.#settle(call, false, errorOf(a.error));
        else this.#settle(call, true, a.result);
      }
      if (m.waiting > 0) {
        // A host's answer that misses a call (or answers the whole batch with one error).
        const whole = answers.length === 1 && answers[0]?.id === null && answers[0].error ? errorOf(answers[0].error) : null;
        for (const call of calls) {
          this.#settle(call, false, whole ?? new RpcError(CODES.InternalError, 'the host answered without an answer for this call'));
        }
      }
      m.calls = NO_CALLS;
    }
    this.#checkIdle();
  }

  /** Settles every call of `m` with `error` (handle(): answers its error text). */
  #fail(m, error) {
    this.#forget(m);
    if (m.calls === null) m.answer(errorAnswer(error.code, error.message));
    else {
      for (const call of m.calls) this.#settle(call, false, error);
      m.calls = NO_CALLS;
    }
    this.#checkIdle();
  }

  /**
   * Takes a settled message out of #messages, and lets go of its text. (Its seq only grows, so
   * V8 rehashes the Map every few inserts, and a replaced table that reached the old generation
   * keeps what its entries reach alive until a full GC: a message keeps nothing big once done.)
   */
  #forget(m) {
    this.#release(m);
    this.#messages.delete(m.seq);
    m.text = '';
  }

  #settle(call, ok, value) {
    const { resolve, reject } = call;
    if (resolve === null) return;
    call.resolve = call.reject = null;
    call.timer?.clear();
    if (call.signal !== null) call.signal.removeEventListener('abort', call.onAbort);
    const m = call.message;
    if (m !== null && --m.waiting === 0 && this.#messages.get(m.seq) === m) {
      // Nobody waits for this message any more.
      this.#forget(m);
      m.calls = NO_CALLS;
      this.#checkIdle();
    }
    if (ok) resolve(value);
    else reject(value);
  }

  /** Settles a call its caller gave up on, and has its host told if its message went out. */
  #giveUp(call, error) {
    if (call.resolve === null) return;
    const m = call.message;
    this.#settle(call, false, error);
    if (m === null) return; // not sent: #flush leaves it out
    const ids = this.#cancels.get(m);
    if (ids !== undefined) ids.push(call.id);
    else {
      // After the timers of this turn (nextTick would run between them): calls of one batch
      // that time out together share one cancel.
      if (this.#cancels.size === 0) setImmediate(this.#sendCancels);
      this.#cancels.set(m, [call.id]);
    }
  }

  /**
   * Publishes the cancels of this turn, one per message: each reveals its message's secret, which
   * is then spent, and commits to a new one for the message's next cancel (and its resending).
   */
  #sendCancels = () => {
    const cancels = this.#cancels;
    this.#cancels = new Map();
    for (const [m, ids] of cancels) {
      const secret = m.secret;
      m.secret = cancelSecret();
      try {
        this.#nc.publish(this.#n.cancel, cancelText(`${this.#prefix}.${m.seq}`, secret, proofOf(m.secret), ids));
      } catch {
        // The connection is closed: its host hears nothing more of the call either way.
      }
    }
  };

  #checkLiveness = () => {
    const now = performance.now();
    for (const m of this.#messages.values()) {
      if (now - m.lastNews > this.#liveness) {
        const silent = Math.round(now - m.lastNews);
        this.#fail(
          m,
          this.#connected
            ? new RpcError(CODES.ServerGone, `no word from the host of this call for ${silent} ms: it stopped or lost its connection (the call may or may not have run: retry only if it is safe to run twice)`)
            : new RpcError(CODES.Unavailable, `the connection to NATS is down (no word for ${silent} ms; the call may or may not have run)`),
        );
      }
    }
    if (this.#messages.size === 0) {
      this.#watch.clear();
      this.#watch = null;
    }
  };

  /** The connection ended: every pending call settles with `code`. */
  #lost(code, message) {
    for (const m of [...this.#messages.values()]) this.#fail(m, new RpcError(code, message));
    for (const call of this.#outgoing) this.#settle(call, false, new RpcError(code, message));
    this.#outgoing = [];
    this.#checkIdle();
  }

  #checkIdle() {
    if (this.#messages.size === 0 && this.#idle.length && this.#outgoing.length === 0) for (const wake of this.#idle.splice(0)) wake();
  }
}

/** The text of a message of these calls: a lone request, or a batch. */
function batchText(calls) {
  if (calls.length === 1) return calls[0].text;
  let text = `[${calls[0].text}`;
  for (let i = 1; i < calls.length; i++) text += `,${calls[i].text}`;
  return `${text}]`;
}


/** A JSON-RPC error response's text (id null). */
function errorAnswer(code, message) {
  return JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
}

module.exports = { RemotePool };
