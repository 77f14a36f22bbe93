'use strict';
// Several locks at once, without deadlock (src/shm/lock_all.rs states the rule and its proof):
// take them in increasing order of their first word's address, which the addon reports and
// which is the same in every thread of the process (and for native commands taking the same
// locks), run the callback, give them back in reverse order however it ends.

const { performance } = require('node:perf_hooks');
const { native } = require('../native.js');
const { RpcError, CODES, invalidParams, fromNative, describe, errorText } = require('../errors.js');
const { checkTimeout, deadline } = require('./wait.js');
const { asAgent } = require('./agent.js');
const { checkFunction, syncResult } = require('./critical-section.js');

/** More locks than any critical section needs; a longer array is a mistake (or a hostile length). */
const MAX_LOCKS = 1024;
/** Each lock class's method giving lockAll `{ address, words, lock(t), lockAsync(t), unlock() }`. */
const LOCKING = Symbol('corepool.locking');

/** The lockAll view of `mutex`, whose `words` Int32 words start at `address`: its own lock, lockAsync and unlock. */
function mutexView(mutex, address, words) {
  return { address, words, lock: (t) => mutex.lock(t), lockAsync: (t) => mutex.lockAsync(t), unlock: () => mutex.unlock() };
}

/** The address of `array[index]`, after the addon checks that `words` elements fit from there. */
function lockAddress(what, array, index, words) {
  try {
    return native.shmAddress(what, array, index, words);
  } catch (e) {
    throw fromNative(e);
  }
}

/** Lock `i`'s lockAll view. */
function viewOf(what, lock, i) {
  let locking;
  try {
    locking = lock !== null && typeof lock === 'object' ? lock[LOCKING] : undefined;
  } catch (e) {
    throw invalidParams(`${what}: reading locks[${i}] threw: ${errorText(e)}`);
  }
  if (typeof locking !== 'function') {
    throw invalidParams(`${what}: locks[${i}] must be a Mutex, Semaphore, OwnedMutex, ReentrantMutex or FairMutex, got ${describe(lock)}`);
  }
  return { at: i, ...locking.call(lock) };
}

/** The locks' lockAll views, in the order to take them. */
function ordered(what, locks) {
  let isArray;
  try {
    isArray = Array.isArray(locks);
  } catch {
    isArray = false; // a revoked Proxy
  }
  if (!isArray) throw invalidParams(`${what}: locks must be an array, got ${describe(locks)}`);
  let list;
  try {
    if (locks.length > MAX_LOCKS) throw invalidParams(`${what}: locks holds ${locks.length} entries; at most ${MAX_LOCKS}`);
    list = Array.from(locks);
  } catch (e) {
    throw e instanceof RpcError ? e : invalidParams(`${what}: reading locks threw: ${errorText(e)}`);
  }
  const views = list.map((lock, i) => viewOf(what, lock, i));
  views.sort((a, b) => a.address - b.address);
  for (let i = 1; i < views.length; i++) {
    // Overlapping words, not only the same first word: a Mutex on a ReentrantMutex's count
    // word would find it taken by the lock taken just before, and wait on itself.
    if (views[i].address < views[i - 1].address + 4 * views[i - 1].words) {
      throw invalidParams(`${what}: locks[${views[i - 1].at}] and locks[${views[i].at}] are on the same memory`);
    }
  }
  return views;
}

function timedOut(what, view, timeoutMs) {
  return new RpcError(CODES.Timeout, `${what}: locks[${view.at}] stayed taken for the ${timeoutMs} ms allowed: raise timeoutMs or hold the locks for less time`);
}

function left(until) {
  return until === Infinity ? undefined : Math.max(0, until - performance.now());
}

/**
 * Gives back `held` in reverse order, all of them even if some refuse; then throws `failure`
 * (what ended the critical section) if there is one, else the first refusal.
 */
function releaseAll(held, failure) {
  let refusal = null;
  for (let i = held.length - 1; i >= 0; i--) {
    try {
      held[i].unlock();
    } catch (e) {
      refusal ??= e;
    }
  }
  if (failure !== null) throw failure.error;
  if (refusal !== null) throw refusal;
}

function checkCall(what, fn, timeoutMs) {
  checkFunction(what, fn);
  checkTimeout(what, timeoutMs);
}

/** Takes every lock (in address order), runs synchronous `fn()`, gives them back in reverse order. Blocks. */
function lockAll(locks, fn, timeoutMs) {
  const views = ordered('lockAll', locks);
  checkCall('lockAll', fn, timeoutMs);
  const until = deadline(timeoutMs);
  const held = [];
  let failure = null;
  let result;
  try {
    for (const view of views) {
      if (!view.lock(left(until))) throw timedOut('lockAll', view, timeoutMs);
      held.push(view);
    }
    result = syncResult('lockAll', fn());
  } catch (error) {
    failure = { error };
  }
  releaseAll(held, failure);
  return result;
}

/** `lockAll` without blocking: runs `fn` as an agent of its own (lib/shm/agent.js) and awaits it. */
function lockAllAsync(locks, fn, timeoutMs) {
  try {
    const views = ordered('lockAllAsync', locks);
    checkCall('lockAllAsync', fn, timeoutMs);
    return asAgent(async () => {
      const until = deadline(timeoutMs);
      const held = [];
      let failure = null;
      let result;
      try {
        for (const view of views) {
          if (!(await view.lockAsync(left(until)))) throw timedOut('lockAllAsync', view, timeoutMs);
          held.push(view);
        }
        result = await fn();
      } catch (error) {
        failure = { error };
      }
      releaseAll(held, failure);
      return result;
    });
  } catch (e) {
    return Promise.reject(e);
  }
}

module.exports = { lockAll, lockAllAsync, LOCKING, lockAddress, mutexView };
