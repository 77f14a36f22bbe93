//! A fair (FIFO) mutex: a ticket lock whose waiters may give up, on 36 Int32 words.
//!
//! ```text
//!   word 0            NEXT      the next ticket to hand out
//!   word 1            SERVING   the ticket whose turn it is
//!   word 2            OWNER     the holder's agent id, 0 while free or being handed over
//!   word 3            NATIVE    1 once a native agent has queued on it (never cleared)
//!   words 4 .. 20     MARKS     per slot, 32 mark bits: a set bit stands for the ticket of
//!                               that slot and bit that gave up and is not skipped yet
//!   words 20 .. 36    TURNS     per slot: bumped when SERVING reaches a ticket of that slot
//!                               (and, by a JavaScript unlock, the ticket after it);
//!                               JavaScript waiters sleep on their slot's word
//! ```
//!
//! Ticket `t`, read as an unsigned 32-bit number, has slot `t mod SLOTS` and mark bit
//! `(t / SLOTS) mod 32`, so any [`SPAN`] (= 32 · SLOTS = 512) consecutive tickets have distinct
//! (slot, bit) pairs. Tickets wrap at 2^32, a multiple of SPAN, and are only compared for
//! equality or by their distance `NEXT - SERVING` (wrapping), which is never negative.
//!
//! The span rule: a waiter that may give up (it has a timeout, or its call can be stopped)
//! draws a ticket only while fewer than SPAN are out (`NEXT - SERVING < SPAN`); else it waits
//! for the queue to move without one, and at its deadline leaves with nothing to undo. A waiter
//! that never gives up draws at once, whatever the queue's length, and never marks.
//!
//! Transitions (every access sequentially consistent, [`SharedWords`]):
//! - lock, never giving up: `t = fetch_add(NEXT, 1)` (the ticket *is* the arrival order), then
//!   wait until `SERVING == t`, then `OWNER = id`. An agent that finds its own id in OWNER gets
//!   [`LockError::AlreadyHeld`] before drawing a ticket.
//! - lock, maybe giving up: `s = SERVING`, `n = NEXT`; if `n - s < SPAN`, compare-exchange
//!   `NEXT: n → n + 1` and `t = n` (retry on failure), else wait and look again; then as above.
//! - try_lock: `s = SERVING`; compare-exchange `NEXT: s → s + 1`. It succeeds only when no
//!   ticket is out (NEXT == SERVING), and then SERVING is still `s` (it only moves on an unlock,
//!   which needs a holder, which needs a ticket out), so the caller holds the lock.
//! - unlock: only the agent in OWNER (else NotLocked / NotOwner, nothing written).
//!   `OWNER = 0`; then repeat { `SERVING += 1`; if the new ticket's bit is set, clear it with
//!   a fetch-and } while that fetch-and found the bit set (the ticket gave up: skip it); then
//!   bump the slot's TURNS word, and JavaScript notifies every sleeper on it.
//! - give up (deadline passed, call stopped) with ticket `t`: fetch-or its bit, then read
//!   SERVING. If it is not `t`, leave: whoever brings SERVING to `t` will find the bit and skip
//!   `t`. If it is `t`, the turn came meanwhile: clear the bit with a fetch-and; finding it set
//!   means this agent holds the lock after all, finding it clear means the unlocker already
//!   skipped `t`. Either way giving up is three steps, whatever the other bits hold: it never
//!   waits for another agent.
//!
//! Why it is correct:
//! - One owner per bit: a set bit belongs to one ticket `u` that gave up, and `u` lies in
//!   `[SERVING, SERVING + SPAN)`: it was drawn by the span rule (`u - SERVING < SPAN` then),
//!   SERVING only moves forward, and it moves past `u` only by skipping it, which clears the
//!   bit. So when an unlocker at `s` (or the waiter of `s`) looks at `s`'s bit, its only
//!   possible owner is `s` itself: any other ticket with that bit differs from `s` by a
//!   multiple of SPAN. A ticket drawn past the span by a waiter that never gives up never
//!   sets a bit, so it cannot be mistaken for one that did.
//! - Mutual exclusion: only the agent whose ticket equals SERVING holds the lock, each ticket
//!   is drawn once, and SERVING moves only in unlock (by the holder) or past a ticket whose bit
//!   the mover cleared; a ticket whose bit was cleared by its own agent is not moved past (the
//!   unlocker's fetch-and finds it clear), so that agent holds it.
//! - No lost hand-over: the unlocker writes SERVING then reads the bit; the waiter sets the bit
//!   then reads SERVING. Under sequential consistency one of them sees the other's write: the
//!   unlocker sees the bit (and skips), or the waiter sees its turn (and both then race to
//!   clear the one bit, which exactly one of them does). So a ticket that gave up is skipped
//!   exactly once, and a live ticket is never skipped.
//! - FIFO: SERVING takes the drawn tickets in increasing order, skipping only tickets whose
//!   agents left; no agent acquires without a ticket. So no ticket holder is overtaken by a
//!   later arrival, and waits for at most the holders of the tickets ahead of it: with N agents,
//!   at most N − 1 critical sections. Only a waiter that may give up, arriving while SPAN
//!   tickets are out, waits without a ticket, and may then be overtaken.
//! - Timeouts hold: a waiter that may give up either waits at the door, which it leaves at its
//!   deadline, or holds a ticket, which it gives up in three steps.
//! - Unlock terminates: it skips only tickets below NEXT (bits are set only for drawn tickets).
//!
//! Waiting: native waiters poll SERVING with backoff ([`super::backoff`]); JavaScript waiters
//! sleep on their slot's TURNS word (read it, check SERVING, then `Atomics.wait(turn, seen)`:
//! a hand-over between the check and the wait changes the word, so the wait returns at once),
//! and at the door on SERVING itself, which a JavaScript unlock notifies when the door was
//! shut. A native unlock cannot notify them: they sleep in slices and look again, in short
//! slices once NATIVE is set (any hand-over to them may then come from a native agent), and a
//! JavaScript waiter next in line behind a native OWNER polls longer before sleeping.
//!
//! A ticket lock hands over in order even when the next agent is not running: with more
//! threads than cores, each hand-over may wait for a thread to be scheduled. That is the price
//! of its bound on waiting (bench/locks.js measures both sides).

use super::agent::{check_holder, holder, Agent, LockError};
use super::backoff::waiting_at_most;
use super::view::SharedWords;
use std::time::Duration;

pub const NEXT: usize = 0;
pub const SERVING: usize = 1;
pub const OWNER: usize = 2;
pub const NATIVE: usize = 3;
/// Slots for mark words and turn words. A power of two.
pub const SLOTS: usize = 16;
/// Mark bits per slot (an Int32 word's).
const BITS: usize = 32;
/// Tickets out at most when a waiter that may give up draws one: so many consecutive tickets
/// have distinct mark bits (module doc).
pub const SPAN: usize = SLOTS * BITS;
pub const MARKS: usize = 4;
pub const TURNS: usize = MARKS + SLOTS;
/// The mutex's words.
pub const WORDS: usize = TURNS + SLOTS;
#[cfg(test)]
const EMPTY: i32 = 0;
/// How long (in yields) a native waiter next in line keeps looking before it lets its caller
/// wait: a critical section usually ends within a few.
const NEXT_IN_LINE_YIELDS: u32 = 64;

const _: () = assert!(SLOTS.is_power_of_two());
// The (slot, bit) pairs repeat every SPAN tickets across the wrap at 2^32 too.
const _: () = assert!((1u64 << 32).is_multiple_of(SPAN as u64));

/// Ticket `t`'s slot and mark bit.
fn slot_and_bit(ticket: i32) -> (usize, i32) {
    let t = ticket as u32 as usize;
    (t % SLOTS, 1 << (t / SLOTS % BITS))
}

/// A fair mutex. Cheap to clone: clones use the same words.
#[derive(Clone, Debug)]
pub struct FairMutex {
    words: SharedWords,
}

impl FairMutex {
    /// The mutex on `words[0..WORDS]` (zeroed memory is a free mutex).
    pub fn new(words: SharedWords) -> FairMutex {
        FairMutex { words }
    }

    fn refuse_reentry(&self, agent: Agent) -> Result<(), LockError> {
        if holder(self.words.load(OWNER)) == Some(agent) {
            return Err(LockError::AlreadyHeld);
        }
        Ok(())
    }

    fn hold(&self, agent: Agent) -> Result<bool, LockError> {
        self.words.store(OWNER, agent.id());
        Ok(true)
    }

    /// Takes the lock for `agent` if it is free and nobody waits, without waiting.
    pub fn try_lock(&self, agent: Agent) -> Result<bool, LockError> {
        self.refuse_reentry(agent)?;
        let serving = self.words.load(SERVING);
        match self
            .words
            .compare_exchange(NEXT, serving, serving.wrapping_add(1))
        {
            Ok(_) => self.hold(agent),
            Err(_) => Ok(false),
        }
    }

    /// Takes a ticket for `agent` and waits for its turn, calling `wait` each time it is not
    /// (it waits a little and returns `false` to give up). `Ok(false)` if it gave up; `Ok(true)`
    /// once it holds the lock, which may also happen while giving up (module doc).
    pub fn lock_with(&self, agent: Agent, wait: impl FnMut() -> bool) -> Result<bool, LockError> {
        self.queue(agent, true, wait)
    }

    /// Takes the lock for `agent`, waiting at most `timeout` (`None`: no limit).
    pub fn lock(&self, agent: Agent, timeout: Option<Duration>) -> Result<bool, LockError> {
        self.queue(agent, timeout.is_some(), waiting_at_most(timeout))
    }

    /// `lock_with` for a waiter that gives up when `wait` says so, if `may_give_up`; else
    /// `wait` never returns `false`.
    fn queue(
        &self,
        agent: Agent,
        may_give_up: bool,
        mut wait: impl FnMut() -> bool,
    ) -> Result<bool, LockError> {
        self.refuse_reentry(agent)?;
        if agent.is_native() && self.words.load(NATIVE) == 0 {
            self.words.store(NATIVE, 1);
        }
        let ticket = if may_give_up {
            match self.draw_within_span(&mut wait) {
                Some(ticket) => ticket,
                None => return Ok(false),
            }
        } else {
            self.words.fetch_add(NEXT, 1)
        };
        loop {
            if self.next_in_line(ticket) {
                return self.hold(agent);
            }
            if !wait() {
                return if self.give_up(ticket) {
                    self.hold(agent)
                } else {
                    Ok(false)
                };
            }
        }
    }

    /// Draws a ticket by the span rule (module doc), calling `wait` while SPAN are out; `None`
    /// if `wait` gave up first.
    fn draw_within_span(&self, wait: &mut impl FnMut() -> bool) -> Option<i32> {
        loop {
            // SERVING first: read later, it could have passed the NEXT read before it.
            let serving = self.words.load(SERVING);
            let next = self.words.load(NEXT);
            if (next.wrapping_sub(serving) as u32 as usize) < SPAN {
                if self
                    .words
                    .compare_exchange(NEXT, next, next.wrapping_add(1))
                    .is_ok()
                {
                    return Some(next);
                }
            } else if !wait() {
                return None;
            }
        }
    }

    /// True once `ticket` is served. While it is next in line, yields the core a while first
    /// instead of returning to the caller's `wait`, which may sleep for up to a millisecond:
    /// the holder is in its critical section, and everyone behind waits for this ticket.
    fn next_in_line(&self, ticket: i32) -> bool {
        for _ in 0..NEXT_IN_LINE_YIELDS {
            let serving = self.words.load(SERVING);
            if serving == ticket {
                return true;
            }
            if ticket.wrapping_sub(serving) != 1 {
                return false;
            }
            std::thread::yield_now();
        }
        self.words.load(SERVING) == ticket
    }

    /// Leaves the queue with `ticket`, at once; `true` if its turn came first (the caller
    /// holds the lock).
    fn give_up(&self, ticket: i32) -> bool {
        self.mark(ticket);
        self.leave_marked(ticket)
    }

    /// The first step of giving up: sets `ticket`'s bit.
    fn mark(&self, ticket: i32) {
        let (slot, bit) = slot_and_bit(ticket);
        let before = self.words.fetch_or(MARKS + slot, bit);
        debug_assert_eq!(before & bit, 0, "the span rule keeps a bit to one ticket");
    }

    /// The rest, once `ticket`'s bit is set: `true` if its turn came first.
    fn leave_marked(&self, ticket: i32) -> bool {
        if self.words.load(SERVING) != ticket {
            return false;
        }
        let (slot, bit) = slot_and_bit(ticket);
        self.words.fetch_and(MARKS + slot, !bit) & bit != 0
    }

    /// Releases the lock held by `agent` and hands it to the next ticket that still waits.
    /// Returns the slot whose TURNS word changed: JavaScript sleepers on it need an
    /// `Atomics.notify` (module doc), which native code cannot give.
    pub fn unlock(&self, agent: Agent) -> Result<usize, LockError> {
        check_holder(self.words.load(OWNER), agent)?;
        self.words.store(OWNER, 0);
        let mut serving = self.words.load(SERVING);
        loop {
            serving = serving.wrapping_add(1);
            self.words.store(SERVING, serving);
            let (slot, bit) = slot_and_bit(serving);
            // Mostly clear: then a plain read does (a waiter that sets it now sees its turn).
            let gave_up = self.words.load(MARKS + slot) & bit != 0
                && self.words.fetch_and(MARKS + slot, !bit) & bit != 0;
            if !gave_up {
                self.words.fetch_add(TURNS + slot, 1);
                return Ok(slot);
            }
        }
    }

    /// The address of the first word (the order `lock_all` takes locks in).
    pub fn address(&self) -> usize {
        self.words.address()
    }

    /// The holder now (a snapshot; `None` for a moment while the lock changes hands).
    pub fn owner(&self) -> Option<Agent> {
        holder(self.words.load(OWNER))
    }

    /// Held, or being handed over (a snapshot).
    pub fn is_locked(&self) -> bool {
        self.words.load(NEXT) != self.words.load(SERVING)
    }
}

#[cfg(test)]
mod tests;
