//! A fair (FIFO) mutex: a ticket lock whose waiters may give up, on 36 Int32 words.
//!
//! ```text
//!   word 0            NEXT      the next ticket to hand out
//!   word 1            SERVING   the ticket whose turn it is
//!   word 2            OWNER     the holder's agent id, 0 while free or being handed over
//!   word 3            NATIVE    1 once a native agent has queued on it (never cleared)
//!   words 4 .. 20     MARKS     per slot: EMPTY (0) or the mark of a ticket that gave up
//!   words 20 .. 36    TURNS     per slot: bumped when SERVING reaches a ticket of that slot
//!                               (and, by a JavaScript unlock, the ticket after it);
//!                               JavaScript waiters sleep on their slot's word
//! ```
//!
//! Ticket `t` belongs to slot `t mod SLOTS`; its mark is `t` with the slot bits replaced by a
//! 1 (`t & !(SLOTS - 1) | 1`): never EMPTY, and different for every ticket of the slot.
//! Tickets wrap at 2^32 and are only compared for equality.
//!
//! Transitions (every access sequentially consistent, [`SharedWords`]):
//! - lock: `t = fetch_add(NEXT, 1)` (the ticket *is* the arrival order), then wait until
//!   `SERVING == t`, then `OWNER = id`. An agent that finds its own id in OWNER gets
//!   [`LockError::AlreadyHeld`] before drawing a ticket.
//! - try_lock: `s = SERVING`; compare-exchange `NEXT: s → s + 1`. It succeeds only when no
//!   ticket is out (NEXT == SERVING), and then SERVING is still `s` (it only moves on an unlock,
//!   which needs a holder, which needs a ticket out), so the caller holds the lock.
//! - unlock: only the agent in OWNER (else NotLocked / NotOwner, nothing written).
//!   `OWNER = 0`; then repeat { `SERVING += 1`; compare-exchange the new ticket's mark → EMPTY }
//!   while that succeeds (the ticket gave up: skip it); then bump the slot's TURNS word, and
//!   JavaScript notifies every sleeper on it.
//! - give up (deadline passed, call cancelled) with ticket `t`: compare-exchange the slot's
//!   mark EMPTY → mark(t), then read SERVING. If it is not `t`, leave: whoever brings SERVING
//!   to `t` will find the mark and skip `t`. If it is `t`, the turn came meanwhile: take the
//!   mark back (mark(t) → EMPTY); success means this agent holds the lock after all, failure
//!   means the unlocker already skipped `t`. If the slot holds another ticket's mark (more than
//!   SLOTS tickets out), the agent cannot leave yet: it keeps waiting, trying again, and holds
//!   the lock if its turn comes first.
//!
//! Why it is correct:
//! - Mutual exclusion: only the agent whose ticket equals SERVING holds the lock, each ticket
//!   is drawn once, and SERVING moves only in unlock (by the holder) or past a ticket whose
//!   mark the mover removed; a ticket whose mark was removed by its own agent is not moved past
//!   (the unlocker's compare-exchange fails), so that agent holds it.
//! - No lost hand-over: the unlocker writes SERVING then compare-exchanges the mark; the
//!   waiter writes the mark then reads SERVING. Under sequential consistency one of them sees
//!   the other's write: the unlocker sees the mark (and skips), or the waiter sees its turn
//!   (and both then race on the one mark, which exactly one of them removes). So a ticket that
//!   gave up is skipped exactly once, and a live ticket is never skipped.
//! - FIFO: SERVING takes the drawn tickets in increasing order, skipping only tickets whose
//!   agents left; no agent acquires without a ticket. So no waiter is overtaken by a later
//!   arrival, and a waiter waits for at most the holders of the tickets ahead of it: with N
//!   agents, at most N − 1 critical sections.
//! - Unlock terminates: it skips only tickets below NEXT (marks exist only for drawn tickets).
//!
//! Waiting: native waiters poll SERVING with backoff ([`super::backoff`]); JavaScript waiters
//! sleep on their slot's TURNS word (read it, check SERVING, then `Atomics.wait(turn, seen)`:
//! a hand-over between the check and the wait changes the word, so the wait returns at once).
//! A native unlock cannot notify them: they sleep in slices and look again, in short slices
//! once NATIVE is set (any hand-over to them may then come from a native agent), and a
//! JavaScript waiter next in line behind a native OWNER polls longer before sleeping.
//!
//! A ticket lock hands over in order even when the next agent is not running: with more
//! threads than cores, each hand-over may wait for a thread to be scheduled. That is the price
//! of its bound on waiting (bench/locks.js measures both sides).

use super::agent::{check_holder, holder, Agent, LockError};
use super::backoff::{waiting_at_most, Backoff};
use super::view::SharedWords;
use std::time::Duration;

pub const NEXT: usize = 0;
pub const SERVING: usize = 1;
pub const OWNER: usize = 2;
pub const NATIVE: usize = 3;
/// Slots for marks and turn words: tickets out at once beyond this many can still wait, but
/// one may have to wait for a slot before it can give up. A power of two.
pub const SLOTS: usize = 16;
pub const MARKS: usize = 4;
pub const TURNS: usize = MARKS + SLOTS;
/// The mutex's words.
pub const WORDS: usize = TURNS + SLOTS;
const EMPTY: i32 = 0;
/// How long (in yields) a native waiter next in line keeps looking before it lets its caller
/// wait: a critical section usually ends within a few.
const NEXT_IN_LINE_YIELDS: u32 = 64;

const _: () = assert!(SLOTS.is_power_of_two());

/// Ticket `t`'s slot and mark.
fn slot_and_mark(ticket: i32) -> (usize, i32) {
    let slot_bits = (SLOTS - 1) as i32;
    ((ticket & slot_bits) as usize, (ticket & !slot_bits) | 1)
}

/// What became of a ticket that tried to leave the queue.
#[derive(Debug, PartialEq, Eq)]
enum Withdrawal {
    /// It left; the ticket will be skipped.
    Left,
    /// Its turn had come: the agent holds the lock.
    Served,
    /// Its slot holds another ticket's mark: try again later.
    SlotBusy,
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
    pub fn lock_with(
        &self,
        agent: Agent,
        mut wait: impl FnMut() -> bool,
    ) -> Result<bool, LockError> {
        self.refuse_reentry(agent)?;
        if agent.is_native() && self.words.load(NATIVE) == 0 {
            self.words.store(NATIVE, 1);
        }
        let ticket = self.words.fetch_add(NEXT, 1);
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

    /// Takes the lock for `agent`, waiting at most `timeout` (`None`: no limit).
    pub fn lock(&self, agent: Agent, timeout: Option<Duration>) -> Result<bool, LockError> {
        self.lock_with(agent, waiting_at_most(timeout))
    }

    /// Leaves the queue with `ticket`; `true` if its turn came first (the caller holds the
    /// lock).
    fn give_up(&self, ticket: i32) -> bool {
        let mut backoff = Backoff::new();
        loop {
            match self.withdraw(ticket) {
                Withdrawal::Left => return false,
                Withdrawal::Served => return true,
                Withdrawal::SlotBusy => {
                    backoff.snooze(None);
                }
            }
        }
    }

    fn withdraw(&self, ticket: i32) -> Withdrawal {
        let (slot, mark) = slot_and_mark(ticket);
        if self
            .words
            .compare_exchange(MARKS + slot, EMPTY, mark)
            .is_err()
        {
            return if self.words.load(SERVING) == ticket {
                Withdrawal::Served
            } else {
                Withdrawal::SlotBusy
            };
        }
        if self.words.load(SERVING) != ticket {
            return Withdrawal::Left;
        }
        match self.words.compare_exchange(MARKS + slot, mark, EMPTY) {
            Ok(_) => Withdrawal::Served,
            Err(_) => Withdrawal::Left,
        }
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
            let (slot, mark) = slot_and_mark(serving);
            if self
                .words
                .compare_exchange(MARKS + slot, mark, EMPTY)
                .is_err()
            {
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
        // Ticket 0 holds; ticket 1 has marked its slot but not yet looked at SERVING.
        m.words.store(NEXT, 2);
        let a = js();
        m.words.store(OWNER, a.id());
        let (slot, mark) = slot_and_mark(1);
        m.words.store(MARKS + slot, mark);
        // The holder moves SERVING to 1 and removes the mark first: it skips ticket 1.
        m.unlock(a).unwrap();
        assert_eq!(m.words.load(SERVING), 2);
        assert_eq!(m.withdraw(1), Withdrawal::Left);
        assert!(!m.is_locked());
        // Now the waiter wins the race: SERVING reached its ticket, its mark is still there.
        m.words.store(NEXT, 4);
        let (slot, mark) = slot_and_mark(3);
        m.words.store(SERVING, 3);
        assert_eq!(m.withdraw(3), Withdrawal::Served, "its own turn");
        assert_eq!(m.words.load(MARKS + slot), EMPTY);
        assert_ne!(mark, EMPTY);
    }

    #[test]
    fn a_slot_taken_by_an_earlier_mark_delays_leaving_but_not_the_turn() {
        let (m, _) = fair();
        let k = SLOTS as i32;
        // Ticket 0 holds; tickets 1 and 1 + SLOTS wait; 1 has given up.
        m.words.store(NEXT, k + 2);
        let a = js();
        m.words.store(OWNER, a.id());
        assert_eq!(m.withdraw(1), Withdrawal::Left);
        assert_eq!(m.withdraw(1 + k), Withdrawal::SlotBusy);
        m.unlock(a).unwrap();
        assert_eq!(m.words.load(SERVING), 2, "1 skipped");
        assert_eq!(
            m.withdraw(1 + k),
            Withdrawal::Left,
            "the slot is free again"
        );
        // A ticket wrapping past 2^31 keeps a distinct, non-empty mark.
        let (slot, mark) = slot_and_mark(i32::MIN + 5);
        assert_eq!((slot, mark), (5, i32::MIN | 1));
        assert_eq!(slot_and_mark(-1), (SLOTS - 1, -(SLOTS as i32) | 1));
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

    /// Slack allowed past a timeout: scheduling on a loaded machine, not a critical section.
    const SLACK: Duration = Duration::from_millis(250);

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
            let timeout = Duration::from_millis(2);
            let waiters = 3 * SLOTS + 1;
            let m2 = m.clone();
            let waits = within(Duration::from_secs(10), "a waiter", move || {
                (0..waiters)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        (m2.lock(js(), Some(timeout)), t.elapsed())
                    })
                    .collect::<Vec<_>>()
            });
            for (i, (took, waited)) in waits.iter().enumerate() {
                assert_eq!(*took, Ok(false), "start {start}, waiter {i}");
                assert!(
                    *waited < timeout + SLACK,
                    "start {start}, waiter {i} waited {waited:?}"
                );
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
