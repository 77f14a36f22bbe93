//! A worker: one OS thread, its queue, and its counters.
//!
//! Sleeping and waking (no lost wake-up): an idle worker spins briefly, then sets `sleeping`,
//! issues a SeqCst fence and looks at its queue once more before parking; a submitter pushes,
//! issues a SeqCst fence and unparks the worker if it reads `sleeping`. With both fences, either
//! the worker sees the job or the submitter sees the flag. `park` keeps a token, so an unpark
//! that lands just before the park is not lost either.

use super::job::{Job, DONE, QUEUED, RUNNING};
use super::Shared;
use crate::rpc::{ErrorCode, RpcError, StopFlags};
use crossbeam_queue::SegQueue;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::Instant;

/// Busy-polls before sleeping: a burst of calls then costs no futex wake per call.
const SPIN_ROUNDS: u32 = 64;

#[derive(Default)]
pub(crate) struct Worker {
    pub(crate) queue: SegQueue<Job>,
    pub(crate) queued: AtomicUsize,
    pub(crate) running: AtomicUsize,
    pub(crate) completed: AtomicU64,
    pub(crate) busy_ns: AtomicU64,
    sleeping: AtomicBool,
    thread: OnceLock<Thread>,
}

impl Worker {
    /// Queued + running: what `leastbusy` compares.
    pub(crate) fn load(&self) -> usize {
        self.queued.load(Ordering::Relaxed) + self.running.load(Ordering::Relaxed)
    }

    pub(crate) fn push(&self, job: Job) {
        self.queue.push(job);
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    pub(crate) fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

pub(crate) fn spawn(shared: Arc<Shared>, index: usize) -> std::io::Result<()> {
    thread::Builder::new()
        .name(format!("corepool-{index}"))
        .spawn(move || {
            let _ = shared.workers[index].thread.set(thread::current());
            run(&shared, index);
        })
        .map(|_| ())
}

fn run(s: &Shared, index: usize) {
    let me = &s.workers[index];
    let mut idle = 0u32;
    loop {
        if let Some(job) = me.queue.pop() {
            idle = 0;
            execute(s, index, job);
            continue;
        }
        if s.shutdown.load(Ordering::Acquire) {
            break;
        }
        if idle < SPIN_ROUNDS {
            idle += 1;
            if idle.is_multiple_of(8) {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        me.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if me.queue.is_empty() && !s.shutdown.load(Ordering::SeqCst) {
            thread::park();
        }
        me.sleeping.store(false, Ordering::SeqCst);
    }
    // A job pushed after shutdown (a racing submit on another thread) is settled, not lost.
    while let Some(job) = me.queue.pop() {
        if job.control.transition(QUEUED, DONE) {
            s.unqueue(index);
            s.release_slot();
            job.settle(Err(RpcError::new(
                ErrorCode::PoolClosed,
                "The pool was shut down",
            )));
        }
    }
}

fn execute(s: &Shared, index: usize, job: Job) {
    let me = &s.workers[index];
    if !job.control.transition(QUEUED, RUNNING) {
        return; // cancelled while queued: the canceller settled it and fixed the counters
    }
    me.running.store(1, Ordering::Release);
    s.unqueue(index);

    let Job {
        command,
        params,
        timeout,
        control,
        origin,
        reply,
        submitted,
        ..
    } = job;
    if !origin.enter() {
        // The caller's JS environment is gone: nobody is listening, and its memory may be.
        control.state.store(DONE, Ordering::Release);
        me.running.store(0, Ordering::Release);
        s.release_slot();
        return;
    }
    let start = Instant::now();
    s.wait_time.record(start - submitted);
    let flags = StopFlags {
        cancel: &control.cancel,
        env_gone: origin.gone_flag(),
        destroyed: &s.destroyed,
    };
    let ctx = crate::rpc::Context::new(flags, timeout.map(|t| start + t), index);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        ctx.check()?;
        command.run(params.into_values()?, &ctx)
    }));
    let outcome = match result {
        Ok(Ok(value)) => match ctx.stop_reason() {
            // It finished, but after it was told to stop: the stop is the answer.
            Some(reason) => Err(reason.error()),
            None => Ok(value),
        },
        Ok(Err(e)) => Err(e),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(RpcError::new(
                ErrorCode::InternalError,
                format!("command {:?} panicked: {what}", command.name()),
            ))
        }
    };
    let elapsed = start.elapsed();
    s.run_time.record(elapsed);
    me.busy_ns
        .fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
    s.record(&outcome);
    control.state.store(DONE, Ordering::Release);
    me.completed.fetch_add(1, Ordering::Relaxed);
    me.running.store(0, Ordering::Release);
    s.release_slot();
    reply.finish(outcome, &origin);
    origin.leave();
}
