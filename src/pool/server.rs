//! A server: a JavaScript thread (the main thread or a worker_thread) that serves methods
//! implemented in JavaScript. To the scheduler it is a dispatch target beside the native
//! workers: calls to a served method are spread among the servers of that method by the pool's
//! strategy, each server has its own queue, and its JavaScript thread pulls the jobs when woken.
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
//!   drains again as its handlers finish ([`Pool::complete`] says when there is more).
//! - `stops`: tokens of running jobs whose handler must be told to stop (abort, destroy).
//! - `forgotten`: tokens whose SharedArrayBuffer views the server was sent but will never run
//!   (the job was cancelled or taken away), so the serving thread can drop them.
//! - `wake_pending`: the serving thread is bound to look at the queue again: a wake-up is on
//!   its way, or the thread is in a drain cycle (from its [`Pool::take`] to the
//!   [`Pool::rest`] that ends every cycle), or a cycle it has put off (`Rest::Later`) is
//!   scheduled. A push that finds it clear sets it and calls [`Wake::wake`]; `take` and a
//!   `Later` set it too, and pushes that find it set wake nobody. Only `rest` clears it, under
//!   the lock and having seen nothing the thread could take, so a push either lands in what the
//!   thread takes or triggers the next wake: one wake per cycle, none lost. Before it clears
//!   it, an idle worker_thread's `rest` polls for a short while ([`IDLE_SPIN`], as idle native
//!   workers do), so that a caller that sends the next call meanwhile costs no wake-up on
//!   either side; and `leastbusy` gives a tie to a server with the flag set over one without,
//!   for the same reason (a stale read costs at most a wake-up, never a lost call).
//!   `wake` is only ever called under the lock, after checking `accepting` (pushes) or
//!   `departed` (stop and forget notices), and departure clears the one and sets the other under
//!   the lock, so after [`Pool::depart`] returns no thread calls `wake` again and the bindings
//!   may free what it uses.
//! - `running`: jobs handed to JavaScript and not finished, by token. Inserting before the
//!   QUEUED → RUNNING step and removing exactly once (completion or departure) makes the
//!   removal the one place that gives back the job's `maxQueue` slot and the server's load.
//! - `drain`: held through the whole of [`Pool::take`] and of [`Pool::depart`]. A job `take`
//!   has popped from `queue` is in neither `queue` nor `running` until `take` has moved it; if
//!   `depart` ran in that gap it would find the job in neither and nobody would settle it. The
//!   bindings call both on the serving thread, so the lock is never contended there; it makes
//!   the pair safe from any threads. Lock order: `drain` before any `inner` or `running`
//!   (`depart` places jobs on other servers' queues while holding its own `drain`, and no code
//!   takes a `drain` while holding an `inner` or a `running`).
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
//! ([`Pool::resend`] → [`super::Deliver::resend`]). The native side never dereferences a view
//! of a served job: the serving thread's own SharedArrayBuffer objects keep the memory alive.

use super::idle::{idle_pause, IDLE_SPIN};
use super::job::{Control, JobCore, Params, Reply, Runner, ServedJob, Stopped};
use super::origin::Origin;
use super::timeout;
use super::Shared;
use crate::rpc::{CancelReason, ErrorCode, Outcome, RpcError, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

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

/// What a serving thread does at the end of a drain cycle: see [`Pool::rest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    Idle,
    Work,
    Later,
}

/// A running job's remains: what settling it needs.
struct Running {
    control: Arc<Control>,
    origin: Arc<Origin>,
    /// Taken by whoever wins RUNNING → DONE.
    reply: Option<Reply>,
    started: Instant,
    deadline: Option<Instant>,
}

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
    /// Held through a whole [`Pool::take`] and a whole [`Pool::depart`] (see the module doc).
    drain: Mutex<()>,
    /// Entries in `queue` (tombstones included until drained).
    queued: AtomicUsize,
    /// Entries in `running`.
    running_len: AtomicUsize,
    completed: AtomicU64,
    busy_ns: AtomicU64,
    departed: AtomicBool,
    /// See the module doc. Written only under `inner`'s lock, which orders it for the protocol;
    /// read without the lock only by the strategy, as a hint (a server that will look at its
    /// queue anyway takes a call without a wake-up).
    wake_pending: AtomicBool,
    waker: Box<dyn Wake>,
}

/// One server's counters, for `stats()`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStats {
    pub id: u64,
    /// The serving thread's id as the bindings gave it (`threadId` in Node).
    pub thread: u64,
    pub methods: Vec<String>,
    /// False once closed: it finishes what it has but gets nothing new.
    pub open: bool,
    pub queued: usize,
    pub running: usize,
    pub completed: u64,
    pub busy_ms: f64,
}

/// Why `serve` refused.
#[derive(Debug, PartialEq)]
pub enum ServeError {
    /// The method is a native command: a name is served natively or by JavaScript, not both.
    Native(String),
    /// No methods were given.
    Empty,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when a value holds a view into shared memory anywhere inside.
pub(crate) fn has_view(v: &Value) -> bool {
    match v {
        Value::View(_) => true,
        Value::Array(items) => items.iter().any(has_view),
        Value::Object(m) => m.iter().any(|(_, v)| has_view(v)),
        _ => false,
    }
}

impl Server {
    pub fn id(&self) -> u64 {
        self.id
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

    /// Queued + running: what `leastbusy` compares.
    pub(crate) fn load(&self) -> usize {
        self.queued.load(Ordering::Relaxed) + self.running_len.load(Ordering::Relaxed)
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
    fn stop_running(&self, token: u64, notify: bool) -> Option<Stopped> {
        let won = {
            let mut running = lock(&self.running);
            match running.get_mut(&token) {
                Some(run) if run.control.try_finish() => run.reply.take().map(|reply| Stopped {
                    reply,
                    origin: run.origin.clone(),
                    reason: run.control.reason(),
                }),
                _ => None,
            }
        };
        if notify {
            self.notify_stop(token);
        }
        won
    }

    fn stats(&self, open: bool) -> ServerStats {
        ServerStats {
            id: self.id,
            thread: self.thread,
            methods: self.methods.clone(),
            open,
            queued: self.queued.load(Ordering::Relaxed),
            running: self.running_len.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            busy_ms: self.busy_ns.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

impl Runner for Server {
    fn stop(&self, token: u64) -> Option<Stopped> {
        self.stop_running(token, true)
    }
}

/// The servers of one method and the round-robin counter they share.
#[derive(Default)]
struct MethodServers {
    list: Vec<Arc<Server>>,
    next: AtomicUsize,
}

/// Every server of a pool: the open ones by method, and all not yet departed (for stats).
#[derive(Default)]
pub(crate) struct Servers {
    by_method: HashMap<String, MethodServers>,
    all: Vec<Arc<Server>>,
}

impl Servers {
    pub(crate) fn serves(&self, method: &str) -> bool {
        self.by_method
            .get(method)
            .is_some_and(|m| !m.list.is_empty())
    }

    fn remove(&mut self, server: &Server) {
        for m in &server.methods {
            if let Some(entry) = self.by_method.get_mut(m.as_str()) {
                entry.list.retain(|s| s.id != server.id);
                if entry.list.is_empty() {
                    self.by_method.remove(m.as_str());
                }
            }
        }
    }
}

/// A caller's hook that sends a job's views to the chosen server before the push:
/// `announce(server_tag, token)`.
pub type Announce<'a> = &'a mut dyn FnMut(u64, u64);

impl Shared {
    fn servers(&self) -> std::sync::RwLockReadGuard<'_, Servers> {
        self.servers.read().unwrap_or_else(|e| e.into_inner())
    }

    fn servers_mut(&self) -> std::sync::RwLockWriteGuard<'_, Servers> {
        self.servers.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn is_served(&self, method: &str) -> bool {
        self.servers().serves(method)
    }

    /// Places a QUEUED served job (already counted in `queued` and holding a slot) on a server
    /// of its method, announcing its views when `announce` is given. With no server left, the
    /// job settles with MethodNotFound.
    pub(crate) fn place_served(&self, mut job: ServedJob, mut announce: Option<Announce>) {
        job.announced = false;
        loop {
            let server = {
                let servers = self.servers();
                let Some(entry) = servers
                    .by_method
                    .get(&*job.method)
                    .filter(|e| !e.list.is_empty())
                else {
                    break;
                };
                let n = entry.list.len();
                let i = self.options.strategy.pick(n, &entry.next, |i| {
                    (entry.list[i].load(), entry.list[i].asleep())
                });
                entry.list[i].clone()
            };
            let mut inner = lock(&server.inner);
            if !inner.accepting {
                // Closed between the lookup and the lock: it has left the table, look again.
                continue;
            }
            if self.lifecycle.is_destroyed() {
                // `destroy_served` empties this queue under this lock after setting the flag:
                // a job pushed now would run after all. It never runs.
                drop(inner);
                break;
            }
            if job.views {
                if let Some(announce) = announce.as_mut() {
                    announce(server.tag, job.token);
                    job.announced = true;
                }
            }
            server.queued.fetch_add(1, Ordering::AcqRel);
            inner.queue.push_back(job);
            server.wake_locked(&mut inner);
            return;
        }
        if job.core.control.withdraw_queued() {
            self.counters.sub_queued();
            self.release_slot();
            let e = if self.lifecycle.is_destroyed() {
                super::destroyed_error()
            } else {
                RpcError::method_not_found(&job.method)
            };
            job.core.settle(Err(e));
        }
    }

    /// Settles a running served job now with its stop reason (if it is still running), and
    /// tells its handler to stop when `notify`.
    fn stop_running(&self, server: &Server, token: u64, notify: bool) {
        if let Some(stopped) = server.stop_running(token, notify) {
            self.counters.add_failed();
            stopped.settle();
        }
    }

    /// A canceller found a served job RUNNING: settle it and tell its handler.
    pub(crate) fn cancel_running(&self, control: &Control) {
        if let Some((runner, token)) = control.runner() {
            if let Some(stopped) = runner.stop(token) {
                self.counters.add_failed();
                stopped.settle();
            }
        }
    }

    /// `destroy()`: settles every queued served job with PoolClosed and stops running ones.
    pub(crate) fn destroy_served(&self, closed: impl Fn() -> RpcError) {
        let servers: Vec<Arc<Server>> = self.servers().all.clone();
        for server in servers {
            let jobs: Vec<ServedJob> = {
                let mut inner = lock(&server.inner);
                let jobs: Vec<ServedJob> = inner.queue.drain(..).collect();
                server.queued.fetch_sub(jobs.len(), Ordering::AcqRel);
                let forgotten: Vec<u64> = jobs
                    .iter()
                    .filter(|j| j.announced)
                    .map(|j| j.token)
                    .collect();
                if !forgotten.is_empty() && !server.departed.load(Ordering::Acquire) {
                    inner.forgotten.extend(forgotten);
                    server.wake_locked(&mut inner);
                }
                jobs
            };
            for job in jobs {
                if job.core.control.withdraw_queued() {
                    self.counters.sub_queued();
                    self.release_slot();
                    job.core.settle(Err(closed()));
                }
            }
            let tokens: Vec<u64> = lock(&server.running).keys().copied().collect();
            for token in tokens {
                if let Some(run) = lock(&server.running).get(&token) {
                    run.control.set_reason(CancelReason::Destroyed);
                }
                self.stop_running(&server, token, true);
            }
        }
    }
}

impl super::Pool {
    /// Makes a JavaScript thread a server of `methods`. `tag` is the bindings' address of its
    /// environment, `thread` its thread id (for stats), `waker` wakes it when jobs arrive.
    /// At most `concurrency` (≥ 1) of its calls run at once; the others wait in its queue.
    pub fn serve(
        &self,
        methods: Vec<String>,
        tag: u64,
        thread: u64,
        concurrency: usize,
        waker: impl Wake + 'static,
    ) -> Result<Arc<Server>, ServeError> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let s = &self.shared;
        if methods.is_empty() {
            return Err(ServeError::Empty);
        }
        if let Some(native) = methods.iter().find(|m| s.registry.get(m).is_some()) {
            return Err(ServeError::Native(native.clone()));
        }
        let server = Arc::new(Server {
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
            queued: AtomicUsize::new(0),
            running_len: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            departed: AtomicBool::new(false),
            wake_pending: AtomicBool::new(false),
            waker: Box::new(waker),
        });
        let mut servers = s.servers_mut();
        for m in &server.methods {
            servers
                .by_method
                .entry(m.clone())
                .or_default()
                .list
                .push(server.clone());
        }
        servers.all.push(server.clone());
        s.admission.server_opened();
        Ok(server)
    }

    /// Stops giving `server` new calls; what it has queued or running still finishes there.
    /// Returns false if it was already closed.
    pub fn unserve(&self, server: &Server) -> bool {
        let s = &self.shared;
        s.servers_mut().remove(server);
        let mut inner = lock(&server.inner);
        if !inner.accepting {
            return false;
        }
        inner.accepting = false;
        drop(inner);
        s.admission.server_closed();
        true
    }

    /// The serving environment is gone (or a closed server is done): its queued jobs go to the
    /// other servers of their method, its running ones settle with ServerGone. Idempotent.
    /// After it returns, the server's [`Wake`] is never called again.
    pub fn depart(&self, server: &Arc<Server>) {
        let s = &self.shared;
        let _drain = lock(&server.drain);
        self.unserve(server);
        let queued: Vec<ServedJob> = {
            let mut inner = lock(&server.inner);
            server.departed.store(true, Ordering::Release);
            inner.stops.clear();
            inner.forgotten.clear();
            inner.queue.drain(..).collect()
        };
        s.servers_mut().all.retain(|x| x.id != server.id);
        server.queued.fetch_sub(queued.len(), Ordering::AcqRel);
        for job in queued {
            if job.core.control.is_queued() {
                s.place_served(job, None);
            }
        }
        let running: Vec<Running> = lock(&server.running).drain().map(|(_, r)| r).collect();
        for mut run in running {
            server.running_len.fetch_sub(1, Ordering::AcqRel);
            if run.control.try_finish() {
                if let Some(reply) = run.reply.take() {
                    let e = RpcError::new(
                        ErrorCode::ServerGone,
                        "The JavaScript thread serving the call exited before it finished",
                    );
                    s.counters.add_failed();
                    reply.finish(Err(e), &run.origin);
                }
            }
            s.release_slot();
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
    /// ([`Pool::complete`] says when), and stop notices still wake the thread meanwhile.
    pub fn rest(&self, server: &Server, budget_left: bool, may_poll: bool) -> Rest {
        if !budget_left {
            let _locked = lock(&server.inner);
            server.wake_pending.store(true, Ordering::Relaxed);
            return Rest::Later;
        }
        let polling = may_poll && server.running_len.load(Ordering::Acquire) == 0;
        let until = polling.then(|| Instant::now() + IDLE_SPIN);
        loop {
            let inner = lock(&server.inner);
            let room = server.running_len.load(Ordering::Acquire) < server.concurrency;
            if (room && !inner.queue.is_empty())
                || !inner.stops.is_empty()
                || !inner.forgotten.is_empty()
            {
                return Rest::Work;
            }
            if !inner.accepting || until.is_none_or(|t| Instant::now() >= t) {
                server.wake_pending.store(false, Ordering::Relaxed);
                return Rest::Idle;
            }
            drop(inner);
            idle_pause();
        }
    }

    /// Drains `server`'s queue for its JavaScript thread: up to `concurrency − running` live
    /// jobs become RUNNING and are handed over; tombstones and jobs whose caller is gone on the
    /// way are dropped. The thread is in a drain cycle from here until its [`Pool::rest`], so
    /// calls placed meanwhile wake nobody (`wake_pending` is set, if a cycle started without a
    /// wake-up found it clear).
    pub fn take(&self, server: &Arc<Server>) -> Batch {
        let s = &self.shared;
        let _drain = lock(&server.drain);
        let room = server
            .concurrency
            .saturating_sub(server.running_len.load(Ordering::Acquire));
        let (queue, stops, mut forgotten) = {
            let mut inner = lock(&server.inner);
            server.wake_pending.store(true, Ordering::Relaxed);
            let mut taken = Vec::new();
            let mut live = 0;
            while live < room {
                let Some(job) = inner.queue.pop_front() else {
                    break;
                };
                if job.core.control.is_queued() {
                    live += 1;
                }
                taken.push(job);
            }
            (
                taken,
                std::mem::take(&mut inner.stops),
                std::mem::take(&mut inner.forgotten),
            )
        };
        let mut jobs = Vec::with_capacity(queue.len());
        let now = Instant::now();
        for job in queue {
            server.queued.fetch_sub(1, Ordering::AcqRel);
            let live = job.core.control.is_queued();
            let destroyed = s.lifecycle.is_destroyed();
            if !live || job.core.origin.is_gone() || destroyed {
                if job.announced {
                    forgotten.push(job.token);
                }
                if live && job.core.control.withdraw_queued() {
                    s.counters.sub_queued();
                    s.release_slot();
                    if destroyed {
                        // Placed after destroy() emptied the queues (admitted from the wait
                        // list by a thread that raced it): it never runs.
                        job.core.settle(Err(super::destroyed_error()));
                    } // else nobody is listening for it any more
                }
                continue;
            }
            let ServedJob {
                core:
                    JobCore {
                        control,
                        origin,
                        reply,
                        submitted,
                        timeout,
                    },
                method,
                token,
                views,
                ..
            } = job;
            // Visible in `running` (and through its runner) before it is RUNNING, so a
            // canceller that sees RUNNING finds it.
            lock(&server.running).insert(
                token,
                Running {
                    control: control.clone(),
                    origin,
                    reply: Some(reply),
                    started: now,
                    deadline: timeout::deadline(now, timeout),
                },
            );
            let runner: Weak<Server> = Arc::downgrade(server);
            control.set_runner(runner, token);
            let Some(params) = control.start() else {
                lock(&server.running).remove(&token);
                continue;
            };
            server.running_len.fetch_add(1, Ordering::AcqRel);
            s.counters.sub_queued();
            s.counters
                .record_wait(now.saturating_duration_since(submitted));
            if control.reason().is_some() {
                // Cancelled between the CAS attempts: settle it and hand nothing over.
                s.stop_running(server, token, false);
                self.finish_running(server, token);
                if views {
                    forgotten.push(token);
                }
                continue;
            }
            jobs.push(Served {
                token,
                method,
                params,
                deadline: timeout::deadline(now, timeout),
                views,
            });
        }
        Batch {
            jobs,
            stops,
            forgotten,
        }
    }

    /// Removes a running job's record: its slot and the server's load are given back.
    fn finish_running(&self, server: &Server, token: u64) -> Option<Running> {
        let run = lock(&server.running).remove(&token)?;
        server.running_len.fetch_sub(1, Ordering::AcqRel);
        server.completed.fetch_add(1, Ordering::Relaxed);
        let busy = run.started.elapsed();
        server
            .busy_ns
            .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
        self.shared.release_slot();
        Some(run)
    }

    /// The handler of job `token` finished with `outcome`. Settles the call unless a stop or
    /// the caller's departure got there first; a handler that returns after its deadline or
    /// after a stop was asked gets the stop as its answer, as native commands do.
    /// Returns true when the serving thread should [`Pool::take`] again (jobs wait and a
    /// handler slot is free).
    pub fn complete(&self, server: &Server, token: u64, outcome: Outcome) -> bool {
        self.settle_running(server, token, outcome);
        server.queued.load(Ordering::Acquire) > 0
            && server.running_len.load(Ordering::Acquire) < server.concurrency
    }

    fn settle_running(&self, server: &Server, token: u64, outcome: Outcome) {
        let s = &self.shared;
        let Some(mut run) = self.finish_running(server, token) else {
            return; // unknown token: already settled by departure
        };
        s.counters.record_run(run.started.elapsed());
        if !run.control.try_finish() {
            return; // a stop settled it
        }
        let outcome = match run.control.reason() {
            Some(reason) => Err(reason.error()),
            None => match run.deadline {
                Some(d) if Instant::now() >= d => Err(CancelReason::Timeout.error()),
                _ => outcome,
            },
        };
        s.counters.record(&outcome);
        if let Some(reply) = run.reply.take() {
            reply.finish(outcome, &run.origin);
        }
    }

    /// The serving thread stops job `token` (its timeout fired): the call settles now with
    /// `reason`; the handler keeps counting as running until it completes.
    pub fn stop(&self, server: &Server, token: u64, reason: CancelReason) {
        if let Some(run) = lock(&server.running).get(&token) {
            run.control.set_reason(reason);
        }
        self.shared.stop_running(server, token, false);
    }

    /// The serving thread has no views for job `token`: ask its caller to send them. `false`
    /// when that cannot happen (the job is settled or its caller is gone): the serving thread
    /// should complete the job (the outcome is dropped).
    pub fn resend(&self, server: &Server, token: u64) -> bool {
        let (origin, call) = {
            let running = lock(&server.running);
            match running.get(&token) {
                Some(run) => match &run.reply {
                    Some(reply) => (run.origin.clone(), reply.call()),
                    None => return false,
                },
                None => return false,
            }
        };
        origin.resend(call, server.tag, token)
    }

    /// Of these running jobs, the ones whose caller's environment is gone (a job waiting for
    /// resent views never gets them then).
    pub fn orphaned(&self, server: &Server, tokens: &[u64]) -> Vec<u64> {
        let running = lock(&server.running);
        tokens
            .iter()
            .copied()
            .filter(|t| running.get(t).is_none_or(|r| r.origin.is_gone()))
            .collect()
    }

    /// Counters of every server not yet departed.
    pub fn server_stats(&self) -> Vec<ServerStats> {
        self.shared
            .servers()
            .all
            .iter()
            .map(|sv| {
                let open = lock(&sv.inner).accepting;
                sv.stats(open)
            })
            .collect()
    }
}
