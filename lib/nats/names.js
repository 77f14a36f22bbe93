'use strict';
// The names one corepool service uses on NATS, derived from its `name` and `subject` in this one
// place, so hosts and clients always agree:
//
//   <subject>                     JSON-RPC calls, a queue group of the hosts
//   <subject>.host.<id>           JSON-RPC calls for one host (its services id), which a
//                                 client sends to spread messages evenly over the hosts
//   <subject>.cancel              cancels of calls whose caller gave up on them, heard by
//                                 every host (lib/nats/wire.js says what they hold)
//   $SRV.{PING,INFO,STATS}[.<name>[.<id>]]  the NATS services protocol (discovery, stats)
//   <subject>.jobs                durable jobs (stream <name>-jobs, work-queue retention;
//                                 consumer <name>-hosts, shared by every host)
//   <subject>.results.<key>       one outcome per job id (stream <name>-results)
//   <subject>.dead.<key>          a job that failed for good, with its error (same stream)
//
// <key> is the job id in base64url, since an id may hold characters a subject token cannot.

const { native } = require('../native.js');

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
// A subject of tokens without wildcards or spaces.
const SUBJECT = /^[^.*>\s]+(\.[^.*>\s]+)*$/;
/**
 * The header of a host's message that is not an answer: `busy` (the host is at its concurrency:
 * send the message again, another host may take it) or `working` (the host still has the
 * message in hand). A host says `working` every HEARTBEAT_MS for each message it holds, so a
 * client that hears nothing of a message for longer knows its host or the connection is gone.
 */
const STATUS_HEADER = 'Corepool-Status';
/** The header of a request that may be cancelled: the proof of its cancel's secret (lib/nats/wire.js). */
const CANCEL_HEADER = 'Corepool-Cancel';
const BUSY = 'busy';
const WORKING = 'working';
const HEARTBEAT_MS = 500;

function names(name, subject) {
  return Object.freeze({
    name,
    subject,
    cancel: `${subject}.cancel`,
    host: (id) => `${subject}.host.${id}`,
    jobs: `${subject}.jobs`,
    results: `${subject}.results`,
    dead: `${subject}.dead`,
    jobStream: `${name}-jobs`,
    resultStream: `${name}-results`,
    consumer: `${name}-hosts`,
  });
}

/** The results subject of one job id. */
function resultSubject(n, id) {
  return `${n.results}.${Buffer.from(id, 'utf8').toString('base64url')}`;
}

/** The dead-letter subject of one job id. */
function deadSubject(n, id) {
  return `${n.dead}.${Buffer.from(id, 'utf8').toString('base64url')}`;
}

/** `name` and `subject` options, checked (TypeError naming the option). */
function serviceOptions(o, who) {
  const name = o.name ?? 'corepool';
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`corepool/nats: ${who} options.name must be 1–64 letters, digits, '-' or '_' (a NATS service name), got ${JSON.stringify(name)}`);
  }
  const subject = o.subject ?? name;
  if (typeof subject !== 'string' || !SUBJECT.test(subject) || subject.startsWith('$')) {
    throw new TypeError(`corepool/nats: ${who} options.subject must be a NATS subject without wildcards or spaces, got ${JSON.stringify(subject)}`);
  }
  return names(name, subject);
}

/** Checks that `options` is undefined or an object of only these keys; returns it (or {}). */
function knownOptions(options, allowed, who) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new TypeError(`corepool/nats: ${who} options must be an object, got ${String(options)}`);
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw new TypeError(`corepool/nats: unknown ${who} option '${key}' (expected ${allowed.join(', ')})`);
  }
  return options;
}

/** A whole number option in [min, max] (TypeError/RangeError naming it). */
function wholeOption(value, fallback, min, max, what) {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new TypeError(`corepool/nats: ${what} must be a number, got ${typeof value}`);
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`corepool/nats: ${what} must be a whole number from ${min} to ${max}, got ${value}`);
  return value;
}

/** A timeout option in ms: 0 (or undefined) and Infinity mean none (RangeError naming it otherwise). */
function timeoutOption(v, what) {
  // The one rule of every timeout, a local call's own (src/bindings/pool/arguments.rs).
  const problem = native.timeoutProblem(v);
  if (problem !== null) throw new RangeError(`corepool/nats: ${what} ${problem}`);
  return v ?? 0;
}

/** The NATS connection argument: anything with the client's request/subscribe/publish. */
function checkConnection(nc, who) {
  if (nc === null || typeof nc !== 'object' || typeof nc.request !== 'function' || typeof nc.subscribe !== 'function' || typeof nc.publish !== 'function') {
    throw new TypeError(`corepool/nats: ${who} needs a NATS connection (from connect() of @nats-io/transport-node), got ${nc === null ? 'null' : typeof nc}`);
  }
}

module.exports = { SUBJECT, names, resultSubject, deadSubject, serviceOptions, knownOptions, wholeOption, timeoutOption, checkConnection, STATUS_HEADER, CANCEL_HEADER, BUSY, WORKING, HEARTBEAT_MS };
