'use strict';
// Durable jobs on JetStream: RemotePool#submit puts a job on the service's work-queue stream;
// hosts served with `durable` pull jobs, run them on their pool, record each job's outcome, and
// only then acknowledge it. Subjects and streams: lib/nats/names.js.
//
// Invariants:
// - A job is acknowledged only after its outcome is stored: a host that dies before that leaves
//   the job unacknowledged, and JetStream delivers it again after `ackWait`. Execution is
//   at-least-once.
// - An outcome is stored at most once per job id: it is published on the job's own results
//   subject with "expected last subject sequence" of the last message found there while no
//   outcome was, so a second run's outcome is refused by the stream, and as a rollup, so that
//   JetStream removes whatever the subject held before it. (A server's answer can be published
//   there by anyone who may ask JetStream something: such messages are no outcome.) An outcome,
//   when there is one, is therefore the subject's first message, found in two reads however
//   many others were published there (findOutcome). With the at-least-once delivery, every
//   job's outcome is recorded exactly once.
// - A host holds at most `inFlight` jobs; while one runs longer than a third of `ackWait`, the
//   host tells JetStream it is still working on it (inProgress), so a long job is not handed to
//   another host.
// - A job that settles with an error that running it again could change (CommandFailed,
//   InternalError, Timeout, ServerGone, …) is handed back (nak) for another try, until it was
//   delivered `maxDeliver` times; then, as for errors no retry changes (ParseError,
//   InvalidRequest, MethodNotFound, InvalidParams), its outcome is that error and the job with
//   its error goes to its dead-letter subject. A job delivered more than `maxDeliver` times
//   without an outcome (its hosts died on it) is not run again: it is dead-lettered.
// - Every delivery is checked before any side effect: first that the message is a job (JSON
//   `{ id, method, params }` by the same rule submit() applies, jobProblem), then that its id has
//   no stored outcome. A message that is not a job is dead-lettered with the reason and
//   acknowledged at once (its outcome too is that error, when its id is valid); a job whose id
//   has an outcome already (run before, submitted again after JetStream's duplicate window,
//   or forged) is acknowledged without running. A host holds one delivery of an id at a time
//   (a job of that id, or a message carrying its key that may store an outcome under it): a
//   copy taken while the job runs waits for it, then finds its outcome. (Copies checked on two
//   hosts before either stored the outcome may both run; the outcome is still recorded once.)
// - Every message a host publishes fits the server's max payload: an outcome too big is
//   replaced by an InternalError outcome that names the limit (the job ran; it is not run
//   again), and a dead letter too big loses its job's params.

const crypto = require('node:crypto');
const { RpcError, CODES, describe, errorText } = require('../errors.js');
const { jetstreamClient, natsClient } = require('./peer.js');
const { toJson, errorOf } = require('./wire.js');
const { knownOptions, wholeOption, timeoutOption, jobIdProblem, jobKey, idOfKey, resultSubject, deadSubject, unreadableSubject } = require('./names.js');
const { after, every, sleep } = require('../timer.js');
const { activeTraceContext, setTraceHeaders, withTraceHeaders } = require('../trace-context.js');
const { jobChannel, CallContext, traced } = require('../channels.js');

/** What corepool:job's subscribers get: a CallContext of kind 'submit' or 'run', with the job's id. */
function jobContext(kind, method, id, pool) {
  const context = new CallContext(kind, method, pool);
  context.id = id;
  return context;
}

const JOB_OPTIONS = ['inFlight', 'ackWait', 'maxDeliver', 'retryDelay'];
/** Errors that running the job again cannot change: recorded at once. */
const FINAL = new Set([CODES.ParseError, CODES.InvalidRequest, CODES.MethodNotFound, CODES.InvalidParams]);
/** How long a pull waits for jobs before asking again (ms). */
const PULL_EXPIRES_MS = 1000;
/** JetStream's API error code: the subject already holds a message (our outcome exists). */
const WRONG_LAST_SEQUENCE = 10071;
/** JetStream's API error code: the message is bigger than the stream's max_msg_size. */
const MESSAGE_TOO_BIG = 10054;
/** The longest method name of a job, in UTF-16 units (as ids: it is in every outcome). */
const MAX_METHOD = 256;
/** The longest excerpt of a message that holds no job, kept in its dead letter. */
const EXCERPT = 256;
const NS_PER_MS = 1e6;

/** The `durable` options of serve(), checked. */
function jobOptions(o) {
  o = knownOptions(o, JOB_OPTIONS, 'serve() durable');
  return {
    inFlight: wholeOption(o.inFlight, 64, 1, 10000, 'serve() options.durable.inFlight'),
    ackWait: wholeOption(o.ackWait, 30000, 100, 2 ** 31 - 1, 'serve() options.durable.ackWait'),
    maxDeliver: wholeOption(o.maxDeliver, 5, 1, 1000, 'serve() options.durable.maxDeliver'),
    retryDelay: wholeOption(o.retryDelay, 1000, 0, 2 ** 31 - 1, 'serve() options.durable.retryDelay'),
  };
}

/**
 * Creates the service's streams and the hosts' consumer when they do not exist (idempotent:
 * every host and client calls it). `ackWait` and `maxDeliver` matter only to the consumer.
 */
async function ensureStreams(nc, n, consumer) {
  const { jetstreamManager } = jetstreamClient();
  const jsm = await jetstreamManager(nc);
  await addStream(jsm, { name: n.jobStream, subjects: [n.jobs], retention: 'workqueue', storage: 'file' });
  const results = await addStream(jsm, { name: n.resultStream, subjects: [`${n.results}.*`, `${n.dead}.*`], storage: 'file', allow_rollup_hdrs: true });
  // Hosts store outcomes as rollups (findOutcome): a stream made without them would refuse
  // every outcome.
  if (consumer !== undefined && results.config.allow_rollup_hdrs !== true) {
    throw new RpcError(CODES.InternalError, `corepool/nats: stream ${n.resultStream} does not allow rollup headers, which hosts store outcomes with: allow them (nats stream edit ${n.resultStream} --allow-rollup) or remove the stream`);
  }
  if (consumer !== undefined) {
    try {
      await jsm.consumers.info(n.jobStream, n.consumer);
    } catch {
      await jsm.consumers.add(n.jobStream, {
        durable_name: n.consumer,
        ack_policy: 'explicit',
        ack_wait: consumer.ackWait * NS_PER_MS,
        // Hosts count deliveries themselves, to dead-letter a job whose hosts keep dying on it.
        max_deliver: -1,
        max_ack_pending: -1,
      });
    }
  }
  return jsm;
}

/** Adds stream `config.name` unless it exists; resolves its info. */
async function addStream(jsm, config) {
  try {
    return await jsm.streams.info(config.name);
  } catch {
    try {
      return await jsm.streams.add(config);
    } catch (e) {
      // Another host or client added it meanwhile.
      return jsm.streams.info(config.name).catch(() => {
        throw e;
      });
    }
  }
}

/** How `v` is named in an error about a job: its kind, never a long text. */
function kind(v) {
  if (typeof v === 'string') return v.length > 64 ? `a string of ${v.length} characters` : describe(v);
  if (Array.isArray(v)) return 'an array';
  return v === null || typeof v !== 'object' ? describe(v) : 'an object';
}

/** Why `method` is not a job's method (the end of a sentence), or null. */
function methodProblem(method) {
  if (typeof method === 'string' && method.length >= 1 && method.length <= MAX_METHOD) return null;
  return `must be a string of 1 to ${MAX_METHOD} characters, got ${kind(method)}`;
}

/**
 * A job message's text read: `job` is the parsed job when its id is valid (null otherwise), and
 * `refusal` an RpcError saying why it cannot run, or null. The one rule of what a job is (the
 * id's rule is names.js's jobIdProblem, which submit() applies too).
 */
function readJob(text) {
  let job;
  try {
    job = JSON.parse(text);
  } catch (e) {
    return { job: null, refusal: new RpcError(CODES.ParseError, `the job message is not JSON: ${errorText(e)}`) };
  }
  if (job === null || typeof job !== 'object' || Array.isArray(job)) {
    return { job: null, refusal: new RpcError(CODES.InvalidRequest, `a job must be a JSON object { id, method, params }, got ${kind(job)}`) };
  }
  const idWhy = jobIdProblem(job.id);
  if (idWhy !== null) return { job: null, refusal: new RpcError(CODES.InvalidRequest, `the job's id ${idWhy}`) };
  const methodWhy = methodProblem(job.method);
  if (methodWhy !== null) return { job, refusal: new RpcError(CODES.InvalidRequest, `the job's method ${methodWhy}`) };
  if (job.params !== undefined && !Array.isArray(job.params)) {
    return { job, refusal: new RpcError(CODES.InvalidRequest, `the job's params must be an array, got ${kind(job.params)}`) };
  }
  return { job, refusal: null };
}

/**
 * Why `text`, published with `headers` (nats.js headers), cannot travel as one message on `nc`
 * (the end of a sentence: "… of N bytes exceeds …"), or null.
 */
function overLimit(nc, text, headers) {
  const max = nc.info?.max_payload;
  if (max === undefined) return null;
  const head = headers.encode().length;
  // A UTF-16 unit takes at most 3 bytes: only long texts are measured.
  if (text.length * 3 + head <= max) return null;
  const bytes = Buffer.byteLength(text) + head;
  return bytes <= max ? null : `of ${bytes} bytes (with its headers) exceeds the NATS server's max payload of ${max} bytes`;
}

/** `o`, a message's JSON, if it is an outcome of job `id` (`{ id, result }` or `{ id, error }`, plus what a host adds), else null. */
function outcomeOf(o, id) {
  if (o === null || typeof o !== 'object' || Array.isArray(o) || o.id !== id) return null;
  const result = Object.hasOwn(o, 'result');
  if (result === Object.hasOwn(o, 'error')) return null;
  return result || (o.error !== null && typeof o.error === 'object') ? o : null;
}

/** Whether the parsed message `d` is a dead letter (`{ job, error, deliveries, host }`). */
function isDeadLetter(d) {
  return d !== null && typeof d === 'object' && !Array.isArray(d) && ['job', 'error', 'deliveries', 'host'].every((k) => Object.hasOwn(d, k));
}

/**
 * What `pick` finds in a message of `subject` in the results stream (`pick` of its parsed JSON:
 * null for what it is not), or null, and `last`: the sequence of the subject's last message (0:
 * none), which a host storing there expects. Hosts store an outcome or a dead letter only where
 * the subject holds none, as a rollup (JetStream removes the subject's earlier messages): it is
 * the subject's first message, whatever else anyone published there after it. The last is read
 * first, then the first: one stored after the last was read comes after it, and a store
 * expecting that last is refused.
 */
async function findOn(jsm, n, subject, pick) {
  const last = await jsm.streams.getMessage(n.resultStream, { last_by_subj: subject });
  if (last === null) return { found: null, last: 0 };
  const found = pick(parsed(last));
  if (found !== null) return { found, last: last.seq };
  const first = await jsm.streams.getMessage(n.resultStream, { seq: 1, next_by_subj: subject });
  return { found: first === null ? null : pick(parsed(first)), last: last.seq };
}

/** Job `id`'s stored outcome (parsed), or null, and `last` (findOn). */
async function findOutcome(jsm, n, id) {
  const { found, last } = await findOn(jsm, n, resultSubject(n, id), (o) => outcomeOf(o, id));
  return { outcome: found, last };
}

/** Throws InvalidRequest if `id` is not a job id (jobIdProblem), naming `who`. */
function checkId(id, who) {
  const why = jobIdProblem(id);
  if (why !== null) throw new RpcError(CODES.InvalidRequest, `${who}: a job id ${why}`);
}

/** The text of a job's stored outcome. */
function outcomeText(id, ok, value, extra) {
  const o = ok ? { id, result: value ?? null } : { id, error: value };
  return JSON.stringify({ ...o, ...extra });
}

/** The JSON of message `m`, or undefined if it holds none. */
function parsed(m) {
  try {
    return m.json();
  } catch {
    return undefined;
  }
}

/** A stored outcome's result, or its error thrown as an RpcError. */
function settled(outcome) {
  if (outcome.error !== undefined) throw errorOf(outcome.error);
  return outcome.result;
}

/** Runs the jobs of one host. */
class JobWorker {
  #pool;
  #nc;
  #n;
  #o;
  #host;
  #js = null;
  #jsm = null;
  #consumer = null;
  #running = 0;
  /** By job id: the delivery of that id in hand, settled (see #run). */
  #byId = new Map();
  #peakRunning = 0;
  #idle = [];
  #stopped = false;
  #loop = null;
  #fetch = null;
  #slot = null;
  // Figures.
  #done = 0;
  #failed = 0;
  #retried = 0;
  #dead = 0;
  #duplicates = 0;

  constructor(pool, nc, n, options, hostId) {
    this.#pool = pool;
    this.#nc = nc;
    this.#n = n;
    this.#o = options;
    this.#host = hostId;
  }

  async start() {
    this.#jsm = await ensureStreams(this.#nc, this.#n, this.#o);
    this.#js = jetstreamClient().jetstream(this.#nc);
    this.#consumer = await this.#js.consumers.get(this.#n.jobStream, this.#n.consumer);
    this.#loop = this.#pull();
  }

  stats() {
    return { running: this.#running, peakRunning: this.#peakRunning, done: this.#done, failed: this.#failed, retried: this.#retried, dead: this.#dead, duplicates: this.#duplicates };
  }

  /** Pulls while there is room: at most inFlight jobs in hand. */
  async #pull() {
    while (!this.#stopped) {
      const room = this.#o.inFlight - this.#running;
      if (room === 0) {
        await new Promise((resolve) => (this.#slot = resolve));
        continue;
      }
      try {
        this.#fetch = await this.#consumer.fetch({ max_messages: room, expires: PULL_EXPIRES_MS });
        for await (const m of this.#fetch) this.#take(m);
      } catch {
        // Closed for good: nothing more will come (close() still waits for the jobs in hand).
        if (this.#nc.isClosed()) break;
        // The connection is down or the consumer is being recreated: try again shortly.
        if (!this.#stopped) await sleep(200);
      } finally {
        this.#fetch = null;
      }
    }
  }

  #take(m) {
    if (++this.#running > this.#peakRunning) this.#peakRunning = this.#running;
    this.#run(m)
      .catch(() => {
        // The outcome could not be stored or the job not acknowledged (the connection is
        // down): it stays unacknowledged and comes again after ackWait.
      })
      .finally(() => {
        this.#running--;
        this.#slot?.();
        this.#slot = null;
        if (this.#running === 0) for (const wake of this.#idle.splice(0)) wake();
      });
  }

  async #run(m) {
    // Anyone who can publish on the jobs subject can send anything: checked before any side
    // effect, and whatever cannot run is dead-lettered and acknowledged at once.
    const text = m.string();
    const deliveries = m.info.deliveryCount;
    const { job, refusal } = readJob(text);
    if (job === null) {
      // No valid id to record an outcome under: a dead letter under the text's own key.
      const letter = { job: null, error: refusal.toJSON(), deliveries, host: this.#host, excerpt: text.slice(0, EXCERPT) };
      await this.#storeFitting(unreadableSubject(this.#n, text), [JSON.stringify(letter)]);
      this.#dead++;
      m.ack();
      return;
    }
    // JetStream drops a later message with the same message id (submit() sets the job's key):
    // a job carrying another id's key would make that id's own submission a duplicate of it.
    // Not run; the id whose key it carries gets an outcome saying so (as a job submitted under
    // it would have).
    const claimed = m.headers?.get(jetstreamClient().PubHeaders.MsgIdHdr) ?? '';
    const squatting = claimed !== '' && claimed !== jobKey(job.id);
    // The id whose outcome this delivery may store: its job's, or the one whose key it carries.
    const id = squatting ? idOfKey(claimed) : job.id;
    const work = squatting ? () => this.#squatted(m, job, claimed, id, deliveries) : () => this.#runJob(m, job, refusal, deliveries);
    if (id === null) {
      await work();
      return;
    }
    // One delivery of an id at a time in this host, whether it runs the id's job or stores an
    // outcome under it: a copy taken while the job runs waits for it (kept alive meanwhile),
    // then finds its outcome stored.
    const before = this.#byId.get(id);
    const beat = every(Math.max(50, this.#o.ackWait / 3), () => m.working());
    const mine = (async () => {
      if (before !== undefined) await before;
      return work();
    })();
    const settledMine = mine.then(
      () => {},
      () => {},
    );
    this.#byId.set(id, settledMine);
    try {
      await mine;
    } finally {
      beat.clear();
      if (this.#byId.get(id) === settledMine) this.#byId.delete(id);
    }
  }

  /**
   * Delivery `m` holds `job` but carries message id `claimed`, another id's key: dead-lettered
   * under `job`'s id and acknowledged, not run; `theirs`, the id `claimed` is the key of (null:
   * none), gets an InvalidRequest outcome unless it has one.
   */
  async #squatted(m, job, claimed, theirs, deliveries) {
    const error = new RpcError(CODES.InvalidRequest, '').toJSON();
    error.message = `a message on the jobs subject was published with the message id of ${theirs === null ? `no job (${JSON.stringify(claimed.slice(0, 64))})` : `job ${JSON.stringify(theirs)}`} but holds job ${JSON.stringify(job.id)}: not run`;
    if (theirs !== null) {
      const { outcome, last } = await findOutcome(this.#jsm, this.#n, theirs);
      if (outcome === null) await this.#storeOutcome(theirs, [outcomeText(theirs, false, error, { method: null, host: this.#host, deliveries })], last);
    }
    const letter = { job: { id: job.id, method: methodProblem(job.method) === null ? job.method : null, params: null }, error, deliveries, host: this.#host };
    await this.#storeFitting(unreadableSubject(this.#n, m.string()), [JSON.stringify(letter)]);
    this.#dead++;
    m.ack();
  }

  /** Runs a job read from delivery `m` (readJob's job and refusal) and records it. */
  async #runJob(m, job, refusal, deliveries) {
    // On every delivery, not only redeliveries: a job whose id has an outcome (run before, its
    // acknowledgement lost; submitted again after the duplicate window; forged) never runs again.
    const { outcome, last } = await findOutcome(this.#jsm, this.#n, job.id);
    if (outcome !== null) {
      this.#duplicates++;
      m.ack();
      return;
    }
    if (refusal !== null) {
      await this.#finish(m, job, false, refusal.toJSON(), deliveries, true, last);
      return;
    }
    if (deliveries > this.#o.maxDeliver) {
      const error = new RpcError(CODES.ServerGone, `the job was delivered ${deliveries - 1} times without an outcome: its hosts stopped while running it`);
      await this.#finish(m, job, false, error.toJSON(), deliveries, true, last);
      return;
    }
    let ok;
    let value;
    try {
      value = await withTraceHeaders(m, () => {
        const run = () => this.#pool.call(job.method, job.params ?? []);
        return jobChannel.hasSubscribers ? traced(jobChannel, jobContext('run', job.method, job.id, this.#pool), run) : run();
      });
      ok = true;
    } catch (e) {
      ok = false;
      value = e instanceof RpcError ? e.toJSON() : { code: CODES.InternalError, message: errorText(e) };
    }
    if (!ok && !FINAL.has(value.code) && deliveries < this.#o.maxDeliver) {
      this.#retried++;
      m.nak(this.#o.retryDelay);
      return;
    }
    await this.#finish(m, job, ok, value, deliveries, !ok, last);
  }

  /**
   * Stores the job's outcome (once per id), dead-letters a failed job, then acknowledges it. An
   * outcome too big to store becomes an InternalError outcome naming the limit: the job is
   * recorded and acknowledged, never run again for it. `last`: the sequence of the results
   * subject's last message when the job was found without an outcome (0: none).
   */
  async #finish(m, job, ok, value, deliveries, dead, last) {
    // The method as the outcome names it: a refused job's may be anything.
    const extra = { method: methodProblem(job.method) === null ? job.method : null, host: this.#host, deliveries };
    let text;
    try {
      text = outcomeText(job.id, ok, value, extra);
    } catch (e) {
      ok = false;
      dead = true;
      value = { code: CODES.InternalError, message: `the result cannot be stored as JSON: ${errorText(e)}` };
      text = outcomeText(job.id, false, value, extra);
    }
    const tooBig = (why) => ({ code: CODES.InternalError, message: `the job ran, but its outcome ${why}: it cannot be stored` });
    const { stored, duplicate, why } = await this.#storeOutcome(job.id, [text, (why) => outcomeText(job.id, false, tooBig(why), extra)], last);
    if (why !== null) {
      ok = false;
      dead = true;
      value = tooBig(why);
    }
    if (dead) {
      const letter = (j, error) => JSON.stringify({ job: j, error, deliveries, host: this.#host });
      const error = ok ? null : value;
      // Too big with its params: without them; too big even so (a huge error message): with
      // the error that says so.
      const bare = { id: job.id, method: extra.method, params: null };
      // Once per id, as outcomes are (findOn).
      const deadAt = deadSubject(this.#n, job.id);
      const before = await findOn(this.#jsm, this.#n, deadAt, (d) => (isDeadLetter(d) ? d : null));
      if (before.found === null) {
        await this.#storeFitting(deadAt, [letter(job, error), letter(bare, error), (why) => letter(bare, { code: CODES.InternalError, message: `the dead letter ${why}` })], before.last, true);
      }
      this.#dead++;
    }
    // Not stored and no duplicate: not even the error outcome fits (a server whose max payload
    // is under a few kB). Counted as failed and acknowledged all the same: running it again
    // would not make it fit.
    if (duplicate) this.#duplicates++;
    else if (stored && ok) this.#done++;
    else this.#failed++;
    m.ack();
  }

  /**
   * Stores job `id`'s outcome (storeFitting's `texts`), found missing where its results
   * subject's last message was `last`, as a rollup (findOutcome). Refused because the subject
   * holds a newer message: another run's outcome (then `duplicate`), or something else
   * published there meanwhile (then stored after it). Resolves as storeFitting.
   */
  async #storeOutcome(id, texts, last) {
    const subject = resultSubject(this.#n, id);
    let attempt = await this.#storeFitting(subject, texts, last, true);
    for (let tries = 1; attempt.duplicate; tries++) {
      const now = await findOutcome(this.#jsm, this.#n, id);
      if (now.outcome !== null) break;
      // Each try has lost a race with a message published between a read and a store: a
      // subject under a steady flood. (Rejecting leaves the job unacknowledged: it comes
      // again; the outcome of a squatted id is stored when another squatter or its job does.)
      if (tries === 16) throw new RpcError(CODES.Unavailable, `the outcome of job ${JSON.stringify(id)} could not be stored: its results subject keeps receiving other messages`);
      await sleep(Math.min(2 ** tries, 250));
      attempt = await this.#storeFitting(subject, texts, now.last, true);
    }
    return attempt;
  }

  /**
   * Publishes the first of `texts` that fits on `subject` (a text, or a function of why the one
   * before did not fit), where the subject's last message is `last` (0: it holds none); with
   * `rollup`, JetStream then removes the subject's earlier messages, if any.
   * Resolves `{ stored, duplicate, why }`: duplicate if the subject holds a later message,
   * neither if none fits, why null if the first text fitted.
   * Rejects when the connection fails: the job stays unacknowledged and comes again.
   */
  async #storeFitting(subject, texts, last = 0, rollup = false) {
    const { PubHeaders, JsHeaders } = jetstreamClient();
    let why = null;
    for (const t of texts) {
      const text = typeof t === 'function' ? t(why) : t;
      const headers = natsClient().headers();
      headers.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(last));
      // (Nothing to remove on an empty subject, and a rollup costs the server a purge.)
      if (rollup && last !== 0) headers.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
      const over = overLimit(this.#nc, text, headers);
      if (over !== null) {
        why = over;
        continue;
      }
      try {
        await this.#js.publish(subject, text, { headers });
        return { stored: true, duplicate: false, why };
      } catch (e) {
        const code = e?.code ?? e?.apiError?.()?.err_code;
        if (code === WRONG_LAST_SEQUENCE) return { stored: false, duplicate: true, why };
        if (code !== MESSAGE_TOO_BIG) throw e;
        why = `of ${Buffer.byteLength(text)} bytes exceeds the stream's max message size (${e.message})`;
      }
    }
    return { stored: false, duplicate: false, why };
  }

  /** Takes no more jobs; waits for those in hand to be recorded and acknowledged. */
  async stop() {
    this.#stopped = true;
    this.#slot?.();
    try {
      this.#fetch?.stop();
    } catch {
      // already stopped
    }
    await this.#loop;
    if (this.#running > 0) await new Promise((resolve) => this.#idle.push(resolve));
  }
}

/** The client side: submit, waitFor, results. */
class JobClient {
  #nc;
  #n;
  #ready = null;
  #js = null;
  #jsm = null;

  constructor(nc, n) {
    this.#nc = nc;
    this.#n = n;
  }

  #init() {
    this.#ready ??= ensureStreams(this.#nc, this.#n).then(
      (jsm) => {
        this.#jsm = jsm;
        this.#js = jetstreamClient().jetstream(this.#nc);
      },
      (e) => {
        // Not for good (the server was restarting, say): the next call tries again.
        this.#ready = null;
        throw e;
      },
    );
    return this.#ready;
  }

  /** `promise`, rejected with an RpcError: a failure of NATS or JetStream is Unavailable. */
  #ask(promise, what, data) {
    return promise.catch((e) => {
      if (e instanceof RpcError) throw e;
      throw new RpcError(CODES.Unavailable, `${what}: NATS JetStream did not answer (${errorText(e)})`, data);
    });
  }

  /**
   * Puts a job on the work queue; resolves with `{ id, duplicate }` once JetStream stored it.
   * `duplicate`: this submission was dropped, since the id has an outcome already or was
   * submitted within the stream's duplicate window (2 minutes): each id runs once.
   */
  submit(method, params, options) {
    if (jobChannel.hasSubscribers) {
      let id = null;
      try {
        id = options?.id;
      } catch {
        // #submit reads the options again and refuses them.
      }
      return traced(jobChannel, jobContext('submit', method, typeof id === 'string' ? id : null, null), () => this.#submit(method, params, options));
    }
    return this.#submit(method, params, options);
  }

  async #submit(method, params, options) {
    const methodWhy = methodProblem(method);
    if (methodWhy !== null) throw new RpcError(CODES.InvalidRequest, `submit(): the method ${methodWhy}`);
    const o = knownOptions(options, ['id'], 'submit()');
    const id = o.id ?? crypto.randomUUID();
    checkId(id, 'submit(): options.id');
    if (params === undefined) params = [];
    else if (!Array.isArray(params)) params = [params];
    const trace = activeTraceContext(); // the caller's, before any await
    const text = `{"id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":${toJson(params, 'params')}}`;
    // Not answered: the job may be stored or not; submitted again with the same id, it runs once.
    const what = `submit() of job ${JSON.stringify(id)}, which may or may not be stored (submit it again with the same id: it runs once)`;
    await this.#ask(this.#init(), what, { id });
    // An id with an outcome is not submitted again (hosts would not run it either).
    if ((await this.#ask(findOutcome(this.#jsm, this.#n, id), what, { id })).outcome !== null) return { id, duplicate: true };
    // The id (as its key, which a header can carry) is also the message id: a job submitted
    // twice within the stream's duplicate window is stored once; later, its stored outcome
    // still makes it run once.
    const headers = natsClient().headers();
    headers.set(jetstreamClient().PubHeaders.MsgIdHdr, jobKey(id));
    if (trace !== null) setTraceHeaders(headers, trace);
    const over = overLimit(this.#nc, text, headers);
    if (over !== null) throw new RpcError(CODES.InvalidParams, `the job ${over}: send less in its params`);
    const ack = await this.#ask(this.#js.publish(this.#n.jobs, text, { headers }), what, { id });
    return { id, duplicate: ack.duplicate };
  }

  /** The stored outcome of job `id`, or null. */
  async outcome(id) {
    checkId(id, 'outcome()');
    await this.#ask(this.#init(), 'outcome()');
    return (await this.#ask(findOutcome(this.#jsm, this.#n, id), 'outcome()')).outcome;
  }

  /**
   * Resolves with job `id`'s result once it is recorded, or rejects with its RpcError;
   * `timeout` (ms) rejects with Timeout, `signal` with Aborted, a closed connection or a
   * JetStream request unanswered (the server restarting) with Unavailable.
   */
  async waitFor(id, options) {
    const o = knownOptions(options, ['timeout', 'signal'], 'waitFor()');
    checkId(id, 'waitFor()');
    const timeout = timeoutOption(o.timeout, 'waitFor() options.timeout');
    await this.#ask(this.#init(), 'waitFor()');
    const subject = resultSubject(this.#n, id);
    // Recorded already: read it directly, without a consumer.
    const stored = await this.#ask(findOutcome(this.#jsm, this.#n, id), 'waitFor()');
    if (stored.outcome !== null) return settled(stored.outcome);
    const consumer = await this.#ask(this.#js.consumers.get(this.#n.resultStream, { filter_subjects: subject }), 'waitFor()');
    const messages = await this.#ask(consumer.consume(), 'waitFor()');
    let timer = null;
    const onAbort = () => messages.stop();
    let why = null;
    if (timeout > 0) {
      timer = after(timeout, () => {
        why = new RpcError(CODES.Timeout, `no outcome of job ${JSON.stringify(id)} within ${timeout} ms`);
        messages.stop();
      });
    }
    if (o.signal) {
      if (o.signal.aborted) why = new RpcError(CODES.Aborted, 'waitFor() was aborted');
      o.signal.addEventListener('abort', () => {
        why = new RpcError(CODES.Aborted, 'waitFor() was aborted');
        onAbort();
      });
    }
    try {
      if (why === null) {
        for await (const m of messages) {
          const outcome = outcomeOf(parsed(m), id);
          if (outcome !== null) return settled(outcome);
        }
      }
      throw why ?? new RpcError(CODES.Unavailable, 'the NATS connection closed before the outcome was recorded');
    } finally {
      timer?.clear();
      messages.stop();
    }
  }

  /**
   * Every recorded outcome, then each new one as it is recorded: an async iterable of
   * `{ id, result } | { id, error }` (plus method, host, deliveries). Break to stop.
   */
  results() {
    return this.#follow(`${this.#n.results}.*`, 'results()', (m) => {
      const o = parsed(m);
      const id = o?.id;
      return typeof id === 'string' && jobIdProblem(id) === null && m.subject === resultSubject(this.#n, id) ? outcomeOf(o, id) : null;
    });
  }

  /**
   * Every dead letter so far and each new one: `{ job, error, deliveries, host }`, where `job`
   * is null for a message that held no valid job id (then `excerpt` holds its first 256
   * characters) and `job.params` null when they would not fit in one message with the error.
   */
  deadLetters() {
    return this.#follow(`${this.#n.dead}.*`, 'deadLetters()', (m) => {
      const d = parsed(m);
      return isDeadLetter(d) ? d : null;
    });
  }

  /**
   * Every message of the result stream on `subjects` so far, then each new one, as `read`
   * makes it (null: not one of those, passed over).
   */
  async *#follow(subjects, who, read) {
    await this.#ask(this.#init(), who);
    const consumer = await this.#ask(this.#js.consumers.get(this.#n.resultStream, { filter_subjects: subjects }), who);
    const messages = await this.#ask(consumer.consume(), who);
    try {
      for await (const m of messages) {
        const d = read(m);
        if (d !== null) yield d;
      }
      // The consumer ends only when the connection does: say so, rather than end as if complete.
      throw new RpcError(CODES.Unavailable, 'the NATS connection closed');
    } finally {
      messages.stop();
    }
  }
}

module.exports = { JobWorker, JobClient, jobOptions };
