//! A worker: one OS thread, its queue, and its counters.
//!
//! Start-up: threads are started as a tree (the constructor starts worker 0; worker k starts
//! 2k+1 and 2k+2), so n threads are up after ~log2(n) thread creations instead of n in a row.
//! Jobs may be queued for a worker before its thread runs; it serves them when it starts. If
//! a thread cannot be created, its worker is marked dead: its queue is settled with
//! InternalError and `Shared::assign` sends later jobs elsewhere. A push that races with the
//! marking re-checks `alive` after pushing (SeqCst on both sides), so no job is stranded.
//!
//! Sleeping and waking (no lost wake-up): an idle worker spins briefly, then sets `sleeping`,
//! issues a SeqCst fence and looks at its queue once more before parking; a submitter pushes,
//! issues a SeqCst fence and unparks the worker if it reads `sleeping`. With both fences, either
//! the worker sees the job or the submitter sees the flag. `park` keeps a token, so an unpark
//! that lands just before the park is not lost either.

use super::idle::{idle_pause, IDLE_SPIN};
use super::job::{JobCore, NativeJob};
use super::timeout;
use super::Shared;
use crate::rpc::{ErrorCode, RpcError, StopFlags};
use crossbeam_queue::SegQueue;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::Instant;

pub(crate) struct Worker {
    pub(crate) queue: SegQueue<NativeJob>,
    pub(crate) queued: AtomicUsize,
    pub(crate) running: AtomicUsize,
    pub(crate) completed: AtomicU64,
    pub(crate) busy_ns: AtomicU64,
    pub(crate) sleeping: AtomicBool,
    thread: OnceLock<Thread>,
    /// False once its thread could not be created.
    pub(crate) alive: AtomicBool,
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
    /// (see `Shared::assign`), which must not win ties for that reason.
    pub(crate) fn asleep(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed) || !self.alive.load(Ordering::Relaxed)
    }

    /// Queues a job and wakes the thread if it sleeps. `false`: the worker turned out to be
    /// dead, and the caller must settle the queue (`Shared::settle_queue`).
    #[must_use]
    pub(crate) fn push(&self, job: NativeJob) -> bool {
        self.queue.push(job);
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.wake();
        }
        self.alive.load(Ordering::SeqCst)
    }

    pub(crate) fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// Starts worker `index`'s thread, which first starts its children in the tree.
pub(crate) fn spawn(shared: Arc<Shared>, index: usize) -> std::io::Result<()> {
    thread::Builder::new()
        .name(format!("corepool-{index}"))
        .spawn(move || {
            lower_priority(shared.options.nice_increment);
            let _ = shared.workers[index].thread.set(thread::current());
            for child in [2 * index + 1, 2 * index + 2] {
                if child < shared.workers.len() && spawn(shared.clone(), child).is_err() {
                    shared.retire_worker(child);
                }
            }
            run(&shared, index);
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

fn run(s: &Shared, index: usize) {
    let me = &s.workers[index];
    let mut idle_since: Option<Instant> = None;
    loop {
        if let Some(job) = me.queue.pop() {
            idle_since = None;
            execute(s, index, job);
            continue;
        }
        if s.lifecycle.is_stopping() {
            break;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < IDLE_SPIN {
            idle_pause();
            continue;
        }
        idle_since = None;
        me.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if me.queue.is_empty() && !s.lifecycle.is_stopping() {
            thread::park();
        }
        me.sleeping.store(false, Ordering::SeqCst);
    }
    // From here on the thread serves nobody: a job pushed now (a thread admitting a waiting
    // call as destroy() ran) is settled by whoever sees the other side of this handshake, the
    // pusher through `push`'s result or this thread below, never stranded.
    s.retire_worker(index);
}

impl Shared {
    /// Settles every job still queued on worker `w` with `error()`.
    pub(crate) fn settle_queue(&self, w: usize, error: impl Fn() -> RpcError) {
        while let Some(job) = self.workers[w].queue.pop() {
            if job.core.control.withdraw_queued() {
                self.unqueue(w);
                self.release_slot();
                job.core.settle(Err(error()));
            }
        }
    }

    /// Marks worker `w` as serving no more (its thread could not be created, or it ended at
    /// shutdown) and settles its queue. Dekker-style with [`Worker::push`]: this side stores
    /// `alive = false` then looks at the queue, a pusher pushes then loads `alive`, both with
    /// SeqCst fences between, so a job is settled here or its pusher sees the worker gone.
    pub(crate) fn retire_worker(&self, w: usize) {
        self.workers[w].alive.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.settle_queue(w, || self.lifecycle.no_thread_error());
    }
}

fn execute(s: &Shared, index: usize, job: NativeJob) {
    let me = &s.workers[index];
    let Some(params) = job.core.control.start() else {
        return; // cancelled while queued: the canceller settled it and fixed the counters
    };
    me.running.store(1, Ordering::Release);
    s.unqueue(index);

    let NativeJob {
        core:
            JobCore {
                control,
                origin,
                reply,
                submitted,
                timeout,
            },
        command,
        ..
    } = job;
    if !origin.enter() {
        // The caller's JS environment is gone: nobody is listening, and its memory may be.
        control.finish();
        me.running.store(0, Ordering::Release);
        s.release_slot();
        return;
    }
    let start = Instant::now();
    s.counters
        .record_wait(start.saturating_duration_since(submitted));
    let flags = StopFlags {
        cancel: control.cancel_flag(),
        env_gone: origin.gone_flag(),
        destroyed: s.lifecycle.destroyed_flag(),
    };
    // Everything that runs the command or shapes its outcome is inside `catch_unwind`: a panic
    // anywhere there is this call's InternalError, and the thread goes on serving.
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let ctx = crate::rpc::Context::new(flags, timeout::deadline(start, timeout), index);
        ctx.check()?;
        let value = command.run(params.into_values()?, &ctx)?;
        match ctx.stop_reason() {
            // It finished, but after it was told to stop: the stop is the answer.
            Some(reason) => Err(reason.error()),
            None => Ok(value),
        }
    }));
    let outcome = result.unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(RpcError::new(
            ErrorCode::InternalError,
            format!("command {:?} panicked: {what}", command.name()),
        ))
    });
    let elapsed = start.elapsed();
    s.counters.record_run(elapsed);
    me.busy_ns
        .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
    s.counters.record(&outcome);
    control.finish();
    me.completed.fetch_add(1, Ordering::Relaxed);
    me.running.store(0, Ordering::Release);
    s.release_slot();
    reply.finish(outcome, &origin);
    origin.leave();
}
