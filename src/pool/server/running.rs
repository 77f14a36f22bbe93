//! A served job while its handler runs (see the parent module): what settling it needs, and
//! the two ways it settles from its server's side, its handler's outcome and its server's
//! departure.

use crate::pool::job::{Control, Reply};
use crate::pool::origin::{Origin, Ran};
use crate::pool::stats::Counters;
use crate::rpc::{CancelReason, ErrorCode, Map, Outcome, RpcError, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running job's remains: what settling it needs.
pub(crate) struct Running {
    pub(super) control: Arc<Control>,
    pub(super) origin: Arc<Origin>,
    /// Taken by whoever wins RUNNING → DONE.
    pub(super) reply: Option<Reply>,
    /// When the job was submitted (an observed call is told its queue wait).
    pub(super) submitted: Instant,
    pub(super) started: Instant,
    pub(super) deadline: Option<Instant>,
    /// What a Timeout names: the method and its limit.
    pub(super) method: Arc<str>,
    pub(super) limit: Duration,
    /// It runs alone on its server ([`ServedJob::alone`]).
    pub(super) alone: bool,
}

impl Running {
    /// The error of this call stopped for `reason`: a Timeout names the method and its limit.
    pub(super) fn stop_error(&self, reason: CancelReason) -> RpcError {
        match reason {
            CancelReason::Timeout => RpcError::timed_out(&self.method, self.limit),
            other => other.error(),
        }
    }

    /// The handler finished with `outcome`: settles the call unless a stop or the server's
    /// departure got there first. A handler that returns after its deadline or after a stop
    /// was asked gets the stop as its answer, as native commands do.
    /// `thread`: the serving thread's id, for an observed call.
    pub(crate) fn complete(&mut self, outcome: Outcome, counters: &Counters, thread: u64) {
        let run = self.started.elapsed();
        counters.record_run(run);
        if !self.control.try_finish() {
            return; // a stop settled it
        }
        let outcome = match self.control.reason() {
            Some(reason) => Err(self.stop_error(reason)),
            None => match self.deadline {
                Some(d) if Instant::now() >= d => Err(self.stop_error(CancelReason::Timeout)),
                _ => outcome,
            },
        };
        counters.record(&outcome);
        if let Some(reply) = self.reply.take() {
            let ran = Ran {
                thread,
                wait: self.started.saturating_duration_since(self.submitted),
                run,
            };
            reply.finish_ran(outcome, &self.origin, ran);
        }
    }

    /// Its server (JavaScript thread `thread`) departed before the handler finished: settles
    /// the call with ServerGone, its data `{ thread }` saying which thread ran it, unless a stop
    /// got there first. True if it settled the call.
    pub(crate) fn abandon(mut self, counters: &Counters, thread: u64) -> bool {
        if self.control.try_finish() {
            if let Some(reply) = self.reply.take() {
                let e = RpcError::new(
                    ErrorCode::ServerGone,
                    "The JavaScript thread serving the call exited before it finished: retry only if \
                     the call is safe to run twice",
                )
                .with_data(Value::Object(Map::from_iter([(
                    "thread".to_owned(),
                    Value::Number(thread as f64),
                )])));
                counters.add_failed();
                reply.finish(Err(e), &self.origin);
                return true;
            }
        }
        false
    }
}
