//! Admission: the `maxQueue` bound and the `onFull: 'wait'` list.
//!
//! **What `maxQueue` counts: the calls that wait for a thread.** A call is accepted when a
//! thread can run it at once, or when fewer than `maxQueue` accepted calls wait for one. The
//! calls that wait are the accepted ones beyond what the pool runs at once, counted per kind,
//! since each kind runs on threads of its own:
//! - native commands: `native_admitted − workers` (one call per native thread);
//! - served methods: `served_admitted − served_capacity`, where the capacity is the sum of the
//!   open servers' `concurrency` (each server runs that many calls at once) or, while a pool
//!   of JavaScript workers starts or replaces a worker, the capacity it plans for
//!   ([`Admission::plan_served`]: maxThreads × concurrency, the workers it may start), whichever is more.
//!
//! So with 2 threads (native, or JavaScript workers of concurrency 1) and `maxQueue: 3`,
//! exactly 5 calls are accepted while every thread is busy, and the 6th is refused; native
//! threads are no room for served calls, nor servers for native ones. `maxQueue: 0` runs a call
//! only if a thread of its kind is free (as in Piscina). The count is the pool's, whichever
//! queue the strategy puts a call in. Servers of different methods share the served
//! capacity. A served call when no server is open nor planned does not wait for a thread (it
//! fails with MethodNotFound where it is placed), so the bound lets it through.
//!
//! State and invariants:
//! - `admitted` counts jobs placed on a worker or server queue and not finished (queued +
//!   running), native ones in its low 32 bits and served ones in its high 32 bits, so that one
//!   compare-exchange sees both kinds and the bound is exact under concurrent submitters. A job
//!   takes a slot before it is placed ([`Admission::reserve`]) and gives it back exactly once,
//!   when it finishes or is withdrawn ([`Admission::release`]). Each half stays below 2^32:
//!   a reservation that would overflow it fails (so does a broadcast's), and 2^32 jobs in
//!   flight would take hundreds of GB first.
//! - A broadcast's jobs take their slots without the bound ([`Admission::reserve_unbounded`]:
//!   one call, not n).
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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Which threads run a job, and so which count and capacity it is admitted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A native command, on the pool's native threads.
    Native,
    /// A method served by JavaScript threads.
    Served,
}

impl Kind {
    pub(crate) fn of(job: &Job) -> Kind {
        match job {
            Job::Native(_) => Kind::Native,
            Job::Served(_) => Kind::Served,
        }
    }

    /// One job of this kind in `admitted`.
    fn one(self) -> u64 {
        match self {
            Kind::Native => 1,
            Kind::Served => 1 << 32,
        }
    }
}

/// `admitted` split into its two counts: (native, served).
fn counts(admitted: u64) -> (u64, u64) {
    (admitted & u64::from(u32::MAX), admitted >> 32)
}

pub(crate) struct Admission {
    max_queue: u64,
    on_full: OnFull,
    /// Native worker threads (fixed).
    workers: u64,
    /// The sum of the open servers' concurrency (each at most 2^32 − 1, as is a count).
    open_capacity: AtomicU64,
    /// The capacity a pool of JavaScript workers plans for (see the module doc).
    planned_capacity: AtomicU64,
    /// Native jobs in the low half, served ones in the high half (see the module doc).
    admitted: AtomicU64,
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

/// A server's share of the served capacity: its concurrency, at most what a count holds.
fn server_capacity(concurrency: usize) -> u64 {
    u64::try_from(concurrency).map_or(u64::from(u32::MAX), |c| c.min(u64::from(u32::MAX)))
}

impl Admission {
    pub(crate) fn new(options: &Options, workers: usize) -> Admission {
        Admission {
            max_queue: u64::try_from(options.max_queue).unwrap_or(u64::MAX),
            on_full: options.on_full,
            workers: workers as u64,
            open_capacity: AtomicU64::new(0),
            planned_capacity: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
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
            format!(
                "The queue is full: {max} calls wait for a thread (maxQueue = {max}): retry \
                 later, raise maxQueue, or use onFull: 'wait'"
            ),
        )
    }

    /// A server opened that runs `concurrency` calls at once: that much more served capacity.
    pub(crate) fn server_opened(&self, concurrency: usize) {
        self.open_capacity
            .fetch_add(server_capacity(concurrency), Ordering::AcqRel);
    }

    /// A server closed: its capacity goes (jobs already admitted stay admitted).
    pub(crate) fn server_closed(&self, concurrency: usize) {
        self.open_capacity
            .fetch_sub(server_capacity(concurrency), Ordering::AcqRel);
    }

    /// A pool of JavaScript workers plans servers that run `calls` calls at once (maxThreads ×
    /// concurrency; `usize::MAX`: unbounded): until they are open, admission counts with it.
    pub(crate) fn plan_served(&self, calls: usize) {
        self.planned_capacity
            .store(server_capacity(calls), Ordering::Release);
    }

    /// The served calls that run at once (see the module doc).
    fn served_capacity(&self) -> u64 {
        self.open_capacity
            .load(Ordering::Acquire)
            .max(self.planned_capacity.load(Ordering::Acquire))
    }

    /// Takes a slot for a job of `kind` if `maxQueue` allows (see the module doc for the
    /// bound). It fails only when the bound is reached: the count is raised only when the job
    /// fits (a compare-exchange loop), never raised and undone, so a reservation racing with
    /// one that fails cannot fail for it. SeqCst, with `release` and `park`: see README.md
    /// §3, A4.
    pub(crate) fn reserve(&self, kind: Kind) -> bool {
        let served_capacity = self.served_capacity();
        let mut held = self.admitted.load(Ordering::SeqCst);
        loop {
            if !self.fits(kind, held, served_capacity) {
                return false;
            }
            match self.admitted.compare_exchange_weak(
                held,
                held + kind.one(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    /// Whether one more job of `kind` may be admitted beside the `held` ones: a thread of its
    /// kind is free for it, or fewer than `maxQueue` jobs wait.
    fn fits(&self, kind: Kind, held: u64, served_capacity: u64) -> bool {
        let (native, served) = counts(held);
        let (mine, capacity) = match kind {
            Kind::Native => (native, self.workers),
            Kind::Served => (served, served_capacity),
        };
        if mine >= u64::from(u32::MAX) {
            return false;
        }
        if mine < capacity || (kind == Kind::Served && capacity == 0) {
            return true;
        }
        let waiting = native.saturating_sub(self.workers) + served.saturating_sub(served_capacity);
        waiting < self.max_queue
    }

    /// Takes a slot for a native job whatever the bound (a broadcast's jobs); false only when
    /// the count is full (see the module doc).
    pub(crate) fn reserve_unbounded(&self) -> bool {
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let (native, _) = counts(held);
                (native < u64::from(u32::MAX)).then_some(held + Kind::Native.one())
            })
            .is_ok()
    }

    /// Gives back a slot taken for a job of `kind` that was not placed after all.
    pub(crate) fn unreserve(&self, kind: Kind) {
        self.admitted.fetch_sub(kind.one(), Ordering::AcqRel);
    }

    /// Gives back the slot of a job of `kind` that finished or was withdrawn. True when jobs
    /// wait for room: the caller must then admit them (the scheduler's `release_slot` does).
    pub(crate) fn release(&self, kind: Kind) -> bool {
        self.admitted.fetch_sub(kind.one(), Ordering::SeqCst);
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

    /// Takes the oldest waiting job and a slot for it, with the list's lock; `None` (nothing
    /// taken) when there is no job or no room for it. The caller admits the job through the
    /// lock ([`Admitting::admit`]); if that fails it gives the slot back
    /// ([`Admission::unreserve`]).
    pub(crate) fn next(&self) -> Option<(Job, Admitting<'_>)> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        // Withdrawn jobs need no room: their tombstones go, so that they hold nobody up.
        while waiting
            .front()
            .is_some_and(|job| !job.control().is_waiting())
        {
            waiting.pop_front();
        }
        // The oldest job's kind says which room it needs; it keeps its place until there is
        // room for it (FIFO across kinds).
        let kind = Kind::of(waiting.front()?);
        if !self.reserve(kind) {
            return None;
        }
        let job = waiting.pop_front()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(workers: usize, max_queue: usize) -> Admission {
        let options = Options {
            threads: workers,
            max_queue,
            ..Options::default()
        };
        Admission::new(&options, workers)
    }

    /// How many more jobs of `kind` are admitted (at most `limit`, to stop an unbounded one).
    fn admit_all(a: &Admission, kind: Kind, limit: usize) -> usize {
        (0..limit).take_while(|_| a.reserve(kind)).count()
    }

    #[test]
    fn max_queue_counts_the_calls_beyond_the_threads_of_their_kind() {
        // 2 native threads, maxQueue 3: 2 run, 3 wait, the 6th is refused.
        let a = admission(2, 3);
        assert_eq!(admit_all(&a, Kind::Native, 100), 5);
        // The same for served methods on two servers of concurrency 1, whatever the native
        // threads do: they are no room for served calls.
        let a = admission(4, 3);
        a.server_opened(1);
        a.server_opened(1);
        assert_eq!(admit_all(&a, Kind::Served, 100), 5);
        // A server of concurrency 3 runs 3 at once.
        let a = admission(0, 3);
        a.server_opened(3);
        assert_eq!(admit_all(&a, Kind::Served, 100), 6);
    }

    #[test]
    fn both_kinds_share_one_bound_on_waiting_calls_but_run_on_their_own_threads() {
        let a = admission(2, 3);
        a.server_opened(2);
        // 2 native running and 3 waiting fill the queue ...
        assert_eq!(admit_all(&a, Kind::Native, 100), 5);
        // ... but the free servers still take what they run at once, and nothing more.
        assert_eq!(admit_all(&a, Kind::Served, 100), 2);
        // A native job that ends makes room for one waiting call, of either kind.
        a.release(Kind::Native);
        assert_eq!(admit_all(&a, Kind::Served, 100), 1);
        assert!(!a.reserve(Kind::Native));
    }

    #[test]
    fn max_queue_zero_runs_a_call_only_on_a_free_thread_of_its_kind() {
        let a = admission(1, 0);
        a.server_opened(1);
        assert_eq!(admit_all(&a, Kind::Native, 100), 1);
        assert_eq!(admit_all(&a, Kind::Served, 100), 1);
        a.release(Kind::Served);
        assert!(a.reserve(Kind::Served));
        assert!(!a.reserve(Kind::Native));
    }

    #[test]
    fn planned_servers_count_until_as_many_are_open() {
        let a = admission(0, 3);
        a.plan_served(2);
        // No worker is up yet: 2 calls will run on the planned ones, 3 wait.
        assert_eq!(admit_all(&a, Kind::Served, 100), 5);
        // One worker up: the plan still counts; all up and more: the open ones do.
        a.server_opened(1);
        assert!(!a.reserve(Kind::Served));
        a.server_opened(1);
        a.server_opened(1);
        assert_eq!(admit_all(&a, Kind::Served, 100), 1);
    }

    #[test]
    fn unbounded_concurrency_and_no_server_never_make_a_served_call_wait() {
        let a = admission(1, 0);
        a.server_opened(usize::MAX);
        assert_eq!(admit_all(&a, Kind::Served, 10_000), 10_000);
        a.server_closed(usize::MAX);
        // No server open nor planned: the call fails where it is placed, not in the bound.
        assert!(a.reserve(Kind::Served));
    }

    #[test]
    fn a_server_that_closes_takes_its_capacity_with_it() {
        let a = admission(0, 1);
        a.server_opened(2);
        a.server_opened(1);
        assert_eq!(admit_all(&a, Kind::Served, 100), 4);
        a.server_closed(2);
        // 4 admitted, capacity 1: 3 wait, over the bound until they finish.
        assert!(!a.reserve(Kind::Served));
        for _ in 0..3 {
            a.release(Kind::Served);
        }
        assert!(a.reserve(Kind::Served));
        assert!(!a.reserve(Kind::Served));
    }

    #[test]
    fn a_count_never_overflows_into_the_other() {
        let a = admission(1, usize::MAX);
        a.admitted.store(u64::from(u32::MAX) - 1, Ordering::SeqCst);
        assert!(a.reserve(Kind::Native));
        assert!(!a.reserve(Kind::Native));
        assert!(!a.reserve_unbounded());
        assert_eq!(
            counts(a.admitted.load(Ordering::SeqCst)),
            (u64::from(u32::MAX), 0)
        );
        assert!(a.reserve(Kind::Served));
        assert_eq!(
            counts(a.admitted.load(Ordering::SeqCst)),
            (u64::from(u32::MAX), 1)
        );
    }
}
