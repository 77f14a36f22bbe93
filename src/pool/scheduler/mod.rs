//! The scheduler: the pool's shared state, one owner per concern, and the steps that move a
//! job from one owner to the next (rayon-core's `Registry` plays this part there).
//!
//! It owns:
//! - [`Options`] and the command [`Registry`] (read-only);
//! - [`Lifecycle`]: the closed/destroyed/stopping flags;
//! - [`Admission`]: the `maxQueue` bound and the `onFull: 'wait'` list;
//! - [`Workers`]: the native threads, their queues, sleep and retirement;
//! - [`Servers`]: the JavaScript threads that serve methods, and their queues;
//! - [`Counters`]: the figures `stats()` reports.
//!
//! The owners do not know each other; everything that crosses two of them happens here: a
//! call's route (native command or served method) and admission at submit, placement on a
//! worker or server, the release of a slot that admits a waiting job, cancel, destroy, the
//! worker threads' loop around each native job, and the served jobs' take, completion and
//! departure. Which thread moves a job through which state, and why each call settles exactly
//! once, is in `README.md`.
//!
//! This file holds the pool-wide steps and the native path; `served.rs` the steps of jobs
//! served by JavaScript threads (serve, place, take, complete, stop, depart), as methods of the
//! same [`Scheduler`].

mod served;

use super::admission::{Admission, Kind};
use super::job::{
    Cancelled, Control, Job, JobCore, NativeJob, Params, Progress, Reply, Runner, ServedJob,
};
use super::lifecycle::{closed_error, destroyed_error, Lifecycle};
use super::options::Options;
use super::origin::{Origin, Ran};
use super::server::Announce;
use super::servers::Servers;
use super::stats::{Counters, Stats};
use super::timeout;
use super::worker::{self, Workers};
use crate::rpc::{CancelReason, ErrorCode, Registry, RpcError, StopFlags, Value};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct Scheduler {
    options: Options,
    registry: Registry,
    lifecycle: Lifecycle,
    admission: Admission,
    workers: Workers,
    servers: Servers,
    counters: Counters,
}

impl Scheduler {
    /// Builds the pool's state and starts its threads: worker 0 here, which starts the others
    /// (see `worker.rs`). If worker 0 cannot start, nothing runs and this fails. A pool of no
    /// native threads (`threads: 0`) only schedules calls to JavaScript servers.
    pub(crate) fn start(options: Options, registry: Registry) -> std::io::Result<Arc<Scheduler>> {
        let n = options.threads;
        let s = Arc::new(Scheduler {
            admission: Admission::new(&options, n),
            workers: Workers::new(n),
            options,
            registry,
            lifecycle: Lifecycle::default(),
            servers: Servers::default(),
            counters: Counters::default(),
        });
        if n > 0 {
            if let Err(e) = Scheduler::spawn_worker(&s, 0) {
                s.stop_threads();
                return Err(e);
            }
        }
        Ok(s)
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    pub(crate) fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// The native command `method`, when this pool has it and threads to run it.
    pub(crate) fn native_command(&self, method: &str) -> Option<Arc<dyn crate::rpc::Command>> {
        if self.workers.len() == 0 {
            return None;
        }
        self.registry.get(method).cloned()
    }

    /// Runs `method` with `params`; the outcome goes to `reply`. `timeout`: `None` uses the
    /// pool's default, a zero duration means no limit. `pinned`: a broadcast's job for that
    /// worker. `alone`: a served job that runs alone on its server ([`Caller::alone`]).
    /// Returns the job's control when it was accepted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn submit(
        &self,
        origin: &Arc<Origin>,
        method: &str,
        params: Params,
        timeout: Option<Duration>,
        reply: Reply,
        pinned: Option<usize>,
        announce: Option<Announce>,
        continuing: bool,
        trace: Option<Arc<str>>,
        alone: bool,
    ) -> Option<Arc<Control>> {
        if !self.lifecycle.admits(continuing) {
            reply.finish(Err(closed_error()), origin);
            return None;
        }
        // The native command, or the served job's token and whether its params hold views.
        let target = match self.registry.get(method) {
            Some(_) if self.workers.len() == 0 => {
                let e = RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!(
                        "{method:?} is a native command, and this pool runs no native threads \
                         (it serves the methods of its JavaScript workers)"
                    ),
                );
                reply.finish(Err(e), origin);
                return None;
            }
            Some(command) => Ok(command.clone()),
            None if pinned.is_none() && self.servers.serves(method) => {
                let token = self.servers.next_token();
                let views = match &params {
                    Params::Values(values) => values.iter().any(Value::has_view),
                    Params::Posted => true,
                    Params::Packed(_) | Params::Cloned(_) => false,
                };
                Err((token, views))
            }
            None if self.servers.serves(method) => {
                let e = RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!(
                        "broadcast runs native commands only; {method:?} is served by JavaScript"
                    ),
                );
                reply.finish(Err(e), origin);
                return None;
            }
            None => {
                reply.finish(Err(self.unserved(method)), origin);
                return None;
            }
        };
        let core = JobCore {
            timeout: match timeout {
                None => self.options.timeout,
                Some(d) if d.is_zero() => None,
                Some(d) => Some(d),
            },
            control: Control::new(params),
            origin: origin.clone(),
            reply,
            submitted: Instant::now(),
        };
        let job = match target {
            Ok(command) => Job::Native(NativeJob {
                core,
                command,
                pinned,
            }),
            Err((token, views)) => Job::Served(ServedJob {
                core,
                method: method.into(),
                token,
                views,
                announced: false,
                trace,
                alone,
            }),
        };
        self.enqueue(job, announce)
    }

    /// Runs `command` itself (not a registered one: a map's chunk, see `each.rs`) with
    /// `params`, with no limit of its own; the outcome goes to `reply`.
    pub(crate) fn submit_command(
        &self,
        origin: &Arc<Origin>,
        command: Arc<dyn crate::rpc::Command>,
        params: Params,
        reply: Reply,
        continuing: bool,
    ) -> Option<Arc<Control>> {
        if !self.lifecycle.admits(continuing) {
            reply.finish(Err(closed_error()), origin);
            return None;
        }
        let core = JobCore {
            timeout: None,
            control: Control::new(params),
            origin: origin.clone(),
            reply,
            submitted: Instant::now(),
        };
        let job = Job::Native(NativeJob {
            core,
            command,
            pinned: None,
        });
        self.enqueue(job, None)
    }

    /// Admits a new job under `maxQueue` (or parks it, or refuses it) and places it.
    fn enqueue(&self, job: Job, announce: Option<Announce>) -> Option<Arc<Control>> {
        let (control, pinned) = match &job {
            Job::Native(j) => (j.core.control.clone(), j.pinned.is_some()),
            Job::Served(j) => (j.core.control.clone(), false),
        };
        if pinned {
            if !self.admission.reserve_unbounded() {
                job.settle(Err(self.admission.full_error()));
                return None;
            }
            self.place(job, None);
            return Some(control);
        }
        let wait = self.admission.waits();
        if wait && self.admission.has_waiting() {
            // Others are already waiting for room: queue up behind them.
            self.admission.park(job);
            self.admit_waiting();
            return Some(control);
        }
        if !self.admission.reserve(Kind::of(&job)) {
            if wait {
                self.admission.park(job);
                self.admit_waiting();
                return Some(control);
            }
            job.settle(Err(self.admission.full_error()));
            return None;
        }
        self.place(job, announce);
        Some(control)
    }

    /// Puts a new job (with a reserved slot) on a worker's or a server's queue.
    fn place(&self, job: Job, announce: Option<Announce>) {
        match job {
            Job::Served(job) => {
                self.counters.add_queued();
                self.place_served(job, announce);
            }
            Job::Native(job) => {
                let w = self.assign(&job);
                self.push(w, job);
            }
        }
    }

    /// Picks the job's worker by strategy (or its pin) and counts the job in that worker's
    /// load. The index is written before the job can be seen as QUEUED by a canceller.
    fn assign(&self, job: &NativeJob) -> usize {
        let w = self.workers.pick(self.options.strategy, job.pinned);
        self.workers[w].add_queued();
        self.counters.add_queued();
        job.core.control.set_worker(w);
        w
    }

    /// Pushes a job assigned to worker `w`; if the worker turned out to be retired, settles
    /// its queue (the push's side of the retirement handshake, see `worker.rs`).
    fn push(&self, w: usize, job: NativeJob) {
        if !self.workers[w].push(job) {
            self.retire_worker(w);
        }
    }

    /// Undoes the queue counters of a job that left worker `w`'s queue.
    fn unqueue(&self, w: usize) {
        self.workers[w].sub_queued();
        self.counters.sub_queued();
    }

    /// Gives back the slot of a job of `kind` that finished or was withdrawn, and lets a
    /// waiting job in.
    fn release_slot(&self, kind: Kind) {
        if self.admission.release(kind) {
            self.admit_waiting();
        }
    }

    /// Moves waiting jobs into queues while there is room, oldest first. Once the pool is
    /// destroyed nothing is admitted (`destroy` settles the wait list); a job this thread took
    /// off the list just before is settled where it lands (`Worker::push` and `take` see the
    /// pool destroyed), never stranded.
    ///
    /// Not reentrant: a job admitted here may settle at once (no server left for its method,
    /// its worker retired) and give its slot back, and the admission that release would start
    /// is left to this loop, which looks for room again before it ends. Otherwise every such
    /// job would nest one more call, and a long wait list would overflow the stack.
    fn admit_waiting(&self) {
        let Some(_admitting) = AdmittingHere::enter(self) else {
            return; // this thread is in the loop below already, further up its stack
        };
        while self.admission.has_waiting() && !self.lifecycle.is_destroyed() {
            let Some((job, admitting)) = self.admission.next() else {
                return;
            };
            match job {
                Job::Served(job) => {
                    // Counted as queued before it can be seen QUEUED (a canceller uncounts it).
                    self.counters.add_queued();
                    if !admitting.admit(&job.core.control) {
                        self.counters.sub_queued();
                        self.admission.unreserve(Kind::Served);
                        continue;
                    }
                    self.place_served(job, None);
                }
                Job::Native(job) => {
                    let w = self.assign(&job);
                    // A job cancelled while waiting was already counted out of the list.
                    if !admitting.admit(&job.core.control) {
                        self.unqueue(w);
                        self.admission.unreserve(Kind::Native);
                        continue;
                    }
                    #[cfg(test)]
                    self.admission.pause_for_tests();
                    self.push(w, job);
                }
            }
        }
    }

    /// Asks a call to stop (see `Pool::cancel_call`): what the cancel did. `end_thread`: a
    /// running served call's server departs too when it has nothing left to answer.
    pub(crate) fn cancel(
        &self,
        control: &Control,
        reason: CancelReason,
        end_thread: bool,
    ) -> Cancelled {
        control.set_reason(reason);
        if self.withdraw(control) {
            return Cancelled::Withdrawn;
        }
        let Some(runner) = self.cancel_running(control) else {
            return Cancelled::Asked;
        };
        let ended = end_thread && self.depart_if_done(runner.id());
        Cancelled::Stopped {
            thread: runner.thread(),
            ended,
        }
    }

    /// Cancels a call only if it has not started (see `Pool::withdraw`): true when it was
    /// taken out of WAITING or QUEUED and the caller must settle it; a running call is left be.
    pub(crate) fn withdraw_unstarted(&self, control: &Control, reason: CancelReason) -> bool {
        if self.withdraw(control) {
            control.set_reason(reason);
            return true;
        }
        false
    }

    /// Takes a cancelled job out of WAITING or QUEUED; true if this thread did (and so must
    /// settle it).
    fn withdraw(&self, control: &Control) -> bool {
        if self.admission.withdraw(control) {
            return true;
        }
        if control.withdraw_queued() {
            // `assign` wrote the index before the job could become QUEUED; a served job has
            // none (its server uncounts the tombstone when it drains it).
            let kind = match control.worker() {
                Some(w) => {
                    self.workers[w].sub_queued();
                    Kind::Native
                }
                None => Kind::Served,
            };
            self.counters.sub_queued();
            self.release_slot(kind);
            return true;
        }
        false
    }

    /// A canceller found a served job RUNNING: settle it and tell its handler; its runner if
    /// this canceller ended it. (A running native job sees the cancel reason through
    /// `Context::check`.)
    fn cancel_running(&self, control: &Control) -> Option<Arc<dyn Runner>> {
        let (runner, token) = control.runner()?;
        let stopped = runner.stop(token)?;
        self.counters.add_failed();
        stopped.settle();
        Some(runner)
    }

    pub(crate) fn close(&self) {
        self.lifecycle.close();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lifecycle.is_closed()
    }

    /// Closes the pool, settles every queued and waiting call with PoolClosed, asks running
    /// calls to stop, and lets the threads exit.
    pub(crate) fn destroy(&self) {
        self.lifecycle.destroy();
        let closed = destroyed_error;
        self.admission.withdraw_all(|job| job.settle(Err(closed())));
        for w in 0..self.workers.len() {
            self.settle_queue(w, closed);
        }
        self.destroy_served(closed);
        self.stop_threads();
    }

    /// Lets the threads exit once their queues are empty.
    pub(crate) fn stop_threads(&self) {
        self.lifecycle.stop_threads();
        self.workers.wake_all();
    }

    pub(crate) fn stats(&self) -> Stats {
        let servers = self.server_stats();
        let workers = self.workers.stats();
        Stats {
            threads: workers.len(),
            strategy: self.options.strategy,
            queued: self.counters.queued(),
            waiting: self.admission.waiting(),
            running: workers.iter().map(|w| w.running).sum::<usize>()
                + servers.iter().map(|sv| sv.running).sum::<usize>(),
            completed: self.counters.completed(),
            failed: self.counters.failed(),
            workers,
            servers,
            run_time: self.counters.run_time(),
            wait_time: self.counters.wait_time(),
        }
    }

    // Native workers.

    /// Starts worker `index`'s thread, which first starts its children in the tree.
    fn spawn_worker(s: &Arc<Scheduler>, index: usize) -> std::io::Result<()> {
        let s = s.clone();
        worker::spawn(index, s.options.nice_increment, move || {
            s.workers[index].register_thread();
            for child in s.workers.children(index) {
                if Scheduler::spawn_worker(&s, child).is_err() {
                    s.retire_worker(child);
                }
            }
            s.workers[index].serve(&s.lifecycle, |job| s.execute(index, job));
            // From here on the thread serves nobody: a job pushed now (a thread admitting a
            // waiting call as destroy() ran) is settled by whoever sees the other side of this
            // handshake, the pusher through `push`'s result or this thread, never stranded.
            s.retire_worker(index);
        })
    }

    /// Marks worker `w` as serving no more (its thread could not be created, or it ended at
    /// shutdown) and settles its queue; see `worker.rs` for the handshake with pushers.
    pub(crate) fn retire_worker(&self, w: usize) {
        self.workers[w].retire();
        self.settle_queue(w, || self.lifecycle.no_thread_error());
    }

    /// Settles every job still queued on worker `w` with `error()`.
    fn settle_queue(&self, w: usize, error: impl Fn() -> RpcError) {
        while let Some(job) = self.workers[w].pop() {
            if job.core.control.withdraw_queued() {
                self.unqueue(w);
                self.release_slot(Kind::Native);
                job.core.settle(Err(error()));
            }
        }
    }

    /// Runs one native job popped by worker `index`, unless it was withdrawn, and settles it.
    fn execute(&self, index: usize, job: NativeJob) {
        let me = &self.workers[index];
        let Some(params) = job.core.control.start() else {
            return; // cancelled while queued: the canceller settled it and fixed the counters
        };
        me.set_running(true);
        self.unqueue(index);

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
            me.set_running(false);
            self.release_slot(Kind::Native);
            return;
        }
        let start = Instant::now();
        self.counters
            .record_wait(start.saturating_duration_since(submitted));
        let flags = StopFlags {
            cancel: control.cancel_flag(),
            env_gone: origin.gone_flag(),
            destroyed: self.lifecycle.destroyed_flag(),
        };
        // Everything that runs the command or shapes its outcome is inside `catch_unwind`: a
        // panic anywhere there is this call's InternalError, and the thread goes on serving.
        let progress = reply.watched().map(|call| Progress {
            origin: &origin,
            call,
        });
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            let limit = timeout::running_limit(command.name(), start, timeout);
            let mut ctx = crate::rpc::Context::new(flags, limit, index);
            if matches!(params, Params::Packed(_)) {
                ctx = ctx.with_plain_params();
            }
            if let Some(progress) = &progress {
                ctx = ctx.reporting_to(progress);
            }
            ctx.check()?;
            let value = match params {
                Params::Values(values) => command.run(values, &ctx),
                Params::Packed(packed) => command.run_packed(packed, &ctx),
                // Only JavaScript reads them (lib/pool.js sends them to served methods only).
                Params::Cloned(_) | Params::Posted => {
                    Err(RpcError::invalid_params(super::job::CLONED_TO_NATIVE))
                }
            }?;
            match ctx.stop_reason() {
                // It finished, but after it was told to stop: the stop is the answer.
                Some(reason) => Err(ctx.stop_error(reason)),
                None => Ok(value),
            }
        }));
        let outcome = result.unwrap_or_else(|payload| {
            Err(crate::rpc::command::panicked(command.name(), &*payload))
        });
        let elapsed = start.elapsed();
        self.counters.record_run(elapsed);
        me.add_busy(elapsed);
        self.counters.record(&outcome);
        control.finish();
        me.add_completed();
        me.set_running(false);
        self.release_slot(Kind::Native);
        let ran = Ran {
            thread: index as u64,
            wait: start.saturating_duration_since(submitted),
            run: elapsed,
        };
        let long = elapsed >= crate::pool::origin::LONG_CALL;
        crate::pool::origin::behind(self.counters.queued(), self.workers.len(), long, || {
            reply.finish_ran(outcome, &origin, ran)
        });
        origin.leave();
    }

    /// Tests: the workers.
    #[cfg(test)]
    pub(crate) fn workers(&self) -> &Workers {
        &self.workers
    }

    /// Tests: admission.
    #[cfg(test)]
    pub(crate) fn admission(&self) -> &Admission {
        &self.admission
    }
}

thread_local! {
    /// The scheduler whose `admit_waiting` loop runs on this thread (null: none).
    static ADMITTING: Cell<*const Scheduler> = const { Cell::new(std::ptr::null()) };
}

/// Marks this thread as running `admit_waiting` for one scheduler, until dropped.
struct AdmittingHere {
    /// What the mark was before (another pool's loop further up the stack, or none).
    outer: *const Scheduler,
}

impl AdmittingHere {
    /// `None` when this thread already runs `admit_waiting` for `s`.
    fn enter(s: &Scheduler) -> Option<AdmittingHere> {
        let me: *const Scheduler = s;
        ADMITTING.with(|a| {
            let outer = a.get();
            if outer == me {
                return None;
            }
            a.set(me);
            Some(AdmittingHere { outer })
        })
    }
}

impl Drop for AdmittingHere {
    fn drop(&mut self) {
        ADMITTING.with(|a| a.set(self.outer));
    }
}
