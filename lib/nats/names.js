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
// <key> is the job id in base64url, since an id may hold characters a subject token cannot;
// a message on the jobs subject that holds no valid job id (not JSON, or its id breaks the rule
// below) is dead-lettered under `~<sha-256 of its text in base64url>`, which no id's key spells.
//
// A subject travels in a protocol line of the server, which closes the connection of a client
// that sends a line over 4,096 bytes (with a reply subject and sizes). So a job id is 1 to
// MAX_JOB_ID UTF-16 units (3 UTF-8 bytes a unit at most: a key of at most 4 * MAX_JOB_ID
// characters), and a service subject at most MAX_SUBJECT_BYTES: the longest job subject,
// `<subject>.results.<key>`, is 2,057 bytes, leaving room for the reply subject.

const crypto = require('node:crypto');
const { describe } = require('../errors.js');

const { native } = require('../native.js');

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
// A subject of tokens without wildcards or spaces.
const SUBJECT = /^[^.*>\s]+(\.[^.*>\s]+)*$/;
const MAX_SUBJECT_BYTES = 1024;
const MAX_JOB_ID = 256;
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

/**
 * Why `id` is not a job id, as the end of a sentence about it ("…id must be …, got …"), or
 * null: the one rule of submit(), waitFor(), outcome() and the hosts.
 */
function jobIdProblem(id) {
  // Well-formed: a lone surrogate would be encoded as U+FFFD, sharing its key with other ids.
  if (typeof id === 'string' && id.length >= 1 && id.length <= MAX_JOB_ID && id.isWellFormed()) return null;
  const got = typeof id === 'string' && id.length > MAX_JOB_ID ? `a string of ${id.length} characters` : typeof id === 'string' && id !== '' ? `${describe(id)}, which holds a lone surrogate` : describe(id);
  return `must be a string of 1 to ${MAX_JOB_ID} characters (well-formed UTF-16), got ${got}`;
}

/** A valid job id's key (see the module doc); throws if `id` breaks the rule. */
function jobKey(id) {
  const why = jobIdProblem(id);
  if (why !== null) throw new TypeError(`corepool/nats: a job id ${why}`);
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The job id whose key is `key`, or null if `key` is no job id's key. */
function idOfKey(key) {
  const id = Buffer.from(key, 'base64url').toString('utf8');
  return jobIdProblem(id) === null && jobKey(id) === key ? id : null;
}

/** The results subject of one job id. */
function resultSubject(n, id) {
  return `${n.results}.${jobKey(id)}`;
}

/** The dead-letter subject of one job id. */
function deadSubject(n, id) {
  return `${n.dead}.${jobKey(id)}`;
}

/** The dead-letter subject of a message on the jobs subject that holds no valid job id. */
function unreadableSubject(n, text) {
  return `${n.dead}.~${crypto.createHash('sha256').update(text).digest('base64url')}`;
}

/** `name` and `subject` options, checked (TypeError naming the option). */
function serviceOptions(o, who) {
  const name = o.name ?? 'corepool';
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`corepool/nats: ${who} options.name must be 1–64 letters, digits, '-' or '_' (a NATS service name), got ${JSON.stringify(name)}`);
  }
  const subject = o.subject ?? name;
  if (typeof subject !== 'string' || !SUBJECT.test(subject) || subject.startsWith('$') || Buffer.byteLength(subject) > MAX_SUBJECT_BYTES) {
    const shown = typeof subject === 'string' && subject.length > 80 ? `a string of ${Buffer.byteLength(subject)} bytes` : JSON.stringify(subject);
    throw new TypeError(`corepool/nats: ${who} options.subject must be a NATS subject without wildcards or spaces, of at most ${MAX_SUBJECT_BYTES} bytes, got ${shown}`);
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

module.exports = { SUBJECT, names, jobIdProblem, jobKey, idOfKey, resultSubject, deadSubject, unreadableSubject, serviceOptions, knownOptions, wholeOption, timeoutOption, checkConnection, STATUS_HEADER, CANCEL_HEADER, BUSY, WORKING, HEARTBEAT_MS };
