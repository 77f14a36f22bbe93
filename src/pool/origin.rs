//! Where calls come from and where their outcomes go: one `Origin` per JavaScript environment
//! (the main thread or a worker_thread), shared by every job submitted from it.
//!
//! Protocol (a Dekker-style handshake, all on SeqCst atomics):
//! - a thread that is about to use the origin's memory (run a job that may hold views into its
//!   SharedArrayBuffers) or deliver to it calls [`Origin::enter`]: it increments `active`, then
//!   reads `gone`; if `gone` is set it backs out;
//! - when the environment is torn down, [`Origin::retire`] sets `gone`, then waits until
//!   `active` is zero.
//!
//! Because both sides write their flag before reading the other's, either the worker sees
//! `gone` (and never touches the memory), or `retire` sees the worker active and waits for it.
//! After `retire` returns, no job from this origin runs or delivers again, so the environment's
//! buffers and its completion channel can be freed.
//! (`README.md` §7 puts it beside the pool's other handshakes.)

use crate::rpc::{Outcome, Value};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Calls that wait in a pool's queue for a thread, at least this many, make an outcome
/// delivered meanwhile one that may wait a little for its caller's thread (see [`behind`]).
const BACKLOG: usize = 4;

/// ...if its calls are long ones: a call that runs at least this long (see [`behind`]). The
/// serving threads of JavaScript use the same measure for their event loop's turns
/// (lib/serve.js reads it from the contract).
pub const LONG_CALL: Duration = Duration::from_micros(100);

thread_local! {
    /// While this thread delivers an outcome behind a backlog, the calls queued, and per thread
    /// of the pool (see [`behind`]).
    static BEHIND: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Runs `deliver` (a job's outcome on its way to its origin) telling the origin's sink whether
/// it comes behind a backlog, and how deep: `queued` calls wait in the job's pool, and its calls
/// are `long` ([`LONG_CALL`]: the job ran that long, or its serving thread's calls average that
/// long); the pool has `threads` threads (or servers) to run them.
/// Then the threads are busy whatever the caller does next, so the sink may gather outcomes
/// before waking the caller's thread (`bindings::channel`) instead of preempting a busy
/// thread once per call. Short jobs never count: their caller's thread has about as much to do
/// per call as the pool's (reading the outcome, making the next call) and is then likely the
/// one the calls wait for; a wake put off would leave it idle.
pub(crate) fn behind<R>(
    queued: usize,
    threads: usize,
    long: bool,
    deliver: impl FnOnce() -> R,
) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            BEHIND.with(|b| b.set((0, 0)));
        }
    }
    let backlog = if long && queued >= BACKLOG {
        (queued, queued / threads.max(1))
    } else {
        (0, 0)
    };
    BEHIND.with(|b| b.set(backlog));
    let _reset = Reset;
    deliver()
}

/// The calls queued behind the outcome this thread delivers now if they make a backlog, and
/// how many that is per thread of the pool (see [`behind`]); `(0, 0)` if not. A hint: a sink
/// that ignores it loses nothing.
pub fn backlog() -> (usize, usize) {
    BEHIND.with(Cell::get)
}

/// Receives outcomes for one origin. Called from any thread, inside an `enter`/`leave` window.
pub trait Deliver: Send + Sync {
    fn deliver(&self, call: u64, outcome: Outcome);

    /// Asks the environment to send call `call`'s SharedArrayBuffer views again, to the
    /// serving environment `to`, for the served job `token` (see `server/`). The default
    /// ignores the request; the job then waits until its caller is gone or it is stopped.
    fn resend(&self, call: u64, to: u64, token: u64) {
        let _ = (call, to, token);
    }

    /// Call `call` reports progress (its caller listens). The default drops it.
    fn progress(&self, call: u64, value: Value) {
        let _ = (call, value);
    }

    /// How observed call `call` ran (see [`Ran`]), just before its outcome is delivered. The
    /// default drops it.
    fn ran(&self, call: u64, ran: Ran) {
        let _ = (call, ran);
    }
}

/// How a job ran, for an observed call (`Caller::timed`): told to its origin by the thread
/// that ran it, just before the outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ran {
    /// The thread that ran it: a native worker's index (its `id` in `stats().workers`), or a
    /// serving JavaScript thread's id (its `thread` in `stats().servers`).
    pub thread: u64,
    /// From its submission to the start of its run.
    pub wait: Duration,
    /// From the start of its run to its outcome.
    pub run: Duration,
}

/// The id the next origin gets (ids start at 1 and are never reused in a process).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub struct Origin {
    id: u64,
    gone: AtomicBool,
    active: AtomicUsize,
    sink: Box<dyn Deliver>,
}

impl Origin {
    pub fn new(sink: impl Deliver + 'static) -> Origin {
        Origin {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            gone: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            sink: Box::new(sink),
        }
    }

    /// This origin's number: unique in the process, never 0 (a serving thread compares it with
    /// the one whose calls it may answer by that environment's own message port, lib/serve.js).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Begins a window in which the origin's memory may be used. `false`: it is gone.
    pub fn enter(&self) -> bool {
        self.active.fetch_add(1, Ordering::SeqCst);
        if self.gone.load(Ordering::SeqCst) {
            self.active.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Ends a window opened by a successful [`Origin::enter`].
    pub fn leave(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Delivers an outcome unless the origin is gone (then nobody is listening).
    pub fn deliver(&self, call: u64, outcome: Outcome) {
        if self.enter() {
            self.sink.deliver(call, outcome);
            self.leave();
        }
    }

    /// Forwards a progress report of call `call` unless the origin is gone.
    pub fn progress(&self, call: u64, value: Value) {
        if self.enter() {
            self.sink.progress(call, value);
            self.leave();
        }
    }

    /// Forwards how observed call `call` ran unless the origin is gone.
    pub fn ran(&self, call: u64, ran: Ran) {
        if self.enter() {
            self.sink.ran(call, ran);
            self.leave();
        }
    }

    /// Forwards a resend request (see [`Deliver::resend`]); `false` when the origin is gone.
    pub fn resend(&self, call: u64, to: u64, token: u64) -> bool {
        if !self.enter() {
            return false;
        }
        self.sink.resend(call, to, token);
        self.leave();
        true
    }

    /// The flag running commands poll to stop when their caller's environment is gone.
    pub fn gone_flag(&self) -> &AtomicBool {
        &self.gone
    }

    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    /// Marks the origin gone and waits until no thread is inside it. Running commands see the
    /// flag through `Context::check` and stop, so the wait is as short as their check interval.
    pub fn retire(&self) {
        self.gone.store(true, Ordering::SeqCst);
        let mut spins = 0u32;
        while self.active.load(Ordering::SeqCst) > 0 {
            spins += 1;
            if spins < 100 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Collect(Mutex<Vec<u64>>);
    impl Deliver for Arc<Collect> {
        fn deliver(&self, call: u64, _: Outcome) {
            self.0.lock().unwrap().push(call);
        }
    }

    #[test]
    fn nothing_is_delivered_after_retire() {
        let c = Arc::new(Collect(Mutex::new(vec![])));
        let o = Origin::new(c.clone());
        o.deliver(1, Ok(crate::rpc::Value::Null));
        o.retire();
        o.deliver(2, Ok(crate::rpc::Value::Null));
        assert!(!o.enter());
        assert_eq!(*c.0.lock().unwrap(), vec![1]);
    }

    #[test]
    fn retire_waits_for_a_thread_inside() {
        let c = Arc::new(Collect(Mutex::new(vec![])));
        let o = Arc::new(Origin::new(c));
        assert!(o.enter());
        let o2 = o.clone();
        let inside = Arc::new(AtomicBool::new(true));
        let inside2 = inside.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            inside2.store(false, Ordering::SeqCst);
            o2.leave();
        });
        o.retire();
        assert!(
            !inside.load(Ordering::SeqCst),
            "retire returned while a thread was inside"
        );
        t.join().unwrap();
    }
}
