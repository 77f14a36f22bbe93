//! The completion path of one JavaScript environment (the main thread or a worker_thread).
//!
//! Workers push `(call, outcome)` onto the environment's inbox; only the push that finds no
//! wake-up pending calls the threadsafe function, and the callback on the JS thread settles
//! everything queued by then (one wake per batch, not per call). Protocol for `wake_pending`:
//! a producer pushes, then `swap(true)`; if it read `false` it schedules a wake. The callback
//! `swap(false)`s *before* draining, so an item pushed after the drain began either is drained
//! now or its producer reads `false` and schedules the next wake: nothing is stranded.
//!
//! Fairness to the event loop: Node hands a threadsafe function's queued calls over up to 1,000
//! at a time in one loop turn. A caller whose continuation makes its next call, answered at
//! once, queues the next wake while the last is handled, and settlements could hold the loop
//! for seconds (no timer, no I/O). So settlements get [`TURN_BUDGET`]: the first callback
//! after the budget ran out (counted from the first drain after the last resumption, or from
//! the resumption's own drain) settles nothing, keeps `wake_pending` set (producers push
//! without waking: the drain is owed) and asks JS for a `setImmediate`, which lets the loop go
//! on (timers, I/O) and then calls [`Channel::resume`] to drain. Under load a turn thus holds
//! about one batch and its continuations; calls that come back less often than the budget
//! take the `setImmediate` path now and then, a few µs. At most one drain is owed at a time
//! (`Turn::deferred`), and nothing queued is stranded: the owed drain runs the callback's own
//! code, `wake_pending` swap first.
//!
//! Outcomes behind a backlog: a pool thread that delivers the outcome of a long call while calls
//! wait in its pool's queue (`pool::origin::behind`) may leave the JS thread asleep: the pool's
//! threads are busy whatever that thread does next, and waking it once per outcome preempts one
//! of them each time where cores are few. Such an outcome is pushed without a wake when one is already
//! scheduled or put off, or else puts one off by [`HOLD`] (`later.rs`), [`DEEP_HOLD`] behind a
//! deep backlog; the [`HOLD_AT_MOST`]th ([`DEEP_HOLD_AT_MOST`]th) outcome waiting, or one with
//! no backlog behind it (the queue has run low: the caller's next calls are needed), wakes the
//! JS thread at once. So a caller whose calls keep the pool busy hears of them in batches, each
//! outcome at most its own hold late, and nothing else changes.
//! Protocol for the put-off wake (`later::PutOff`): the producer pushes, counts what waits (the
//! queue's length), then reads `wake_pending` (true: a drain that has not yet begun takes the
//! item) and else swaps its own time in for "none put off" (one compare-exchange). It was
//! none: it hands the inbox to the wake-later thread for that time. It was a time: that
//! thread's wake is still to come (it clears the time before waking); the item goes with it if
//! that time is no later than the item may wait, or else (a wake put off behind a deeper
//! backlog, maybe of another pool) wakes the JS thread now. Either way a drain follows the
//! push, in time.
//!
//! Liveness: the threadsafe function is unref'd (weak) while nothing is in flight, so an idle
//! pool never keeps Node alive; the first call in flight refs it, the last settlement unrefs it.
//! Resend requests (a JS server asks this environment to send a call's SharedArrayBuffer views
//! again, see `pool::server`) travel the same way in a queue of their own; the callback sends
//! those views itself, from the references that keep a call's views alive (`Inbox::keep`).
//! They are rare and do not count as settlements.
//!
//! Teardown: an env cleanup hook retires the environment's `Origin` (see `pool::origin`): after
//! it returns no worker runs this environment's jobs or touches its inbox, so Node may free the
//! threadsafe function and the environment's SharedArrayBuffers.

mod later;
mod settle;

use super::tsfn::{self, Tsfn};
use crate::pool::{Control, Deliver, Origin, Ran, Requests};
use crate::rpc::{Outcome, RpcError, Value};
use crossbeam_queue::SegQueue;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use settle::{hand_to_js, Settlement};
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Most settlements handed to JS per callback; the rest follow in the next turn, so a burst
/// of 200k results never blocks the event loop in one go.
const MAX_BATCH: usize = 8192;

/// Longest an outcome behind a shallow backlog waits for its caller's thread (see the module
/// doc); [`DEEP_HOLD`] behind a deep one.
const HOLD: Duration = Duration::from_millis(1);

/// Outcomes behind a shallow backlog that may wait for the caller's thread together; the next
/// wakes it ([`DEEP_HOLD_AT_MOST`] behind a deep one).
const HOLD_AT_MOST: usize = 32;

/// Calls queued, at least this many, make a deep backlog: its outcomes wait up to [`DEEP_HOLD`],
/// [`DEEP_HOLD_AT_MOST`] together. At ~150 µs calls on 2 threads, a 1 ms hold woke the JS
/// thread every ~14 outcomes; 4 ms gathers ~50, and 50,000 such calls took ~2% less time
/// (bench/heavy-js.js part 1; no gain measured at 2 ms). A shallow backlog keeps the short hold:
/// with a few calls queued its outcomes are near their caller's next steps (a stream of calls
/// a few ms apart, bench/strategies.js, had its median latency doubled by a 4 ms hold).
const DEEP_BACKLOG: usize = 64;
const DEEP_HOLD: Duration = Duration::from_millis(4);
const DEEP_HOLD_AT_MOST: usize = 128;

/// Calls queued per thread of the pool, at least this many, make a backlog of at least ~100 ms
/// of long calls (`pool::origin::LONG_CALL` each) whatever the pool's size: its outcomes wait up
/// to [`DEEPEST_HOLD`], [`DEEPEST_HOLD_AT_MOST`] together, a small share of the wait the
/// calls behind them have anyway. 100,000 calls of ~120 µs on 2 threads (bench/heavy-js.js
/// part 1, medians of 6 alternated pairs of whole processes): 1.5% less CPU and 1.4% less
/// time than with the 4 ms hold (fewer wakes of the JS thread, each preempting a busy one).
const DEEPEST_PER_THREAD: usize = 1024;
const DEEPEST_HOLD: Duration = Duration::from_millis(16);
const DEEPEST_HOLD_AT_MOST: usize = 512;

/// How long an outcome with `queued` calls behind it, `per_thread` per thread of its pool
/// (`pool::origin::backlog`), may wait for its caller's thread, and how many outcomes may wait
/// together; `None`: wake it now.
fn hold_for((queued, per_thread): (usize, usize)) -> Option<(Duration, usize)> {
    match queued {
        0 => None,
        _ if per_thread >= DEEPEST_PER_THREAD => Some((DEEPEST_HOLD, DEEPEST_HOLD_AT_MOST)),
        q if q >= DEEP_BACKLOG => Some((DEEP_HOLD, DEEP_HOLD_AT_MOST)),
        _ => Some((HOLD, HOLD_AT_MOST)),
    }
}

/// Time settlements may hold the event loop before they let it go on (see the module doc).
const TURN_BUDGET: Duration = Duration::from_millis(2);

/// Where the event loop's turn stands for settlements (JS thread only).
#[derive(Default)]
struct Turn {
    /// When the first settlement since the last resumption was handed over.
    since: Option<Instant>,
    /// A drain is owed: JS was asked for a `setImmediate` that calls [`Channel::resume`].
    deferred: bool,
}

pub(crate) struct Inbox {
    queue: SegQueue<(u64, Settlement)>,
    /// `(call, to, token)`: send call's views to serving environment `to` for job `token`.
    resends: SegQueue<(u64, u64, u64)>,
    wake_pending: AtomicBool,
    tsfn: Tsfn,
    /// Calls submitted from this environment and not yet settled (touched on its JS thread only).
    inflight: AtomicUsize,
    /// Controls of calls that carry an AbortSignal, by call id (JS thread only).
    pub(crate) cancellable: Mutex<HashMap<u64, Arc<Control>>>,
    /// The requests of `handle` calls that may be cancelled one by one, by call id (JS
    /// thread only; see `Pool::handle_cancellable`).
    pub(crate) requests: Mutex<HashMap<u64, Requests>>,
    /// The latest progress report of each call that reported since the last callback (see
    /// `call_js` for why a report is never handed over after its call's settlement).
    progress: Mutex<HashMap<u64, Value>>,
    /// How observed calls ran (`Deliver::ran`), each pushed before its call's outcome; handed
    /// over before the settlements, as progress is (see `drain`).
    ran: SegQueue<(u64, Ran)>,
    /// References to the typed arrays over SharedArrayBuffers each call was given, by call id:
    /// they keep the memory alive until the call settles (JS thread only; see `keep`).
    kept: Mutex<HashMap<u64, KeptViews>>,
    /// How much of the loop's turn settlements have had (JS thread only; see the module doc).
    turn: Mutex<Turn>,
    /// Whether a wake is put off (the wake-later thread holds this inbox), and until when.
    put_off: later::PutOff,
    /// The environment's origin, for the wake-later thread (set once, right after it is made).
    origin: OnceLock<Weak<Origin>>,
}

/// Strong references to a call's views. `napi_ref`s are plain pointers that only their
/// environment's JS thread may use.
struct KeptViews(Vec<sys::napi_ref>);

// SAFETY: the references are created, read and deleted only on the JS thread of the
// environment that owns the inbox (`keep`, `resend_views`, `let_go`); the Mutex around them
// only makes the Inbox shareable with pool threads, which never touch this field.
unsafe impl Send for KeptViews {}

struct InboxSink(Arc<Inbox>);

impl Deliver for InboxSink {
    fn deliver(&self, call: u64, outcome: Outcome) {
        // The work of shaping the result for JavaScript is done here, on the thread that
        // produced it, so the JS thread only copies (see `Settlement`).
        self.0.queue.push((call, Settlement::of(outcome)));
        if let Some((hold, at_most)) = hold_for(crate::pool::origin::backlog()) {
            if self.0.queue.len() < at_most && self.put_off(hold) {
                return;
            }
        }
        self.wake();
    }

    fn resend(&self, call: u64, to: u64, token: u64) {
        self.0.resends.push((call, to, token));
        self.wake();
    }

    fn progress(&self, call: u64, value: Value) {
        // The latest report replaces one not yet handed over: at most one per call waits.
        let replaced = lock(&self.0.progress).insert(call, value);
        drop(replaced); // outside the lock
        self.wake();
    }

    fn ran(&self, call: u64, ran: Ran) {
        // No wake: the call's outcome is delivered right after, and wakes the JS thread.
        self.0.ran.push((call, ran));
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl InboxSink {
    /// The item just pushed will be drained without a wake now: one is scheduled, or put off
    /// until `hold` from now at the latest (see the module doc). False: wake now.
    fn put_off(&self, hold: Duration) -> bool {
        let inbox = &self.0;
        if inbox.wake_pending.load(Ordering::SeqCst) {
            return true;
        }
        let at = Instant::now() + hold;
        match inbox.put_off.join_or_take(at) {
            later::Hold::Joined => true,
            later::Hold::Now => false,
            later::Hold::Mine => {
                let handed = match inbox.origin.get() {
                    Some(origin) => later::wake_later(origin, inbox, at),
                    None => false,
                };
                if !handed {
                    inbox.put_off.clear();
                }
                handed
            }
        }
    }

    fn wake(&self) {
        // SAFETY: `deliver`/`resend` run inside an `Origin::enter` window, and the environment's
        // cleanup hook retires the origin (waiting for such windows) before Node finalizes the
        // threadsafe function, so it is live here.
        unsafe { self.0.wake() }
    }
}

impl Inbox {
    /// Schedules one run of the settle callback unless one is already pending.
    ///
    /// # Safety
    /// The threadsafe function must be live: call from inside an `Origin::enter` window or
    /// from the environment's JS thread.
    unsafe fn wake(&self) {
        if !self.wake_pending.swap(true, Ordering::AcqRel) {
            // SAFETY: live by this function's contract.
            unsafe { self.tsfn.call() };
        }
    }
}

/// One environment's completion channel. lib/calls.js creates one per environment at load time.
#[napi]
pub struct Channel {
    pub(crate) origin: Arc<Origin>,
    pub(crate) inbox: Arc<Inbox>,
    env: sys::napi_env,
}

#[napi]
impl Channel {
    /// `settle(...batch)` receives a flat batch as its arguments (a rest parameter makes the
    /// array: no element is stored through Array.prototype): for each settled call, four entries
    /// `id, code, value, data` — code 0 with the result as value, code 1 with the result's
    /// JSON text as value, code 3 (a small Buffer result) with a Buffer shared by several
    /// results as value and `start * sliceSpan + length` of its slice as data, or an error code
    /// with the message as value and the error data (or undefined).
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, settle: Unknown) -> Result<Channel> {
        let raw_env = env.raw();
        let inbox = Arc::new(Inbox {
            queue: SegQueue::new(),
            resends: SegQueue::new(),
            wake_pending: AtomicBool::new(false),
            tsfn: Tsfn::unset(),
            inflight: AtomicUsize::new(0),
            cancellable: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            ran: SegQueue::new(),
            kept: Mutex::new(HashMap::new()),
            turn: Mutex::new(Turn::default()),
            put_off: later::PutOff::new(),
            origin: OnceLock::new(),
        });
        // SAFETY: a Node-API callback on this env's JS thread; `settle` is a value of this env
        // (Node-API checks it is a function); `call_js` reads its context as an Inbox. It starts
        // unref'd: an idle pool never keeps Node alive.
        let made = unsafe {
            inbox.tsfn.create(
                raw_env,
                settle.raw(),
                c"corepool",
                inbox.clone(),
                call_js,
                false,
            )
        };
        if !made {
            return Err(Error::new(
                Status::InvalidArg,
                "corepool: Channel needs a settle function",
            ));
        }

        let origin = Arc::new(Origin::new(InboxSink(inbox.clone())));
        // Weak: the inbox must not keep its own origin alive.
        let _ = inbox.origin.set(Arc::downgrade(&origin));
        let hook_data = Arc::into_raw(origin.clone()) as *mut c_void;
        // SAFETY: registered on the JS thread of a live env; `hook_data` is a leaked
        // Arc<Origin> reclaimed exactly once by `retire_origin`. Registered after the
        // threadsafe function, so (hooks run in reverse order) it runs before Node tears the
        // threadsafe function down.
        unsafe { sys::napi_add_env_cleanup_hook(raw_env, Some(retire_origin), hook_data) };
        Ok(Channel {
            origin,
            inbox,
            env: raw_env,
        })
    }

    /// This environment's origin number (`pool::Origin::id`), which a serving thread is told
    /// (`NativeServer.postTo`) to post results for this environment's calls on its port.
    #[napi(getter)]
    pub fn origin_id(&self) -> f64 {
        self.origin.id() as f64
    }

    /// Number of calls from this environment not yet settled.
    #[napi(getter)]
    pub fn inflight(&self) -> u32 {
        self.inbox.inflight.load(Ordering::Relaxed) as u32
    }

    /// The `setImmediate` a deferred callback asked for: a new share of the loop's turn, and
    /// the drain that was owed, handed to `settle` (the function given to the constructor).
    #[napi(catch_unwind)]
    pub fn resume(&self, settle: Unknown) {
        let owed = {
            let mut turn = lock(&self.inbox.turn);
            // This drain's settlements open the new share: when their continuations run past
            // the budget, the next callback defers again, so a turn holds one heavy batch.
            turn.since = Some(Instant::now());
            std::mem::take(&mut turn.deferred)
        };
        if owed {
            // SAFETY: a Node-API call on this env's JS thread; `settle` is a value of this env.
            unsafe { drain(self.env, settle.raw(), &self.inbox) };
        }
    }
}

impl Channel {
    /// Counts a call as in flight; the first one keeps the event loop alive.
    pub(crate) fn track(&self) {
        // SAFETY: Channel methods run in Node-API callbacks on its env's JS thread.
        unsafe { self.inbox.track(self.env) };
    }

    /// Settles a call now (on the JS thread) with an error, through the normal path.
    pub(crate) fn fail(&self, call: u64, error: RpcError) {
        self.origin.deliver(call, Err(error));
    }
}

impl Inbox {
    /// Keeps `views` (the typed arrays over SharedArrayBuffers call `id` was given) alive until
    /// the call settles, whatever JavaScript does with them meanwhile: this, not any JS
    /// object, is what keeps a call's shared memory allocated while pool threads use it.
    /// `false` when a reference could not be made (the call must not be placed then).
    ///
    /// # Safety
    /// Must run on the JS thread of `env`, the environment that owns this inbox, with `views`
    /// values of `env`, before the call can settle.
    pub(crate) unsafe fn keep(
        &self,
        env: sys::napi_env,
        id: u64,
        views: &[sys::napi_value],
    ) -> bool {
        if views.is_empty() {
            return true;
        }
        let mut refs = Vec::with_capacity(views.len());
        for &v in views {
            let mut r = ptr::null_mut();
            // SAFETY: on env's JS thread with `v` of env (caller contract).
            if unsafe { sys::napi_create_reference(env, v, 1, &mut r) } != sys::Status::napi_ok {
                // SAFETY: on env's JS thread (caller contract); `refs` were made on it just now and
                // are deleted once, here, as the call is not placed.
                unsafe { delete_refs(env, refs) };
                return false;
            }
            refs.push(r);
        }
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, KeptViews(refs));
        true
    }

    /// The calls `settled` settled: their views may go.
    ///
    /// # Safety
    /// Must run on the JS thread of `env`, the environment that owns this inbox.
    unsafe fn let_go(&self, env: sys::napi_env, settled: &[u64]) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_empty() {
            return;
        }
        for call in settled {
            if let Some(views) = kept.remove(call) {
                // SAFETY: made by `keep` on this env's JS thread (caller contract).
                unsafe { delete_refs(env, views.0) };
            }
        }
    }

    /// Counts a call as in flight; the first one refs the threadsafe function, which keeps
    /// the event loop alive until the last settlement unrefs it.
    ///
    /// # Safety
    /// Must run on the JS thread of `env`, the environment that owns this inbox.
    pub(crate) unsafe fn track(&self, env: sys::napi_env) {
        if self.inflight.fetch_add(1, Ordering::Relaxed) == 0 {
            // SAFETY: JS thread of the owning env (caller contract).
            unsafe { self.tsfn.keep_alive(env, true) };
        }
    }
}

/// # Safety
/// On `env`'s JS thread, with references made in `env`.
unsafe fn delete_refs(env: sys::napi_env, refs: Vec<sys::napi_ref>) {
    for r in refs {
        // SAFETY: caller contract; each reference is deleted once (it is moved in here).
        unsafe { sys::napi_delete_reference(env, r) };
    }
}

unsafe extern "C" fn retire_origin(data: *mut c_void) {
    // SAFETY: `data` is the Arc<Origin> leaked in `Channel::new`, reclaimed only here.
    let origin = unsafe { Arc::from_raw(data as *const Origin) };
    origin.retire();
}

unsafe extern "C" fn call_js(
    env: sys::napi_env,
    settle: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || settle.is_null() {
        return; // the threadsafe function is being torn down
    }
    // SAFETY: the channel's threadsafe function was created with an Arc<Inbox>.
    let inbox: &Inbox = unsafe { tsfn::context(context) };
    {
        let mut turn = lock(&inbox.turn);
        if turn.deferred {
            return; // the owed drain takes this wake's items too
        }
        let now = Instant::now();
        match turn.since {
            None => turn.since = Some(now),
            Some(since) if now.duration_since(since) >= TURN_BUDGET => {
                turn.deferred = true;
                drop(turn);
                // SAFETY: env is live and this is its JS thread (threadsafe-function callback).
                if unsafe { ask_for_resume(env, settle) } {
                    return;
                }
                // JS could not be asked (the environment is going away): drain now instead.
                lock(&inbox.turn).deferred = false;
            }
            Some(_) => {}
        }
    }
    // SAFETY: env is live and this is its JS thread (threadsafe-function callback).
    unsafe { drain(env, settle, inbox) };
}

/// Asks JS for the `setImmediate` that resumes settling: `settle()` with no batch (a batch is
/// never empty). False when the call failed.
///
/// # Safety
/// On `env`'s JS thread, with `settle` the channel's settle function.
unsafe fn ask_for_resume(env: sys::napi_env, settle: sys::napi_value) -> bool {
    let mut undefined = ptr::null_mut();
    let mut ignored = ptr::null_mut();
    // SAFETY: live env on its JS thread (caller contract).
    unsafe {
        sys::napi_get_undefined(env, &mut undefined) == sys::Status::napi_ok
            && sys::napi_call_function(env, undefined, settle, 0, ptr::null(), &mut ignored)
                == sys::Status::napi_ok
    }
}

/// Hands `settle` everything queued by now: settlements (at most [`MAX_BATCH`]; a wake follows
/// for the rest), progress reports, and the views serving threads asked for again.
///
/// # Safety
/// On `env`'s JS thread, with `settle` the channel's settle function and `inbox` its inbox.
unsafe fn drain(env: sys::napi_env, settle: sys::napi_value, inbox: &Inbox) {
    inbox.wake_pending.swap(false, Ordering::AcqRel);
    if !inbox.resends.is_empty() {
        // SAFETY: env is live and this is its JS thread (caller contract).
        unsafe { resend_views(env, inbox) };
    }
    let mut settled = Vec::new();
    while settled.len() < MAX_BATCH {
        match inbox.queue.pop() {
            Some(item) => settled.push(item),
            None => break,
        }
    }
    if !inbox.queue.is_empty() {
        // SAFETY: we are on the env's JS thread, which owns the threadsafe function.
        unsafe { inbox.wake() };
    }
    // Progress is taken after the settlements were popped, and handed over before them: a
    // report made before its call's outcome was delivered is in the map by now (the producer
    // inserted it before pushing the outcome), so no report ever follows its settlement.
    let reports = std::mem::take(&mut *lock(&inbox.progress));
    if settled.is_empty() && reports.is_empty() {
        return;
    }
    if settled.is_empty() {
        // SAFETY: env is live and this is its JS thread (caller contract).
        unsafe { hand_to_js(env, settle, reports_first(reports, Vec::new(), settled)) };
        return;
    }
    // How observed calls ran, taken after the settlements for the same reason: an entry is
    // pushed before its call's outcome, so it is never handed over after its settlement.
    let mut ran = Vec::new();
    while let Some((call, r)) = inbox.ran.pop() {
        ran.push((call, Settlement::Ran(r)));
    }
    forget_settled(&inbox.cancellable, &settled);
    forget_settled(&inbox.requests, &settled);
    let n = settled.len();
    let calls: Vec<u64> = settled.iter().map(|(call, _)| *call).collect();
    // SAFETY: env is live and this is its JS thread (caller contract).
    unsafe { hand_to_js(env, settle, reports_first(reports, ran, settled)) };
    // SAFETY: env is live and this is its JS thread (caller contract); `calls` were just settled.
    unsafe { inbox.let_go(env, &calls) };
    if inbox.inflight.fetch_sub(n, Ordering::Relaxed) == n {
        // SAFETY: JS thread of the env that owns the function.
        unsafe { inbox.tsfn.keep_alive(env, false) };
    }
}

/// Drops what `map` keeps to cancel the calls just settled.
fn forget_settled<T>(map: &Mutex<HashMap<u64, T>>, settled: &[(u64, Settlement)]) {
    let mut map = lock(map);
    if !map.is_empty() {
        for (call, _) in settled {
            map.remove(call);
        }
    }
}

/// The progress reports, then how observed calls ran, then the settlements: one batch.
fn reports_first(
    reports: HashMap<u64, Value>,
    ran: Vec<(u64, Settlement)>,
    settled: Vec<(u64, Settlement)>,
) -> Vec<(u64, Settlement)> {
    if reports.is_empty() && ran.is_empty() {
        return settled;
    }
    let mut batch = Vec::with_capacity(reports.len() + ran.len() + settled.len());
    batch.extend(
        reports
            .into_iter()
            .map(|(call, v)| (call, Settlement::Progress(v))),
    );
    batch.extend(ran);
    batch.extend(settled);
    batch
}

/// Sends the views of each call a serving thread asked for again (`(call, to, token)`), from
/// the references that keep them alive; a call that settled meanwhile has none any more, and
/// its job is settled too (the server drops it).
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn resend_views(env: sys::napi_env, inbox: &Inbox) {
    while let Some((call, to, token)) = inbox.resends.pop() {
        let views: Vec<sys::napi_value> = {
            let kept = inbox.kept.lock().unwrap_or_else(|e| e.into_inner());
            let Some(refs) = kept.get(&call) else {
                continue;
            };
            refs.0
                .iter()
                .filter_map(|&r| {
                    let mut v = ptr::null_mut();
                    // SAFETY: references made on this env's JS thread, still alive (deleted
                    // only when the call settles, on this thread).
                    let ok = unsafe { sys::napi_get_reference_value(env, r, &mut v) };
                    (ok == sys::Status::napi_ok && !v.is_null()).then_some(v)
                })
                .collect()
        };
        // SAFETY: on env's JS thread with values of env.
        unsafe { super::publish::publish(env, to, token, &views, true) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_deepens_with_the_backlog() {
        assert_eq!(hold_for((0, 0)), None);
        // `pool::origin::behind` reports 0 below its own threshold, so any count here is one.
        assert_eq!(hold_for((4, 4)), Some((HOLD, HOLD_AT_MOST)));
        assert_eq!(hold_for((DEEP_BACKLOG - 1, 1)), Some((HOLD, HOLD_AT_MOST)));
        assert_eq!(
            hold_for((DEEP_BACKLOG, 1)),
            Some((DEEP_HOLD, DEEP_HOLD_AT_MOST))
        );
        // The deepest hold takes that many calls for each thread: 64 threads want 64 times more.
        let deepest = Some((DEEPEST_HOLD, DEEPEST_HOLD_AT_MOST));
        assert_eq!(
            hold_for((DEEPEST_PER_THREAD * 2, DEEPEST_PER_THREAD)),
            deepest
        );
        assert_eq!(
            hold_for((DEEPEST_PER_THREAD * 2, DEEPEST_PER_THREAD * 2 / 64)),
            Some((DEEP_HOLD, DEEP_HOLD_AT_MOST))
        );
        assert_eq!(hold_for((usize::MAX, usize::MAX)), deepest);
        assert!(HOLD < DEEP_HOLD && DEEP_HOLD < DEEPEST_HOLD);
        const { assert!(HOLD_AT_MOST < DEEP_HOLD_AT_MOST && DEEP_HOLD_AT_MOST < DEEPEST_HOLD_AT_MOST) };
    }
}
