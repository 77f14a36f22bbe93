//! A worker: one OS thread, its queue of native jobs, its counters, and the handshakes that
//! let it sleep without losing a job.
//!
//! Start-up: threads are started as a tree (the constructor starts worker 0; worker k starts
//! 2k+1 and 2k+2, [`Workers::children`]), so n threads are up after ~log2(n) thread creations
//! instead of n in a row. Jobs may be queued for a worker before its thread runs; it serves
//! them when it starts. If a thread cannot be created, its worker is retired: its queue is
//! settled with InternalError and [`Workers::pick`] sends later jobs to worker 0.
//!
//! Sleeping and waking (no lost wake-up): an idle worker spins briefly, then sets `sleeping`,
//! issues a SeqCst fence and looks at its queue once more before parking; a submitter pushes,
//! issues a SeqCst fence and unparks the worker if it reads `sleeping`. With both fences, either
//! the worker sees the job or the submitter sees the flag. `park` keeps a token, so an unpark
//! that lands just before the park is not lost either.
//!
//! Retirement (no stranded job): [`Worker::retire`] stores `alive = false`, issues a SeqCst
//! fence, and then the retiring thread empties the queue; [`Worker::push`] pushes, issues a
//! SeqCst fence and reads `alive`. Either the retiring thread sees the job, or the pusher sees
//! the worker gone and empties the queue itself. `README.md` §4–§5 gives both proofs.

use super::idle::{idle_pause, IDLE_SPIN};
use super::job::NativeJob;
use super::lifecycle::Lifecycle;
use super::stats::WorkerStats;
use super::strategy::Strategy;
use crossbeam_queue::SegQueue;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

pub(crate) struct Worker {
    queue: SegQueue<NativeJob>,
    /// Jobs counted into this worker's queue and not yet out of QUEUED (see `stats::Counters`).
    queued: AtomicUsize,
    /// 1 while it runs a job.
    running: AtomicUsize,
    completed: AtomicU64,
    busy_ns: AtomicU64,
    sleeping: AtomicBool,
    thread: OnceLock<Thread>,
    /// False once its thread could not be created, or has ended.
    alive: AtomicBool,
}

impl Default for Worker {
    fn default() -> Self {
        Worker {
            queue: SegQueue::new(),
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            sleeping: AtomicBool::new(false),
            thread: OnceLock::new(),
            alive: AtomicBool::new(true),
        }
    }
}

impl Worker {
    /// Queued + running: what `leastbusy` compares.
    pub(crate) fn load(&self) -> usize {
        self.queued.load(Ordering::Relaxed) + self.running.load(Ordering::Relaxed)
    }

    /// Parked (or about to be): a call placed on it costs an unpark. A hint for the strategy.
    /// A worker whose thread could not be created counts as asleep: its calls go to worker 0
    /// (see [`Workers::pick`]), which must not win ties for that reason.
    pub(crate) fn asleep(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed) || !self.alive.load(Ordering::Relaxed)
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// A job is about to be pushed here (it counts as this worker's load from now on).
    pub(crate) fn add_queued(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// A job counted here left QUEUED (started or withdrawn).
    pub(crate) fn sub_queued(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// The thread runs a job (`true`) or no longer does (`false`).
    pub(crate) fn set_running(&self, running: bool) {
        self.running.store(usize::from(running), Ordering::Release);
    }

    /// Adds a job's running time to the worker's busy time.
    pub(crate) fn add_busy(&self, elapsed: Duration) {
        self.busy_ns
            .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_completed(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }

    /// Queues a job and wakes the thread if it sleeps. `false`: the worker turned out to be
    /// retired, and the caller must settle the queue (the scheduler's `settle_queue`).
    #[must_use]
    pub(crate) fn push(&self, job: NativeJob) -> bool {
        self.queue.push(job);
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.wake();
        }
        self.alive.load(Ordering::SeqCst)
    }

    /// Takes the oldest job off the queue (tombstones included).
    pub(crate) fn pop(&self) -> Option<NativeJob> {
        self.queue.pop()
    }

    pub(crate) fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// Records the calling thread as this worker's (for [`Worker::wake`]).
    pub(crate) fn register_thread(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// The worker thread's loop: runs every job it pops with `run`, idles when the queue is
    /// empty (spins for [`IDLE_SPIN`], then sleeps until a push wakes it), and returns once the
    /// pool stops its threads and the queue is empty.
    pub(crate) fn serve(&self, lifecycle: &Lifecycle, mut run: impl FnMut(NativeJob)) {
        let mut idle_since: Option<Instant> = None;
        loop {
            if let Some(job) = self.queue.pop() {
                idle_since = None;
                run(job);
                continue;
            }
            if lifecycle.is_stopping() {
                break;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() < IDLE_SPIN {
                idle_pause();
                continue;
            }
            idle_since = None;
            self.sleeping.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if self.queue.is_empty() && !lifecycle.is_stopping() {
                thread::park();
            }
            self.sleeping.store(false, Ordering::SeqCst);
        }
    }

    /// Marks the worker as serving no more (its thread could not be created, or it ended).
    /// The caller then empties the queue: see the module doc for why no job is stranded.
    pub(crate) fn retire(&self) {
        self.alive.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    fn stats(&self, id: usize) -> WorkerStats {
        WorkerStats {
            id,
            queued: self.queued.load(Ordering::Relaxed),
            running: self.running.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            busy_ms: self.busy_ns.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// Tests: makes the worker look awake (or asleep) to the strategy and to pushers.
    #[cfg(test)]
    pub(crate) fn pretend_sleeping(&self, sleeping: bool) {
        self.sleeping.store(sleeping, Ordering::SeqCst);
    }
}

/// The pool's workers, and the round-robin counter they share.
pub(crate) struct Workers {
    list: Box<[Worker]>,
    next: AtomicUsize,
}

impl std::ops::Index<usize> for Workers {
    type Output = Worker;
    fn index(&self, w: usize) -> &Worker {
        &self.list[w]
    }
}

impl Workers {
    pub(crate) fn new(n: usize) -> Workers {
        Workers {
            list: (0..n).map(|_| Worker::default()).collect(),
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Worker> {
        self.list.iter()
    }

    /// The worker a job goes to: its pin, or the one `strategy` picks; worker 0 (started by
    /// the constructor) instead of a worker whose thread could not be created.
    pub(crate) fn pick(&self, strategy: Strategy, pinned: Option<usize>) -> usize {
        let w = pinned.unwrap_or_else(|| {
            strategy.pick(self.list.len(), &self.next, |i| {
                (self.list[i].load(), self.list[i].asleep())
            })
        });
        if self.list[w].is_alive() {
            w
        } else {
            0
        }
    }

    /// The workers whose threads worker `index`'s thread starts.
    pub(crate) fn children(&self, index: usize) -> impl Iterator<Item = usize> {
        let n = self.list.len();
        [2 * index + 1, 2 * index + 2]
            .into_iter()
            .filter(move |&c| c < n)
    }

    /// Wakes every thread (to see that the pool stops them).
    pub(crate) fn wake_all(&self) {
        for w in self.list.iter() {
            w.wake();
        }
    }

    pub(crate) fn stats(&self) -> Vec<WorkerStats> {
        self.list
            .iter()
            .enumerate()
            .map(|(id, w)| w.stats(id))
            .collect()
    }
}

/// Starts a thread named after worker `index` that runs `body` at `nice_increment` levels
/// below the process's priority.
pub(crate) fn spawn(
    index: usize,
    nice_increment: u8,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<()> {
    thread::Builder::new()
        .name(format!("corepool-{index}"))
        .spawn(move || {
            lower_priority(nice_increment);
            body();
        })
        .map(|_| ())
}

/// Sets this thread's scheduling priority `increment` nice levels below the process's (its
/// main thread's), on Linux; elsewhere nothing happens. On Linux, nice applies per thread: the
/// JS threads keep theirs, so the scheduler serves the event loop before the pool when both
/// want a core. Relative to the process, not to the spawning thread, whose nice a new thread
/// inherits. Best effort: a failure leaves the thread as it was.
#[cfg(target_os = "linux")]
fn lower_priority(increment: u8) {
    if increment == 0 {
        return;
    }
    // SAFETY: plain system calls about this process and thread, no pointers involved.
    // getpriority may return -1 as a valid value, so errno is cleared first and checked after.
    unsafe {
        *libc::__errno_location() = 0;
        let process = libc::getpriority(libc::PRIO_PROCESS, libc::getpid() as libc::id_t);
        if process == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let target = (process + i32::from(increment)).min(19);
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, target);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority(_increment: u8) {}
