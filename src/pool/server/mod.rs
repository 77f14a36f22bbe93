//! A server: a JavaScript thread (the main thread or a worker_thread) that serves methods
//! implemented in JavaScript. To the scheduler it is a dispatch target beside the native
//! workers: calls to a served method are spread among the servers of that method by the pool's
//! strategy, each server has its own queue, and its JavaScript thread pulls the jobs when woken.
//! This file is one server; `servers.rs` is the set of them (the method table, job tokens, the
//! methods expected to be served).
//!
//! State (all behind `inner`'s mutex except the load counters; `wake_pending` is an atomic so
//! that the strategy can read it without the lock, but it too changes only under the lock):
//! - `accepting`: true from `serve` until the server is closed or departs. It is cleared under
//!   the same lock that every push takes, so once it is false no job can enter the queue, and
//!   whoever cleared it can take the queue knowing it is complete.
//! - `queue`: jobs placed on this server, in order; cancelled ones stay as tombstones (DONE)
//!   until the server drains them, as on native workers. A drain hands over at most
//!   `concurrency − running` jobs: the rest stay queued, where the strategy sees them as load,
//!   a canceller withdraws them and a departure moves them to other servers. The serving thread
//!   drains again as its handlers finish (`Pool::complete` says when there is more). A job that
//!   runs alone (`ServedJob::alone`) is handed over only when no other job runs, and nothing
//!   after it until it is done (`alone_running`); while it waits, the jobs behind it go past
//!   it, other jobs are placed elsewhere if they can be (`placement_load`), and a server with
//!   nothing to do takes it; jobs queued behind it once it runs go to a server with a free
//!   slot (`alone.rs`, `Scheduler::take_stuck`).
//! - `stops`: tokens of running jobs whose handler must be told to stop (abort, destroy).
//! - `forgotten`: tokens whose SharedArrayBuffer views the server was sent but will never run
//!   (the job was cancelled or taken away), so the serving thread can drop them.
//! - `wake_pending`: the serving thread is bound to look at the queue again (a wake-up is on
//!   its way, a drain cycle runs, or a `Rest::Later` cycle is due). A push that finds it clear
//!   sets it and calls [`Wake::wake`]; only `rest` clears it, under the lock and having seen
//!   nothing the thread could take: one wake per cycle, none lost (`README.md` §6, V1–V2).
//!   `wake` is only called under the lock, after checking `accepting` (pushes) or `departed`
//!   (notices), so after `Pool::depart` returns it is never called again.
//! - `running`: jobs handed to JavaScript and not finished, by token. Inserting before the
//!   QUEUED → RUNNING step and removing exactly once (completion or departure) makes the
//!   removal the one place that gives back the job's `maxQueue` slot and the server's load.
//! - `drain`: held through the whole of `Pool::take` and of `Pool::depart`, so that a job
//!   `take` has popped is always in `queue` or `running` when `depart` looks (`README.md` §6,
//!   V3). Lock order: `drain` before any `inner` or `running`.
//!
//! Settling a running job is a RUNNING → DONE compare-exchange (see `job.rs`): the handler's
//! completion, a stop (the caller's abort, a timeout seen by the serving thread, `destroy()`)
//! and the server's departure race for it, and the winner settles, so each call settles once. A
//! stop settles at once, without waiting for the handler: JavaScript cannot be interrupted, and
//! the caller should not wait for a handler that ignores its signal. The handler still counts
//! as running on its server until it returns.
//!
//! Departure (the serving environment is torn down): the server stops accepting, its queued jobs
//! are placed again on the other servers of their method (or settle with MethodNotFound when
//! none is left), and its running jobs settle with ServerGone. Nothing is lost or settled twice.
//! A departing *caller* (its origin retired) is the other direction: its queued served jobs are
//! dropped when drained, and a handler already running finishes unsignalled, its result dropped.
//!
//! SharedArrayBuffer views: a job's `Value::View`s point into the caller's memory, but the
//! handler needs JavaScript objects of its own environment over the same memory, which only
//! the caller's JavaScript can send (by `postMessage`). When the caller's own thread places the
//! job, the bindings send the views to the chosen server just before the push (`announce`);
//! a job placed later by another thread (admitted from the `onFull: 'wait'` list, or moved off
//! a departed server) is not announced, and its server asks the caller to send them
//! (`Pool::resend` → `Deliver::resend`). The native side never dereferences a view
//! of a served job: the serving thread's own SharedArrayBuffer objects keep the memory alive.

use super::idle::{idle_pause, IDLE_SPIN};
use super::job::{Control, Params, Reply, Runner, ServedJob, Stopped};
use super::lifecycle::Lifecycle;
use super::origin::Origin;
use super::stats::ServerStats;
use crate::rpc::{CancelReason, RpcError, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

mod alone;
mod running;
pub(crate) use alone::stuck_anywhere;
pub(crate) use running::Running;

/// Wakes a server's JavaScript thread so that it drains its queue (the bindings call a
/// threadsafe function). Called under the server's lock, at most once per drain cycle (see
/// `wake_pending`).
pub trait Wake: Send + Sync {
    fn wake(&self);
}

/// A job handed to the serving thread.
pub struct Served {
    pub token: u64,
    pub method: Arc<str>,
    /// Values, or the JSON text the caller sent (the serving thread parses it).
    pub params: Params,
    /// When the handler must have finished (the serving thread's timer stops it then).
    pub deadline: Option<Instant>,
    /// The params hold views the serving thread must resolve to its own objects.
    pub views: bool,
    /// The caller listens to the call's progress (see [`Server::progress`]).
    pub watched: bool,
    /// The caller's origin ([`crate::pool::Origin::id`]) and call id, when the call is a
    /// JavaScript caller's own (`Reply::own_call`): a serving thread told to answer that
    /// origin by its message port does so under the call id (`bindings::serve`).
    pub own_call: Option<(u64, u64)>,
    /// The caller's trace context, if it sent one ([`crate::pool::Caller::trace`]).
    pub trace: Option<Arc<str>>,
}

/// What one drain hands to the serving thread.
#[derive(Default)]
pub struct Batch {
    pub jobs: Vec<Served>,
    /// Running jobs whose handler should stop (its call is already settled).
    pub stops: Vec<u64>,
    /// Tokens whose announced views will never be used.
    pub forgotten: Vec<u64>,
}

/// What a serving thread does at the end of a drain cycle: see [`Server::rest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    Idle,
    Work,
    Later,
}

/// Why `serve` refused.
#[derive(Debug, PartialEq)]
pub enum ServeError {
    /// The method is a native command: a name is served natively or by JavaScript, not both.
    Native(String),
    /// No methods were given.
    Empty,
}

/// A caller's hook that sends a job's views to the chosen server before the push:
/// `announce(server_tag, token)`.
pub type Announce<'a> = &'a mut dyn FnMut(u64, u64);

struct Inner {
    accepting: bool,
    queue: VecDeque<ServedJob>,
    stops: Vec<u64>,
    forgotten: Vec<u64>,
}

pub struct Server {
    id: u64,
    tag: u64,
    thread: u64,
    methods: Vec<String>,
    /// Most handlers running at once on this server.
    concurrency: usize,
    inner: Mutex<Inner>,
    running: Mutex<HashMap<u64, Running>>,
    /// Held through a whole `Pool::take` and a whole `Pool::depart` (see the module doc).
    drain: Mutex<()>,
    /// Entries in `queue` (tombstones included until drained), times [`QUEUED`], plus entries
    /// in `running`, times [`RUNNING`]: one word, so that a job taken moves from one count to
    /// the other in one step, and a reader (placement weighing the load, `stats()`) never
    /// sees it in neither or both. See [`Server::counts`].
    counts: AtomicU64,
    /// A job that runs alone ([`ServedJob::alone`]) is in `running`: no other job is taken
    /// until it is done. Set and cleared with its entry, before `counts` counts it running and
    /// after it counts it out.
    alone_running: AtomicBool,
    /// Entries of `queue` that run alone ([`ServedJob::alone`]), tombstones included. Changed
    /// only under `inner`'s lock, so exact when read under it; a hint for the strategy
    /// otherwise.
    alone_queued: AtomicUsize,
    completed: AtomicU64,
    busy_ns: AtomicU64,
    departed: AtomicBool,
    /// See the module doc. Written only under `inner`'s lock, which orders it for the protocol;
    /// read without the lock only by the strategy, as a hint (a server that will look at its
    /// queue anyway takes a call without a wake-up).
    wake_pending: AtomicBool,
    /// Its serving thread's calls are long ones (`origin::LONG_CALL`), as that thread last
    /// said (`Pool::rest`): a hint for the delivery of their outcomes (`origin::behind`).
    long_calls: AtomicBool,
    waker: Box<dyn Wake>,
    /// Pauses taken while polling in [`Server::rest`]: tests tell "did not poll" by it.
    #[cfg(test)]
    pub(super) polls: AtomicUsize,
}

/// One drain of a server's queue ([`Server::begin_take`]): the jobs taken off it, the notices
/// for the serving thread, and the server's `drain` lock, held until the drain is over.
///
/// A job handed out ([`Take::next_job`]) still counts as queued on the server: starting it
/// ([`Take::start`]) counts it running in the same step; one not started (a tombstone, a job
/// withdrawn first) is counted out when the next is asked for or the take ends.
pub(crate) struct Take<'a> {
    server: &'a Arc<Server>,
    taken: std::vec::IntoIter<ServedJob>,
    /// The last job handed out was not started: it still counts as queued.
    handed: bool,
    stops: Vec<u64>,
    forgotten: Vec<u64>,
    _drain: MutexGuard<'a, ()>,
}

impl Take<'_> {
    /// How many jobs were taken off the queue (live ones and tombstones).
    pub(crate) fn len(&self) -> usize {
        self.taken.len()
    }

    /// The next job taken off the queue (see the type's doc for how it is counted).
    pub(crate) fn next_job(&mut self) -> Option<ServedJob> {
        self.count_out();
        let job = self.taken.next()?;
        self.handed = true;
        Some(job)
    }

    /// The last job handed out was not started: it leaves the server's count.
    fn count_out(&mut self) {
        if std::mem::take(&mut self.handed) {
            self.server.sub_counts(QUEUED, 1);
        }
    }

    /// Starts the job last handed out (see [`Server::start`]); it then counts as running.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &mut self,
        token: u64,
        control: &Arc<Control>,
        origin: Arc<Origin>,
        reply: Reply,
        times: (Instant, Instant),
        deadline: Option<Instant>,
        named: (Arc<str>, Duration),
        alone: bool,
    ) -> Option<Params> {
        debug_assert!(self.handed, "start follows next_job");
        let params = self
            .server
            .start(token, control, origin, reply, times, deadline, named, alone)?;
        self.handed = false;
        Some(params)
    }

    /// The serving thread may drop the views it was sent for job `token`.
    pub(crate) fn forget(&mut self, token: u64) {
        self.forgotten.push(token);
    }

    /// Ends the drain (its lock is let go) with `jobs` to hand over.
    pub(crate) fn finish(mut self, jobs: Vec<Served>) -> Batch {
        Batch {
            jobs,
            stops: std::mem::take(&mut self.stops),
            forgotten: std::mem::take(&mut self.forgotten),
        }
    }
}

impl Drop for Take<'_> {
    /// A job handed out and not started, and the jobs never handed out, leave the count: they
    /// left the queue.
    fn drop(&mut self) {
        self.count_out();
        let left = self.taken.len();
        self.server.sub_counts(QUEUED, left);
    }
}

/// One queued job in [`Server::counts`].
const QUEUED: u64 = 1 << 32;
/// One running job in [`Server::counts`].
const RUNNING: u64 = 1;

/// A mutex's guard; a poisoned lock is taken as it is (no code panics while holding one of
/// these, and a job's settlement must never be lost to a poisoned lock).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// A new server of `methods` (see `Pool::serve`).
    pub(crate) fn new(
        methods: Vec<String>,
        tag: u64,
        thread: u64,
        concurrency: usize,
        waker: Box<dyn Wake>,
    ) -> Arc<Server> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(Server {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            tag,
            thread,
            methods,
            concurrency: concurrency.max(1),
            inner: Mutex::new(Inner {
                accepting: true,
                queue: VecDeque::new(),
                stops: Vec::new(),
                forgotten: Vec::new(),
            }),
            running: Mutex::new(HashMap::new()),
            drain: Mutex::new(()),
            counts: AtomicU64::new(0),
            alone_running: AtomicBool::new(false),
            alone_queued: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            departed: AtomicBool::new(false),
            wake_pending: AtomicBool::new(false),
            long_calls: AtomicBool::new(false),
            waker,
            #[cfg(test)]
            polls: AtomicUsize::new(0),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// How many of its calls run at once (`usize::MAX`: no bound).
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The bindings' address of the serving environment (where resent views go).
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// The serving JavaScript thread's id (`threadId`: 0 for the main thread).
    pub fn thread(&self) -> u64 {
        self.thread
    }

    pub fn methods(&self) -> &[String] {
        &self.methods
    }

    /// Jobs queued here (tombstones included until drained) and running, read together.
    /// SeqCst: both sides of the alone-job handshake read and change them
    /// (`Scheduler::take_stuck`, `Scheduler::rescue_stuck`; a plain load on x86).
    pub(crate) fn counts(&self) -> (usize, usize) {
        let c = self.counts.load(Ordering::SeqCst);
        ((c / QUEUED) as usize, (c % QUEUED) as usize)
    }

    /// Jobs running here (see [`Server::counts`]).
    pub(crate) fn running(&self) -> usize {
        self.counts().1
    }

    /// Adds one job of `one` ([`QUEUED`] or [`RUNNING`]) to the counts.
    fn add_counts(&self, one: u64) {
        self.counts.fetch_add(one, Ordering::SeqCst);
    }

    /// Takes `n` jobs of `one` ([`QUEUED`] or [`RUNNING`]) out of the counts, which hold them
    /// (so neither half borrows from the other).
    fn sub_counts(&self, one: u64, n: usize) {
        if n > 0 {
            self.counts.fetch_sub(one * n as u64, Ordering::SeqCst);
        }
    }

    /// Queued + running: what `leastbusy` compares (see [`Server::counts`]).
    pub(crate) fn load(&self) -> usize {
        let (queued, running) = self.counts();
        queued + running
    }

    /// Jobs in the queue or running; zero means a closed server has nothing left to do.
    pub fn busy(&self) -> usize {
        self.load()
    }

    /// Wakes the serving thread unless a wake-up is already pending.
    fn wake_locked(&self, _locked: &mut Inner) {
        if !self.wake_pending.swap(true, Ordering::Relaxed) {
            self.waker.wake();
        }
    }

    /// False while the serving thread will look at its queue again without a wake-up.
    pub(crate) fn asleep(&self) -> bool {
        !self.wake_pending.load(Ordering::Relaxed)
    }

    /// Queues a QUEUED job (counted in the pool's `queued`, holding a slot) and wakes the
    /// serving thread, announcing the job's views first when `announce` is given. Refused,
    /// with the job handed back, when the server no longer accepts or the pool is destroyed
    /// (`destroy` empties this queue under this lock after setting the flag: a job pushed then
    /// would run after all).
    pub(super) fn push(
        &self,
        mut job: ServedJob,
        announce: &mut Option<Announce>,
        lifecycle: &Lifecycle,
    ) -> Push {
        let mut inner = lock(&self.inner);
        if !inner.accepting {
            return Push::Closed(job);
        }
        if lifecycle.is_destroyed() {
            drop(inner);
            return Push::Destroyed(job);
        }
        if job.views {
            if let Some(announce) = announce.as_mut() {
                announce(self.tag, job.token);
                job.announced = true;
            }
        }
        // SeqCst: the holding side of the handshake when this job is held up here
        // (`Scheduler::take_stuck`).
        self.add_counts(QUEUED);
        if job.alone {
            self.count_alone(&mut inner, 1, 0);
        }
        inner.queue.push_back(job);
        self.wake_locked(&mut inner);
        Push::Queued
    }

    /// Stops giving this server new jobs (it has left the method table). False if it was
    /// already closed.
    pub(crate) fn close(&self) -> bool {
        let mut inner = lock(&self.inner);
        if !inner.accepting {
            return false;
        }
        inner.accepting = false;
        true
    }

    /// Whether this server still takes new jobs: not closed, not departed.
    pub(crate) fn accepting(&self) -> bool {
        lock(&self.inner).accepting
    }

    /// Tells the serving thread to stop a running handler.
    fn notify_stop(&self, token: u64) {
        let mut inner = lock(&self.inner);
        // `departed` is set under this lock: after it, the serving thread is gone.
        if !self.departed.load(Ordering::Acquire) {
            inner.stops.push(token);
            self.wake_locked(&mut inner);
        }
    }

    /// Ends running job `token` now if it still runs (RUNNING → DONE), and tells its handler to
    /// stop when `notify`. `Some`: this call ended it, and the caller settles it.
    pub(crate) fn stop_running(&self, token: u64, notify: bool) -> Option<Stopped> {
        let won = {
            let mut running = lock(&self.running);
            match running.get_mut(&token) {
                Some(run) if run.control.try_finish() => run.reply.take().map(|reply| Stopped {
                    reply,
                    origin: run.origin.clone(),
                    error: run.stop_error(run.control.reason().unwrap_or(CancelReason::Aborted)),
                }),
                _ => None,
            }
        };
        if notify {
            self.notify_stop(token);
        }
        won
    }

    /// Whether running job `token` is still to be settled by its handler: it runs, its call
    /// has not been settled otherwise (a stop, a timeout, destroy), and its caller is there.
    /// A snapshot: the call may still be settled otherwise at any time.
    pub(crate) fn is_live(&self, token: u64) -> bool {
        lock(&self.running)
            .get(&token)
            .is_some_and(|run| run.reply.is_some() && !run.origin.is_gone())
    }

    /// The handler of running job `token` reports progress: it goes to the caller if the
    /// caller listens and the job still runs (a report after the call settled is dropped).
    pub(crate) fn progress(&self, token: u64, value: Value) {
        let target = match lock(&self.running).get(&token) {
            Some(run) => run
                .reply
                .as_ref()
                .and_then(Reply::watched)
                .map(|call| (run.origin.clone(), call)),
            None => None,
        };
        if let Some((origin, call)) = target {
            origin.progress(call, value);
        }
    }

    /// Records why running job `token` must stop (the first reason wins).
    pub(crate) fn set_reason(&self, token: u64, reason: CancelReason) {
        if let Some(run) = lock(&self.running).get(&token) {
            run.control.set_reason(reason);
        }
    }

    /// The error running job `token` stops with for `reason`; `None` if it is not running.
    pub(crate) fn stop_error(&self, token: u64, reason: CancelReason) -> Option<RpcError> {
        lock(&self.running)
            .get(&token)
            .map(|run| run.stop_error(reason))
    }

    /// The tokens of the jobs running now.
    pub(crate) fn running_tokens(&self) -> Vec<u64> {
        lock(&self.running).keys().copied().collect()
    }

    /// Whether a running job's caller still awaits its outcome from this server's handler
    /// (a job stopped or timed out was settled already). Exact under the `drain` lock, which
    /// every take holds.
    pub(crate) fn runs_awaited(&self) -> bool {
        lock(&self.running).values().any(|run| run.reply.is_some())
    }

    /// Begins a drain cycle for the serving thread (see `Pool::take`): takes the `drain` lock,
    /// marks the thread as bound to look again (`wake_pending`), and takes up to
    /// `concurrency − running` live jobs off the queue (with the tombstones met on the way)
    /// and the pending notices. A job that runs alone is taken only when no other job runs or
    /// is taken, and then it is the only one; until then it keeps its place and the jobs behind
    /// it go past it (as Piscina's tasks go past one that waits for an idle worker).
    pub(crate) fn begin_take(self: &Arc<Self>) -> Take<'_> {
        let drain = lock(&self.drain);
        let running = self.running();
        let room = self.room(running);
        let mut inner = lock(&self.inner);
        self.wake_pending.store(true, Ordering::Relaxed);
        let mut taken = Vec::new();
        let mut live = 0;
        let mut at = 0; // entries before `at` are alone jobs that wait
        while live < room && at < inner.queue.len() {
            if Self::waits_alone(&inner.queue[at], running + live) {
                at += 1;
                if inner.queue.len() - at <= self.alone_in(&inner).saturating_sub(at) {
                    break; // only alone jobs are left
                }
                continue;
            }
            let Some(job) = inner.queue.remove(at) else {
                break;
            };
            if job.alone {
                self.count_alone(&mut inner, 0, 1);
            }
            if job.core.control.is_queued() {
                live += 1;
                if job.alone {
                    taken.push(job);
                    break;
                }
            }
            taken.push(job);
        }
        let stops = std::mem::take(&mut inner.stops);
        let forgotten = std::mem::take(&mut inner.forgotten);
        drop(inner);
        Take {
            server: self,
            taken: taken.into_iter(),
            handed: false,
            stops,
            forgotten,
            _drain: drain,
        }
    }

    /// Hands job `token` to the serving thread: records it as running (before it is RUNNING,
    /// so that a canceller that sees RUNNING finds it, here and through its runner), then moves
    /// it QUEUED → RUNNING. `Some(params)`: it runs; `None`: a canceller withdrew it first and
    /// nothing is recorded.
    /// `method` and `limit` are what a Timeout of the job names.
    #[allow(clippy::too_many_arguments)]
    fn start(
        self: &Arc<Self>,
        token: u64,
        control: &Arc<Control>,
        origin: Arc<Origin>,
        reply: Reply,
        (submitted, started): (Instant, Instant),
        deadline: Option<Instant>,
        (method, limit): (Arc<str>, Duration),
        alone: bool,
    ) -> Option<Params> {
        lock(&self.running).insert(
            token,
            Running {
                control: control.clone(),
                origin,
                reply: Some(reply),
                submitted,
                started,
                deadline,
                method,
                limit,
                alone,
            },
        );
        let runner: Weak<Server> = Arc::downgrade(self);
        control.set_runner(runner, token);
        let Some(params) = control.start() else {
            lock(&self.running).remove(&token);
            return None;
        };
        if alone {
            self.set_alone_running(true);
        }
        // Queued to running in one step (see `counts`). SeqCst: a side of the handshake when an
        // alone job waits behind it (`Scheduler::take_stuck`).
        self.counts
            .fetch_add(RUNNING.wrapping_sub(QUEUED), Ordering::SeqCst);
        Some(params)
    }

    /// Removes running job `token`'s record, counting it as done on this server; the caller
    /// gives back its slot. `None`: unknown token (departure took it).
    pub(crate) fn finish_running(&self, token: u64) -> Option<Running> {
        let run = lock(&self.running).remove(&token)?;
        // SeqCst: the idle side of the alone-job handshake (`Scheduler::take_stuck`).
        self.sub_counts(RUNNING, 1);
        if run.alone {
            self.set_alone_running(false);
        }
        self.completed.fetch_add(1, Ordering::Relaxed);
        let busy = run.started.elapsed();
        self.busy_ns
            .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
        Some(run)
    }

    /// Its serving thread's calls are long ones (see the field).
    pub(crate) fn long_calls(&self) -> bool {
        self.long_calls.load(Ordering::Relaxed)
    }

    pub(crate) fn set_long_calls(&self, long: bool) {
        self.long_calls.store(long, Ordering::Relaxed);
    }

    /// True when the serving thread should take again: jobs wait and a handler slot is free.
    /// (A job that runs alone and waits for the others to finish may make it say so once too
    /// often: that take finds nothing, and [`Server::rest`] lets the thread sleep.)
    pub(crate) fn more_to_take(&self) -> bool {
        let (queued, running) = self.counts();
        queued > 0 && self.room(running) > 0
    }

    /// Handler slots free with `running` jobs running: none while a job runs alone.
    fn room(&self, running: usize) -> usize {
        if self.alone_running.load(Ordering::Acquire) {
            0
        } else {
            self.concurrency.saturating_sub(running)
        }
    }

    /// Whether a take now would hand over a job (or a tombstone to drop): a slot is free and
    /// some entry may start (one that runs alone waits for an empty server; the others go
    /// past it).
    fn can_take(&self, inner: &Inner) -> bool {
        let running = self.running();
        if self.room(running) == 0 || inner.queue.is_empty() {
            return false;
        }
        // With only alone entries queued, they wait (a tombstone among them is dropped once
        // nothing runs).
        running == 0 || inner.queue.len() > self.alone_in(inner)
    }

    /// Whether this server serves `method`.
    pub(crate) fn serves(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }

    /// Departure: the serving thread is gone. No stop or forget notice will be sent again, and
    /// the queue (every job in it, tombstones included) is handed to the caller. Call with
    /// the `drain` lock held ([`Server::lock_drain`]), after [`Server::close`].
    pub(crate) fn depart_queue(&self) -> Vec<ServedJob> {
        let queued: Vec<ServedJob> = {
            let mut inner = lock(&self.inner);
            self.departed.store(true, Ordering::Release);
            inner.stops.clear();
            inner.forgotten.clear();
            let alone = self.alone_in(&inner);
            self.count_alone(&mut inner, 0, alone);
            inner.queue.drain(..).collect()
        };
        self.sub_counts(QUEUED, queued.len());
        queued
    }

    /// Departure: every running job's record, for the caller to settle and release.
    pub(crate) fn depart_running(&self) -> Vec<Running> {
        let running: Vec<Running> = lock(&self.running).drain().map(|(_, r)| r).collect();
        self.sub_counts(RUNNING, running.len());
        self.set_alone_running(false);
        running
    }

    /// The lock held through a whole `Pool::take` and a whole `Pool::depart`.
    pub(crate) fn lock_drain(&self) -> MutexGuard<'_, ()> {
        lock(&self.drain)
    }

    /// `destroy()`: empties the queue and hands its jobs to the caller; the serving thread is
    /// told to forget the views it was sent for them.
    pub(crate) fn drain_queue(&self) -> Vec<ServedJob> {
        let mut inner = lock(&self.inner);
        let alone = self.alone_in(&inner);
        self.count_alone(&mut inner, 0, alone);
        let jobs: Vec<ServedJob> = inner.queue.drain(..).collect();
        self.sub_counts(QUEUED, jobs.len());
        self.forget_announced(&mut inner, jobs.iter());
        jobs
    }

    /// Jobs taken out of the queue that will not run here: the serving thread is told to drop
    /// the views it was sent for the announced ones (unless it is gone).
    fn forget_announced<'j>(&self, inner: &mut Inner, jobs: impl Iterator<Item = &'j ServedJob>) {
        if self.departed.load(Ordering::Acquire) {
            return;
        }
        let before = inner.forgotten.len();
        inner
            .forgotten
            .extend(jobs.filter(|j| j.announced).map(|j| j.token));
        if inner.forgotten.len() > before {
            self.wake_locked(inner);
        }
    }

    /// The serving thread ends a drain cycle. `Work`: there is something it can take (a job
    /// with a free handler slot, or a notice); take it and go on. `Idle`: nothing to take, and
    /// wake-ups are on again. `Later`: the thread is over its time budget (`budget_left`
    /// false) and must let its event loop run, then come back by itself for another cycle;
    /// wake-ups stay off meanwhile, so calls placed in between cannot chain callback after
    /// callback onto the thread without its event loop getting a turn. (That cycle may find
    /// nothing and poll once more for nothing: the price of keeping wake-ups off.)
    ///
    /// With `may_poll`, budget left and no handler running, it first polls for up to
    /// [`IDLE_SPIN`] (a caller's next call often comes that soon), yielding between rounds.
    /// Jobs waiting for a handler slot do not count: a handler's completion takes them
    /// (`Pool::complete` says when), and stop notices still wake the thread meanwhile.
    pub(crate) fn rest(&self, budget_left: bool, may_poll: bool) -> Rest {
        if !budget_left {
            let _locked = lock(&self.inner);
            self.wake_pending.store(true, Ordering::Relaxed);
            return Rest::Later;
        }
        let polling = may_poll && self.running() == 0;
        let until = polling.then(|| Instant::now() + IDLE_SPIN);
        loop {
            let inner = lock(&self.inner);
            if self.can_take(&inner) || !inner.stops.is_empty() || !inner.forgotten.is_empty() {
                return Rest::Work;
            }
            if !inner.accepting || until.is_none_or(|t| Instant::now() >= t) {
                self.wake_pending.store(false, Ordering::Relaxed);
                return Rest::Idle;
            }
            drop(inner);
            #[cfg(test)]
            self.polls.fetch_add(1, Ordering::Relaxed);
            idle_pause();
        }
    }

    /// The serving thread has no views for job `token`: ask its caller to send them. `false`
    /// when that cannot happen (the job is settled or its caller is gone): the serving thread
    /// should complete the job (the outcome is dropped).
    pub(crate) fn resend(&self, token: u64) -> bool {
        let (origin, call) = {
            let running = lock(&self.running);
            match running.get(&token) {
                Some(run) => match &run.reply {
                    Some(reply) => (run.origin.clone(), reply.call()),
                    None => return false,
                },
                None => return false,
            }
        };
        origin.resend(call, self.tag, token)
    }

    /// Of these running jobs, the ones whose caller's environment is gone (a job waiting for
    /// resent views never gets them then).
    pub(crate) fn orphaned(&self, tokens: &[u64]) -> Vec<u64> {
        let running = lock(&self.running);
        tokens
            .iter()
            .copied()
            .filter(|t| running.get(t).is_none_or(|r| r.origin.is_gone()))
            .collect()
    }

    /// Of `queued` entries with `running` jobs running, how many a take now would start, by
    /// [`Server::begin_take`]'s rules: none while a job runs alone; else the entries that do
    /// not run alone, up to the free slots; an alone entry only on an empty server, by itself.
    /// (A hint: which entries are tombstones, and where the alone ones stand, is not looked at.)
    fn takes_next(&self, queued: usize, running: usize) -> usize {
        if self.runs_alone() {
            return 0;
        }
        let alone = self.alone_queued.load(Ordering::Relaxed).min(queued);
        let others = (queued - alone).min(self.room(running));
        if others == 0 && running == 0 && alone > 0 {
            1
        } else {
            others
        }
    }

    /// Its counters (`queued` and `running` read together: see [`Server::counts`]).
    pub(super) fn stats(&self) -> ServerStats {
        let open = self.accepting();
        let (queued, running) = self.counts();
        let waiting = queued - self.takes_next(queued, running);
        ServerStats {
            id: self.id,
            thread: self.thread,
            methods: self.methods.clone(),
            open,
            queued,
            waiting,
            running,
            completed: self.completed.load(Ordering::Relaxed),
            busy_ms: self.busy_ns.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

impl Runner for Server {
    fn stop(&self, token: u64) -> Option<Stopped> {
        self.stop_running(token, true)
    }
    fn thread(&self) -> u64 {
        self.thread
    }
    fn id(&self) -> u64 {
        self.id
    }
}

/// What became of a job pushed on a server.
pub(super) enum Push {
    Queued,
    /// Refused, closed between the lookup and the lock: it has left the table, look again.
    Closed(ServedJob),
    /// Refused, the pool is destroyed: the job never runs.
    Destroyed(ServedJob),
}
