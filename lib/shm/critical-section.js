'use strict';
// withLock and withLockAsync, written once for every lock class (Mutex, OwnedMutex,
// ReentrantMutex, FairMutex): each class's methods call these with their own name for
// messages. Whatever `fn` does, the lock is given back before the call returns or settles.

const { types } = require('node:util');
const { RpcError, CODES, invalidParams, describe } = require('../errors.js');
const { asAgent } = require('./agent.js');

/**
 * `result`, the value of a synchronous critical section `what`, unless it is a promise: the
 * locks are given back when `fn` returns, so the rest of an async `fn` would run unlocked.
 * (types.isPromise runs no code of the value's, as reading a `then` could.)
 */
function syncResult(what, result) {
  if (types.isPromise(result)) {
    throw invalidParams(`${what}: fn returned a promise, whose rest would run after the locks are given back: use ${what}Async`);
  }
  return result;
}

function timedOut(what, timeoutMs) {
  return new RpcError(CODES.Timeout, `${what}: the lock stayed taken for ${timeoutMs} ms: raise timeoutMs or hold the lock for less time`);
}

function checkFunction(what, fn) {
  if (typeof fn !== 'function') throw invalidParams(`${what}: fn must be a function, got ${describe(fn)}`);
}

/** Runs synchronous `fn()` holding `lock` (taken with `lock.lock(timeoutMs)`); throws RpcError Timeout if it stays taken. */
function withLock(what, lock, fn, timeoutMs) {
  checkFunction(what, fn);
  if (!lock.lock(timeoutMs)) throw timedOut(what, timeoutMs);
  try {
    return syncResult(what, fn());
  } finally {
    lock.unlock();
  }
}

/** Awaits `lock.lockAsync(timeoutMs)`, then awaits `fn()` holding it. `fn` is checked already. */
async function heldWhile(what, lock, fn, timeoutMs) {
  if (!(await lock.lockAsync(timeoutMs))) throw timedOut(what, timeoutMs);
  try {
    return await fn();
  } finally {
    lock.unlock();
  }
}

/**
 * `withLock` for the main thread. An owner-checked lock (`agent: true`) runs `fn` as an agent
 * of its own (lib/shm/agent.js), so that concurrent tasks of one thread exclude each other; a
 * non-function `fn` then throws at once, as the check runs before any promise exists.
 */
function withLockAsync(what, lock, fn, timeoutMs, { agent }) {
  checkFunction(what, fn);
  return agent ? asAgent(() => heldWhile(what, lock, fn, timeoutMs)) : heldWhile(what, lock, fn, timeoutMs);
}

module.exports = { withLock, withLockAsync, checkFunction, syncResult };
