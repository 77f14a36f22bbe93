'use strict';
// Agents: who holds an owner-checked lock (OwnedMutex, ReentrantMutex, FairMutex), and what
// such a lock refuses. src/shm/agent.rs states the id layout; ids come from the addon's
// process-wide counter, which every worker_thread shares, so no two agents (JavaScript or
// native) ever have the same id.
//
// An agent is a JavaScript thread, or an async context that the thread opens: withLockAsync
// and lockAllAsync run their callback as a new agent (AsyncLocalStorage carries it through
// awaits and callbacks), so that concurrent async tasks of one thread exclude each other and a
// nested call inside one task sees its own hold. Outside such a context the agent is the
// thread. A context closes when its callback settles; code it left behind (a timer that fires
// later) then runs as the thread. A closed context's id is reused for the next context only if
// it held nothing when it closed, so an id in a lock word always names its holder.

const { AsyncLocalStorage } = require('node:async_hooks');
const { native, contract } = require('../native.js');

const { idLimit: ID_LIMIT, nativeAgent: NATIVE_AGENT } = contract.locks;
/** The id part of a lock word. */
const ID_MASK = ID_LIMIT - 1;

const contexts = new AsyncLocalStorage();
/** Ids of contexts that closed holding nothing. */
const reusable = [];
let threadAgent = 0;

function newId() {
  return native.lockAgent();
}

/** The calling agent's id. */
function currentAgent() {
  const context = contexts.getStore();
  if (context !== undefined && context.open) return context.id;
  if (threadAgent === 0) threadAgent = newId();
  return threadAgent;
}

/** Records that the calling agent took (+1) or gave back (−1) a hold. */
function countHold(delta) {
  const context = contexts.getStore();
  if (context !== undefined && context.open) context.holds += delta;
}

/** Runs async `fn()` as a new agent, unless it already runs inside an open context (then as that one). */
async function asAgent(fn) {
  const outer = contexts.getStore();
  if (outer !== undefined && outer.open) return fn();
  const context = { id: reusable.pop() ?? newId(), open: true, holds: 0 };
  try {
    return await contexts.run(context, fn);
  } finally {
    context.open = false;
    if (context.holds === 0) reusable.push(context.id);
  }
}

/** How a message names the agent with id `id`. */
function agentName(id) {
  return `${(id & NATIVE_AGENT) !== 0 ? 'native' : 'JavaScript'} agent ${id}`;
}

function lockError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

/** `unlock` by an agent that is not the holder recorded in `word` (or of a free lock); else nothing. */
function refuseUnlock(what, word, me) {
  const owner = word & ID_MASK;
  if (owner === 0) return lockError('ERR_LOCK_NOT_LOCKED', `${what}: the lock is not locked`);
  if (owner !== me) {
    return lockError('ERR_LOCK_NOT_OWNER', `${what}: the lock is held by ${agentName(owner)}, not by the caller (${agentName(me)})`);
  }
  return null;
}

function alreadyHeld(what) {
  return lockError(
    'ERR_LOCK_ALREADY_HELD',
    `${what}: the caller already holds this lock, which is not reentrant: waiting would never end`,
  );
}

module.exports = { currentAgent, countHold, asAgent, refuseUnlock, alreadyHeld, lockError, ID_MASK, NATIVE_AGENT };
