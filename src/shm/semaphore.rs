//! A counting semaphore on one Int32 word of shared memory.
//!
//! The word holds the number of free permits, never below zero while only this protocol
//! touches it:
//! - acquire: read `n`; if `n > 0`, compare-exchange `n → n - 1` (retry if it changed);
//!   if `n == 0`, wait until the word is no longer `0` (`Atomics.wait(word, 0)` in JavaScript,
//!   bounded sleeps natively, see [`super::backoff`]);
//! - release: increment, then wake one JavaScript waiter with `Atomics.notify(word, 1)` (done by
//!   the JavaScript wrapper after the native call, as for the mutex).
//!
//! Orderings: acquire is `AcqRel` on success and release is `AcqRel`, so what a holder wrote
//! before releasing is visible to whoever takes that permit next.
//!
//! The word does not record how many permits there were at first, so an extra `release` cannot
//! be detected; it only fails when the count would overflow.

use super::backoff::waiting_at_most;
use super::view::SharedWord;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A semaphore on a shared Int32 word. Cheap to clone: clones use the same word.
#[derive(Clone, Debug)]
pub struct Semaphore {
    word: SharedWord,
}

impl Semaphore {
    pub fn new(word: SharedWord) -> Semaphore {
        Semaphore { word }
    }

    /// Sets the number of free permits; for whoever sets the semaphore up, before sharing it.
    pub fn reset(&self, permits: i32) {
        self.word.store(permits, Ordering::Release);
    }

    /// Free permits now (a snapshot).
    pub fn available(&self) -> i32 {
        self.word.load(Ordering::Acquire)
    }

    /// Takes a permit if one is free, without waiting.
    pub fn try_acquire(&self) -> bool {
        let mut n = self.word.load(Ordering::Relaxed);
        while n > 0 {
            match self.word.compare_exchange(n, n - 1) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Takes a permit, waiting (natively, with bounded sleeps) at most `timeout`; `None` waits
    /// as long as it takes. Returns `false` on timeout.
    pub fn acquire(&self, timeout: Option<Duration>) -> bool {
        self.acquire_with(waiting_at_most(timeout))
    }

    /// Takes a permit, calling `wait` each time none is free; `wait` waits a little and returns
    /// `false` to give up, and then so does this.
    pub fn acquire_with(&self, mut wait: impl FnMut() -> bool) -> bool {
        loop {
            if self.try_acquire() {
                return true;
            }
            if !wait() {
                return false;
            }
        }
    }

    /// The word's address (the order `lock_all` takes locks in).
    pub fn address(&self) -> usize {
        self.word.address()
    }

    /// Gives a permit back. Fails only when the count is already `i32::MAX`.
    pub fn release(&self) -> Result<(), &'static str> {
        let mut n = self.word.load(Ordering::Relaxed);
        loop {
            if n == i32::MAX {
                return Err("the semaphore already holds the most permits an Int32 can count");
            }
            match self.word.compare_exchange(n, n + 1) {
                Ok(_) => return Ok(()),
                Err(now) => n = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::view::leaked_view;
    use crate::shm::ElementKind;
    use std::sync::atomic::AtomicI32;
    use std::sync::Arc;

    fn semaphore(permits: i32) -> Semaphore {
        let s = Semaphore::new(
            SharedWord::new("Semaphore", leaked_view(4, ElementKind::Int32), 0).unwrap(),
        );
        s.reset(permits);
        s
    }

    #[test]
    fn permits_run_out_and_come_back() {
        let s = semaphore(2);
        assert!(s.try_acquire() && s.try_acquire());
        assert!(!s.try_acquire());
        assert!(!s.acquire(Some(Duration::from_millis(10))));
        s.release().unwrap();
        assert_eq!(s.available(), 1);
        assert!(s.acquire(Some(Duration::from_millis(10))));
        s.reset(i32::MAX);
        assert!(s.release().is_err());
    }

    #[test]
    fn never_more_holders_than_permits() {
        let permits = 3;
        let s = semaphore(permits);
        let holders = Arc::new(AtomicI32::new(0));
        let most = Arc::new(AtomicI32::new(0));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (s, holders, most) = (s.clone(), holders.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        assert!(s.acquire(None));
                        let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::hint::spin_loop();
                        holders.fetch_sub(1, Ordering::SeqCst);
                        s.release().unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            most <= permits,
            "{most} holders at once with {permits} permits"
        );
        assert_eq!(s.available(), permits, "every permit came back");
    }
}
