//! The pool: native worker threads and JavaScript threads that serve methods, one queue each,
//! and the strategy that picks a queue for every call at submit time. [`Pool`] is the API the
//! bindings use; the state and the steps behind it are the scheduler's.
//!
//! Where things are (each module says in its first lines what state it keeps and which
//! orderings make it correct; `README.md` gives the whole protocol with its proofs):
//! - `scheduler/`: the owners below, put together, and every step that moves a job from one
//!   owner to another (`mod.rs`: submit, admission of waiting jobs, cancel, destroy, the worker
//!   loop around a native job; `served.rs`: take/complete/stop/depart of served jobs);
//! - `job.rs`: a job's two kinds around one core, its state machine ([`Control`]) and where its
//!   outcome goes;
//! - `admission.rs`: the `maxQueue` bound and the `onFull: 'wait'` list;
//! - `worker.rs`: native worker threads, their queues, sleep/wake and retirement;
//! - `server/`: JavaScript threads serving methods, their queues and drain cycles;
//! - `servers.rs`: the method table over the servers, job tokens, expected methods;
//! - `origin.rs`: the handshake that makes a caller's environment safe to tear down;
//! - `lifecycle.rs`, `options.rs`, `stats.rs`, `strategy.rs`, `timeout.rs`, `idle.rs`: flags,
//!   settings, counters, the pick, time limits and idle polling;
//! - `each.rs`: a chunk of a `map`, one native command run per item;
//! - `tests.rs`, `serve_tests/`, `test_support.rs`: the tests, native and served.
//!
//! Rules every part keeps:
//! - A method is a native command (the registry) or served by JavaScript threads, never both:
//!   `serve` refuses native names, and a call is routed by the registry first. Served jobs
//!   count in `queued` and in the `maxQueue` bound like native ones: the bound counts the
//!   calls that wait for a thread of their kind (`admission.rs` says how).
//! - A closed pool accepts no new call; a destroyed pool also settles every queued and waiting
//!   job with PoolClosed and asks running ones to stop (they see it in `Context::check`).
//! - Cancelled jobs stay in their queue as tombstones (state DONE) and are skipped when popped.
//! - Every accepted call settles exactly once.

mod admission;
mod each;
mod idle;
pub mod job;
mod lifecycle;
mod options;
pub mod origin;
mod scheduler;
pub mod server;
mod servers;
pub mod stats;
pub mod strategy;
pub mod timeout;
mod worker;

pub use job::{Cancelled, Control, Params};
pub use lifecycle::closed_error;
pub use options::{OnFull, Options, MAX_NICE_INCREMENT, MAX_THREADS};
pub use origin::{Deliver, Origin, Ran};
pub use server::{Announce, Batch, Rest, ServeError, Served, Server, Wake};
pub use stats::{Percentiles, ServerStats, Stats, WorkerStats};
pub use strategy::Strategy;

use crate::rpc::{envelope, json, CancelReason, ErrorCode, Outcome, Registry, RpcError, Value};
use job::{CollectKind, Collector, Reply};
use scheduler::Scheduler;
use std::sync::Arc;
use std::time::Duration;

/// What the calling side adds to a call beyond its method, params and timeout.
#[derive(Default)]
pub struct Caller<'a> {
    /// The caller listens to the call's progress: a native command's `Context::progress` and
    /// a JavaScript handler's `ctx.progress(value)` reach its origin ([`Deliver::progress`]).
    pub watches_progress: bool,
    /// When a JavaScript-served call with views is placed on a server from this thread,
    /// `announce(server_tag, token)` runs just before the push (see `server/`).
    pub announce: Option<Announce<'a>>,
    /// The call continues one accepted before `close()` (a `map`'s later inputs): admitted
    /// after `close()`, not after `destroy()`.
    pub continuing: bool,
    /// The caller's trace context (W3C text the bindings pass through unread), handed to the
    /// JavaScript server that runs the call ([`Served::trace`]); native commands ignore it.
    pub trace: Option<Arc<str>>,
    /// The call is observed: the thread that runs it reports that thread and the job's queue
    /// wait and run time to its origin before its outcome ([`Deliver::ran`]).
    pub timed: bool,
    /// A JavaScript-served call runs alone on its server: it starts once no other handler
    /// runs there, and none starts beside it until it is done (`server/`); native commands
    /// ignore it.
    pub alone: bool,
}

/// The requests of one [`Pool::handle_cancellable`] call, by place (a batch's indices; 0 for a
/// lone request): for each request submitted, its control and a second reply to the same
/// place. Exactly one of the two replies ever answers: the job's own when a thread runs or
/// settles it, this one when [`Pool::cancel_requests`] withdraws the job unrun (the thread
/// whose compare-exchange moves a job out of QUEUED or WAITING settles it, see `job.rs`).
/// Places answered at once (invalid entries, refused calls) hold nothing.
#[derive(Default)]
pub struct Requests(Vec<Option<Cancellable>>);

struct Cancellable {
    control: Arc<Control>,
    reply: Reply,
}

impl Requests {
    fn keep(&mut self, place: usize, control: Option<Arc<Control>>, reply: Option<Reply>) {
        if let (Some(control), Some(reply)) = (control, reply) {
            if self.0.len() <= place {
                self.0.resize_with(place + 1, || None);
            }
            self.0[place] = Some(Cancellable { control, reply });
        }
    }
}

/// A pool of native worker threads, and of the JavaScript threads that serve methods.
pub struct Pool {
    scheduler: Arc<Scheduler>,
    id: u64,
}

impl Pool {
    /// Starts `options.threads` workers running the commands in `registry` (none: the pool
    /// only schedules calls to JavaScript servers).
    pub fn new(options: Options, registry: Registry) -> std::io::Result<Pool> {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let scheduler = Scheduler::start(options, registry)?;
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Pool { scheduler, id })
    }

    /// A number naming this pool in the process, unique among its pools.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn options(&self) -> &Options {
        self.scheduler.options()
    }

    pub fn registry(&self) -> &Registry {
        self.scheduler.registry()
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
        self.call_as(origin, call, method, params, timeout, Caller::default())
    }

    /// As [`Pool::call`], with what the caller's side adds (see [`Caller`]).
    pub fn call_as(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        method: &str,
        params: impl Into<Params>,
        timeout: Option<Duration>,
        caller: Caller,
    ) -> Option<Arc<Control>> {
        let reply = match (caller.timed, caller.watches_progress) {
            (true, watched) => Reply::Timed { call, watched },
            (false, true) => Reply::Watched(call),
            (false, false) => Reply::Call(call),
        };
        self.scheduler.submit(
            origin,
            method,
            params.into(),
            timeout,
            reply,
            None,
            caller.announce,
            caller.continuing,
            caller.trace,
            caller.alone,
        )
    }

    /// True when `method` is a native command this pool has threads to run.
    pub fn runs_natively(&self, method: &str) -> bool {
        self.scheduler.native_command(method).is_some()
    }

    /// Runs the native command `method` once per item of `items` (each item its one param), in
    /// one job: a chunk of a `map` (see `each.rs` for what the call settles with). `Err` hands
    /// the items back when `method` is not a native command of this pool (a served method's
    /// items go one call each). `item_timeout` as `timeout` in [`Pool::call`], for each item.
    #[allow(clippy::result_large_err)]
    pub fn call_each(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        method: &str,
        items: Vec<Value>,
        item_timeout: Option<Duration>,
        continuing: bool,
    ) -> Result<Option<Arc<Control>>, Vec<Value>> {
        let Some(command) = self.scheduler.native_command(method) else {
            return Err(items);
        };
        let item_timeout = match item_timeout {
            None => self.options().timeout,
            Some(d) => Some(d),
        };
        let each = Arc::new(each::Each {
            command,
            item_timeout,
        });
        let reply = Reply::Call(call);
        Ok(self
            .scheduler
            .submit_command(origin, each, Params::Values(items), reply, continuing))
    }

    /// Answers one JSON-RPC request object or batch (`text`: answer as JSON text). `closed`:
    /// the caller's handle is closed (a shared pool's handle), so every request is answered
    /// with PoolClosed, exactly as a closed pool answers it. Each request carries `trace`
    /// ([`Caller::trace`]).
    pub fn request(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        request: Value,
        text: bool,
        closed: bool,
        trace: Option<Arc<str>>,
    ) {
        self.answer(origin, call, request, text, closed, None, trace.as_ref());
    }

    /// Answers JSON-RPC text with JSON text; text that is not JSON gets a -32700 answer.
    /// `closed` and `trace` as for [`Pool::request`].
    pub fn handle(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        text: &str,
        closed: bool,
        trace: Option<Arc<str>>,
    ) {
        self.handle_text(origin, call, text, closed, None, trace.as_ref());
    }

    /// As [`Pool::handle`], keeping what it takes to cancel each request alone
    /// ([`Pool::cancel_requests`]): a host on a network that hears its caller gave up on one
    /// call of a batch stops that call and lets the others run. `trace`: the caller's trace
    /// context, which every request carries ([`Caller::trace`]).
    pub fn handle_cancellable(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        text: &str,
        closed: bool,
        trace: Option<Arc<str>>,
    ) -> Requests {
        let mut requests = Requests::default();
        self.handle_text(
            origin,
            call,
            text,
            closed,
            Some(&mut requests),
            trace.as_ref(),
        );
        requests
    }

    /// Cancels the requests at `places` of `requests` (a batch's indices; 0 for a lone
    /// request), as an AbortSignal cancels a call: one still queued is withdrawn and answered
    /// Aborted here, one running is asked to stop and answers Aborted through its worker (or
    /// its server, for a JavaScript-served method). A place that holds no request still in
    /// hand (out of range, answered at once, already cancelled) is passed over, so a cancel
    /// that comes late or twice changes nothing.
    pub fn cancel_requests(&self, requests: &mut Requests, places: &[u32], origin: &Arc<Origin>) {
        for &place in places {
            let Some(request) = requests.0.get_mut(place as usize).and_then(Option::take) else {
                continue;
            };
            if self.cancel(&request.control, CancelReason::Aborted) {
                // Withdrawn unrun: its queued job's own reply is dropped with the tombstone,
                // and this copy answers instead.
                request
                    .reply
                    .finish(Err(CancelReason::Aborted.error()), origin);
            }
        }
    }

    fn handle_text(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        text: &str,
        closed: bool,
        keep: Option<&mut Requests>,
        trace: Option<&Arc<str>>,
    ) {
        let e = match json::parse(text) {
            Ok(value) => return self.answer(origin, call, value, true, closed, keep, trace),
            Err(json::Unparsed::NotJson(why)) => {
                RpcError::new(ErrorCode::ParseError, format!("Parse error: {why}"))
            }
            // JSON, but deeper than any value may be: as request() answers such a value.
            Err(too_deep) => RpcError::new(
                ErrorCode::InvalidRequest,
                format!("Invalid Request: {too_deep}"),
            ),
        };
        let answer = envelope::error_response(Value::Null, e);
        origin.deliver(call, Ok(job::finish_text(Some(answer), true)));
    }

    /// `request`'s work; with `keep`, each request submitted is recorded there by its place.
    /// Each request carries `trace`.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        request: Value,
        text: bool,
        closed: bool,
        keep: Option<&mut Requests>,
        trace: Option<&Arc<str>>,
    ) {
        match request {
            Value::Array(entries) if entries.is_empty() => {
                let e = RpcError::new(ErrorCode::InvalidRequest, "Invalid Request: empty batch");
                let answer = envelope::error_response(Value::Null, e);
                origin.deliver(call, Ok(job::finish_text(Some(answer), text)));
            }
            Value::Array(entries) => self.batch(origin, call, entries, text, closed, keep, trace),
            single => match envelope::parse_request(single) {
                Ok(req) => {
                    let id = req.id.clone();
                    let again = keep.is_some().then(|| Reply::Response {
                        call,
                        id: id.clone(),
                        text,
                    });
                    let control = self.submit_request(
                        origin,
                        req,
                        Reply::Response { call, id, text },
                        closed,
                        trace,
                    );
                    if let Some(requests) = keep {
                        requests.keep(0, control, again);
                    }
                }
                Err(answer) => origin.deliver(call, Ok(job::finish_text(Some(answer), text))),
            },
        }
    }

    /// Submits one validated JSON-RPC request (its outcome goes to `reply`); its control
    /// while it may still be cancelled.
    fn submit_request(
        &self,
        origin: &Arc<Origin>,
        req: envelope::Request,
        reply: Reply,
        closed: bool,
        trace: Option<&Arc<str>>,
    ) -> Option<Arc<Control>> {
        if closed {
            reply.finish(Err(closed_error()), origin);
            return None;
        }
        self.scheduler.submit(
            origin,
            &req.method,
            req.params.into(),
            None,
            reply,
            None,
            None,
            false,
            trace.cloned(),
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn batch(
        &self,
        origin: &Arc<Origin>,
        call: u64,
        entries: Vec<Value>,
        text: bool,
        closed: bool,
        mut keep: Option<&mut Requests>,
        trace: Option<&Arc<str>>,
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
                let reply = Reply::Part(collector.clone(), slot);
                let control = self.submit_request(origin, req, reply, closed, trace);
                if let Some(requests) = keep.as_deref_mut() {
                    requests.keep(slot, control, Some(Reply::Part(collector.clone(), slot)));
                }
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
        let n = self.scheduler.worker_count();
        if n == 0 {
            let e = RpcError::new(
                ErrorCode::MethodNotFound,
                "broadcast runs native commands, and this pool runs no native threads",
            );
            origin.deliver(call, Err(e));
            return;
        }
        let collector = Collector::new(call, CollectKind::Broadcast, vec![None; n]);
        for w in 0..n {
            let reply = Reply::Part(collector.clone(), w);
            self.scheduler.submit(
                origin,
                method,
                Params::Values(params.clone()),
                timeout,
                reply,
                Some(w),
                None,
                false,
                None,
                false,
            );
        }
    }

    /// Asks a call to stop. A queued or waiting call is removed at once and this returns
    /// `true`: the caller must then settle it (the job will never run). A running call is
    /// asked to stop cooperatively and settles through its worker; this returns `false`.
    /// A running call of a JavaScript-served method settles at once (the handler is told to
    /// stop, see `server/`), also returning `false`.
    pub fn cancel(&self, control: &Control, reason: CancelReason) -> bool {
        self.cancel_call(control, reason, false) == Cancelled::Withdrawn
    }

    /// [`Pool::cancel`], saying what it did: withdrawn (the caller settles the call), a
    /// running served call stopped (settled, its handler told) on JavaScript thread `thread`,
    /// or a call asked to stop (a native one, or one that had finished or was stopped before).
    /// `end_thread`: a stopped call's server departs as well, if it has no other call to
    /// answer (`ended`), so that its thread can be terminated (as Piscina ends the worker of
    /// an aborted task) without losing a call.
    pub fn cancel_call(
        &self,
        control: &Control,
        reason: CancelReason,
        end_thread: bool,
    ) -> Cancelled {
        self.scheduler.cancel(control, reason, end_thread)
    }

    /// Cancels a call only if it has not started: a queued or waiting call is removed and this
    /// returns `true` (the caller must then settle it); a running call goes on untouched and
    /// this returns `false`.
    pub fn withdraw(&self, control: &Control, reason: CancelReason) -> bool {
        self.scheduler.withdraw_unstarted(control, reason)
    }

    /// Stops accepting calls; everything accepted still runs.
    pub fn close(&self) {
        self.scheduler.close();
    }

    pub fn is_closed(&self) -> bool {
        self.scheduler.is_closed()
    }

    /// Closes the pool, settles every queued and waiting call with PoolClosed, asks running
    /// calls to stop, and lets the threads exit.
    pub fn destroy(&self) {
        self.scheduler.destroy();
    }

    /// Lets the threads exit once their queues are empty (after `close()` and a drain).
    pub fn shutdown(&self) {
        self.close();
        self.scheduler.stop_threads();
    }

    pub fn stats(&self) -> Stats {
        self.scheduler.stats()
    }

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
        self.scheduler
            .serve(methods, tag, thread, concurrency, Box::new(waker))
    }

    /// Says which methods servers of this pool will serve although none may be up yet or any
    /// more (a pool of JavaScript workers started from a file): calls to them wait for a
    /// server instead of failing with MethodNotFound. `None`: any method that is not a native
    /// command (the methods are not known yet); calls waiting for a method no longer expected
    /// fail with MethodNotFound.
    pub fn expect(&self, methods: Option<Vec<String>>) {
        self.scheduler.expect(methods);
    }

    /// The servers this pool expects (see [`Pool::expect`]) will run `calls` calls at once
    /// (a pool of JavaScript workers: maxThreads × concurrency; `usize::MAX`: no bound). Until
    /// that many are open, `maxQueue` counts with it: calls made while the workers start wait
    /// for them as they would for running workers, not in the queue.
    pub fn plan_served(&self, calls: usize) {
        self.scheduler.plan_served(calls);
    }

    /// Calls waiting for a server that will not come (see [`Pool::expect`]) settle with
    /// `error`, and no server is expected any more: until `expect` is called again, a call
    /// that finds no server fails with `error` too (not MethodNotFound).
    pub fn fail_expected(&self, error: RpcError) {
        self.scheduler.fail_expected(error);
    }

    /// Stops giving `server` new calls; what it has queued or running still finishes there.
    /// Returns false if it was already closed.
    pub fn unserve(&self, server: &Server) -> bool {
        self.scheduler.unserve(server)
    }

    /// The serving environment is gone (or a closed server is done): its queued jobs go to the
    /// other servers of their method, its running ones settle with ServerGone. Idempotent.
    /// After it returns, the server's [`Wake`] is never called again.
    pub fn depart(&self, server: &Arc<Server>) {
        self.scheduler.depart(server);
    }

    /// How many running calls the departure of JavaScript thread `thread` settled with
    /// ServerGone (0: none, or not among the latest departures that did). Known once that
    /// thread's environment is torn down: a pool of JavaScript workers asks when one exits,
    /// to know whether an exception that ended it reached a caller.
    pub fn abandoned_by(&self, thread: u64) -> usize {
        self.scheduler.abandoned_by(thread)
    }

    /// The serving thread ends a drain cycle: see [`Rest`] and `Server::rest` for what each
    /// answer asks of it.
    /// A resting server with a free slot takes jobs held up on another server (it wakes for
    /// them): the jobs queued behind one that runs alone there, and, if it has nothing to do, a
    /// job that runs alone and waits there behind running jobs, as Piscina gives such tasks to
    /// the first worker that is free (`Scheduler::take_stuck`).
    pub fn rest(&self, server: &Server, budget_left: bool, may_poll: bool) -> Rest {
        let rest = server.rest(budget_left, may_poll);
        if rest == Rest::Idle {
            self.scheduler.take_stuck(server);
        }
        rest
    }

    /// Drains `server`'s queue for its JavaScript thread: up to `concurrency − running` live
    /// jobs become RUNNING and are handed over; tombstones and jobs whose caller is gone on the
    /// way are dropped. The thread is in a drain cycle from here until its [`Pool::rest`], so
    /// calls placed meanwhile wake nobody (`wake_pending` is set, if a cycle started without a
    /// wake-up found it clear).
    pub fn take(&self, server: &Arc<Server>) -> Batch {
        self.scheduler.take(server)
    }

    /// The handler of job `token` finished with `outcome`. Settles the call unless a stop or
    /// the caller's departure got there first; a handler that returns after its deadline or
    /// after a stop was asked gets the stop as its answer, as native commands do.
    /// Returns true when the serving thread should [`Pool::take`] again (jobs wait and a
    /// handler slot is free).
    pub fn complete(&self, server: &Server, token: u64, outcome: Outcome) -> bool {
        self.scheduler.complete(server, token, outcome)
    }

    /// The handler of job `token` reports progress (`ctx.progress(value)`); see
    /// [`Pool::call_watched`].
    pub fn progress(&self, server: &Server, token: u64, value: Value) {
        server.progress(token, value);
    }

    /// Whether running job `token` of `server` is still to be settled by its handler (see
    /// `Server::is_live`; a snapshot).
    pub fn is_live(&self, server: &Server, token: u64) -> bool {
        server.is_live(token)
    }

    /// The serving thread stops job `token` (its timeout fired): the call settles now with
    /// `reason`; the handler keeps counting as running until it completes. Returns the error
    /// of that stop (what the handler's signal says), `None` if the job no longer runs.
    pub fn stop(&self, server: &Server, token: u64, reason: CancelReason) -> Option<RpcError> {
        self.scheduler.stop(server, token, reason)
    }

    /// The serving thread has no views for job `token`: ask its caller to send them. `false`
    /// when that cannot happen (the job is settled or its caller is gone): the serving thread
    /// should complete the job (the outcome is dropped).
    pub fn resend(&self, server: &Server, token: u64) -> bool {
        server.resend(token)
    }

    /// Of these running jobs, the ones whose caller's environment is gone (a job waiting for
    /// resent views never gets them then).
    pub fn orphaned(&self, server: &Server, tokens: &[u64]) -> Vec<u64> {
        server.orphaned(tokens)
    }

    /// Counters of every server not yet departed.
    pub fn server_stats(&self) -> Vec<ServerStats> {
        self.scheduler.server_stats()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod serve_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
