//! An owner-checked mutex on one Int32 word: the word records who holds it.
//!
//! States of the word (ids: [`super::agent`]):
//!
//! ```text
//!   0                 free
//!   id                held by agent `id`
//!   id | WAITERS      held by agent `id`, and a JavaScript thread may be asleep on the word
//! ```
//!
//! Transitions:
//! - lock: compare-exchange `0 → id`. A JavaScript waiter that has slept takes it as
//!   `0 → id | WAITERS` instead, since others may still be asleep ("Futexes Are Tricky",
//!   Drepper, mutex 3). Finding its own id, the caller gets [`LockError::AlreadyHeld`] rather
//!   than waiting on itself.
//! - sleep (JavaScript only): compare-exchange `held → held | WAITERS`, then
//!   `Atomics.wait(word, held | WAITERS)`, which returns at once if the word changed meanwhile.
//! - unlock: load; unless the id part is the caller's, fail ([`LockError::NotLocked`] or
//!   [`LockError::NotOwner`]) and write nothing; else swap in `0`, and if the old value had
//!   WAITERS, `Atomics.notify(word, 1)` (JavaScript).
//!
//! Only the holder clears the id; other agents only add WAITERS to a held word. So the holder's
//! swap never erases another agent's hold, and a sleeper always set WAITERS on the hold it waits
//! out, so the unlock that ends that hold notifies (when JavaScript makes it).
//!
//! Orderings: every access is sequentially consistent ([`SharedWords`]); the lock's successful
//! compare-exchange reads the unlock's swap, so one critical section happens-before the next,
//! whichever side (JavaScript or native) runs each.
//!
//! Native code cannot sleep in `Atomics.wait` nor notify (see [`super::backoff`]): native waiters
//! poll with backoff and never set WAITERS, and a native unlock wakes nobody. JavaScript waiters
//! therefore sleep in slices and re-check, in shorter slices when the holder's id is native.
//! An uncontended JavaScript unlock skips `Atomics.notify` (WAITERS is clear), which the book's
//! 0/1 mutex cannot do.
//!
//! This is not the book's protocol: a book mutex on the same word would read an id as "locked"
//! and its unlock (compare-exchange `1 → 0`) would fail. Do not mix the two on one word.

use super::agent::{check_holder, holder, Agent, LockError, ID_LIMIT};
use super::backoff::waiting_at_most;
use super::view::SharedWords;
use std::time::Duration;

/// The word's flag: a JavaScript thread may be asleep on it.
pub const WAITERS: i32 = ID_LIMIT;
/// The mutex's one word.
pub const WORDS: usize = 1;
const WORD: usize = 0;

/// An owner-checked mutex. Cheap to clone: clones use the same word.
#[derive(Clone, Debug)]
pub struct OwnedMutex {
    words: SharedWords,
}

impl OwnedMutex {
    /// The mutex on `words[0]`.
    pub fn new(words: SharedWords) -> OwnedMutex {
        OwnedMutex { words }
    }

    /// Takes the lock for `agent` if it is free, without waiting: `Ok(false)` if another agent
    /// holds it.
    pub fn try_lock(&self, agent: Agent) -> Result<bool, LockError> {
        match self.words.compare_exchange(WORD, 0, agent.id()) {
            Ok(_) => Ok(true),
            Err(seen) if holder(seen) == Some(agent) => Err(LockError::AlreadyHeld),
            Err(_) => Ok(false),
        }
    }

    /// Takes the lock for `agent`. Each time it finds the lock held, it calls `wait`, which
    /// waits a little and returns `false` to give up (deadline passed, call cancelled): then
    /// `Ok(false)`.
    pub fn lock_with(
        &self,
        agent: Agent,
        mut wait: impl FnMut() -> bool,
    ) -> Result<bool, LockError> {
        loop {
            let seen = self.words.load(WORD);
            if seen == 0 {
                if self.try_lock(agent)? {
                    return Ok(true);
                }
            } else if holder(seen) == Some(agent) {
                return Err(LockError::AlreadyHeld);
            }
            if !wait() {
                return Ok(false);
            }
        }
    }

    /// Takes the lock for `agent`, waiting (natively, with bounded sleeps) at most `timeout`;
    /// `None` waits as long as it takes. `Ok(false)` on timeout.
    pub fn lock(&self, agent: Agent, timeout: Option<Duration>) -> Result<bool, LockError> {
        self.lock_with(agent, waiting_at_most(timeout))
    }

    /// Releases the lock held by `agent`. JavaScript sleepers still need an `Atomics.notify`
    /// when the returned old word had [`WAITERS`] (module doc); native code cannot give it.
    pub fn unlock(&self, agent: Agent) -> Result<i32, LockError> {
        check_holder(self.words.load(WORD), agent)?;
        Ok(self.words.swap(WORD, 0))
    }

    /// The address of the first word (the order `lock_all` takes locks in).
    pub fn address(&self) -> usize {
        self.words.address()
    }

    /// The holder now (a snapshot).
    pub fn owner(&self) -> Option<Agent> {
        holder(self.words.load(WORD))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::view::leaked_view;
    use crate::shm::ElementKind;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    fn mutex() -> OwnedMutex {
        let v = leaked_view(8, ElementKind::Int32);
        OwnedMutex::new(SharedWords::new("OwnedMutex", &v, 1, WORDS).unwrap())
    }

    #[test]
    fn only_the_holder_unlocks_and_the_holder_cannot_wait_on_itself() {
        let m = mutex();
        let (me, other) = (Agent::new_js().unwrap(), Agent::new_js().unwrap());
        assert_eq!(m.unlock(me), Err(LockError::NotLocked));
        assert_eq!(m.try_lock(me), Ok(true));
        assert_eq!(m.owner(), Some(me));
        assert_eq!(m.try_lock(me), Err(LockError::AlreadyHeld));
        assert_eq!(m.lock(me, None), Err(LockError::AlreadyHeld));
        assert_eq!(m.try_lock(other), Ok(false));
        assert_eq!(
            m.unlock(other),
            Err(LockError::NotOwner {
                owner: me,
                caller: other
            })
        );
        assert_eq!(m.owner(), Some(me), "a refused unlock writes nothing");
        assert_eq!(m.unlock(me), Ok(me.id()));
        assert_eq!(m.owner(), None);
        assert_eq!(m.unlock(me), Err(LockError::NotLocked));
    }

    #[test]
    fn unlock_reports_a_sleeper_flag_and_clears_it() {
        let m = mutex();
        let me = Agent::new_js().unwrap();
        assert_eq!(m.try_lock(me), Ok(true));
        // A JavaScript waiter flags the hold before sleeping.
        m.words
            .compare_exchange(WORD, me.id(), me.id() | WAITERS)
            .unwrap();
        assert_eq!(m.owner(), Some(me), "the flag is not part of the id");
        assert_eq!(m.unlock(me), Ok(me.id() | WAITERS));
        assert_eq!(m.words.load(WORD), 0);
    }

    #[test]
    fn lock_times_out_on_a_held_mutex() {
        let m = mutex();
        let (a, b) = (Agent::new_js().unwrap(), Agent::new_js().unwrap());
        assert_eq!(m.lock(a, None), Ok(true));
        let t = Instant::now();
        assert_eq!(m.lock(b, Some(Duration::from_millis(30))), Ok(false));
        assert!(t.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn native_threads_never_overlap_and_lose_no_update() {
        let m = mutex();
        let inside = Arc::new(AtomicUsize::new(0));
        let counter = leaked_view(8, ElementKind::BigUint64);
        let (threads, rounds) = (6, 3_000);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (m, inside, counter) = (m.clone(), inside.clone(), counter.clone());
                std::thread::spawn(move || {
                    let me = Agent::native();
                    for _ in 0..rounds {
                        assert_eq!(m.lock(me, None), Ok(true));
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                        let c = counter.load_u64(0, Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store_u64(0, c + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        m.unlock(me).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counter.load_u64(0, Ordering::Relaxed), threads * rounds);
        assert_eq!(m.owner(), None);
    }
}
