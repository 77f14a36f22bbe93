//! The book's mutex on one Int32 word of shared memory.
//!
//! States of the word: `0` unlocked, `1` locked. Any other value is not a mutex.
//! - lock: compare-exchange `0 → 1`; success means this thread holds the lock;
//! - unlock: compare-exchange `1 → 0`; failure means the mutex was not locked (an error, never
//!   a silent success), then wake one JavaScript waiter with `Atomics.notify(word, 1)`.
//!
//! Orderings: a successful lock is `AcqRel` (it acquires everything the previous holder wrote
//! before its unlock), an unlock is `AcqRel` (it releases the holder's writes). So the memory
//! effects of one critical section happen-before the next one, whichever thread (JS or native)
//! runs each.
//!
//! Waiting is where JavaScript and native code differ (see [`super::backoff`]): JavaScript
//! threads sleep in `Atomics.wait(word, 1)` and rely on the unlocker's `Atomics.notify`; native
//! code cannot call either, so it polls with bounded sleeps. Consequently native code never
//! sleeps unboundedly on a word JavaScript may release, and every native unlock of a word that
//! JavaScript threads may wait on is followed by an `Atomics.notify` from JavaScript (the
//! corepool wrapper that called into native code does it as soon as the call returns).
//! A JavaScript thread following the book exactly (`compareExchange`, `Atomics.wait` without a
//! timeout, `compareExchange` + `Atomics.notify`) and a native or corepool holder therefore
//! exclude each other and neither waits forever.

use super::backoff::waiting_at_most;
use super::view::SharedWord;
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub const UNLOCKED: i32 = 0;
pub const LOCKED: i32 = 1;

/// Rounds of test-and-test-and-set in [`Mutex::lock_spinning`] before giving up: about a
/// microsecond, the length of a ring buffer copy under the lock.
const SPIN_ROUNDS: u32 = 64;

/// `unlock` of a mutex that was not locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotLocked;

impl fmt::Display for NotLocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the mutex is not locked")
    }
}

impl std::error::Error for NotLocked {}

/// A mutex on a shared Int32 word. Cheap to clone: clones use the same word.
#[derive(Clone, Debug)]
pub struct Mutex {
    word: SharedWord,
}

impl Mutex {
    pub fn new(word: SharedWord) -> Mutex {
        Mutex { word }
    }

    /// Takes the lock if it is free, without waiting.
    pub fn try_lock(&self) -> bool {
        self.word.compare_exchange(UNLOCKED, LOCKED).is_ok()
    }

    /// Takes the lock, spinning for about a microsecond at most; `false` if it stayed taken.
    /// For callers that would rather go and wait elsewhere (in `Atomics.wait`) than sleep here.
    pub fn lock_spinning(&self) -> bool {
        for _ in 0..SPIN_ROUNDS {
            if self.word.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    /// Takes the lock, waiting (natively, with bounded sleeps) at most `timeout`; `None` waits
    /// as long as it takes. Returns `false` on timeout.
    pub fn lock(&self, timeout: Option<Duration>) -> bool {
        self.lock_with(waiting_at_most(timeout))
    }

    /// Takes the lock, calling `wait` each time it is found taken; `wait` waits a little and
    /// returns `false` to give up (deadline passed, call cancelled), and then so does this.
    pub fn lock_with(&self, mut wait: impl FnMut() -> bool) -> bool {
        loop {
            if self.word.load(Ordering::Relaxed) == UNLOCKED && self.try_lock() {
                return true;
            }
            if !wait() {
                return false;
            }
        }
    }

    /// Releases the lock. JavaScript waiters still need an `Atomics.notify` (module doc).
    pub fn unlock(&self) -> Result<(), NotLocked> {
        self.word
            .compare_exchange(LOCKED, UNLOCKED)
            .map(drop)
            .map_err(|_| NotLocked)
    }

    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Acquire) == LOCKED
    }

    /// The word's address (the order `lock_all` takes locks in).
    pub fn address(&self) -> usize {
        self.word.address()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::view::leaked_view;
    use crate::shm::ElementKind;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Instant;

    fn mutex() -> Mutex {
        let v = leaked_view(8, ElementKind::Int32);
        Mutex::new(SharedWord::new("Mutex", v, 1).unwrap())
    }

    #[test]
    fn unlock_of_an_unlocked_mutex_fails() {
        let m = mutex();
        assert_eq!(m.unlock(), Err(NotLocked));
        assert!(m.try_lock());
        assert!(!m.try_lock(), "a held mutex cannot be taken again");
        assert_eq!(m.unlock(), Ok(()));
        assert_eq!(m.unlock(), Err(NotLocked));
    }

    #[test]
    fn a_timeout_too_long_for_an_instant_means_no_limit_instead_of_a_panic() {
        let m = mutex();
        assert!(m.lock(Some(Duration::MAX)));
        let taker = std::thread::spawn({
            let m = m.clone();
            move || m.lock(Some(Duration::MAX))
        });
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(m.unlock(), Ok(()));
        assert!(taker.join().unwrap(), "it waited, then took the lock");
    }

    #[test]
    fn lock_times_out_on_a_held_mutex() {
        let m = mutex();
        assert!(m.lock(None));
        let t = Instant::now();
        assert!(!m.lock(Some(Duration::from_millis(30))));
        assert!(t.elapsed() >= Duration::from_millis(30));
        assert!(!m.lock_spinning());
        assert!(m.is_locked());
    }

    #[test]
    fn a_waiter_sees_a_release_that_wakes_nobody() {
        // Simulates a JS thread releasing the word: a plain store, no native wake.
        let m = mutex();
        assert!(m.try_lock());
        let m2 = m.clone();
        let t = std::thread::spawn(move || m2.lock(Some(Duration::from_secs(10))));
        std::thread::sleep(Duration::from_millis(20));
        m.word.store(UNLOCKED, Ordering::Release);
        assert!(
            t.join().unwrap(),
            "the waiter must notice the release long before 10 s"
        );
        assert!(m.is_locked(), "the waiter now holds it");
    }

    #[test]
    fn threads_never_overlap_in_the_critical_section() {
        let m = mutex();
        let inside = Arc::new(AtomicUsize::new(0));
        // The book's check: a read-modify-write that loses updates unless excluded.
        let counter = leaked_view(8, ElementKind::BigUint64);
        let threads = 6;
        let rounds = 5_000;
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (m, inside, counter) = (m.clone(), inside.clone(), counter.clone());
                std::thread::spawn(move || {
                    for r in 0..rounds {
                        // Mix the three ways in.
                        match (i + r) % 3 {
                            0 => assert!(m.lock(None)),
                            1 => while !m.lock_spinning() {},
                            _ => {
                                while !m.try_lock() {
                                    std::thread::yield_now()
                                }
                            }
                        }
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                        let c = counter.load_u64(0, Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store_u64(0, c + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        m.unlock().unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counter.load_u64(0, Ordering::Relaxed), threads * rounds);
        assert!(!m.is_locked());
    }
}
