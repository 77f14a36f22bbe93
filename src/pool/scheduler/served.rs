//! The scheduler's steps for jobs served by JavaScript threads (see `server/` for one
//! server, `servers.rs` for the method table): making a thread a server, placing a served job,
//! the drain cycle's `take`, completion and stops, `destroy`'s share, and a server's departure.
//! `README.md` §6 states the protocol and its invariants (V1–V3).

use super::Scheduler;
use crate::pool::admission::Kind;
use crate::pool::job::{JobCore, ServedJob};
use crate::pool::lifecycle::destroyed_error;
use crate::pool::server::{
    stuck_anywhere, Announce, Batch, Push, Running, ServeError, Served, Server, Wake,
};
use crate::pool::servers::Hold;
use crate::pool::stats::ServerStats;
use crate::pool::timeout;
use crate::rpc::{CancelReason, Outcome, RpcError};
use std::sync::Arc;
use std::time::Instant;

impl Scheduler {
    /// Makes a JavaScript thread a server of `methods` (see `Pool::serve`).
    pub(crate) fn serve(
        &self,
        methods: Vec<String>,
        tag: u64,
        thread: u64,
        concurrency: usize,
        waker: Box<dyn Wake>,
    ) -> Result<Arc<Server>, ServeError> {
        if methods.is_empty() {
            return Err(ServeError::Empty);
        }
        if let Some(native) = methods.iter().find(|m| self.registry.get(m).is_some()) {
            return Err(ServeError::Native(native.clone()));
        }
        let server = Server::new(methods, tag, thread, concurrency, waker);
        // Counted in the bound before it is in the table: a call that finds it there also
        // finds it counted.
        self.admission.server_opened(server.concurrency());
        for job in self.servers.add(&server) {
            // Jobs that waited for a server of these methods (see `expect`).
            if job.core.control.is_queued() {
                self.place_served(job, None);
            }
        }
        // In a pool of JavaScript workers (one that expects its servers), the calls queued on
        // the other servers of these methods are placed again, now that there is one more to
        // run them: a worker that starts under load takes its share of what waits, not only of
        // what comes next. (Elsewhere a server's queue keeps its order: servers that serve
        // the same methods from different threads may count on it.)
        if self.servers.expects_servers() {
            for other in self.servers.all() {
                if other.id() == server.id()
                    || !other.methods().iter().any(|m| server.methods().contains(m))
                {
                    continue;
                }
                for job in other.drain_queue() {
                    if job.core.control.is_queued() {
                        self.place_served(job, None);
                    }
                }
            }
        }
        // Jobs held up on another server (behind a job running alone there): it has nothing to
        // do, so it takes them (see `take_stuck`).
        self.take_stuck(&server);
        // Its capacity is room for calls waiting to be admitted, too.
        if self.admission.has_waiting() {
            self.admit_waiting();
        }
        Ok(server)
    }

    /// Says which methods servers of this pool will serve, although none may be up yet or
    /// any more: calls to them wait for a server instead of failing with MethodNotFound.
    /// `None`: any method (not known yet). Calls waiting for a method no longer expected fail.
    pub(crate) fn expect(&self, methods: Option<Vec<String>>) {
        for job in self.servers.expect(methods) {
            self.settle_unserved(job);
        }
    }

    /// The servers this pool expects will run `calls` calls at once (`maxQueue` counts with
    /// that until they are open: see `admission.rs`).
    pub(crate) fn plan_served(&self, calls: usize) {
        self.admission.plan_served(calls);
        if self.admission.has_waiting() {
            self.admit_waiting();
        }
    }

    /// Calls waiting for a server that will not come fail with `error` (the task file could
    /// not be loaded, or the pool stops expecting servers), and so do the calls that find no
    /// server from now on, until `expect` says servers will come again.
    pub(crate) fn fail_expected(&self, error: RpcError) {
        for job in self.servers.expect_none(error.clone()) {
            if job.core.control.withdraw_queued() {
                self.counters.sub_queued();
                self.release_slot(Kind::Served);
                job.core.settle(Err(error.clone()));
            }
        }
    }

    /// Stops giving `server` new calls (see `Pool::unserve`). False if it was already closed.
    pub(crate) fn unserve(&self, server: &Server) -> bool {
        self.servers.remove(server);
        if !server.close() {
            return false;
        }
        self.admission.server_closed(server.concurrency());
        true
    }

    /// Places a QUEUED served job (already counted in `queued` and holding a slot) on a server
    /// of its method, announcing its views when `announce` is given. With no server left, the
    /// job settles with MethodNotFound (PoolClosed once the pool is destroyed).
    pub(super) fn place_served(&self, job: ServedJob, mut announce: Option<Announce>) {
        let strategy = self.options.strategy;
        let mut job = job;
        let job = loop {
            let Err(unplaced) = self
                .servers
                .place(job, announce.take(), strategy, &self.lifecycle)
            else {
                // It may wait behind running jobs, or behind a job running alone (the same
                // test a server with room makes: `take_stuck`).
                if stuck_anywhere() {
                    self.rescue_stuck();
                }
                return;
            };
            if self.lifecycle.is_destroyed() {
                break unplaced;
            }
            // No server for its method now: it waits for one if one is expected.
            match self.servers.hold(unplaced) {
                Hold::Held => return,
                Hold::Retry(again) => job = again,
                Hold::Unserved(unserved) => break unserved,
            }
        };
        self.settle_unserved(job);
    }

    /// Settles a queued served job that no server will take: MethodNotFound, or why no server
    /// will come (see `fail_expected`); PoolClosed once the pool is destroyed.
    pub(super) fn settle_unserved(&self, job: ServedJob) {
        if job.core.control.withdraw_queued() {
            self.counters.sub_queued();
            self.release_slot(Kind::Served);
            let e = if self.lifecycle.is_destroyed() {
                destroyed_error()
            } else {
                self.unserved(&job.method)
            };
            job.core.settle(Err(e));
        }
    }

    /// The error of a call to `method` that no server takes, nor will: why none will come,
    /// when that was said (`fail_expected`), else MethodNotFound.
    pub(super) fn unserved(&self, method: &str) -> RpcError {
        self.servers
            .failure()
            .unwrap_or_else(|| self.registry.not_found(method))
    }

    /// Settles a running served job now with its stop reason (if it is still running), and
    /// tells its handler to stop when `notify`.
    pub(super) fn stop_running(&self, server: &Server, token: u64, notify: bool) {
        if let Some(stopped) = server.stop_running(token, notify) {
            self.counters.add_failed();
            stopped.settle();
        }
    }

    /// `destroy()`: settles every queued served job with PoolClosed and stops running ones.
    pub(super) fn destroy_served(&self, closed: impl Fn() -> RpcError) {
        self.fail_expected(closed());
        for server in self.servers.all() {
            for job in server.drain_queue() {
                if job.core.control.withdraw_queued() {
                    self.counters.sub_queued();
                    self.release_slot(Kind::Served);
                    job.core.settle(Err(closed()));
                }
            }
            for token in server.running_tokens() {
                server.set_reason(token, CancelReason::Destroyed);
                self.stop_running(&server, token, true);
            }
        }
    }

    /// The serving environment is gone (see `Pool::depart`): its queued jobs go to the other
    /// servers of their method, its running ones settle with ServerGone. Idempotent.
    pub(crate) fn depart(&self, server: &Arc<Server>) {
        let _drain = server.lock_drain();
        self.depart_drained(server);
    }

    /// Server `id` departs now, as if its thread were gone, if none of its running jobs is
    /// still awaited by a caller (see `Cancelled::Stopped`): its queued jobs go to other
    /// servers, and it gets no new one. False if it runs jobs still awaited, or is not here.
    pub(crate) fn depart_if_done(&self, id: u64) -> bool {
        let Some(server) = self.servers.all().into_iter().find(|s| s.id() == id) else {
            return false;
        };
        // Held from the look to the departure: no take starts a job in between.
        let _drain = server.lock_drain();
        if server.runs_awaited() {
            return false;
        }
        self.depart_drained(&server);
        true
    }

    /// `depart`, the server's `drain` lock held.
    fn depart_drained(&self, server: &Arc<Server>) {
        self.unserve(server);
        let queued = server.depart_queue();
        self.servers.forget(server);
        for job in queued {
            if job.core.control.is_queued() {
                self.place_served(job, None);
            }
        }
        let mut abandoned = 0;
        for run in server.depart_running() {
            if run.abandon(&self.counters, server.thread()) {
                abandoned += 1;
            }
            self.release_slot(Kind::Served);
        }
        self.servers.record_departure(server.thread(), abandoned);
    }

    /// See `Pool::abandoned_by`.
    pub(crate) fn abandoned_by(&self, thread: u64) -> usize {
        self.servers.abandoned_by(thread)
    }

    /// Drains `server`'s queue for its JavaScript thread (see `Pool::take`).
    pub(crate) fn take(&self, server: &Arc<Server>) -> Batch {
        let mut take = server.begin_take();
        let mut jobs = Vec::with_capacity(take.len());
        let now = Instant::now();
        while let Some(job) = take.next_job() {
            let live = job.core.control.is_queued();
            let destroyed = self.lifecycle.is_destroyed();
            if !live || job.core.origin.is_gone() || destroyed {
                if job.announced {
                    take.forget(job.token);
                }
                if live && job.core.control.withdraw_queued() {
                    self.counters.sub_queued();
                    self.release_slot(Kind::Served);
                    if destroyed {
                        // Placed after destroy() emptied the queues (admitted from the wait
                        // list by a thread that raced it): it never runs.
                        job.core.settle(Err(destroyed_error()));
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
                trace,
                alone,
                ..
            } = job;
            let deadline = timeout::deadline(now, timeout);
            let watched = reply.watched().is_some();
            let own_call = reply.own_call().map(|call| (origin.id(), call));
            let named = (method.clone(), timeout.unwrap_or_default());
            let Some(params) = take.start(
                token,
                &control,
                origin,
                reply,
                (submitted, now),
                deadline,
                named,
                alone,
            ) else {
                continue;
            };
            self.counters.sub_queued();
            self.counters
                .record_wait(now.saturating_duration_since(submitted));
            if control.reason().is_some() {
                // Cancelled between the CAS attempts: settle it and hand nothing over.
                self.stop_running(server, token, false);
                self.finish_running(server, token);
                if views {
                    take.forget(token);
                }
                continue;
            }
            jobs.push(Served {
                token,
                method,
                params,
                deadline,
                views,
                watched,
                own_call,
                trace,
            });
        }
        let batch = take.finish(jobs);
        // An alone job started with jobs queued behind it, or jobs started with an alone job
        // queued behind them: a server with nothing to do takes those (after the take, its
        // drain lock released).
        if server.holds_up() {
            self.rescue_stuck();
        }
        batch
    }

    /// A server with a free handler slot (one of its calls finished, its serving thread
    /// rests, it just opened) takes jobs held up on another server (`Server::give_up_stuck`),
    /// as Piscina gives such tasks to the first worker that is free: the jobs queued behind one
    /// that runs alone there, as many as it has free slots; and, if it has nothing to do, a job
    /// that runs alone and waits there behind running jobs (or, with no other job held up, one
    /// queued behind a job running alone). True if it took some (it is woken for them). A
    /// closed server (a worker retiring, not yet departed) takes none; if `taker` closes
    /// meanwhile, the jobs are placed anew (and a server that closes stays closed, so that
    /// does not go on: each round needs another server to close between its check and its
    /// push).
    ///
    /// With [`Scheduler::rescue_stuck`] it is a handshake: a server whose load drops reads
    /// whether jobs may be held up (`stuck_anywhere`) after its load went down, and the side
    /// that holds jobs up (a caller queuing an alone job where it must wait, or any job while
    /// an alone job runs somewhere; a serving thread whose take started an alone job with jobs
    /// queued behind it, or jobs with an alone job queued behind them) looks for servers with
    /// room after counting itself in. The loads and counts are written by locked
    /// read-modify-writes and read SeqCst, so at least one of the two sees the other (and the
    /// taker pays no fence: on x86 a SeqCst load is a plain one).
    pub(crate) fn take_stuck(&self, taker: &Server) -> bool {
        if !stuck_anywhere() || !taker.accepting() {
            return false;
        }
        let empty = taker.busy() == 0;
        let room = taker
            .concurrency()
            .saturating_sub(taker.placement_load(false));
        if room == 0 {
            return false;
        }
        let mut took = false;
        for job in self.servers.stuck_for(taker, room, empty) {
            match taker.push(job, &mut None, &self.lifecycle) {
                Push::Queued => took = true,
                Push::Closed(job) | Push::Destroyed(job) => self.place_served(job, None),
            }
        }
        took
    }

    /// Jobs may be held up (see [`Scheduler::take_stuck`]): if some server holds jobs up,
    /// each server with a free slot takes some.
    fn rescue_stuck(&self) {
        if !self.servers.any_holds_up() {
            return;
        }
        for server in self.servers.with_room() {
            self.take_stuck(&server);
        }
    }

    /// Removes a running job's record: its slot and the server's load are given back.
    pub(super) fn finish_running(&self, server: &Server, token: u64) -> Option<Running> {
        let run = server.finish_running(token)?;
        self.release_slot(Kind::Served);
        Some(run)
    }

    /// The handler of job `token` finished (see `Pool::complete`). True when the serving
    /// thread should take again.
    pub(crate) fn complete(&self, server: &Server, token: u64, outcome: Outcome) -> bool {
        // `None`: unknown token, already settled by departure.
        if let Some(mut run) = self.finish_running(server, token) {
            let (queued, servers) = (self.counters.queued(), self.servers.open());
            crate::pool::origin::behind(queued, servers, server.long_calls(), || {
                run.complete(outcome, &self.counters, server.thread())
            });
        }
        // A slot is free: jobs held up elsewhere may take it too.
        server.more_to_take() | self.take_stuck(server)
    }

    /// The serving thread stops job `token` (its timeout fired): the call settles now with
    /// `reason`; the handler keeps counting as running until it completes.
    /// Returns the error of that stop, for the handler's signal (`None`: it no longer runs).
    pub(crate) fn stop(
        &self,
        server: &Server,
        token: u64,
        reason: CancelReason,
    ) -> Option<RpcError> {
        server.set_reason(token, reason);
        let error = server.stop_error(token, reason);
        self.stop_running(server, token, false);
        error
    }

    pub(crate) fn server_stats(&self) -> Vec<ServerStats> {
        self.servers.stats()
    }
}
