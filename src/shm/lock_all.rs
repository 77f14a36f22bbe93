//! Taking several locks without deadlock: one order for the whole process.
//!
//! Two agents that take the same two locks in opposite orders can each get one and wait for
//! the other forever. [`lock_all`] takes a set of locks in one order that every thread of the
//! process agrees on, the address of each lock's first word (a SharedArrayBuffer is one
//! mapping, at one address, in every thread of a process), and gives them back in the reverse
//! order. JavaScript's `lockAll` asks this addon for the same addresses, so JavaScript and
//! native agents taking overlapping sets agree on the order too.
//!
//! Why no deadlock: if agents wait in a cycle, each holds a lock and waits for the next agent's.
//! Every agent takes its locks in increasing address order, so the lock it waits for has a
//! higher address than every lock it holds; around the cycle the addresses would increase
//! forever. This assumes the agent held none of the set before calling (a lock taken earlier,
//! outside the order, can close a cycle again).
//!
//! If a lock cannot be had (the caller gives up, or a lock refuses), the locks already taken are
//! given back, in reverse order, before returning; [`AllHeld`] gives back all of them when it is
//! dropped, also during a panic.

use super::agent::{Agent, LockError};
use super::{FairMutex, Mutex, OwnedMutex, ReentrantMutex, Semaphore};

/// One of the shared-memory locks, taken through one interface.
#[derive(Clone, Debug)]
pub enum Lock {
    /// The book's 0/1 mutex (no owner: any agent may unlock it).
    Mutex(Mutex),
    /// One permit of a counting semaphore.
    Semaphore(Semaphore),
    Owned(OwnedMutex),
    Reentrant(ReentrantMutex),
    Fair(FairMutex),
}

impl Lock {
    /// The address of the lock's first word: its place in the order.
    pub fn address(&self) -> usize {
        match self {
            Lock::Mutex(m) => m.address(),
            Lock::Semaphore(s) => s.address(),
            Lock::Owned(m) => m.address(),
            Lock::Reentrant(m) => m.address(),
            Lock::Fair(m) => m.address(),
        }
    }

    /// How many Int32 words it uses from its address.
    pub fn words(&self) -> usize {
        match self {
            Lock::Mutex(_) | Lock::Semaphore(_) => 1,
            Lock::Owned(_) => super::owned_mutex::WORDS,
            Lock::Reentrant(_) => super::reentrant_mutex::WORDS,
            Lock::Fair(_) => super::fair_mutex::WORDS,
        }
    }

    /// Takes it for `agent`, calling `wait` whenever it is not free (see
    /// [`FairMutex::lock_with`]); `Ok(false)` when `wait` gave up.
    pub fn lock_with(
        &self,
        agent: Agent,
        wait: &mut dyn FnMut() -> bool,
    ) -> Result<bool, LockError> {
        match self {
            Lock::Mutex(m) => Ok(m.lock_with(wait)),
            Lock::Semaphore(s) => Ok(s.acquire_with(wait)),
            Lock::Owned(m) => m.lock_with(agent, wait),
            Lock::Reentrant(m) => m.lock_with(agent, wait),
            Lock::Fair(m) => m.lock_with(agent, wait),
        }
    }

    /// Gives it back. (JavaScript sleepers on it are not notified: native code cannot; they
    /// see the release within their wait slice.)
    pub fn unlock(&self, agent: Agent) -> Result<(), LockError> {
        match self {
            Lock::Mutex(m) => m.unlock().map_err(|_| LockError::NotLocked),
            Lock::Semaphore(s) => s.release().map_err(|_| LockError::CountOverflow),
            Lock::Owned(m) => m.unlock(agent).map(drop),
            Lock::Reentrant(m) => m.unlock(agent).map(drop),
            Lock::Fair(m) => m.unlock(agent).map(drop),
        }
    }
}

/// Every lock of a [`lock_all`], held; gives them back in reverse order when dropped.
#[must_use = "the locks are given back when this is dropped"]
pub struct AllHeld<'a> {
    /// In the order taken.
    held: Vec<&'a Lock>,
    agent: Agent,
}

impl AllHeld<'_> {
    /// Gives every lock back, in reverse order; the first refusal, if any (the others are
    /// still given back).
    pub fn release(mut self) -> Result<(), LockError> {
        self.release_all()
    }

    fn release_all(&mut self) -> Result<(), LockError> {
        let mut first = Ok(());
        while let Some(lock) = self.held.pop() {
            if let Err(e) = lock.unlock(self.agent) {
                first = first.and(Err(e));
            }
        }
        first
    }
}

impl Drop for AllHeld<'_> {
    fn drop(&mut self) {
        // A refusal here means someone else released a lock this agent held (the book's mutex
        // lets anyone): nothing left to give back for that one.
        let _ = self.release_all();
    }
}

/// Takes every lock in `locks` for `agent`, in increasing address order, calling `wait`
/// whenever one is not free. `Ok(None)` when `wait` gave up (nothing is held then);
/// [`LockError::SameLockTwice`] when the words of two locks overlap (the same lock twice, or a
/// lock on another's words, which would find it taken by this agent and wait forever).
pub fn lock_all<'a>(
    locks: &'a [Lock],
    agent: Agent,
    mut wait: impl FnMut() -> bool,
) -> Result<Option<AllHeld<'a>>, LockError> {
    let mut ordered: Vec<&Lock> = locks.iter().collect();
    ordered.sort_by_key(|l| l.address());
    if ordered
        .windows(2)
        .any(|w| w[1].address() < w[0].address() + 4 * w[0].words())
    {
        return Err(LockError::SameLockTwice);
    }
    let mut all = AllHeld {
        held: Vec::with_capacity(ordered.len()),
        agent,
    };
    for lock in ordered {
        // On a refusal or giving up, dropping `all` gives back what it holds.
        if !lock.lock_with(agent, &mut wait)? {
            return Ok(None);
        }
        all.held.push(lock);
    }
    Ok(Some(all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::backoff::Backoff;
    use crate::shm::view::leaked_view;
    use crate::shm::{fair_mutex, ElementKind, SharedView, SharedWord, SharedWords};
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    /// Locks of every kind, each on its own words of one buffer.
    fn locks(v: &SharedView) -> Vec<Lock> {
        let words = |at, n| SharedWords::new("test", v, at, n).unwrap();
        let sem = Semaphore::new(SharedWord::new("test", v.clone(), 2).unwrap());
        sem.reset(1);
        vec![
            Lock::Fair(FairMutex::new(words(10, fair_mutex::WORDS))),
            Lock::Mutex(Mutex::new(SharedWord::new("test", v.clone(), 0).unwrap())),
            Lock::Reentrant(ReentrantMutex::new(words(4, 2))),
            Lock::Semaphore(sem),
            Lock::Owned(OwnedMutex::new(words(1, 1))),
        ]
    }

    #[test]
    fn takes_in_address_order_and_gives_back_in_reverse() {
        let v = leaked_view(4 * 64, ElementKind::Int32);
        let set = locks(&v);
        let me = Agent::new_js().unwrap();
        let held = lock_all(&set, me, || false).unwrap().expect("all free");
        let addresses: Vec<usize> = held.held.iter().map(|l| l.address()).collect();
        let mut sorted = addresses.clone();
        sorted.sort();
        assert_eq!(addresses, sorted);
        assert_eq!(
            v.load_i32(0, std::sync::atomic::Ordering::SeqCst),
            1,
            "mutex taken"
        );
        assert_eq!(
            v.load_i32(2, std::sync::atomic::Ordering::SeqCst),
            0,
            "permit taken"
        );
        held.release().unwrap();
        for (i, expected) in [(0, 0), (1, 0), (2, 1), (4, 0), (12, 0)] {
            assert_eq!(
                v.load_i32(i, std::sync::atomic::Ordering::SeqCst),
                expected,
                "word {i}"
            );
        }
    }

    #[test]
    fn giving_up_or_a_refusal_halfway_leaves_nothing_held() {
        let v = leaked_view(4 * 64, ElementKind::Int32);
        let set = locks(&v);
        let (me, other) = (Agent::new_js().unwrap(), Agent::new_js().unwrap());
        // Another agent holds the fair mutex, the last in address order.
        let Lock::Fair(fair) = &set[0] else {
            unreachable!()
        };
        assert_eq!(fair.try_lock(other), Ok(true));
        let deadline = Instant::now() + Duration::from_millis(20);
        let mut backoff = Backoff::new();
        assert!(lock_all(&set, me, || backoff.snooze(Some(deadline)))
            .unwrap()
            .is_none());
        for lock in &set[1..] {
            assert!(
                lock.lock_with(other, &mut || false).unwrap(),
                "left held: {lock:?}"
            );
        }
        // This agent holding the owned mutex already: refused, and nothing else kept.
        fair.unlock(other).unwrap();
        for lock in &set[1..] {
            lock.unlock(other).unwrap();
        }
        let Lock::Owned(owned) = &set[4] else {
            unreachable!()
        };
        assert_eq!(owned.try_lock(me), Ok(true));
        assert_eq!(
            lock_all(&set, me, || false).err(),
            Some(LockError::AlreadyHeld)
        );
        assert!(
            set[1].lock_with(other, &mut || false).unwrap(),
            "the mutex was given back"
        );
        let twice = vec![set[1].clone(), set[1].clone()];
        assert_eq!(
            lock_all(&twice, me, || false).err(),
            Some(LockError::SameLockTwice)
        );
    }

    #[test]
    fn locks_on_overlapping_words_are_refused_without_taking_any() {
        let v = leaked_view(4 * 64, ElementKind::Int32);
        let words = |at, n| SharedWords::new("test", &v, at, n).unwrap();
        let me = Agent::native();
        let reentrant = Lock::Reentrant(ReentrantMutex::new(words(0, 2)));
        // On the reentrant mutex's count word, which taking the reentrant mutex sets to 1.
        let on_count = Lock::Mutex(Mutex::new(SharedWord::new("test", v.clone(), 1).unwrap()));
        let fair = Lock::Fair(FairMutex::new(words(8, fair_mutex::WORDS)));
        let inside_fair = Lock::Owned(OwnedMutex::new(words(8 + fair_mutex::WORDS - 1, 1)));
        for set in [[on_count.clone(), reentrant.clone()], [fair, inside_fair]] {
            assert_eq!(
                lock_all(&set, me, || false).err(),
                Some(LockError::SameLockTwice)
            );
        }
        for i in 0..v.len() {
            assert_eq!(v.load_i32(i, Ordering::SeqCst), 0, "word {i} untouched");
        }
        let next_to = Lock::Mutex(Mutex::new(SharedWord::new("test", v.clone(), 2).unwrap()));
        let adjacent = [reentrant, next_to];
        let held = lock_all(&adjacent, me, || false).unwrap();
        held.expect("adjacent locks are fine").release().unwrap();
    }

    #[test]
    fn opposite_orders_never_deadlock() {
        let v = leaked_view(4 * 64, ElementKind::Int32);
        let words = |at, n| SharedWords::new("test", &v, at, n).unwrap();
        let a = Lock::Owned(OwnedMutex::new(words(0, 1)));
        let b = Lock::Fair(FairMutex::new(words(8, fair_mutex::WORDS)));
        let start = Arc::new(Barrier::new(2));
        let threads: Vec<_> = [vec![a.clone(), b.clone()], vec![b, a]]
            .into_iter()
            .map(|set| {
                let start = start.clone();
                std::thread::spawn(move || {
                    let me = Agent::native();
                    start.wait();
                    for _ in 0..2_000 {
                        let mut backoff = Backoff::new();
                        let deadline = Some(Instant::now() + Duration::from_secs(10));
                        let held = lock_all(&set, me, || backoff.snooze(deadline)).unwrap();
                        held.expect("a deadlock would time out here")
                            .release()
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
