'use strict';
// serve(pool, nc, options): a corepool host on NATS. It answers JSON-RPC text on a queue-group
// subject, so N hosts share the calls, by `pool.handle(text)`: every answer, error code included,
// is what the pool answers locally. It answers the NATS services protocol ($SRV.PING, INFO,
// STATS), so standard NATS tooling lists the hosts and their per-method figures; with
// `durable`, it also runs jobs from the service's JetStream work queue (lib/nats/jobs.js).
//
// Invariants:
// - At most `concurrency` calls are in hand at once (a batch counts each of its calls). A
//   message that would take the host past it is answered "busy" (header Corepool-Status: busy,
//   empty body) and never run: the client sends it again, and the queue group hands it to a
//   host at random, so a slow host does not hoard work. A host with nothing in hand takes any
//   message, however big its batch, so no batch is refused everywhere for ever.
// - Every message taken is answered once (when it has a reply subject), also while close()
//   drains: close() stops the subscription first, then waits for the calls in hand.
// - A host publishes to a subject a message names (its reply subject) only through
//   lib/nats/reply.js, which refuses the service's own namespace and system subjects: a
//   request with such a reply subject is counted (repliesRefused) and neither run nor answered.
// - While a message is in hand, its caller hears "working" every HEARTBEAT_MS (lib/nats/names.js),
//   so a caller that hears nothing for longer knows this host or its connection is gone.
// - An answer bigger than the server's max payload is never sent: the calls whose results are
//   too big are answered InternalError instead (they ran; their results cannot travel).
// - A cancel (lib/nats/wire.js) stops the calls it names of a message in hand, as an
//   AbortSignal stops a local call: queued ones at once, running ones when their command next
//   checks; they answer Aborted (to nobody: their caller has settled them), and the rest of the
//   message runs on. It must reveal the secret whose proof the message carries (or the one its
//   last cancel committed to): one that does not, or one for a message not in hand, or for ids
//   it does not hold, is ignored and counted, so one that comes late, twice, garbled or from
//   anyone but the message's sender changes nothing. A message without a proof cannot be
//   cancelled.

const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { CODES } = require('../errors.js');
const { handleCancellable } = require('../pool.js');
const { parseCancel, proofOf, isToken, withoutStacks } = require('./wire.js');
const { replyAllowed, respond } = require('./reply.js');
const { every } = require('../timer.js');
const { natsClient } = require('./peer.js');
const { withServerHeaders } = require('../trace-context.js');
/** The answer of a cancellable handle() (what the host's server span waits for). */
const cancellableAnswer = (run) => run.answer;
const { serviceOptions, knownOptions, wholeOption, checkConnection, STATUS_HEADER, CANCEL_HEADER, BUSY, WORKING, HEARTBEAT_MS } = require('./names.js');

const VERSION = require('../../package.json').version;
const HOST_OPTIONS = ['name', 'subject', 'queue', 'concurrency', 'description', 'metadata', 'durable'];
// Per-method figures: a caller names any method, so a name gets an entry of its own only once
// an answer shows a method of that name is served (one entry per name sent would let a caller
// grow the host, and its STATS answer past what the server carries). The others count under:
/** A call that is not a request object, or that was answered InvalidRequest or ParseError. */
const NOT_A_REQUEST = '(invalid request)';
/** A call answered MethodNotFound. */
const NOT_FOUND = '(method not found)';
/** A notification (no answer) of a name without an entry. */
const NOTIFIED = '(notifications)';
/**
 * Most methods with figures of their own, and the longest name that gets some (UTF-16 units);
 * the calls of further or longer ones count under MORE. (With the STATS answer's last_error
 * cut to MAX_ERROR, the answer stays far under any server's max payload.)
 */
const MAX_METHODS = 256;
const MAX_NAME = 256;
const MORE = '(more methods)';
const MAX_ERROR = 1024;
const PROTOCOL = 'io.nats.micro.v1';

/** What callsIn gives for what is no request object. */
const NOT_A_CALL = Object.freeze({ method: NOT_A_REQUEST, notification: false });

/**
 * The calls in a request text, as the host counts them: each one's method, or NOT_A_REQUEST,
 * and whether it is a notification (no id: it gets no answer); never throws.
 */
function callsIn(text) {
  let request;
  try {
    request = JSON.parse(text);
  } catch {
    return [NOT_A_CALL];
  }
  if (!Array.isArray(request)) return [callOf(request)];
  return request.length === 0 ? [NOT_A_CALL] : request.map(callOf);
}

function callOf(r) {
  if (r === null || typeof r !== 'object' || typeof r.method !== 'string') return NOT_A_CALL;
  return { method: r.method, notification: !Object.hasOwn(r, 'id') };
}

/** The error of one answer object `r`: `{ code, text }` (text: "<code> <message>"), or null. */
function errorOfAnswer(r) {
  return r !== null && typeof r === 'object' && r.error ? { code: Number(r.error.code), text: `${r.error.code} ${r.error.message}` } : null;
}

/** The errors of an answer (errorOfAnswer), by position of the request they answer (null: a result). */
function errorsIn(answer) {
  // Most answers carry no error: only those that mention one are read.
  if (!answer.includes('"error"')) return null;
  let v;
  try {
    v = JSON.parse(answer);
  } catch {
    return null;
  }
  const list = Array.isArray(v) ? v : [v];
  return list.map(errorOfAnswer);
}

/** A message in hand, with a reply subject: told "working" every HEARTBEAT_MS, and cancellable. */
class Held {
  /** Places by id (JSON text), read from the message when it first gets a cancel. */
  #places = null;

  constructor(msg, text) {
    this.msg = msg;
    this.text = text;
    /** `cancel(places)` of the pool's cancellable handle(), or null (a pool without one). */
    this.cancel = null;
    /** Its key among the messages that may be cancelled (cancelKey), or null: it may not be. */
    this.key = null;
  }

  /**
   * Lets go of the message once answered: stale tables of the Set and Map that held it (their
   * keys churn) may keep this object alive for a while, but not the message.
   */
  done() {
    this.msg = null;
    this.text = '';
    this.cancel = null;
    this.key = null;
    this.#places = null;
  }

  /** The places in the message (a batch's indices, 0 for a lone request) of requests with these ids. */
  placesOf(ids) {
    if (this.#places === null) {
      this.#places = new Map();
      let request = null;
      try {
        request = JSON.parse(this.text);
      } catch {
        // Not JSON: it holds no request to cancel.
      }
      const list = Array.isArray(request) ? request : [request];
      for (let i = 0; i < list.length; i++) {
        const key = idKey(list[i]?.id);
        if (key === null) continue;
        const at = this.#places.get(key);
        if (at === undefined) this.#places.set(key, [i]);
        else at.push(i);
      }
    }
    // Each id once, so that no place is given twice however often a cancel repeats an id.
    const places = [];
    for (const key of new Set(ids.map(idKey))) {
      const at = this.#places.get(key);
      if (at !== undefined) for (const place of at) places.push(place);
    }
    return places;
  }
}

/** The key of a message in hand that a cancel revealing the secret of `proof` may cancel. */
function cancelKey(proof, reply) {
  return `${proof} ${reply}`;
}

/** A JSON-RPC id (a string or a number) as a key, or null for anything else. */
function idKey(id) {
  return typeof id === 'string' || typeof id === 'number' ? JSON.stringify(id) : null;
}

/** One method's figures. */
class MethodStats {
  calls = 0;
  errors = 0;
  totalMs = 0;
  maxMs = 0;
}

class Host {
  #pool;
  #nc;
  #n;
  #queue;
  #concurrency;
  #description;
  #metadata;
  #id = crypto.randomBytes(12).toString('base64url');
  #started = new Date().toISOString();
  #rpc = null;
  /** The subscription to this host's own subject (names.js: host), for messages sent to it. */
  #direct = null;
  #cancels = null;
  #admin = [];
  #jobs = null;
  #inHand = 0;
  #peakInHand = 0;
  /** The messages in hand with a reply subject (Held), told "working" every HEARTBEAT_MS. */
  #held = new Set();
  /**
   * Those that may be cancelled, by cancelKey: the proof of the secret their next cancel must
   * reveal, and their reply subject (the first, should two messages share both).
   */
  #cancellable = new Map();
  #heartbeat = null;
  #idle = [];
  #closing = null;
  // Figures for $SRV.STATS.
  #calls = 0;
  #errors = 0;
  #busy = 0;
  #cancelled = 0;
  #cancelsIgnored = 0;
  #repliesRefused = 0;
  #lastError = '';
  #processingMs = 0;
  #messages = 0;
  #methods = new Map();

  constructor(pool, nc, options) {
    if (pool === null || typeof pool !== 'object' || typeof pool.handle !== 'function' || typeof pool.stats !== 'function') {
      throw new TypeError('corepool/nats: serve() needs a corepool Pool (or anything with handle(text) and stats())');
    }
    checkConnection(nc, 'serve()');
    const o = knownOptions(options, HOST_OPTIONS, 'serve()');
    this.#n = serviceOptions(o, 'serve()');
    this.#queue = o.queue ?? this.#n.name;
    if (typeof this.#queue !== 'string' || !/^[^\s.*>]+$/.test(this.#queue)) {
      throw new TypeError(`corepool/nats: serve() options.queue must be a queue-group name without spaces, dots or wildcards, got ${JSON.stringify(this.#queue)}`);
    }
    this.#concurrency = o.concurrency === Infinity ? Infinity : wholeOption(o.concurrency, 1024, 1, 2 ** 30, 'serve() options.concurrency');
    this.#description = o.description ?? `corepool ${VERSION}: JSON-RPC 2.0 on native worker threads`;
    if (typeof this.#description !== 'string') throw new TypeError('corepool/nats: serve() options.description must be a string');
    this.#metadata = o.metadata ?? {};
    if (this.#metadata === null || typeof this.#metadata !== 'object' || Object.values(this.#metadata).some((v) => typeof v !== 'string')) {
      throw new TypeError('corepool/nats: serve() options.metadata must be an object of strings');
    }
    this.#pool = pool;
    this.#nc = nc;
    if (o.durable !== undefined && o.durable !== false) {
      // Loaded only for durable hosts: it needs @nats-io/jetstream.
      const { JobWorker, jobOptions } = require('./jobs.js');
      this.#jobs = new JobWorker(pool, nc, this.#n, jobOptions(o.durable === true ? {} : o.durable), this.#id);
    }
  }

  /** Subscribes, and starts the job worker. */
  async start() {
    this.#rpc = this.#nc.subscribe(this.#n.subject, { queue: this.#queue, callback: this.#onRequest });
    this.#direct = this.#nc.subscribe(this.#n.host(this.#id), { callback: this.#onRequest });
    this.#cancels = this.#nc.subscribe(this.#n.cancel, { callback: this.#onCancel });
    const n = this.#n;
    for (const verb of ['PING', 'INFO', 'STATS']) {
      const answer = () => JSON.stringify(this.#describe(verb));
      for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${n.name}`, `$SRV.${verb}.${n.name}.${this.#id}`]) {
        this.#admin.push(
          this.#nc.subscribe(subject, {
            callback: (err, msg) => {
              if (!err && msg.reply) this.#respond(msg, answer());
            },
          }),
        );
      }
    }
    this.#heartbeat = every(HEARTBEAT_MS, this.#beat).unref();
    if (this.#jobs !== null) await this.#jobs.start();
    await this.#nc.flush(); // the server has the subscriptions: calls sent from now on reach this host
    return this;
  }

  /** This host's id in the services protocol ($SRV.*.<name>.<id>). */
  get id() {
    return this.#id;
  }

  get name() {
    return this.#n.name;
  }

  get subject() {
    return this.#n.subject;
  }

  /** The services protocol's answer of this host to PING, INFO or STATS. */
  #describe(verb) {
    const base = { name: this.#n.name, id: this.#id, version: VERSION, metadata: this.#metadata };
    const endpoint = { name: 'rpc', subject: this.#n.subject, queue_group: this.#queue };
    if (verb === 'PING') return { type: `${PROTOCOL}.ping_response`, ...base };
    if (verb === 'INFO') {
      const endpoints = [{ ...endpoint, metadata: null }];
      return { type: `${PROTOCOL}.info_response`, ...base, description: this.#description, endpoints };
    }
    return { type: `${PROTOCOL}.stats_response`, ...base, started: this.#started, endpoints: [{ ...endpoint, ...this.stats() }] };
  }

  /**
   * This host's figures, as the services protocol's endpoint stats: calls answered, errors,
   * time in ns, and in `data` the per-method figures, the messages answered, the messages
   * refused while busy, the calls in hand now and at most, the calls cancelled at their
   * caller's word and the cancels ignored, the messages whose reply subject was refused
   * (lib/nats/reply.js: neither run nor answered), the pool's stats() and, with `durable`, the
   * job worker's.
   */
  stats() {
    const methods = {};
    for (const [name, m] of this.#methods) {
      // Defined: a method may be named __proto__.
      Object.defineProperty(methods, name, { value: { calls: m.calls, errors: m.errors, averageMs: m.calls ? m.totalMs / m.calls : 0, maxMs: m.maxMs }, enumerable: true, writable: true, configurable: true });
    }
    const ns = Math.round(this.#processingMs * 1e6);
    return {
      num_requests: this.#calls,
      num_errors: this.#errors,
      last_error: this.#lastError,
      processing_time: ns,
      average_processing_time: this.#messages ? Math.round(ns / this.#messages) : 0,
      data: {
        methods,
        messages: this.#messages,
        busy: this.#busy,
        inHand: this.#inHand,
        peakInHand: this.#peakInHand,
        cancelled: this.#cancelled,
        cancelsIgnored: this.#cancelsIgnored,
        repliesRefused: this.#repliesRefused,
        concurrency: this.#concurrency === Infinity ? null : this.#concurrency,
        pool: this.#pool.stats(),
        jobs: this.#jobs?.stats() ?? null,
      },
    };
  }

  #onRequest = (err, msg) => {
    if (err) return; // the subscription ended (a permissions error, or the connection closed)
    if (msg.reply && !replyAllowed(this.#n, msg.reply)) {
      // Not run: its answer could go nowhere it may be sent.
      this.#repliesRefused++;
      return;
    }
    const text = msg.string();
    const methods = callsIn(text);
    const n = methods.length;
    if (this.#inHand > 0 && this.#inHand + n > this.#concurrency) {
      this.#busy++;
      if (msg.reply) this.#tell(msg, BUSY);
      return;
    }
    this.#inHand += n;
    if (this.#inHand > this.#peakInHand) this.#peakInHand = this.#inHand;
    const t0 = performance.now();
    let answer;
    let held = null;
    if (msg.reply) {
      held = new Held(msg, text);
      this.#held.add(held);
      const proof = msg.headers?.get(CANCEL_HEADER);
      if (isToken(proof)) this.#expectCancel(held, proof);
      if (typeof this.#pool[handleCancellable] === 'function') {
        const run = withServerHeaders(msg, 'handle', () => this.#pool[handleCancellable](text), cancellableAnswer);
        held.cancel = run.cancel;
        answer = run.answer;
      }
    }
    answer ??= withServerHeaders(msg, 'handle', () => this.#pool.handle(text), Promise.resolve.bind(Promise));
    answer.then((answer) => {
      const ms = performance.now() - t0;
      if (held !== null) {
        this.#held.delete(held);
        if (held.key !== null && this.#cancellable.get(held.key) === held) this.#cancellable.delete(held.key);
        held.done();
        this.#reply(msg, answer);
      }
      this.#count(text, methods, answer, ms);
      this.#inHand -= n;
      if (this.#inHand === 0 && this.#idle.length) for (const wake of this.#idle.splice(0)) wake();
    });
  };

  /** A message to the caller that is not an answer: BUSY or WORKING. */
  #tell(msg, status) {
    const h = natsClient().headers();
    h.set(STATUS_HEADER, status);
    this.#respond(msg, undefined, { headers: h });
  }

  /** Publishes to `msg`'s reply subject, unless lib/nats/reply.js refuses it (counted). */
  #respond(msg, data, options) {
    if (!respond(this.#n, msg, data, options)) this.#repliesRefused++;
  }

  #beat = () => {
    for (const held of this.#held) this.#tell(held.msg, WORKING);
  };

  /** `held` may be cancelled by a cancel that reveals the secret of `proof`. */
  #expectCancel(held, proof) {
    held.key = cancelKey(proof, held.msg.reply);
    if (!this.#cancellable.has(held.key)) this.#cancellable.set(held.key, held);
  }

  /** A caller gave up on calls of a message it sent (see the module doc). */
  #onCancel = (err, msg) => {
    if (err) return;
    const order = parseCancel(msg.string());
    const key = order === null ? null : cancelKey(proofOf(order.secret), order.reply);
    const held = key === null ? undefined : this.#cancellable.get(key);
    if (held === undefined) {
      this.#cancelsIgnored++;
      return;
    }
    // Its secret is spent (anyone may have heard this cancel): the message's next cancel must
    // reveal the secret this one committed to.
    this.#cancellable.delete(key);
    this.#expectCancel(held, order.next);
    const places = held.cancel === null ? [] : held.placesOf(order.ids);
    if (places.length === 0) {
      this.#cancelsIgnored++;
      return;
    }
    this.#cancelled += places.length;
    held.cancel(places);
  };

  #reply(msg, answer) {
    answer = withoutStacks(answer);
    const max = this.#nc.info?.max_payload ?? Infinity;
    // A UTF-16 unit takes at most 3 bytes: only long answers are measured.
    if (answer.length * 3 > max && Buffer.byteLength(answer) > max) answer = fitted(answer, max);
    this.#respond(msg, answer);
  }

  #count(text, methods, answer, ms) {
    this.#messages++;
    this.#processingMs += ms;
    this.#calls += methods.length;
    const errors = errorsIn(answer);
    // Answers come in request order, one per request with an id; notifications get none, so
    // with notifications in a batch the errors are matched by id.
    const byPosition = errors !== null && errors.length === methods.length;
    const errorOf = errors === null ? () => null : byPosition ? (i) => errors[i] : errorsById(text, answer);
    for (let i = 0; i < methods.length; i++) {
      const error = errorOf(i);
      const code = error?.code;
      let name = methods[i].method;
      if (code === CODES.MethodNotFound) name = NOT_FOUND;
      else if (code === CODES.InvalidRequest || code === CODES.ParseError) name = NOT_A_REQUEST;
      else if (methods[i].notification && !this.#methods.has(name)) name = NOTIFIED;
      if (!this.#methods.has(name) && (this.#methods.size >= MAX_METHODS || name.length > MAX_NAME)) name = MORE;
      let m = this.#methods.get(name);
      if (m === undefined) this.#methods.set(name, (m = new MethodStats()));
      m.calls++;
      m.totalMs += ms;
      if (ms > m.maxMs) m.maxMs = ms;
      if (error !== null) {
        m.errors++;
        this.#errors++;
        this.#lastError = error.text.length > MAX_ERROR ? `${error.text.slice(0, MAX_ERROR)}…` : error.text;
      }
    }
  }

  /** Resolves when no call is in hand. */
  #drained() {
    if (this.#inHand === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * Stops taking calls and jobs, answers every call already taken, acknowledges or hands back
   * every job, then leaves the services protocol. The pool stays open (it is the caller's).
   */
  close() {
    this.#closing ??= (async () => {
      await Promise.all([this.#rpc, this.#direct].map((sub) => sub?.drain().catch(() => {})));
      await this.#jobs?.stop();
      await this.#drained();
      this.#cancels?.unsubscribe();
      this.#heartbeat?.clear();
      for (const sub of this.#admin) sub.unsubscribe();
      await this.#nc.flush().catch(() => {});
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

/** By request position: the error (errorOfAnswer) of the answer with that request's id, or null. */
function errorsById(text, answer) {
  const requests = JSON.parse(text);
  const answers = JSON.parse(answer);
  const byId = new Map();
  for (const a of Array.isArray(answers) ? answers : [answers]) {
    const error = errorOfAnswer(a);
    if (error !== null) byId.set(JSON.stringify(a.id ?? null), error);
  }
  const list = Array.isArray(requests) ? requests : [requests];
  return (i) => {
    const r = list[i];
    const id = r !== null && typeof r === 'object' && 'id' in r ? JSON.stringify(r.id) : 'null';
    return byId.get(id) ?? null;
  };
}

/** An answer cut down to `max` bytes: the biggest results become InternalError answers. */
function fitted(answer, max) {
  const v = JSON.parse(answer);
  const list = Array.isArray(v) ? v : [v];
  const sizes = list.map((r, i) => ({ i, bytes: Buffer.byteLength(JSON.stringify(r)) })).sort((a, b) => b.bytes - a.bytes);
  let total = Buffer.byteLength(answer);
  for (const { i, bytes } of sizes) {
    if (total <= max) break;
    const r = list[i];
    list[i] = {
      jsonrpc: '2.0',
      error: {
        code: CODES.InternalError,
        message: `the answer of ${bytes} bytes exceeds the NATS server's max payload of ${max} bytes: the call ran, but its result cannot travel`,
      },
      id: r?.id ?? null,
    };
    total -= bytes - Buffer.byteLength(JSON.stringify(list[i]));
  }
  return JSON.stringify(Array.isArray(v) ? list : list[0]);
}

/**
 * `serve(pool, nc, { name, subject, queue, concurrency, description, metadata, durable })`:
 * resolves with the Host once the NATS server has its subscriptions.
 */
async function serve(pool, nc, options) {
  return new Host(pool, nc, options).start();
}

module.exports = { serve, Host };
