//! Native waiting on shared words: spin, then yield, then short sleeps, re-checking each time.
//!
//! Why not a futex: JavaScript's `Atomics.wait`/`Atomics.notify` keep their own wait list inside
//! V8, separate from the kernel's. A native thread parked on a word would never be woken by a JS
//! thread's `Atomics.notify`, and a JS thread releasing a lock only ever notifies. So native
//! waiters never sleep unboundedly: every sleep is at most [`MAX_SLEEP`], after which the caller
//! looks at the word again. A word released by pure JS is therefore noticed within about a
//! millisecond, and a waiter's deadline is honoured to within one sleep.

use std::time::{Duration, Instant};

/// The longest single sleep: the worst-case delay before a native waiter sees a release.
pub const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Spins with exponentially more pause hints for these many steps (the holder is most likely
/// in the middle of a short critical section on another core).
const SPIN_STEPS: u32 = 6;
/// Then yields the core for these many steps (the holder may be waiting for one).
const YIELD_STEPS: u32 = 10;
const FIRST_SLEEP: Duration = Duration::from_micros(20);

/// The instant `timeout` from now, `None` for no timeout or one too long for an `Instant` to
/// hold (`Instant + Duration` panics on overflow: `Duration::MAX` means "no limit" here).
pub fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// The `wait` that the locks' `lock_with` (and the semaphore's `acquire_with`) take for a
/// native wait of at most `timeout` (`None`: no limit): backs off, from a fresh [`Backoff`],
/// until the deadline.
pub fn waiting_at_most(timeout: Option<Duration>) -> impl FnMut() -> bool {
    let deadline = deadline_after(timeout);
    let mut backoff = Backoff::new();
    move || backoff.snooze(deadline)
}

/// One waiter's progress from spinning to sleeping. Make a new one per wait.
#[derive(Default)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    pub fn new() -> Backoff {
        Backoff::default()
    }

    /// Waits a little before the caller re-checks its word. Returns `false`, without waiting,
    /// once `deadline` has passed.
    pub fn snooze(&mut self, deadline: Option<Instant>) -> bool {
        let step = self.step;
        self.step = self.step.saturating_add(1);
        if step < SPIN_STEPS {
            for _ in 0..(1u32 << step) {
                std::hint::spin_loop();
            }
            return deadline.is_none_or(|d| Instant::now() < d);
        }
        let now = Instant::now();
        let left = match deadline {
            Some(d) if now >= d => return false,
            Some(d) => d - now,
            None => Duration::MAX,
        };
        match nap(step, left) {
            None => std::thread::yield_now(),
            Some(nap) => std::thread::sleep(nap),
        }
        true
    }
}

/// How long step `step` (past the spinning) sleeps with `left` before the deadline: `None` to
/// yield instead; never longer than [`MAX_SLEEP`] or than `left`.
fn nap(step: u32, left: Duration) -> Option<Duration> {
    if step < SPIN_STEPS + YIELD_STEPS {
        return None;
    }
    let doublings = (step - SPIN_STEPS - YIELD_STEPS).min(16);
    Some((FIRST_SLEEP * (1 << doublings)).min(MAX_SLEEP).min(left))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_past_deadline_ends_the_wait_at_once() {
        let mut b = Backoff::new();
        for _ in 0..40 {
            b.snooze(None);
        }
        let past = Instant::now();
        assert!(!b.snooze(Some(past)));
    }

    #[test]
    fn sleeps_stay_short_however_long_the_wait_and_never_pass_the_deadline() {
        let lefts = [
            Duration::ZERO,
            Duration::from_nanos(1),
            FIRST_SLEEP,
            MAX_SLEEP / 2,
            MAX_SLEEP,
            Duration::from_secs(1),
            Duration::MAX,
        ];
        let mut slept = false;
        for step in SPIN_STEPS..200 {
            for left in lefts {
                if let Some(nap) = nap(step, left) {
                    slept = true;
                    assert!(nap <= MAX_SLEEP, "step {step}: a nap of {nap:?}");
                    assert!(
                        nap <= left,
                        "step {step}: a nap of {nap:?} with {left:?} left"
                    );
                }
            }
        }
        assert!(slept, "no step ever slept");
        // The sleeps grow to MAX_SLEEP, so a long wait does not spin.
        assert_eq!(nap(u32::MAX, Duration::MAX), Some(MAX_SLEEP));
    }
}
