'use strict';
// The fair mutex (src/shm/fair_mutex.rs states the protocol and why it is correct): a ticket
// lock whose waiters may give up by setting their ticket's mark bit, which the unlocker then
// skips. A waiter that may give up draws a ticket only while fewer than SPAN are out (the span
// rule), so that a bit stands for one ticket at most, and giving up never waits for anyone.
// Waiters sleep on their slot's turn word, which every hand-over to a ticket of that slot bumps;
// one waiting for room under the span rule sleeps on SERVING.

const { contract } = require('../native.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord, spinOption, spinPast, pause, NATIVE_HOLDER_SLICE_MS } = require('./wait.js');
const { currentAgent, countHold, refuseUnlock, alreadyHeld, ID_MASK, NATIVE_AGENT } = require('./agent.js');
const { LOCKING, lockAddress, mutexView } = require('./lock-all.js');
const { withLock, withLockAsync } = require('./critical-section.js');

const L = contract.locks;
const SLOTS = L.fairSlots;
const SPAN = L.fairSpan;
const BITS = SPAN / SLOTS;

/** Ticket `t`'s slot: which mark word and turn word are its. */
function slotOf(ticket) {
  return ticket & (SLOTS - 1);
}

/** Ticket `t`'s mark bit in its slot's word (`t` read as an unsigned 32-bit number). */
function bitOf(ticket) {
  return 1 << (Math.floor((ticket >>> 0) / SLOTS) % BITS);
}

/** How many times longer to spin while next in line behind a native holder. */
const NATIVE_HOLDER_SPIN = 20;

/**
 * A mutex that serves waiters in the order they arrived, across threads (a ticket lock): no
 * waiter is overtaken by a later one, so none waits longer than the holders ahead of it; and
 * one with a timeout leaves at its timeout. (Only one with a timeout that arrives while SPAN
 * tickets are out waits for room first, and may be overtaken meanwhile.) Owner-checked like
 * OwnedMutex. Needs `FairMutex.WORDS` Int32 elements from `index`.
 */
class FairMutex {
  #array;
  #next;
  #serving;
  #owner;
  #native;
  #marks;
  #turns;
  #spin;
  #address;

  /** Int32 elements a FairMutex needs. */
  static get WORDS() {
    return L.fairWords;
  }

  constructor(int32Array, index = 0, options) {
    checkWord('FairMutex', int32Array, index);
    this.#spin = spinOption('FairMutex', options);
    this.#address = lockAddress('FairMutex', int32Array, index, L.fairWords);
    this.#array = int32Array;
    this.#next = index + L.fairNext;
    this.#serving = index + L.fairServing;
    this.#owner = index + L.fairOwner;
    this.#native = index + L.fairNative;
    this.#marks = index + L.fairMarks;
    this.#turns = index + L.fairTurns;
  }

  #refuseReentry(what, me) {
    if ((Atomics.load(this.#array, this.#owner) & ID_MASK) === me) throw alreadyHeld(what);
  }

  #hold(me) {
    Atomics.store(this.#array, this.#owner, me);
    countHold(1);
    return true;
  }

  #served(ticket) {
    return Atomics.load(this.#array, this.#serving) === ticket;
  }

  /** The slice to sleep: short once native agents use the lock (the hand-over may come from one, which cannot notify). */
  #slice() {
    return Atomics.load(this.#array, this.#native) !== 0 ? NATIVE_HOLDER_SLICE_MS : undefined;
  }

  /** Takes the lock if it is free and nobody waits. */
  tryLock() {
    const me = currentAgent();
    this.#refuseReentry('FairMutex.tryLock', me);
    const serving = Atomics.load(this.#array, this.#serving);
    if (Atomics.compareExchange(this.#array, this.#next, serving, (serving + 1) | 0) !== serving) return false;
    return this.#hold(me);
  }

  /** Takes a ticket and waits for its turn, at most `timeoutMs`; false if it gave up. Blocks. */
  lock(timeoutMs) {
    const me = currentAgent();
    this.#refuseReentry('FairMutex.lock', me);
    checkTimeout('FairMutex.lock', timeoutMs);
    const until = deadline(timeoutMs);
    let ticket;
    if (until === Infinity) ticket = Atomics.add(this.#array, this.#next, 1);
    else {
      for (;;) {
        const serving = Atomics.load(this.#array, this.#serving);
        ticket = this.#drawWithinSpan(serving);
        if (ticket !== undefined) break;
        if (!waitSlice(this.#array, this.#serving, serving, until, this.#slice())) return false;
      }
    }
    const turn = this.#turns + slotOf(ticket);
    for (;;) {
      if (this.#spinWhileNext(ticket, until)) return this.#hold(me);
      const seen = Atomics.load(this.#array, turn);
      if (this.#served(ticket)) return this.#hold(me);
      if (!waitSlice(this.#array, turn, seen, until, this.#slice())) break;
    }
    return this.#giveUp(ticket) ? this.#hold(me) : false;
  }

  /**
   * A ticket for a waiter that may give up, by the span rule: drawn while fewer than SPAN are
   * out, counted from `serving` (SERVING as read before, or later: it only grows); undefined
   * while SPAN are out.
   */
  #drawWithinSpan(serving) {
    for (;;) {
      const next = Atomics.load(this.#array, this.#next);
      if ((next - serving) >>> 0 >= SPAN) return undefined;
      if (Atomics.compareExchange(this.#array, this.#next, next, (next + 1) | 0) === next) return next;
    }
  }

  /** Leaves the queue with `ticket`, at once; true if its turn came first (the caller then holds the lock). */
  #giveUp(ticket) {
    const marks = this.#marks + slotOf(ticket);
    const bit = bitOf(ticket);
    Atomics.or(this.#array, marks, bit);
    if (!this.#served(ticket)) return false;
    return (Atomics.and(this.#array, marks, ~bit) & bit) !== 0;
  }

  /**
   * Polls for the turn of `ticket` while it is next in line (true once it is served); further
   * back, the turn is at least a whole critical section away, not worth spinning for. Stops
   * at `until`.
   */
  #spinWhileNext(ticket, until) {
    // A native holder cannot wake a sleeper: poll longer before sleeping behind one.
    const rounds = (Atomics.load(this.#array, this.#owner) & NATIVE_AGENT) !== 0 ? this.#spin * NATIVE_HOLDER_SPIN : this.#spin;
    for (let round = 0; round < rounds && !spinPast(round, until); round++) {
      const serving = Atomics.load(this.#array, this.#serving);
      if (serving === ticket) return true;
      if (((ticket - serving) | 0) > 1) return false;
      if (pause !== undefined) pause(round);
    }
    return false;
  }

  /** `lock` without blocking the event loop (and without spinning). */
  async lockAsync(timeoutMs) {
    const me = currentAgent();
    this.#refuseReentry('FairMutex.lockAsync', me);
    checkTimeout('FairMutex.lockAsync', timeoutMs);
    const until = deadline(timeoutMs);
    let ticket;
    if (until === Infinity) ticket = Atomics.add(this.#array, this.#next, 1);
    else {
      for (;;) {
        const serving = Atomics.load(this.#array, this.#serving);
        ticket = this.#drawWithinSpan(serving);
        if (ticket !== undefined) break;
        if (!(await waitSliceAsync(this.#array, this.#serving, serving, until, this.#slice()))) return false;
      }
    }
    const turn = this.#turns + slotOf(ticket);
    for (;;) {
      const seen = Atomics.load(this.#array, turn);
      if (this.#served(ticket)) return this.#hold(me);
      if (!(await waitSliceAsync(this.#array, turn, seen, until, this.#slice()))) break;
    }
    return this.#giveUp(ticket) ? this.#hold(me) : false;
  }

  /** Hands the lock to the next waiting ticket. Throws unless the caller holds it. */
  unlock() {
    const me = currentAgent();
    const refusal = refuseUnlock('FairMutex.unlock', Atomics.load(this.#array, this.#owner), me);
    if (refusal !== null) throw refusal;
    Atomics.store(this.#array, this.#owner, 0);
    const before = Atomics.load(this.#array, this.#serving);
    let serving = before;
    for (;;) {
      serving = (serving + 1) | 0;
      Atomics.store(this.#array, this.#serving, serving);
      const marks = this.#marks + slotOf(serving);
      const bit = bitOf(serving);
      // A ticket whose bit is set gave up: skip it. Mostly the bit is clear, and a plain read
      // does (a waiter that sets it now sees its turn).
      if ((Atomics.load(this.#array, marks) & bit) === 0 || (Atomics.and(this.#array, marks, ~bit) & bit) === 0) break;
    }
    const turn = this.#turns + slotOf(serving);
    Atomics.add(this.#array, turn, 1);
    Atomics.notify(this.#array, turn);
    // Wake the ticket after it too, if one is out: it is next in line now, and spinning it can
    // take the lock the moment it is handed over, instead of after a wake-up.
    const next = Atomics.load(this.#array, this.#next);
    const after = (serving + 1) | 0;
    if (next !== after) {
      const afterTurn = this.#turns + slotOf(after);
      Atomics.add(this.#array, afterTurn, 1);
      Atomics.notify(this.#array, afterTurn);
    }
    // Waiters kept out by the span rule sleep on SERVING. NEXT is read after SERVING moved: one
    // that went to sleep on `before` saw NEXT this far already.
    if ((next - before) >>> 0 >= SPAN) Atomics.notify(this.#array, this.#serving);
    countHold(-1);
  }

  withLock(fn, timeoutMs) {
    return withLock('FairMutex.withLock', this, fn, timeoutMs);
  }

  /** Runs `fn` as an agent of its own (lib/shm/agent.js) holding the lock. */
  withLockAsync(fn, timeoutMs) {
    return withLockAsync('FairMutex.withLockAsync', this, fn, timeoutMs, { agent: true });
  }

  /** The holder's agent id, or null (free, or between two holders). */
  get owner() {
    return Atomics.load(this.#array, this.#owner) || null;
  }

  get heldByMe() {
    return Atomics.load(this.#array, this.#owner) === currentAgent();
  }

  /**
   * Agents holding a ticket and waiting for their turn (a snapshot, which may count ones that
   * gave up and are not skipped yet, and leaves out any kept from drawing by the span rule).
   */
  get waiting() {
    return Math.max(0, ((Atomics.load(this.#array, this.#next) - Atomics.load(this.#array, this.#serving)) | 0) - 1);
  }

  /** Held (or being handed over): a ticket is out. */
  get locked() {
    return Atomics.load(this.#array, this.#next) !== Atomics.load(this.#array, this.#serving);
  }

  [LOCKING]() {
    return mutexView(this, this.#address, L.fairWords);
  }
}

module.exports = { FairMutex };
