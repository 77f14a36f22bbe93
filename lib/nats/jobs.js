'use strict';
// Durable jobs on JetStream: RemotePool#submit puts a job on the service's work-queue stream;
// hosts served with `durable` pull jobs, run them on their pool, record each job's outcome, and
// only then acknowledge it. Subjects and streams: lib/nats/names.js.
//
// Invariants:
// - A job is acknowledged only after its outcome is stored: a host that dies before that leaves
//   the job unacknowledged, and JetStream delivers it again after `ackWait`. Execution is
//   at-least-once.
// - An outcome is stored at most once per job id: it is published with "expected last subject
//   sequence 0" on the job's own results subject, so a second run's outcome is refused by the
//   stream. With the at-least-once delivery, every job's outcome is recorded exactly once.
// - A host holds at most `inFlight` jobs; while one runs longer than a third of `ackWait`, the
//   host tells JetStream it is still working on it (inProgress), so a long job is not handed to
//   another host.
// - A job that settles with an error that running it again could change (CommandFailed,
//   InternalError, Timeout, ServerGone, …) is handed back (nak) for another try, until it was
//   delivered `maxDeliver` times; then, as for errors no retry changes (ParseError,
//   InvalidRequest, MethodNotFound, InvalidParams), its outcome is that error and the job with
//   its error goes to its dead-letter subject. A job delivered more than `maxDeliver` times
//   without an outcome (its hosts died on it) is not run again: it is dead-lettered.

const crypto = require('node:crypto');
const { RpcError, CODES, describe, errorText } = require('../errors.js');
const { jetstreamClient } = require('./peer.js');
const { toJson, errorOf } = require('./wire.js');
const { knownOptions, wholeOption, timeoutOption, resultSubject, deadSubject } = require('./names.js');
const { after, every, sleep } = require('../timer.js');

const JOB_OPTIONS = ['inFlight', 'ackWait', 'maxDeliver', 'retryDelay'];
/** Errors that running the job again cannot change: recorded at once. */
const FINAL = new Set([CODES.ParseError, CODES.InvalidRequest, CODES.MethodNotFound, CODES.InvalidParams]);
/** How long a pull waits for jobs before asking again (ms). */
const PULL_EXPIRES_MS = 1000;
/** JetStream's API error code: the subject already holds a message (our outcome exists). */
const WRONG_LAST_SEQUENCE = 10071;
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
  await addStream(jsm, { name: n.resultStream, subjects: [`${n.results}.*`, `${n.dead}.*`], storage: 'file' });
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

async function addStream(jsm, config) {
  try {
    await jsm.streams.info(config.name);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (e) {
      // Another host or client added it meanwhile.
      await jsm.streams.info(config.name).catch(() => {
        throw e;
      });
    }
  }
}

/** The text of a job's stored outcome. */
function outcomeText(id, ok, value, extra) {
  const o = ok ? { id, result: value ?? null } : { id, error: value };
  return JSON.stringify({ ...o, ...extra });
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
    let job;
    try {
      job = JSON.parse(m.string());
    } catch {
      job = null;
    }
    if (job === null || typeof job !== 'object' || typeof job.id !== 'string' || job.id === '' || typeof job.method !== 'string') {
      // Not a job of corepool's making: nothing to record it under.
      m.term('not a corepool job');
      this.#dead++;
      return;
    }
    const deliveries = m.info.deliveryCount;
    if (deliveries > this.#o.maxDeliver) {
      const error = new RpcError(CODES.ServerGone, `the job was delivered ${deliveries - 1} times without an outcome: its hosts stopped while running it`);
      await this.#finish(m, job, false, error.toJSON(), deliveries, true);
      return;
    }
    // A job run before whose acknowledgement was lost: its outcome is stored already.
    if (deliveries > 1 && (await this.#stored(job.id))) {
      this.#duplicates++;
      m.ack();
      return;
    }
    const beat = every(Math.max(50, this.#o.ackWait / 3), () => m.working());
    let ok;
    let value;
    try {
      value = await this.#pool.call(job.method, job.params ?? []);
      ok = true;
    } catch (e) {
      ok = false;
      value = e instanceof RpcError ? e.toJSON() : { code: CODES.InternalError, message: errorText(e) };
    } finally {
      beat.clear();
    }
    if (!ok && !FINAL.has(value.code) && deliveries < this.#o.maxDeliver) {
      this.#retried++;
      m.nak(this.#o.retryDelay);
      return;
    }
    await this.#finish(m, job, ok, value, deliveries, !ok);
  }

  async #stored(id) {
    const found = await this.#jsm.streams.getMessage(this.#n.resultStream, { last_by_subj: resultSubject(this.#n, id) }).catch(() => null);
    return found !== null;
  }

  /** Stores the job's outcome (once per id), dead-letters a failed job, then acknowledges it. */
  async #finish(m, job, ok, value, deliveries, dead) {
    const extra = { method: job.method, host: this.#host, deliveries };
    let text;
    try {
      text = outcomeText(job.id, ok, value, extra);
    } catch (e) {
      ok = false;
      dead = true;
      text = outcomeText(job.id, false, { code: CODES.InternalError, message: `the result cannot be stored as JSON: ${errorText(e)}` }, extra);
    }
    const stored = await this.#store(resultSubject(this.#n, job.id), text);
    if (dead) {
      await this.#store(deadSubject(this.#n, job.id), JSON.stringify({ job, error: ok ? null : JSON.parse(text).error, deliveries, host: this.#host }));
      this.#dead++;
    }
    if (stored) {
      if (ok) this.#done++;
      else this.#failed++;
    } else this.#duplicates++;
    m.ack();
  }

  /** Publishes `text` as the only message of `subject`; false if it holds one already. */
  async #store(subject, text) {
    try {
      await this.#js.publish(subject, text, { expect: { lastSubjectSequence: 0 } });
      return true;
    } catch (e) {
      if (e?.code === WRONG_LAST_SEQUENCE || e?.apiError?.()?.err_code === WRONG_LAST_SEQUENCE) return false;
      throw e;
    }
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
    this.#ready ??= ensureStreams(this.#nc, this.#n).then((jsm) => {
      this.#jsm = jsm;
      this.#js = jetstreamClient().jetstream(this.#nc);
    });
    return this.#ready;
  }

  /** Puts a job on the work queue; resolves with `{ id, duplicate }` once JetStream stored it. */
  async submit(method, params, options) {
    if (typeof method !== 'string') throw new RpcError(CODES.InvalidRequest, `the method must be a string, got ${describe(method)}`);
    const o = knownOptions(options, ['id'], 'submit()');
    const id = o.id ?? crypto.randomUUID();
    if (typeof id !== 'string' || id === '' || id.length > 256) throw new RpcError(CODES.InvalidRequest, `options.id must be a string of 1 to 256 characters, got ${describe(id)}`);
    if (params === undefined) params = [];
    else if (!Array.isArray(params)) params = [params];
    const text = `{"id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":${toJson(params, 'params')}}`;
    await this.#init();
    // The id is also the message id: a job submitted twice within the stream's duplicate
    // window (2 minutes) is stored once; later, its stored outcome still makes it run once.
    const ack = await this.#js.publish(this.#n.jobs, text, { msgID: id });
    return { id, duplicate: ack.duplicate };
  }

  /** The stored outcome of job `id`, or null. */
  async outcome(id) {
    await this.#init();
    const m = await this.#jsm.streams.getMessage(this.#n.resultStream, { last_by_subj: resultSubject(this.#n, id) });
    return m === null ? null : m.json();
  }

  /**
   * Resolves with job `id`'s result once it is recorded, or rejects with its RpcError;
   * `timeout` (ms) rejects with Timeout, `signal` with Aborted.
   */
  async waitFor(id, options) {
    const o = knownOptions(options, ['timeout', 'signal'], 'waitFor()');
    if (typeof id !== 'string' || id === '') throw new RpcError(CODES.InvalidRequest, `waitFor() takes a job id string, got ${describe(id)}`);
    const timeout = timeoutOption(o.timeout, 'waitFor() options.timeout');
    await this.#init();
    const subject = resultSubject(this.#n, id);
    // Recorded already: read it directly, without a consumer.
    const stored = await this.#jsm.streams.getMessage(this.#n.resultStream, { last_by_subj: subject });
    if (stored !== null) return settled(stored.json());
    const consumer = await this.#js.consumers.get(this.#n.resultStream, { filter_subjects: subject });
    const messages = await consumer.consume();
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
        for await (const m of messages) return settled(m.json());
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
    return this.#follow(`${this.#n.results}.*`);
  }

  /** Every dead letter so far and each new one: `{ job, error, deliveries, host }`. */
  deadLetters() {
    return this.#follow(`${this.#n.dead}.*`);
  }

  /** Every message of the result stream on `subjects` so far, then each new one, parsed. */
  async *#follow(subjects) {
    await this.#init();
    const consumer = await this.#js.consumers.get(this.#n.resultStream, { filter_subjects: subjects });
    const messages = await consumer.consume();
    try {
      for await (const m of messages) yield m.json();
      // The consumer ends only when the connection does: say so, rather than end as if complete.
      throw new RpcError(CODES.Unavailable, 'the NATS connection closed');
    } finally {
      messages.stop();
    }
  }
}

module.exports = { JobWorker, JobClient, jobOptions };
