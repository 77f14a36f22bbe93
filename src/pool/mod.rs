//! The scheduler: a fixed set of worker threads, one queue each, and the strategy that picks
//! a queue for every call at submit time.
//!
//! State and invariants:
//! - The pool's `queued` count (`stats::Counters`) counts jobs sitting in queues in state
//!   QUEUED; each worker's own `queued` counts its share. Both are incremented before a job
//!   becomes QUEUED and decremented by the thread that moves it out of QUEUED (the worker that
//!   starts it, or a canceller), so they never underflow and are exact when the pool is quiet.
//! - `maxQueue`, `onFull` and the wait list are admission's (`admission.rs`): a job holds a
//!   slot from its placement on a queue until it finishes or is withdrawn, and a job over the
//!   bound is refused or waits its turn in a FIFO list.
//! - A closed pool accepts no new call; a destroyed pool also settles every queued and waiting
//!   job with PoolClosed and asks running ones to stop (they see it in `Context::check`).
//! - Cancelled jobs stay in their queue as tombstones (state DONE) and are skipped when popped.
//!
//! - A method is a native command (the registry) or served by JavaScript threads (`server.rs`),
//!   never both: `serve` refuses native names, and a call is routed by the registry first.
//!   Served jobs count in `queued` and `admitted` like native ones; each open server counts as
//!   one more thread in the `maxQueue` bound.
//!
//! Job states and who settles are described in `job.rs`; the environment handshake that makes
//! views into SharedArrayBuffers safe is in `origin.rs`; the worker loop is in `worker.rs`; JS
//! servers, their queues and their departure are in `server.rs`.

mod admission;
mod idle;
pub mod job;
mod lifecycle;
mod options;
pub mod origin;
pub mod server;
pub mod stats;
pub mod strategy;
pub mod timeout;
mod worker;

pub use job::{Control, Params};
pub use lifecycle::closed_error;
pub(crate) use lifecycle::destroyed_error;
pub use options::{OnFull, Options, MAX_NICE_INCREMENT, MAX_THREADS};
pub use origin::{Deliver, Origin};
pub(crate) use server::has_view;
pub use server::{Announce, Batch, Rest, ServeError, Served, Server, ServerStats, Wake};
pub use stats::Percentiles;
pub use strategy::Strategy;

use crate::rpc::{envelope, json, ErrorCode, Registry, RpcError, Value};
use admission::Admission;
use job::{CollectKind, Collector, Job, JobCore, NativeJob, Reply, ServedJob};
use lifecycle::Lifecycle;
use server::Servers;
use stats::Counters;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use worker::Worker;

pub(crate) struct Shared {
    workers: Box<[Worker]>,
    registry: Registry,
    options: Options,
    next: AtomicUsize,
    admission: Admission,
    lifecycle: Lifecycle,
    counters: Counters,
    servers: RwLock<Servers>,
    next_token: AtomicU64,
}

/// A pool of native worker threads.
pub struct Pool {
    shared: Arc<Shared>,
}

/// One worker's counters, for `stats()`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerStats {
    pub id: usize,
    pub queued: usize,
    pub running: usize,
    pub completed: u64,
    pub busy_ms: f64,
}

#[derive(Clone, Debug)]
pub struct Stats {
    pub threads: usize,
    pub strategy: Strategy,
    pub queued: usize,
    pub waiting: usize,
    pub running: usize,
    pub completed: u64,
    pub failed: u64,
    pub workers: Vec<WorkerStats>,
    /// JavaScript threads serving methods.
    pub servers: Vec<ServerStats>,
    pub run_time: Percentiles,
    pub wait_time: Percentiles,
}

impl Pool {
    /// Starts `options.threads` workers (at least one) running the commands in `registry`.
    pub fn new(options: Options, registry: Registry) -> std::io::Result<Pool> {
        let n = options.threads.max(1);
        let shared = Arc::new(Shared {
            workers: (0..n).map(|_| Worker::default()).collect(),
            registry,
            options: Options {
                threads: n,
                ..options
            },
            next: AtomicUsize::new(0),
            admission: Admission::new(&options, n),
            lifecycle: Lifecycle::default(),
            counters: Counters::default(),
            servers: RwLock::new(Servers::default()),
            next_token: AtomicU64::new(1),
        });
        // Worker 0 starts the others (see worker.rs); if it cannot start, nothing runs.
        if let Err(e) = worker::spawn(shared.clone(), 0) {
            shared.stop_threads();
            return Err(e);
        }
        Ok(Pool { shared })
    }

    pub fn options(&self) -> &Options {
        &self.shared.options
    }

    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// Runs `method` with `params`; the outcome goes to `origin` as call `call`.
    /// `timeout`: `None` uses the pool's default, a zero duration means no limit.
    /// Returns the job's control (for `cancel`) when it was accepted.
    pub fn call(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        method: &str,
        params: impl Into<Params>,
        timeout: Option<Duration>,
    ) -> Option<Arc<Control>> {
        let reply = Reply::Call(call);
        self.submit(origin, method, params.into(), timeout, reply, None, None)
    }

    /// As [`Pool::call`]; when a JavaScript-served call with views is placed on a server from
    /// this thread, `announce(server_tag, token)` runs just before the push (see `server.rs`).
    pub fn call_announced(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        method: &str,
        params: impl Into<Params>,
        timeout: Option<Duration>,
        announce: Announce,
    ) -> Option<Arc<Control>> {
        let reply = Reply::Call(call);
        self.submit(
            origin,
            method,
            params.into(),
            timeout,
            reply,
            None,
            Some(announce),
        )
    }

    /// Answers one JSON-RPC request object or batch (`text`: answer as JSON text). `closed`:
    /// the caller's handle is closed (a shared pool's handle), so every request is answered
    /// with PoolClosed, exactly as a closed pool answers it.
    pub fn request(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        request: Value,
        text: bool,
        closed: bool,
    ) {
        match request {
            Value::Array(entries) if entries.is_empty() => {
                let e = RpcError::new(ErrorCode::InvalidRequest, "Invalid Request: empty batch");
                let answer = envelope::error_response(Value::Null, e);
                origin.deliver(call, Ok(job::finish_text(Some(answer), text)));
            }
            Value::Array(entries) => self.batch(origin, call, entries, text, closed),
            single => match envelope::parse_request(single) {
                Ok(req) => {
                    let id = req.id.clone();
                    self.submit_request(origin, req, Reply::Response { call, id, text }, closed);
                }
                Err(answer) => origin.deliver(call, Ok(job::finish_text(Some(answer), text))),
            },
        }
    }

    /// Answers JSON-RPC text with JSON text; text that is not JSON gets a -32700 answer.
    /// `closed` as for [`Pool::request`].
    pub fn handle(&self, origin: &Arc<Origin>, call: u64, text: &str, closed: bool) {
        match json::parse(text) {
            Ok(value) => self.request(origin, call, value, true, closed),
            Err(why) => {
                let e = RpcError::new(ErrorCode::ParseError, format!("Parse error: {why}"));
                let answer = envelope::error_response(Value::Null, e);
                origin.deliver(call, Ok(job::finish_text(Some(answer), true)));
            }
        }
    }

    /// Submits one validated JSON-RPC request (its outcome goes to `reply`).
    fn submit_request(
        &self,
        origin: &Arc<Origin>,
        req: envelope::Request,
        reply: Reply,
        closed: bool,
    ) {
        if closed {
            reply.finish(Err(closed_error()), origin);
            return;
        }
        self.submit(
            origin,
            &req.method,
            req.params.into(),
            None,
            reply,
            None,
            None,
        );
    }

    fn batch(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        entries: Vec<Value>,
        text: bool,
        closed: bool,
    ) {
        let mut ids = Vec::with_capacity(entries.len());
        let mut answers = Vec::with_capacity(entries.len());
        let mut slots = Vec::with_capacity(entries.len());
        let mut requests = Vec::with_capacity(entries.len());
        for entry in entries {
            match envelope::parse_request(entry) {
                Ok(req) => {
                    ids.push(req.id.clone());
                    answers.push(None);
                    slots.push(None);
                    requests.push(Some(req));
                }
                Err(answer) => {
                    ids.push(None);
                    answers.push(Some(answer));
                    slots.push(Some(Ok(Value::Null)));
                    requests.push(None);
                }
            }
        }
        let collector = Collector::new(call, CollectKind::Batch { text, ids, answers }, slots);
        if collector.is_complete() {
            collector.finish(origin);
            return;
        }
        for (slot, req) in requests.into_iter().enumerate() {
            if let Some(req) = req {
                self.submit_request(origin, req, Reply::Part(collector.clone(), slot), closed);
            }
        }
    }

    /// Runs `method` once on every worker; the call settles with the results in worker order,
    /// or with the first error. Not bounded by `maxQueue` (it is one call, not n).
    pub fn broadcast(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        method: &str,
        params: Vec<Value>,
        timeout: Option<Duration>,
    ) {
        let n = self.shared.workers.len();
        let collector = Collector::new(call, CollectKind::Broadcast, vec![None; n]);
        for w in 0..n {
            let reply = Reply::Part(collector.clone(), w);
            self.submit(
                origin,
                method,
                Params::Values(params.clone()),
                timeout,
                reply,
                Some(w),
                None,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        origin: &Arc<Origin>,
        method: &str,
        params: Params,
        timeout: Option<Duration>,
        reply: Reply,
        pinned: Option<usize>,
        announce: Option<Announce>,
    ) -> Option<Arc<Control>> {
        let s = &self.shared;
        if s.lifecycle.is_closed() {
            reply.finish(Err(closed_error()), origin);
            return None;
        }
        // The native command, or the served job's token and whether its params hold views.
        let target = match s.registry.get(method) {
            Some(command) => Ok(command.clone()),
            None if pinned.is_none() && s.is_served(method) => {
                let token = s.next_token.fetch_add(1, Ordering::Relaxed);
                let views = match &params {
                    Params::Values(values) => values.iter().any(server::has_view),
                    Params::Json(_) => false,
                };
                Err((token, views))
            }
            None if s.is_served(method) => {
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
                reply.finish(Err(RpcError::method_not_found(method)), origin);
                return None;
            }
        };
        let core = JobCore {
            timeout: match timeout {
                None => s.options.timeout,
                Some(d) if d.is_zero() => None,
                Some(d) => Some(d),
            },
            control: Control::new(params),
            origin: origin.clone(),
            reply,
            submitted: Instant::now(),
        };
        let control = core.control.clone();
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
            }),
        };
        if pinned.is_some() {
            s.admission.reserve_unbounded();
            s.place(job, None);
            return Some(control);
        }
        let wait = s.admission.waits();
        if wait && s.admission.has_waiting() {
            // Others are already waiting for room: queue up behind them.
            s.admission.park(job);
            s.admit_waiting();
            return Some(control);
        }
        if !s.admission.reserve() {
            if wait {
                s.admission.park(job);
                s.admit_waiting();
                return Some(control);
            }
            job.settle(Err(s.admission.full_error()));
            return None;
        }
        s.place(job, announce);
        Some(control)
    }

    /// Asks a call to stop. A queued or waiting call is removed at once and this returns
    /// `true`: the caller must then settle it (the job will never run). A running call is
    /// asked to stop cooperatively and settles through its worker; this returns `false`.
    /// A running call of a JavaScript-served method settles at once (the handler is told to
    /// stop, see `server.rs`), also returning `false`.
    pub fn cancel(&self, control: &Control, reason: crate::rpc::CancelReason) -> bool {
        control.set_reason(reason);
        if self.shared.withdraw(control) {
            return true;
        }
        self.shared.cancel_running(control);
        false
    }

    /// Stops accepting calls; everything accepted still runs.
    pub fn close(&self) {
        self.shared.lifecycle.close();
    }

    pub fn is_closed(&self) -> bool {
        self.shared.lifecycle.is_closed()
    }

    /// Closes the pool, settles every queued and waiting call with PoolClosed, asks running
    /// calls to stop, and lets the threads exit.
    pub fn destroy(&self) {
        let s = &self.shared;
        s.lifecycle.destroy();
        let closed = destroyed_error;
        s.admission.withdraw_all(|job| job.settle(Err(closed())));
        for (w, worker) in s.workers.iter().enumerate() {
            while let Some(job) = worker.queue.pop() {
                if job.core.control.withdraw_queued() {
                    s.unqueue(w);
                    s.release_slot();
                    job.core.settle(Err(closed()));
                }
            }
        }
        s.destroy_served(closed);
        s.stop_threads();
    }

    /// Lets the threads exit once their queues are empty (after `close()` and a drain).
    pub fn shutdown(&self) {
        self.close();
        self.shared.stop_threads();
    }

    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        let servers = self.server_stats();
        let workers: Vec<WorkerStats> = s
            .workers
            .iter()
            .enumerate()
            .map(|(id, w)| WorkerStats {
                id,
                queued: w.queued.load(Ordering::Relaxed),
                running: w.running.load(Ordering::Relaxed),
                completed: w.completed.load(Ordering::Relaxed),
                busy_ms: w.busy_ns.load(Ordering::Relaxed) as f64 / 1e6,
            })
            .collect();
        Stats {
            threads: workers.len(),
            strategy: s.options.strategy,
            queued: s.counters.queued(),
            waiting: s.admission.waiting(),
            running: workers.iter().map(|w| w.running).sum::<usize>()
                + servers.iter().map(|sv| sv.running).sum::<usize>(),
            completed: s.counters.completed(),
            failed: s.counters.failed(),
            workers,
            servers,
            run_time: s.counters.run_time(),
            wait_time: s.counters.wait_time(),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Shared {
    /// Gives back the slot of a job that finished or was withdrawn, and lets a waiting job in.
    fn release_slot(&self) {
        if self.admission.release() {
            self.admit_waiting();
        }
    }

    /// Picks the job's worker by strategy (or its pin) and counts the job in that worker's
    /// load. The index is written before the job can be seen as QUEUED by a canceller.
    fn assign(&self, job: &NativeJob) -> usize {
        let n = self.workers.len();
        let mut w = job.pinned.unwrap_or_else(|| {
            self.options.strategy.pick(n, &self.next, |i| {
                (self.workers[i].load(), self.workers[i].asleep())
            })
        });
        if !self.workers[w].alive.load(Ordering::Acquire) {
            // Its thread could not be created: worker 0 (started by the constructor) serves.
            w = 0;
        }
        self.workers[w].queued.fetch_add(1, Ordering::AcqRel);
        self.counters.add_queued();
        job.core.control.set_worker(w);
        w
    }

    /// Puts a new job (with a reserved slot) on its worker's queue and wakes that worker.
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

    fn push(&self, w: usize, job: NativeJob) {
        if !self.workers[w].push(job) {
            self.retire_worker(w);
        }
    }

    /// Undoes the queue counters of a job that left worker `w`'s queue.
    fn unqueue(&self, w: usize) {
        self.workers[w].queued.fetch_sub(1, Ordering::AcqRel);
        self.counters.sub_queued();
    }

    /// Moves waiting jobs into queues while there is room, oldest first. Once the pool is
    /// destroyed nothing is admitted (`destroy` settles the wait list); a job this thread took
    /// off the list just before is settled where it lands (`Worker::push` and `Pool::take` see
    /// the pool destroyed), never stranded.
    fn admit_waiting(&self) {
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
                        self.admission.unreserve();
                        continue;
                    }
                    self.place_served(job, None);
                }
                Job::Native(job) => {
                    let w = self.assign(&job);
                    // A job cancelled while waiting was already counted out of the list.
                    if !admitting.admit(&job.core.control) {
                        self.unqueue(w);
                        self.admission.unreserve();
                        continue;
                    }
                    #[cfg(test)]
                    self.admission.pause_for_tests();
                    self.push(w, job);
                }
            }
        }
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
            if let Some(w) = control.worker() {
                self.workers[w].queued.fetch_sub(1, Ordering::AcqRel);
            }
            self.counters.sub_queued();
            self.release_slot();
            return true;
        }
        false
    }

    fn stop_threads(&self) {
        self.lifecycle.stop_threads();
        for w in self.workers.iter() {
            w.wake();
        }
    }
}

#[cfg(test)]
mod serve_tests;
#[cfg(test)]
mod tests;
