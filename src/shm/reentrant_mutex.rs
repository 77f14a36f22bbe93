//! A reentrant mutex on two Int32 words: an owner word and a hold count.
//!
//! ```text
//!   word 0   owner: the [`OwnedMutex`] protocol (0 free, id, id | WAITERS)
//!   word 1   count: how many times the owner holds it (0 when free)
//! ```
//!
//! - lock by the owner: `count += 1` (fails with [`LockError::CountOverflow`] at `i32::MAX`);
//! - lock by anyone else: take the owner word as [`OwnedMutex`] does, then `count = 1`;
//! - unlock: only the owner (else NotLocked / NotOwner, nothing written); `count -= 1`, and at
//!   zero release the owner word as [`OwnedMutex`] does (JavaScript then notifies a sleeper).
//!
//! The count is read and written only by the agent recorded in the owner word, while it holds
//! it: the owner word's acquire and release order those accesses between holders, so a plain
//! (sequentially consistent, uncontended) load and store suffice. An agent's "do I hold it?"
//! check reads the owner word: only its own lock or unlock can make that read say yes, so
//! another agent's activity never confuses it.

use super::agent::{check_holder, holder, Agent, LockError};
use super::backoff::waiting_at_most;
use super::owned_mutex::OwnedMutex;
use super::view::SharedWords;
use std::time::Duration;

/// The mutex's words: owner, count.
pub const WORDS: usize = 2;
const OWNER: usize = 0;
pub const COUNT: usize = 1;

/// A reentrant mutex. Cheap to clone: clones use the same words.
#[derive(Clone, Debug)]
pub struct ReentrantMutex {
    words: SharedWords,
    owner: OwnedMutex,
}

impl ReentrantMutex {
    /// The mutex on `words[0..2]`.
    pub fn new(words: SharedWords) -> ReentrantMutex {
        ReentrantMutex {
            owner: OwnedMutex::new(words.clone()),
            words,
        }
    }

    /// Holds it once more if `agent` holds it already: `Some(result)`; `None` if it does not.
    fn reenter(&self, agent: Agent) -> Option<Result<bool, LockError>> {
        if holder(self.words.load(OWNER)) != Some(agent) {
            return None;
        }
        let count = self.words.load(COUNT);
        if count == i32::MAX {
            return Some(Err(LockError::CountOverflow));
        }
        self.words.store(COUNT, count + 1);
        Some(Ok(true))
    }

    /// Takes the lock for `agent` (once more if it holds it) without waiting: `Ok(false)` if
    /// another agent holds it.
    pub fn try_lock(&self, agent: Agent) -> Result<bool, LockError> {
        if let Some(r) = self.reenter(agent) {
            return r;
        }
        let took = self.owner.try_lock(agent)?;
        if took {
            self.words.store(COUNT, 1);
        }
        Ok(took)
    }

    /// Takes the lock for `agent`, calling `wait` each time it is held by another agent
    /// (see [`OwnedMutex::lock_with`]).
    pub fn lock_with(&self, agent: Agent, wait: impl FnMut() -> bool) -> Result<bool, LockError> {
        if let Some(r) = self.reenter(agent) {
            return r;
        }
        let took = self.owner.lock_with(agent, wait)?;
        if took {
            self.words.store(COUNT, 1);
        }
        Ok(took)
    }

    /// Takes the lock for `agent`, waiting at most `timeout` (`None`: no limit).
    pub fn lock(&self, agent: Agent, timeout: Option<Duration>) -> Result<bool, LockError> {
        self.lock_with(agent, waiting_at_most(timeout))
    }

    /// Gives back one hold of `agent`'s. Returns the owner word's old value when this released
    /// the lock (JavaScript notifies a sleeper if it had WAITERS), `None` while still held.
    pub fn unlock(&self, agent: Agent) -> Result<Option<i32>, LockError> {
        check_holder(self.words.load(OWNER), agent)?;
        let count = self.words.load(COUNT);
        if count > 1 {
            self.words.store(COUNT, count - 1);
            return Ok(None);
        }
        self.words.store(COUNT, 0);
        self.owner.unlock(agent).map(Some)
    }

    /// The address of the first word (the order `lock_all` takes locks in).
    pub fn address(&self) -> usize {
        self.words.address()
    }

    /// The holder now (a snapshot).
    pub fn owner(&self) -> Option<Agent> {
        self.owner.owner()
    }

    /// How many times the holder holds it (a snapshot; exact for the holder itself).
    pub fn count(&self) -> i32 {
        self.words.load(COUNT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::view::leaked_view;
    use crate::shm::ElementKind;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn mutex() -> ReentrantMutex {
        let v = leaked_view(12, ElementKind::Int32);
        ReentrantMutex::new(SharedWords::new("ReentrantMutex", &v, 1, WORDS).unwrap())
    }

    #[test]
    fn the_owner_reenters_and_releases_at_zero() {
        let m = mutex();
        let (me, other) = (Agent::new_js().unwrap(), Agent::new_js().unwrap());
        assert_eq!(m.unlock(me), Err(LockError::NotLocked));
        for n in 1..=3 {
            assert_eq!(m.lock(me, None), Ok(true));
            assert_eq!(m.count(), n);
        }
        assert_eq!(m.try_lock(me), Ok(true));
        assert_eq!(m.count(), 4);
        assert_eq!(m.try_lock(other), Ok(false));
        assert_eq!(
            m.lock(other, Some(Duration::from_millis(5))),
            Ok(false),
            "another agent waits"
        );
        assert_eq!(
            m.unlock(other),
            Err(LockError::NotOwner {
                owner: me,
                caller: other
            })
        );
        for left in (1..4).rev() {
            assert_eq!(m.unlock(me), Ok(None));
            assert_eq!(m.count(), left);
            assert_eq!(m.owner(), Some(me));
        }
        assert_eq!(m.unlock(me), Ok(Some(me.id())));
        assert_eq!((m.owner(), m.count()), (None, 0));
        assert_eq!(m.try_lock(other), Ok(true), "free for others now");
    }

    #[test]
    fn the_count_refuses_to_overflow() {
        let m = mutex();
        let me = Agent::new_js().unwrap();
        assert_eq!(m.try_lock(me), Ok(true));
        m.words.store(COUNT, i32::MAX);
        assert_eq!(m.try_lock(me), Err(LockError::CountOverflow));
        assert_eq!(m.count(), i32::MAX, "a refused lock writes nothing");
    }

    #[test]
    fn nested_holds_across_threads_never_overlap() {
        let m = mutex();
        let inside = Arc::new(AtomicUsize::new(0));
        let counter = leaked_view(8, ElementKind::BigUint64);
        let (threads, rounds) = (6, 2_000);
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (m, inside, counter) = (m.clone(), inside.clone(), counter.clone());
                std::thread::spawn(move || {
                    let me = Agent::native();
                    let depth = 1 + i % 3;
                    for _ in 0..rounds {
                        for _ in 0..depth {
                            assert_eq!(m.lock(me, None), Ok(true));
                        }
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                        let c = counter.load_u64(0, Ordering::Relaxed);
                        counter.store_u64(0, c + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        for _ in 1..depth {
                            assert_eq!(m.unlock(me), Ok(None));
                        }
                        assert!(m.unlock(me).unwrap().is_some());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counter.load_u64(0, Ordering::Relaxed), threads * rounds);
        assert_eq!((m.owner(), m.count()), (None, 0));
    }
}
