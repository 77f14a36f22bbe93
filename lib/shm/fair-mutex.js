'use strict';
// The fair mutex (src/shm/fair_mutex.rs states the protocol and why it is correct): a ticket
// lock whose waiters may give up by marking their ticket, which the unlocker then skips.
// Waiters sleep on their slot's turn word, which every hand-over to a ticket of that slot bumps.

const { contract } = require('../native.js');
const { checkTimeout, deadline, waitSlice, waitSliceAsync, checkWord, spinOption, spinPast, pause, NATIVE_HOLDER_SLICE_MS } = require('./wait.js');
const { currentAgent, countHold, refuseUnlock, alreadyHeld, ID_MASK, NATIVE_AGENT } = require('./agent.js');
const { LOCKING, lockAddress, mutexView } = require('./lock-all.js');
const { withLock, withLockAsync } = require('./critical-section.js');

const L = contract.locks;
const SLOT_BITS = L.fairSlots - 1;

/** Ticket `t`'s mark: `t` with the slot bits replaced by a 1 (never 0, distinct within a slot). */
function markOf(ticket) {
  return (ticket & ~SLOT_BITS) | 1;
}

/** How many times longer to spin while next in line behind a native holder. */
const NATIVE_HOLDER_SPIN = 20;

/** What became of a ticket that tried to leave the queue. */
const LEFT = 0;
const SERVED = 1;
const SLOT_BUSY = 2;

/**
 * A mutex that serves waiters in the order they arrived, across threads (a ticket lock): no
 * waiter is overtaken by a later one, so none waits longer than the holders ahead of it.
 * Owner-checked like OwnedMutex. Needs `FairMutex.WORDS` Int32 elements from `index`.
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
    const ticket = Atomics.add(this.#array, this.#next, 1);
    const until = deadline(timeoutMs);
    const turn = this.#turns + (ticket & SLOT_BITS);
    for (;;) {
      if (this.#spinWhileNext(ticket, until)) return this.#hold(me);
      const seen = Atomics.load(this.#array, turn);
      if (this.#served(ticket)) return this.#hold(me);
      if (!waitSlice(this.#array, turn, seen, until, this.#slice())) break;
    }
    for (;;) {
      const outcome = this.#withdraw(ticket);
      if (outcome === SERVED) return this.#hold(me);
      if (outcome === LEFT) return false;
      // More tickets out than slots: wait for the slot, or for the turn.
      Atomics.wait(this.#array, turn, Atomics.load(this.#array, turn), NATIVE_HOLDER_SLICE_MS);
    }
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
    const ticket = Atomics.add(this.#array, this.#next, 1);
    const until = deadline(timeoutMs);
    const turn = this.#turns + (ticket & SLOT_BITS);
    for (;;) {
      const seen = Atomics.load(this.#array, turn);
      if (this.#served(ticket)) return this.#hold(me);
      if (!(await waitSliceAsync(this.#array, turn, seen, until, this.#slice()))) break;
    }
    for (;;) {
      const outcome = this.#withdraw(ticket);
      if (outcome === SERVED) return this.#hold(me);
      if (outcome === LEFT) return false;
      await waitSliceAsync(this.#array, turn, Atomics.load(this.#array, turn), Infinity, NATIVE_HOLDER_SLICE_MS);
    }
  }

  #withdraw(ticket) {
    const slot = this.#marks + (ticket & SLOT_BITS);
    const mark = markOf(ticket);
    if (Atomics.compareExchange(this.#array, slot, 0, mark) !== 0) return this.#served(ticket) ? SERVED : SLOT_BUSY;
    if (!this.#served(ticket)) return LEFT;
    return Atomics.compareExchange(this.#array, slot, mark, 0) === mark ? SERVED : LEFT;
  }

  /** Hands the lock to the next waiting ticket. Throws unless the caller holds it. */
  unlock() {
    const me = currentAgent();
    const refusal = refuseUnlock('FairMutex.unlock', Atomics.load(this.#array, this.#owner), me);
    if (refusal !== null) throw refusal;
    Atomics.store(this.#array, this.#owner, 0);
    let serving = Atomics.load(this.#array, this.#serving);
    let slot;
    do {
      serving = (serving + 1) | 0;
      Atomics.store(this.#array, this.#serving, serving);
      slot = serving & SLOT_BITS;
      // A ticket whose mark is there gave up: skip it.
    } while (Atomics.compareExchange(this.#array, this.#marks + slot, markOf(serving), 0) === markOf(serving));
    Atomics.add(this.#array, this.#turns + slot, 1);
    Atomics.notify(this.#array, this.#turns + slot);
    // Wake the ticket after it too, if one is out: it is next in line now, and spinning it can
    // take the lock the moment it is handed over, instead of after a wake-up.
    const after = (serving + 1) | 0;
    if (Atomics.load(this.#array, this.#next) !== after) {
      const afterSlot = this.#turns + (after & SLOT_BITS);
      Atomics.add(this.#array, afterSlot, 1);
      Atomics.notify(this.#array, afterSlot);
    }
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

  /** Agents waiting for their turn (a snapshot, which may count one that gave up and is not skipped yet). */
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
