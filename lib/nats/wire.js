'use strict';
// What travels over NATS: JSON-RPC 2.0 text, and nothing JSON cannot carry. A value that JSON
// text would change silently (NaN → null, a Date → its string, a Map → {}, a dropped key) is
// refused with InvalidParams naming its place, as the local pool refuses what it cannot carry.

const crypto = require('node:crypto');
const { RpcError, CODES, describe, errorText } = require('../errors.js');

/** Why `v` (at `place`) cannot travel as JSON text, or null if it can. */
function refusal(v, place) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(v) ? null : `${place} is ${v}, which JSON text cannot carry`;
    case 'undefined':
      return null; // becomes null, as in a local call
    case 'bigint':
      return `${place} is a BigInt (${describe(v)}), which JSON text cannot carry: send it as a string`;
    case 'object': {
      if (v === null || Array.isArray(v)) return null;
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) return null;
      const kind = ArrayBuffer.isView(v) ? `a ${v.constructor?.name ?? 'typed array'}` : `a ${proto?.constructor?.name ?? 'non-plain object'}`;
      return `${place} is ${kind}, which cannot travel over NATS (only JSON data: objects, arrays, strings, finite numbers, booleans, null)`;
    }
    default:
      return `${place} is a ${typeof v}, which cannot travel over NATS`;
  }
}

/**
 * The JSON text of `value`, or an InvalidParams RpcError thrown. `root` names the value in
 * messages (`params`). Keys whose value is undefined are kept (as null), as a local call keeps
 * them. Cycles, throwing getters and Proxy traps are refused with what was thrown.
 */
function toJson(value, root) {
  // Most values are plain data: checked by a quick walk, they go to JSON.stringify as they
  // are. Anything else (undefined in an object, a non-plain object, deep or cyclic data, a
  // throwing getter) takes the careful path below, which names what it refuses.
  try {
    if (plainData(value, 0)) return JSON.stringify(value);
  } catch {
    // the careful path says why
  }
  return carefulJson(value, root);
}

/** toJson's careful path: every value judged by refusal(), with its place. */
function carefulJson(value, root) {
  const places = new Map();
  // The first call of the replacer is for the value itself (key '', in a wrapper object); a
  // key '' further down is an ordinary key.
  let atRoot = true;
  let text;
  try {
    text = JSON.stringify(value, function replacer(key, _v) {
      const parent = atRoot ? undefined : places.get(this);
      const place = atRoot ? root : Array.isArray(this) ? `${parent}[${key}]` : `${parent}.${key}`;
      // `_v` is what toJSON made of the value: judge the value itself.
      const own = atRoot ? value : this[key];
      atRoot = false;
      const why = refusal(own, place);
      if (why !== null) throw new RpcError(CODES.InvalidParams, why);
      if (own !== null && typeof own === 'object') places.set(own, place);
      return own === undefined ? null : own;
    });
  } catch (e) {
    if (e instanceof RpcError) throw e;
    throw new RpcError(CODES.InvalidParams, `${root} could not be sent: ${errorText(e)}`);
  }
  return text;
}

/** Depth beyond which the quick walk leaves the value to the careful path (cycles end there). */
const PLAIN_DEPTH = 32;

/** True if JSON.stringify gives `v` exactly: finite numbers, strings, booleans, null, arrays
 *  without holes or undefined, and plain objects of such values, no deeper than PLAIN_DEPTH. */
function plainData(v, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object': {
      if (v === null) return true;
      if (depth === PLAIN_DEPTH) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!plainData(v[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      const keys = Object.keys(v);
      for (let i = 0; i < keys.length; i++) if (!plainData(v[keys[i]], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** The text of a request up to its params, by method (a few methods are called over and over). */
const heads = new Map();
const MAX_HEADS = 256;

/** A JSON-RPC request's text, with `params` validated by toJson. */
function requestText(method, params, id) {
  let head = heads.get(method);
  if (head === undefined) {
    head = `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":`;
    if (heads.size < MAX_HEADS) heads.set(method, head);
  }
  return `${head}${toJson(params, 'params')},"id":${id}}`;
}

/** The RpcError of a JSON-RPC error object (as a host answered it). */
function errorOf(error) {
  if (error === null || typeof error !== 'object' || typeof error.code !== 'number') {
    return new RpcError(CODES.InternalError, `the host answered a malformed error: ${describe(error)}`);
  }
  return new RpcError(error.code, typeof error.message === 'string' ? error.message : String(error.message), error.data);
}

/**
 * A cancel: a caller that gave up on calls of a message it sent (their timeout or signal)
 * publishes `{"v":1,"reply":<the message's reply subject>,"secret":<s>,"next":<proof>,"ids":
 * [<the calls' JSON-RPC ids>]}` on `<subject>.cancel`, with no reply subject of its own. Every
 * host hears it, since the caller does not know which host of the queue group took the message.
 *
 * Anyone who subscribes to the service's subject sees the requests, so a cancel must prove it
 * comes from the message's sender (commit and reveal): a message that may be cancelled carries
 * the proof of a secret only its sender knows (header CANCEL_HEADER: proofOf(secret), SHA-256),
 * and its cancel reveals that secret. A secret is spent by the cancel that reveals it (others
 * hear that cancel): the cancel commits to the secret of the message's next cancel in `next`.
 * The host that holds a message with that reply subject and proof cancels the calls named, as
 * an AbortSignal cancels a local call. Anything else (not a cancel of this version, a secret
 * that is not the message's, a message no longer held, ids it does not hold) is ignored: the
 * caller has settled its calls already, and a cancel only spares the host the rest of the work.
 */
const CANCEL_VERSION = 1;
/** A secret (32 random bytes) and a proof (a SHA-256 digest), in base64url. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** Random bytes for SECRETS_AT_ONCE secrets, drawn at once (one draw per secret costs ~7× more). */
const SECRETS_AT_ONCE = 256;
let random = Buffer.alloc(0);
let taken = 0;

/** A new secret for a message's cancel: 32 random bytes, each used once. */
function cancelSecret() {
  if (taken === random.length) {
    random = crypto.randomBytes(32 * SECRETS_AT_ONCE);
    taken = 0;
  }
  taken += 32;
  return random.toString('base64url', taken - 32, taken);
}

/** The proof a message carries of its cancel's `secret`. */
function proofOf(secret) {
  return crypto.createHash('sha256').update(secret).digest('base64url');
}

/** True if `token` can be a secret or a proof (a request's proof header is checked with it). */
function isToken(token) {
  return typeof token === 'string' && TOKEN.test(token);
}

/** A cancel's text: reveals `secret`, commits to `next` (the proof of the next cancel's secret). */
function cancelText(reply, secret, next, ids) {
  return `{"v":${CANCEL_VERSION},"reply":${JSON.stringify(reply)},"secret":"${secret}","next":"${next}","ids":${JSON.stringify(ids)}}`;
}

/** `{ reply, secret, next, ids }` of a cancel's text, or null if the text is not a cancel of this version. */
function parseCancel(text) {
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object' || v.v !== CANCEL_VERSION || typeof v.reply !== 'string' || !isToken(v.secret) || !isToken(v.next) || !Array.isArray(v.ids)) return null;
  return { reply: v.reply, secret: v.secret, next: v.next, ids: v.ids };
}

/**
 * `answer` (a JSON-RPC answer's text) without the stacks of the errors in it. A task-file pool's
 * thrown errors carry their stack (and their causes') for the caller in the same process; a
 * stack names the host's files, which a remote caller has no business reading. Parsed only
 * when the text holds a stack.
 */
function withoutStacks(answer) {
  if (!answer.includes('"stack"')) return answer;
  let parsed;
  try {
    parsed = JSON.parse(answer);
  } catch {
    return answer;
  }
  let changed = false;
  const strip = (data, depth) => {
    if (data === null || typeof data !== 'object' || depth > 16) return;
    if (Object.hasOwn(data, 'stack')) {
      delete data.stack;
      changed = true;
    }
    const cause = data.cause;
    if (cause !== null && typeof cause === 'object') strip(cause.error, depth + 1);
  };
  for (const response of Array.isArray(parsed) ? parsed : [parsed]) {
    if (response !== null && typeof response === 'object' && response.error !== null && typeof response.error === 'object') strip(response.error.data, 0);
  }
  return changed ? JSON.stringify(parsed) : answer;
}

module.exports = { withoutStacks, toJson, carefulJson, requestText, errorOf, cancelSecret, proofOf, isToken, cancelText, parseCancel };
