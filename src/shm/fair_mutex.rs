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
mod tests {
    use super::*;
    use crate::shm::backoff::Backoff;
    use crate::shm::view::leaked_view;
    use crate::shm::{ElementKind, SharedView};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex as StdMutex};

    fn fair() -> (FairMutex, SharedView) {
        let v = leaked_view(4 * (WORDS + 1), ElementKind::Int32);
        let m = FairMutex::new(SharedWords::new("FairMutex", &v, 1, WORDS).unwrap());
        (m, v)
    }

    fn js() -> Agent {
        Agent::new_js().unwrap()
    }

    #[test]
    fn only_the_holder_unlocks_and_nobody_barges_past_a_queue() {
        let (m, _) = fair();
        let (a, b) = (js(), js());
        assert_eq!(m.unlock(a), Err(LockError::NotLocked));
        assert!(!m.is_locked());
        assert_eq!(m.try_lock(a), Ok(true));
        assert_eq!((m.owner(), m.is_locked()), (Some(a), true));
        assert_eq!(m.try_lock(a), Err(LockError::AlreadyHeld));
        assert_eq!(m.lock(a, None), Err(LockError::AlreadyHeld));
        assert_eq!(m.try_lock(b), Ok(false));
        assert_eq!(
            m.unlock(b),
            Err(LockError::NotOwner {
                owner: a,
                caller: b
            })
        );
        m.unlock(a).unwrap();
        assert_eq!((m.owner(), m.is_locked()), (None, false));
        // A queued waiter makes try_lock fail even while the lock is between holders.
        m.words.fetch_add(NEXT, 1);
        assert_eq!(m.try_lock(b), Ok(false));
    }

    #[test]
    fn waiters_are_served_in_the_order_they_arrived() {
        let (m, _) = fair();
        let first = js();
        assert_eq!(m.lock(first, None), Ok(true));
        let order = Arc::new(StdMutex::new(Vec::new()));
        let mut handles = Vec::new();
        for i in 0..6 {
            let drawn = m.words.load(NEXT);
            let (m2, order) = (m.clone(), order.clone());
            handles.push(std::thread::spawn(move || {
                let me = Agent::native();
                assert_eq!(m2.lock(me, None), Ok(true));
                order.lock().unwrap().push(i);
                m2.unlock(me).unwrap();
            }));
            // The next thread starts only once this one holds a ticket.
            while m.words.load(NEXT) == drawn {
                std::thread::yield_now();
            }
        }
        m.unlock(first).unwrap();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_waiter_that_gives_up_is_skipped_and_the_next_is_served() {
        let (m, _) = fair();
        let (a, b, c) = (js(), js(), js());
        assert_eq!(m.lock(a, None), Ok(true));
        assert_eq!(m.lock(b, Some(Duration::from_millis(5))), Ok(false));
        let m2 = m.clone();
        let waiter = std::thread::spawn(move || m2.lock(c, Some(Duration::from_secs(10))));
        while m.words.load(NEXT) != 3 {
            std::thread::yield_now();
        }
        m.unlock(a).unwrap();
        assert_eq!(waiter.join().unwrap(), Ok(true));
        assert_eq!(m.owner(), Some(c));
        assert_eq!(m.words.load(SERVING), 2, "ticket 1 was skipped");
        assert_eq!(m.words.load(MARKS + 1), EMPTY, "and its mark removed");
        m.unlock(c).unwrap();
        assert!(!m.is_locked());
    }

    #[test]
    fn a_turn_that_comes_while_giving_up_goes_to_exactly_one_side() {
        let (m, _) = fair();
        let a = js();
        // Ticket 0 holds; ticket 1 has set its bit but not yet looked at SERVING.
        m.words.store(NEXT, 2);
        m.words.store(OWNER, a.id());
        m.mark(1);
        // The holder moves SERVING to 1 and clears the bit first: it skips ticket 1.
        m.unlock(a).unwrap();
        assert_eq!(m.words.load(SERVING), 2);
        assert!(!m.leave_marked(1), "the waiter finds it was skipped");
        assert!(!m.is_locked());
        // The waiter sees its turn and clears its bit first: it holds the lock.
        m.words.store(NEXT, 4);
        m.words.store(SERVING, 3);
        assert!(m.give_up(3), "its own turn");
        // The waiter sees its turn, but the unlocker had cleared the bit: skipped, not held.
        m.mark(3);
        m.words.fetch_and(MARKS + 3, 0);
        assert!(!m.leave_marked(3));
        for s in 0..SLOTS {
            assert_eq!(m.words.load(MARKS + s), EMPTY);
        }
    }

    #[test]
    fn earlier_marks_in_its_slot_do_not_hold_a_ticket_back_from_leaving() {
        let (m, _) = fair();
        let a = js();
        assert_eq!(m.lock(a, None), Ok(true));
        // Tickets 1, 1 + SLOTS, 1 + 2 · SLOTS, … share a slot, each with a bit of its own.
        let k = SLOTS as i32;
        m.words.store(NEXT, 4 * k);
        for t in [1, 1 + k, 1 + 2 * k, 2, 3 * k] {
            assert!(!m.give_up(t), "ticket {t} leaves at once");
        }
        assert_eq!(m.words.load(MARKS + 1), 0b111);
        assert_eq!(m.words.load(MARKS), 0b1000);
        m.words.store(NEXT, 3 * k + 1);
        m.unlock(a).unwrap();
        assert_eq!(m.words.load(SERVING), 3, "1 and 2 skipped, 3 served");
        assert_eq!(m.words.load(MARKS + 1), 0b110);
    }

    #[test]
    fn any_span_of_consecutive_tickets_has_distinct_slots_and_bits_across_the_wrap() {
        assert_eq!(slot_and_bit(0), (0, 1));
        assert_eq!(slot_and_bit(-1), (SLOTS - 1, i32::MIN));
        assert_eq!(slot_and_bit(i32::MIN + 5), (5, 1));
        assert_eq!(slot_and_bit(i32::MAX), (SLOTS - 1, i32::MIN));
        for start in [0, i32::MAX - 100, -100] {
            let mut seen = std::collections::HashSet::new();
            for i in 0..SPAN as i32 {
                assert!(
                    seen.insert(slot_and_bit(start.wrapping_add(i))),
                    "{start} + {i}"
                );
            }
            assert_eq!(
                slot_and_bit(start.wrapping_add(SPAN as i32)),
                slot_and_bit(start)
            );
        }
    }

    #[test]
    fn with_a_span_of_tickets_out_a_waiter_that_may_give_up_draws_none_and_leaves_when_told() {
        let (m, _) = fair();
        let a = js();
        assert_eq!(m.lock(a, None), Ok(true));
        // Tickets 1 .. SPAN are out, and have given up.
        let span = SPAN as i32;
        m.words.store(NEXT, span);
        for t in 1..span {
            m.mark(t);
        }
        // A timed waiter gives up while `a` holds the lock (it never would, waiting for `a`);
        // one whose wait says stop after k waits asks exactly k + 1 times.
        let m2 = m.clone();
        let timed = within(HANG, "a timed waiter", move || {
            m2.lock(js(), Some(Duration::from_millis(2)))
        });
        assert_eq!(timed, Ok(false));
        for k in 0..4 {
            let (took, waits) = lock_counting_waits(&m, js(), k);
            assert_eq!((took, waits), (Ok(false), k + 1), "k = {k}");
        }
        assert_eq!(m.words.load(NEXT), span, "no ticket drawn");
        // One that never gives up draws ticket SPAN, which has ticket 0's slot and bit.
        let m2 = m.clone();
        let stayer = std::thread::spawn(move || {
            let me = js();
            let took = m2.lock(me, None);
            m2.unlock(me).unwrap();
            took
        });
        while m.words.load(NEXT) != span + 1 {
            std::thread::yield_now();
        }
        m.unlock(a).unwrap();
        assert_eq!(stayer.join().unwrap(), Ok(true));
        assert_eq!(
            m.words.load(SERVING),
            span + 1,
            "1 .. SPAN skipped, SPAN served"
        );
        assert!(!m.is_locked());
        for s in 0..SLOTS {
            assert_eq!(m.words.load(MARKS + s), EMPTY, "slot {s}");
        }
    }

    #[test]
    fn threads_giving_up_at_random_never_overlap_nor_stall_the_queue() {
        let (m, _) = fair();
        let inside = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let counter = leaked_view(8, ElementKind::BigUint64);
        let (threads, rounds) = (8, 1_500);
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (m, inside, counter, done) =
                    (m.clone(), inside.clone(), counter.clone(), done.clone());
                std::thread::spawn(move || {
                    let me = Agent::native();
                    let mut r = 0;
                    let mut x = i as u32 + 1;
                    while r < rounds {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let took = match x % 4 {
                            0 => m.try_lock(me).unwrap(),
                            1 => m.lock(me, Some(Duration::from_micros(50))).unwrap(),
                            _ => m.lock(me, None).unwrap(),
                        };
                        if !took {
                            continue;
                        }
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                        let c = counter.load_u64(0, Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store_u64(0, c + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        m.unlock(me).unwrap();
                        r += 1;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(done.load(Ordering::Relaxed), threads);
        assert_eq!(
            counter.load_u64(0, Ordering::Relaxed),
            (threads * rounds) as u64
        );
        assert!(!m.is_locked(), "every ticket was served or skipped");
        for s in 0..SLOTS {
            assert_eq!(m.words.load(MARKS + s), EMPTY, "mark left in slot {s}");
        }
    }

    /// Runs `f` on a thread of its own and returns what it returns; panics if that takes
    /// longer than `limit` (the thread is left behind: a test that fails here fails anyway).
    fn within<T: Send + 'static>(
        limit: Duration,
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("{what} still waiting after {limit:?}"))
    }

    /// How long a test waits for a call that should return before calling it hung: no
    /// timing is asserted, only that it returns at all (while the lock is held by another).
    const HANG: Duration = Duration::from_secs(60);

    /// `lock_with` whose wait says "go on" `k` times, then "give up": the outcome and how many
    /// times it was asked. A waiter that honours its wait asks at most `k + 1` times; one that
    /// waited on regardless would ask more, or never return.
    fn lock_counting_waits(m: &FairMutex, me: Agent, k: usize) -> (Result<bool, LockError>, usize) {
        let mut waits = 0;
        let took = m.lock_with(me, || {
            waits += 1;
            waits <= k
        });
        (took, waits)
    }

    #[test]
    fn a_waiter_gives_up_at_its_timeout_however_many_gave_up_before_it() {
        // Each waiter gives up while the holder keeps the lock: three times as many as there
        // are slots, so later ones share a slot with earlier marks; at 0, across 2^31 (where
        // the Int32 turns negative) and across 2^32 (back to 0).
        for start in [0, i32::MAX - 20, -20] {
            let (m, _) = fair();
            m.words.store(NEXT, start);
            m.words.store(SERVING, start);
            let holder = js();
            assert_eq!(m.lock(holder, None), Ok(true));
            // Every other waiter has a timeout, the rest a wait that says stop after 0-2
            // waits: each gives up while the holder holds the lock, asking its wait exactly
            // as often as it said go on, plus once.
            let waiters = 3 * SLOTS + 1;
            let m2 = m.clone();
            let waits = within(HANG, "a waiter", move || {
                (0..waiters)
                    .map(|i| {
                        if i % 2 == 0 {
                            (m2.lock(js(), Some(Duration::from_millis(2))), None)
                        } else {
                            let k = i % 3;
                            let (took, waits) = lock_counting_waits(&m2, js(), k);
                            (took, Some((k, waits)))
                        }
                    })
                    .collect::<Vec<_>>()
            });
            for (i, (took, counted)) in waits.iter().enumerate() {
                assert_eq!(*took, Ok(false), "start {start}, waiter {i}");
                if let Some((k, waits)) = counted {
                    assert_eq!(*waits, k + 1, "start {start}, waiter {i}");
                }
            }
            // A waiter that stays is served next: every ticket that gave up is skipped.
            let m2 = m.clone();
            let stayer = std::thread::spawn(move || {
                let me = js();
                let took = m2.lock(me, Some(Duration::from_secs(10)));
                m2.unlock(me).unwrap();
                took
            });
            let drawn = start.wrapping_add(waiters as i32 + 2);
            while m.words.load(NEXT) != drawn {
                std::thread::yield_now();
            }
            m.unlock(holder).unwrap();
            assert_eq!(stayer.join().unwrap(), Ok(true), "start {start}");
            assert!(!m.is_locked());
            assert_eq!(m.words.load(SERVING), drawn);
            for s in 0..SLOTS {
                assert_eq!(m.words.load(MARKS + s), EMPTY, "start {start}, slot {s}");
            }
        }
    }

    #[test]
    fn waiters_giving_up_faster_than_holders_let_go_fill_the_span_leave_when_told_and_never_overlap(
    ) {
        let (m, _) = fair();
        let inside = Arc::new(AtomicUsize::new(0));
        let most_out = Arc::new(AtomicUsize::new(0));
        let holders_left = Arc::new(AtomicUsize::new(2));
        let counter = leaked_view(8, ElementKind::BigUint64);
        let enter = {
            let (m, inside, counter, most_out) =
                (m.clone(), inside.clone(), counter.clone(), most_out.clone());
            move |me: Agent, hold: Duration| {
                assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                let c = counter.load_u64(0, Ordering::Relaxed);
                std::thread::sleep(hold);
                let out = m.words.load(NEXT).wrapping_sub(m.words.load(SERVING)) as u32;
                most_out.fetch_max(out as usize, Ordering::Relaxed);
                counter.store_u64(0, c + 1, Ordering::Relaxed);
                inside.fetch_sub(1, Ordering::Relaxed);
                m.unlock(me).unwrap();
            }
        };
        // Two holders that never give up keep the lock 2 ms at a time; four leavers draw and
        // give up (after 0 to 3 waits of their backoff) as fast as they can meanwhile. The holders go on
        // (15 rounds at least) until the span has been full once: on a loaded machine the
        // leavers may need longer than 15 rounds to draw SPAN tickets.
        let holders: Vec<_> = (0..2)
            .map(|_| {
                let (m, enter, left, most_out) = (
                    m.clone(),
                    enter.clone(),
                    holders_left.clone(),
                    most_out.clone(),
                );
                std::thread::spawn(move || {
                    let me = Agent::native();
                    let give_up_at = std::time::Instant::now() + Duration::from_secs(20);
                    let mut rounds = 0;
                    while rounds < 15
                        || (most_out.load(Ordering::Relaxed) < SPAN
                            && std::time::Instant::now() < give_up_at)
                    {
                        assert_eq!(m.lock(me, None), Ok(true));
                        enter(me, Duration::from_millis(2));
                        rounds += 1;
                    }
                    left.fetch_sub(1, Ordering::Relaxed);
                    (rounds, 0)
                })
            })
            .collect();
        let leavers: Vec<_> = (0..4u32)
            .map(|i| {
                let (m, enter, left) = (m.clone(), enter.clone(), holders_left.clone());
                std::thread::spawn(move || {
                    let me = Agent::native();
                    let (mut entries, mut most_waits) = (0, 0);
                    let mut x = i + 1;
                    while left.load(Ordering::Relaxed) > 0 {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let k = (x % 4) as usize;
                        let mut waits = 0;
                        let mut backoff = Backoff::new();
                        let took = m
                            .lock_with(me, || {
                                waits += 1;
                                waits <= k && backoff.snooze(None)
                            })
                            .unwrap();
                        // Asked past its "give up": how many times more than it should have.
                        most_waits = most_waits.max(waits.saturating_sub(k + 1));
                        if took {
                            enter(me, Duration::ZERO);
                            entries += 1;
                        }
                    }
                    (entries, most_waits)
                })
            })
            .collect();
        let (mut entries, mut overran) = (0, 0);
        for h in holders.into_iter().chain(leavers) {
            let (n, w) = h.join().unwrap();
            entries += n;
            overran = overran.max(w);
        }
        assert_eq!(counter.load_u64(0, Ordering::Relaxed), entries);
        assert_eq!(overran, 0, "a leaver waited on after its wait said give up");
        assert!(
            most_out.load(Ordering::Relaxed) >= SPAN,
            "the span was never full: at most {} tickets out",
            most_out.load(Ordering::Relaxed)
        );
        assert!(!m.is_locked(), "every ticket was served or skipped");
        for s in 0..SLOTS {
            assert_eq!(m.words.load(MARKS + s), EMPTY, "bits left in slot {s}");
        }
    }

    #[test]
    fn acquisitions_follow_ticket_order_under_contention() {
        let (m, _) = fair();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let (threads, rounds) = (8, 500);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (m, log) = (m.clone(), log.clone());
                std::thread::spawn(move || {
                    let me = Agent::native();
                    for _ in 0..rounds {
                        assert_eq!(m.lock(me, None), Ok(true));
                        // Inside, SERVING is the holder's ticket.
                        log.lock().unwrap().push(m.words.load(SERVING));
                        m.unlock(me).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let log = log.lock().unwrap();
        let expected: Vec<i32> = (0..threads * rounds).collect();
        assert_eq!(
            *log, expected,
            "served in exactly the order tickets were drawn"
        );
    }
}
