//! A job: one call on its way through the pool, and what happens to its outcome.
//!
//! States of a job's [`Control`] (one private `AtomicU8`; each arrow is one named method):
//! ```text
//!   WAITING ──admit──► QUEUED ──start──► RUNNING ──finish / try_finish──► DONE
//!      │                  │
//!      └─withdraw_waiting─┴─withdraw_queued─────────────────────────────► DONE
//! ```
//! Every move out of WAITING or QUEUED is a compare-exchange, so exactly one thread (the
//! admitting thread, the worker or server, or a canceller) owns each step; the one that moves a
//! job to DONE (or to RUNNING, which later ends in DONE) is the one that settles it. That is why
//! every accepted call settles exactly once. A cancel that finds the job RUNNING only sets the
//! cancel reason; the command sees it through `Context::check` and the worker settles.
//!
//! The params live in the [`Control`], not in the queued `Job`: the thread that moves the job out
//! of WAITING or QUEUED for good (to RUNNING: it gets them; to DONE: they are dropped there and
//! then) is the only one that ever touches them. So a cancelled call lets go of its params at
//! once, although its tombstone stays in a queue until a worker or server pops it.
//!
//! A job for a JavaScript-served method (see `server/`) follows the same states; there the
//! RUNNING → DONE step is a compare-exchange too ([`Control::try_finish`]), because three
//! parties may race for it: the serving thread completing the handler, a stop (abort, timeout,
//! destroy) that settles at once, and the serving thread's departure.
//!
//! `README.md` §2 lists who makes each move and proves the exactly-once claim.

use super::origin::{Origin, Ran};
use crate::rpc::packed::Packed;
use crate::rpc::text::too_long_for_js;
use crate::rpc::{envelope, json, CancelReason, Command, ErrorCode, Outcome, RpcError, Value};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

const WAITING: u8 = 0;
const QUEUED: u8 = 1;
const RUNNING: u8 = 2;
const DONE: u8 = 3;

/// The shared, cancellable part of a job: its state word (private; every move is a named
/// method below), its cancel reason, where it is, and its params until it leaves the queues.
pub struct Control {
    state: AtomicU8,
    cancel: AtomicU8,
    /// The worker whose queue holds the job; written before the job becomes QUEUED.
    /// `usize::MAX` for a job of a JavaScript-served method (no worker counts it).
    worker: AtomicUsize,
    /// For a served job: what runs it and the job's token, written by the serving thread before
    /// the job becomes RUNNING, so a canceller that sees RUNNING finds it.
    runner: OnceLock<(Weak<dyn Runner>, u64)>,
    /// The params until the job leaves WAITING/QUEUED for good (see the module doc).
    params: UnsafeCell<Option<Params>>,
}

// SAFETY: every field but `params` is Sync. `params` is written once before the Control is
// shared, then touched only by the thread whose compare-exchange moved the job out of WAITING or
// QUEUED into RUNNING or DONE (`start`, `leave`). The state never goes back, so exactly one
// thread ever wins such a move, and its successful AcqRel compare-exchange orders its access
// after the write made at creation. `Drop` has `&mut self`. Params are Send (views into shared
// memory are Send by `SharedView`'s contract).
unsafe impl Sync for Control {}

/// What runs a served job once it is RUNNING (its server, see `server/`). A canceller that
/// finds the job RUNNING asks it to stop. A trait, so that jobs need not know the servers.
pub(crate) trait Runner: Send + Sync {
    /// Ends running job `token` now (RUNNING → DONE) if it still runs, and tells its handler to
    /// stop. `Some`: this call ended it, and the caller settles it.
    fn stop(&self, token: u64) -> Option<Stopped>;
    /// The id of the JavaScript thread it runs jobs on (`threadId`).
    fn thread(&self) -> u64;
    /// Its own id among the pool's runners.
    fn id(&self) -> u64;
}

/// What a cancel did (`Pool::cancel_call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// Taken out of the queue or the wait list unrun: the canceller settles the call.
    Withdrawn,
    /// A running served call, ended and settled now; its handler runs on JavaScript thread
    /// `thread` (its `threadId`) and is told to stop. `ended`: the canceller asked to end that
    /// thread, and its server has departed (no call of it is left to answer, none comes): the
    /// thread may be terminated without losing a call.
    Stopped { thread: u64, ended: bool },
    /// Asked to stop: a running native call (it settles through its worker), or one that had
    /// already finished or been stopped.
    Asked,
}

/// A running served job that a stop ended: what settling it takes.
pub(crate) struct Stopped {
    pub(crate) reply: Reply,
    pub(crate) origin: Arc<Origin>,
    /// The error of its stop reason (Aborted if none was recorded).
    pub(crate) error: RpcError,
}

impl Stopped {
    /// Settles the call with the error of its stop.
    pub(crate) fn settle(self) {
        self.reply.finish(Err(self.error), &self.origin);
    }
}

impl Control {
    /// A new job's control, in QUEUED (not shared yet: see [`Control::park`]).
    pub(crate) fn new(params: Params) -> Arc<Control> {
        Arc::new(Control {
            state: AtomicU8::new(QUEUED),
            cancel: AtomicU8::new(0),
            worker: AtomicUsize::new(usize::MAX),
            runner: OnceLock::new(),
            params: UnsafeCell::new(Some(params)),
        })
    }

    /// Records why the job must stop; the first reason wins.
    pub(crate) fn set_reason(&self, reason: CancelReason) {
        let _ = self
            .cancel
            .compare_exchange(0, reason as u8, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The reason recorded by [`Control::set_reason`], if any.
    pub(crate) fn reason(&self) -> Option<CancelReason> {
        CancelReason::from_u8(self.cancel.load(Ordering::Acquire))
    }

    /// The word a running command polls (`Context::check`) for the cancel reason.
    pub(crate) fn cancel_flag(&self) -> &AtomicU8 {
        &self.cancel
    }

    /// Records the worker whose queue the job goes to; before it can be seen QUEUED there.
    pub(crate) fn set_worker(&self, w: usize) {
        self.worker.store(w, Ordering::Release);
    }

    /// The worker recorded by [`Control::set_worker`]; `None` for a served job.
    pub(crate) fn worker(&self) -> Option<usize> {
        let w = self.worker.load(Ordering::Acquire);
        (w != usize::MAX).then_some(w)
    }

    /// Records what runs this served job (and its token there); before [`Control::start`].
    pub(crate) fn set_runner(&self, runner: Weak<dyn Runner>, token: u64) {
        let _ = self.runner.set((runner, token));
    }

    /// What runs this served job, if it has started and its runner still exists.
    pub(crate) fn runner(&self) -> Option<(Arc<dyn Runner>, u64)> {
        let (runner, token) = self.runner.get()?;
        Some((runner.upgrade()?, *token))
    }

    /// A job about to wait for room (`onFull: 'wait'`) that was never shared yet: QUEUED →
    /// WAITING, a plain store (the wait list publishes it under its lock).
    pub(crate) fn park(&self) {
        self.state.store(WAITING, Ordering::Release);
    }

    /// WAITING → QUEUED: the job got a `maxQueue` slot. False if a canceller withdrew it first.
    pub(crate) fn admit(&self) -> bool {
        self.state
            .compare_exchange(WAITING, QUEUED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// WAITING → DONE: the job leaves the wait list unrun (cancelled, or the pool destroyed).
    /// True if this thread made the move, and so settles it; its params are dropped now.
    pub(crate) fn withdraw_waiting(&self) -> bool {
        self.leave(WAITING)
    }

    /// QUEUED → DONE: the job leaves its queue unrun (cancelled, destroyed, no thread or server
    /// left, its caller gone). True if this thread made the move, and so settles it (or drops
    /// it, when nobody listens); its params are dropped now, its tombstone stays queued.
    pub(crate) fn withdraw_queued(&self) -> bool {
        self.leave(QUEUED)
    }

    /// Moves the job from `from` (WAITING or QUEUED) to DONE, dropping its params.
    fn leave(&self, from: u8) -> bool {
        let moved = self
            .state
            .compare_exchange(from, DONE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if moved {
            // SAFETY: this thread just moved the job out of WAITING/QUEUED for good (see the
            // `Sync` impl): nobody else touches the params now or later.
            drop(unsafe { (*self.params.get()).take() });
        }
        moved
    }

    /// True while the job is WAITING: in the wait list, not yet admitted nor withdrawn (a
    /// snapshot, as `is_queued`'s).
    pub(crate) fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// True while the job is QUEUED (a snapshot: a canceller may withdraw it at any time, so
    /// the answer only says the job was live, and a move out of QUEUED must still be won).
    pub(crate) fn is_queued(&self) -> bool {
        self.state.load(Ordering::Acquire) == QUEUED
    }

    /// QUEUED → RUNNING: `Some(params)` when this thread made the move and must run the job.
    pub(crate) fn start(&self) -> Option<Params> {
        self.state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: as in `leave`: this thread won the move out of QUEUED.
        Some(unsafe { (*self.params.get()).take() }.unwrap_or(Params::Values(Vec::new())))
    }

    /// RUNNING → DONE for a native job, by the worker that started it: nobody else moves a
    /// native job out of RUNNING, so this is a plain store.
    pub(crate) fn finish(&self) {
        self.state.store(DONE, Ordering::Release);
    }

    /// RUNNING → DONE for a served job, a compare-exchange: the handler's completion, a stop and
    /// the server's departure race for it. True if this thread won, and so settles the call.
    pub(crate) fn try_finish(&self) -> bool {
        self.state
            .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// True when the params are gone (tests).
    #[cfg(test)]
    pub(crate) fn params_dropped(&self) -> bool {
        // SAFETY: tests call this only when no thread can be moving the job any more.
        unsafe { (*self.params.get()).is_none() }
    }
}

/// A call's params: values, or plain data packed by the calling thread (lib/params.js), which
/// the worker unpacks (see `rpc::packed`).
#[derive(Clone, Debug)]
pub enum Params {
    Values(Vec<Value>),
    Packed(Packed),
    /// The whole params array as structured-clone bytes (lib/clone.js), for a method served
    /// by JavaScript: only a serving thread's JavaScript reads them.
    Cloned(crate::rpc::value::Cloned),
    /// The params are not here: they hold shared memory beside values only structured clone
    /// carries, and their caller posts them to the serving thread the job is placed on, as it
    /// posts a job's views (`bindings::contract::CALL_POSTED`). A job with such params counts
    /// as one with views; only a serving thread's JavaScript reads them.
    Posted,
}

impl Params {
    /// The positional params.
    pub fn into_values(self) -> Result<Vec<Value>, RpcError> {
        match self {
            Params::Values(v) => Ok(v),
            Params::Packed(packed) => packed.into_unpacked().map_err(RpcError::invalid_params),
            Params::Cloned(_) | Params::Posted => Err(RpcError::invalid_params(CLONED_TO_NATIVE)),
        }
    }
}

/// Why a native command refuses params that crossed as structured-clone bytes.
pub const CLONED_TO_NATIVE: &str = "the params hold values only structured clone carries (a \
     Date, Map, Set, RegExp, Error, ArrayBuffer, class instance, cycle…), which JavaScript \
     handlers take but native commands do not: pass plain data (JSON values, BigInts, \
     Uint8Arrays, typed arrays over a SharedArrayBuffer)";

/// Why a JSON-RPC answer (`request`, `handle`, a batch) cannot carry a JavaScript handler's
/// structured-clone result.
pub const CLONED_TO_JSON: &str = "the handler's result holds values only structured clone \
     carries (a Date, Map, Set, undefined, class instance, cycle…), which a JSON-RPC answer \
     cannot carry: return plain data to JSON-RPC callers";

impl From<Vec<Value>> for Params {
    fn from(v: Vec<Value>) -> Self {
        Params::Values(v)
    }
}

/// What every job has, whichever kind: its control, where its outcome goes, and its timing.
pub(crate) struct JobCore {
    pub(crate) control: Arc<Control>,
    pub(crate) origin: Arc<Origin>,
    pub(crate) reply: Reply,
    pub(crate) submitted: Instant,
    /// The limit on its running time (counted from its start), if any.
    pub(crate) timeout: Option<Duration>,
}

impl JobCore {
    /// Settles the job with `outcome` (the caller owns the job's final transition).
    pub(crate) fn settle(self, outcome: Outcome) {
        self.reply.finish(outcome, &self.origin);
    }
}

/// A job of a native command, on a worker's queue (see `worker.rs`).
pub(crate) struct NativeJob {
    pub(crate) core: JobCore,
    pub(crate) command: Arc<dyn Command>,
    /// Set for broadcast jobs: they must run on this worker.
    pub(crate) pinned: Option<usize>,
}

/// A job of a method implemented in JavaScript, on a server's queue (see `server/`).
pub(crate) struct ServedJob {
    pub(crate) core: JobCore,
    pub(crate) method: Arc<str>,
    /// A process-wide unique number naming the job to its server.
    pub(crate) token: u64,
    /// The params hold views into SharedArrayBuffers, which the serving thread needs as JS
    /// objects of its own (see `server/`).
    pub(crate) views: bool,
    /// The caller sent the views to the server the job was placed on.
    pub(crate) announced: bool,
    /// The caller's trace context, for the serving thread ([`crate::pool::Caller::trace`]).
    pub(crate) trace: Option<Arc<str>>,
    /// It runs alone on its server ([`crate::pool::Caller::alone`]).
    pub(crate) alone: bool,
}

/// A job of either kind: what the `onFull: 'wait'` list holds until the job is admitted.
pub(crate) enum Job {
    Native(NativeJob),
    Served(ServedJob),
}

impl Job {
    pub(crate) fn control(&self) -> &Control {
        match self {
            Job::Native(job) => &job.core.control,
            Job::Served(job) => &job.core.control,
        }
    }

    /// Settles the job with `outcome` (the caller owns the job's final transition).
    pub(crate) fn settle(self, outcome: Outcome) {
        match self {
            Job::Native(job) => job.core.settle(outcome),
            Job::Served(job) => job.core.settle(outcome),
        }
    }
}

/// What to do with a job's outcome.
pub enum Reply {
    /// `exec`/`call`: the outcome as is.
    Call(u64),
    /// As `Call`, for a caller that listens to the call's progress (see [`Progress`]).
    Watched(u64),
    /// As `Call` (or `Watched`), for an observed call: the thread that runs it tells the
    /// origin how it ran before the outcome ([`Reply::finish_ran`]).
    Timed { call: u64, watched: bool },
    /// One JSON-RPC request (`request`/`handle`): a response object, or nothing for a
    /// notification (`id: None`); `text` turns it into JSON text.
    Response {
        call: u64,
        id: Option<Value>,
        text: bool,
    },
    /// One part of a batch or a broadcast.
    Part(Arc<Collector>, usize),
}

impl Reply {
    /// The id of the call this reply settles.
    pub(crate) fn call(&self) -> u64 {
        match self {
            Reply::Call(call)
            | Reply::Watched(call)
            | Reply::Timed { call, .. }
            | Reply::Response { call, .. } => *call,
            Reply::Part(collector, _) => collector.call,
        }
    }

    /// The call this reply settles if it is a JavaScript caller's own call (`exec`, `call`,
    /// `run`), the only kind that takes a structured-clone result.
    pub(crate) fn own_call(&self) -> Option<u64> {
        match self {
            Reply::Call(call) | Reply::Watched(call) | Reply::Timed { call, .. } => Some(*call),
            Reply::Response { .. } | Reply::Part(..) => None,
        }
    }

    /// The call whose caller listens to its progress, if this reply settles one.
    pub(crate) fn watched(&self) -> Option<u64> {
        match self {
            Reply::Watched(call)
            | Reply::Timed {
                call,
                watched: true,
            } => Some(*call),
            _ => None,
        }
    }

    /// As [`Reply::finish`], by the thread that ran the job: an observed call's origin hears
    /// how it ran first (any other reply ignores `ran`).
    pub(crate) fn finish_ran(self, outcome: Outcome, origin: &Origin, ran: Ran) {
        if let Reply::Timed { call, .. } = self {
            origin.ran(call, ran);
        }
        self.finish(outcome, origin);
    }

    pub(crate) fn finish(self, outcome: Outcome, origin: &Origin) {
        // Only a JavaScript caller's own call reads structured-clone bytes.
        let outcome = match (&self, outcome) {
            (Reply::Response { .. } | Reply::Part(..), Ok(Value::Cloned(_))) => {
                Err(RpcError::invalid_params(CLONED_TO_JSON))
            }
            (_, outcome) => outcome,
        };
        match self {
            Reply::Call(call) | Reply::Watched(call) | Reply::Timed { call, .. } => {
                origin.deliver(call, outcome)
            }
            Reply::Response { call, id, text } => {
                let response = id.map(|id| envelope::response(id, outcome));
                origin.deliver(call, Ok(finish_text(response, text)));
            }
            Reply::Part(collector, slot) => collector.fill(slot, outcome, origin),
        }
    }
}

/// Where a running native command's progress goes: its caller's origin, as call `call`.
pub(crate) struct Progress<'a> {
    pub(crate) origin: &'a Origin,
    pub(crate) call: u64,
}

impl crate::rpc::Report for Progress<'_> {
    fn report(&self, value: Value) {
        self.origin.progress(self.call, value);
    }
}

/// A JSON-RPC answer as a value, or as text for `handle()`; "nothing" is `null` or `""`. Text
/// longer than a JavaScript string can be becomes an InternalError answer (`handle()` never
/// rejects, so it must answer with something it can hand over).
pub(crate) fn finish_text(response: Option<Value>, text: bool) -> Value {
    match (response, text) {
        (Some(v), true) => {
            let answer = json::to_string(&v);
            if !too_long_for_js(&answer) {
                return Value::String(answer);
            }
            let id = match &v {
                Value::Object(m) => m.get("id").cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            };
            let e = RpcError::new(
                ErrorCode::InternalError,
                format!(
                    "the answer ({} bytes of JSON) is too long for a JavaScript string",
                    answer.len()
                ),
            );
            Value::String(json::to_string(&envelope::error_response(id, e)))
        }
        (Some(v), false) => v,
        (None, true) => Value::String(String::new()),
        (None, false) => Value::Null,
    }
}

pub enum CollectKind {
    /// A JSON-RPC batch: `ids[i]` is entry i's request id (`None`: notification);
    /// `answers[i]` is the response already known for an invalid entry (its slot is prefilled).
    Batch {
        text: bool,
        ids: Vec<Option<Value>>,
        answers: Vec<Option<Value>>,
    },
    /// A broadcast: results in worker order, or the first error.
    Broadcast,
}

/// Gathers the outcomes of several jobs and settles one call when the last arrives.
pub struct Collector {
    call: u64,
    kind: CollectKind,
    slots: Mutex<Vec<Option<Outcome>>>,
    remaining: AtomicUsize,
}

impl Collector {
    /// `prefilled` holds outcomes known before any job runs (invalid batch entries).
    pub(crate) fn new(call: u64, kind: CollectKind, slots: Vec<Option<Outcome>>) -> Arc<Collector> {
        let remaining = slots.iter().filter(|s| s.is_none()).count();
        Arc::new(Collector {
            call,
            kind,
            slots: Mutex::new(slots),
            remaining: AtomicUsize::new(remaining),
        })
    }

    /// True when nothing remains to be run (every entry was prefilled).
    pub(crate) fn is_complete(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }

    pub(crate) fn fill(&self, slot: usize, outcome: Outcome, origin: &Origin) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots[slot] = Some(outcome);
        drop(slots);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish(origin);
        }
    }

    /// Settles the collected call; called once, by whoever filled the last slot.
    pub(crate) fn finish(&self, origin: &Origin) {
        let slots = std::mem::take(&mut *self.slots.lock().unwrap_or_else(|e| e.into_inner()));
        let outcome = match &self.kind {
            CollectKind::Batch { text, ids, answers } => {
                let responses: Vec<Value> = slots
                    .into_iter()
                    .zip(ids.iter().zip(answers))
                    .filter_map(|(outcome, (id, answer))| match (answer, id, outcome) {
                        (Some(answer), _, _) => Some(answer.clone()),
                        (None, Some(id), Some(o)) => Some(envelope::response(id.clone(), o)),
                        _ => None,
                    })
                    .collect();
                let batch = (!responses.is_empty()).then_some(Value::Array(responses));
                Ok(finish_text(batch, *text))
            }
            CollectKind::Broadcast => slots
                .into_iter()
                .map(|s| s.unwrap_or(Ok(Value::Null)))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
        };
        origin.deliver(self.call, outcome);
    }
}
