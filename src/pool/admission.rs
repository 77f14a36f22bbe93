//! Admission: the `maxQueue` bound and the `onFull: 'wait'` list.
//!
//! State and invariants:
//! - `admitted` counts jobs placed on a worker or server queue and not finished (queued +
//!   running). A job takes a slot before it is placed ([`Admission::reserve`]) and gives it
//!   back exactly once, when it finishes or is withdrawn ([`Admission::release`]). `maxQueue`
//!   bounds the jobs that wait for a thread, so `admitted ≤ maxQueue + threads`, where the
//!   threads are the native workers and the open servers (`maxQueue: 0` = a call runs only if
//!   a thread is free, as in Piscina). A broadcast's jobs take their slots without the bound
//!   ([`Admission::reserve_unbounded`]: one call, not n).
//! - Over the bound, `onFull: 'reject'` settles the call with QueueFull; `onFull: 'wait'` parks
//!   the job in the FIFO `waiting` list (state WAITING). Whoever releases a slot while jobs wait
//!   admits the oldest ones into the room there is (the scheduler's `admit_waiting`), and a new
//!   call never overtakes a waiting one.
//! - `waiting_len` counts the WAITING jobs in the list. The job that leaves WAITING (admitted
//!   by [`Admitting::admit`], withdrawn by [`Admission::withdraw`] or at `destroy()`) is counted
//!   out by the thread whose compare-exchange moved it, so exactly once. A withdrawn job stays
//!   in the list as a tombstone until it is popped.
//!
//! `README.md` §3 says why no waiting job is stranded and why admission is not reentrant.

use super::job::{Control, Job};
use super::options::{OnFull, Options};
use crate::rpc::{ErrorCode, RpcError};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

pub(crate) struct Admission {
    max_queue: usize,
    on_full: OnFull,
    /// Native worker threads (fixed).
    workers: usize,
    /// Open servers: each counts as one more thread in the bound.
    open_servers: AtomicUsize,
    admitted: AtomicUsize,
    waiting: Mutex<VecDeque<Job>>,
    waiting_len: AtomicUsize,
    /// Tests: runs in `admit_waiting` between taking a job off the wait list and pushing it, so
    /// a test can hold an admitting thread in that window while others act.
    #[cfg(test)]
    pause: Mutex<Option<std::sync::Arc<dyn Fn() + Send + Sync>>>,
}

/// The wait list's lock, held from taking its oldest job off to that job's admission, so that
/// `destroy()` (which empties the list under the lock) sees every job either in the list or
/// admitted.
pub(crate) struct Admitting<'a> {
    _list: MutexGuard<'a, VecDeque<Job>>,
    waiting_len: &'a AtomicUsize,
}

impl Admitting<'_> {
    /// WAITING → QUEUED for the job taken with this lock (`control` is its control), then lets
    /// go of the list. False: a canceller withdrew it first (and counted it out of the list).
    /// The caller counts the job in its queue before this, since it may be seen QUEUED at once.
    pub(crate) fn admit(self, control: &Control) -> bool {
        if !control.admit() {
            return false;
        }
        self.waiting_len.fetch_sub(1, Ordering::AcqRel);
        true
    }
}

impl Admission {
    pub(crate) fn new(options: &Options, workers: usize) -> Admission {
        Admission {
            max_queue: options.max_queue,
            on_full: options.on_full,
            workers,
            open_servers: AtomicUsize::new(0),
            admitted: AtomicUsize::new(0),
            waiting: Mutex::new(VecDeque::new()),
            waiting_len: AtomicUsize::new(0),
            #[cfg(test)]
            pause: Mutex::new(None),
        }
    }

    /// `onFull: 'wait'`: a call over the bound waits instead of failing.
    pub(crate) fn waits(&self) -> bool {
        self.on_full == OnFull::Wait
    }

    /// The answer of a call over the bound with `onFull: 'reject'`.
    pub(crate) fn full_error(&self) -> RpcError {
        let max = self.max_queue;
        RpcError::new(
            ErrorCode::QueueFull,
            format!("The queue is full (maxQueue = {max})"),
        )
    }

    /// A server opened: one more thread in the bound.
    pub(crate) fn server_opened(&self) {
        self.open_servers.fetch_add(1, Ordering::AcqRel);
    }

    /// A server closed: one thread less in the bound.
    pub(crate) fn server_closed(&self) {
        self.open_servers.fetch_sub(1, Ordering::AcqRel);
    }

    /// Takes a slot if `maxQueue` allows (see the module doc for the bound). It fails only
    /// when the slots are all held: the count is raised only below the limit (a compare-exchange
    /// loop), never raised and undone, so a reservation racing with one that fails cannot fail
    /// for it. SeqCst, with `release` and `park`: see README.md §3, A4.
    pub(crate) fn reserve(&self) -> bool {
        let threads = self.workers + self.open_servers.load(Ordering::Acquire);
        let limit = self.max_queue.saturating_add(threads);
        let mut held = self.admitted.load(Ordering::SeqCst);
        loop {
            if held >= limit {
                return false;
            }
            match self.admitted.compare_exchange_weak(
                held,
                held + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    /// Takes a slot whatever the bound (a broadcast's jobs).
    pub(crate) fn reserve_unbounded(&self) {
        self.admitted.fetch_add(1, Ordering::AcqRel);
    }

    /// Gives back a slot taken for a job that was not placed after all.
    pub(crate) fn unreserve(&self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }

    /// Gives back the slot of a job that finished or was withdrawn. True when jobs wait for
    /// room: the caller must then admit them (the scheduler's `release_slot` does).
    pub(crate) fn release(&self) -> bool {
        self.admitted.fetch_sub(1, Ordering::SeqCst);
        self.has_waiting()
    }

    /// Some jobs wait for room.
    pub(crate) fn has_waiting(&self) -> bool {
        self.waiting_len.load(Ordering::SeqCst) > 0
    }

    /// Jobs waiting for room (a snapshot, for `stats()`).
    pub(crate) fn waiting(&self) -> usize {
        self.waiting_len.load(Ordering::Relaxed)
    }

    /// Parks a new job, never shared yet, at the end of the wait list.
    pub(crate) fn park(&self, job: Job) {
        job.control().park();
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.push_back(job);
        self.waiting_len.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes a slot and the oldest waiting job, with the list's lock; `None` (nothing taken)
    /// when there is no room or no job. The caller admits the job through the lock
    /// ([`Admitting::admit`]); if that fails it gives the slot back ([`Admission::unreserve`]).
    pub(crate) fn next(&self) -> Option<(Job, Admitting<'_>)> {
        if !self.reserve() {
            return None;
        }
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let Some(job) = waiting.pop_front() else {
            drop(waiting);
            self.unreserve();
            return None;
        };
        let admitting = Admitting {
            _list: waiting,
            waiting_len: &self.waiting_len,
        };
        Some((job, admitting))
    }

    /// Takes a cancelled job out of WAITING; true if this thread did (and so must settle it).
    pub(crate) fn withdraw(&self, control: &Control) -> bool {
        if !control.withdraw_waiting() {
            return false;
        }
        self.waiting_len.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// `destroy()`: empties the wait list and hands every job still WAITING to `settle`.
    pub(crate) fn withdraw_all(&self, mut settle: impl FnMut(Job)) {
        let waiting: Vec<Job> = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for job in waiting {
            if job.control().withdraw_waiting() {
                self.waiting_len.fetch_sub(1, Ordering::AcqRel);
                settle(job);
            }
        }
    }

    /// Tests: `pause` runs between taking a native job off the wait list and pushing it.
    #[cfg(test)]
    pub(crate) fn set_pause(&self, pause: std::sync::Arc<dyn Fn() + Send + Sync>) {
        *self.pause.lock().unwrap_or_else(|e| e.into_inner()) = Some(pause);
    }

    #[cfg(test)]
    pub(crate) fn pause_for_tests(&self) {
        let pause = self.pause.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(pause) = pause {
            pause();
        }
    }
}
