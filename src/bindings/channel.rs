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

use super::contract::{
    JSON_MAX_DEPTH, JSON_MIN_VALUES, PROGRESS, RESULT_AS_JSON, RESULT_SLICE, SLAB_BYTES, SLICE_MAX,
    SLICE_SPAN,
};
use super::convert::{napi_try, text_to_js, to_js, Converted};
use super::tsfn::{self, Tsfn};
use crate::pool::{Control, Deliver, Origin, Requests};
use crate::rpc::text::too_long_for_js;
use crate::rpc::{ErrorCode, JsText, Outcome, RpcError, Value};
use crossbeam_queue::SegQueue;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most settlements handed to JS per callback; the rest follow in the next turn, so a burst
/// of 200k results never blocks the event loop in one go.
const MAX_BATCH: usize = 8192;

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
    /// References to the typed arrays over SharedArrayBuffers each call was given, by call id:
    /// they keep the memory alive until the call settles (JS thread only; see `keep`).
    kept: Mutex<HashMap<u64, KeptViews>>,
    /// How much of the loop's turn settlements have had (JS thread only; see the module doc).
    turn: Mutex<Turn>,
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
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl InboxSink {
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
            kept: Mutex::new(HashMap::new()),
            turn: Mutex::new(Turn::default()),
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
                // SAFETY: as above; these were made just now.
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
        unsafe { hand_to_js(env, settle, reports_first(reports, settled)) };
        return;
    }
    forget_settled(&inbox.cancellable, &settled);
    forget_settled(&inbox.requests, &settled);
    let n = settled.len();
    let calls: Vec<u64> = settled.iter().map(|(call, _)| *call).collect();
    // SAFETY: env is live and this is its JS thread (caller contract).
    unsafe { hand_to_js(env, settle, reports_first(reports, settled)) };
    // SAFETY: as above.
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

/// The progress reports, then the settlements: one batch.
fn reports_first(
    reports: HashMap<u64, Value>,
    settled: Vec<(u64, Settlement)>,
) -> Vec<(u64, Settlement)> {
    if reports.is_empty() {
        return settled;
    }
    let mut batch = Vec::with_capacity(reports.len() + settled.len());
    batch.extend(
        reports
            .into_iter()
            .map(|(call, v)| (call, Settlement::Progress(v))),
    );
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

/// An outcome made ready for the JS thread: big strings transcoded to the encoding the JS
/// engine stores (`JsText::for_js`), big plain data written as JSON text, and the result's
/// `Value` dropped, all on the producing thread.
enum Settlement {
    /// Settle code 0 with this value.
    Value(Value),
    /// Settle code 0 with this string.
    Text(JsText),
    /// Settle code 1 (`RESULT_AS_JSON`) with this JSON text.
    Json(JsText),
    Error(RpcError),
    /// Not a settlement: a progress report (code `PROGRESS`) of a call still running.
    Progress(Value),
}

impl Settlement {
    fn of(outcome: Outcome) -> Settlement {
        match outcome {
            Ok(Value::String(s)) => Settlement::Text(JsText::for_js(s)),
            // A view is the caller's memory, lent for the call: a result cannot hand it back.
            Ok(v) if crate::pool::has_view(&v) => Settlement::Error(RpcError::new(
                ErrorCode::InternalError,
                "the command's result holds a typed array over a SharedArrayBuffer, which a \
                 result cannot carry",
            )),
            // Big plain data: one JSON string and JSON.parse in JS beat building it value by
            // value through Node-API by an order of magnitude, unless the text is longer than
            // a JavaScript string can be (escapes make it longer than its strings).
            Ok(v) if json_size(&v, 0) >= JSON_MIN_VALUES => {
                let text = crate::rpc::json::to_string(&v);
                if too_long_for_js(&text) {
                    Settlement::Value(v)
                } else {
                    Settlement::Json(JsText::for_js(text))
                }
            }
            Ok(v) => Settlement::Value(v),
            Err(e) => Settlement::Error(e),
        }
    }
}

/// Most arguments of one `settle(...batch)` call (a batch's four entries per settlement): a
/// whole batch of [`MAX_BATCH`] would put 32k values on the stack.
const SETTLE_ARGS: usize = 4 * 1024;
const _: () = assert!(SETTLE_ARGS.is_multiple_of(4));

/// Calls `settle(...batch)` with the flat batch as its arguments, in calls of at most
/// [`SETTLE_ARGS`] (whole settlements each). Each call settles in isolation: a
/// result that cannot be made into a JavaScript value (a string longer than the engine allows)
/// settles its own call with InternalError, and the others go on as usual.
///
/// # Safety
/// Must run on `env`'s JS thread with `settle` a function of that env.
unsafe fn hand_to_js(env: sys::napi_env, settle: sys::napi_value, settled: Vec<(u64, Settlement)>) {
    let mut args = Vec::with_capacity(settled.len() * 4);
    let mut undefined = ptr::null_mut();
    // SAFETY: live env on its JS thread (caller contract) for every call below.
    unsafe {
        sys::napi_get_undefined(env, &mut undefined);
        let mut slabs = Slabs {
            current: None,
            left: settled
                .iter()
                .map(|(_, o)| sliced(o).map_or(0, <[u8]>::len))
                .sum(),
        };
        for (call, outcome) in &settled {
            let made = match sliced(outcome) {
                Some(bytes) => slabs.slice(env, bytes),
                None => entry(env, undefined, outcome),
            };
            let entry = match made {
                Ok(entry) => entry,
                // A report that cannot be made into a value is skipped: it is advisory, and the
                // call has not settled.
                Err(_) if matches!(outcome, Settlement::Progress(_)) => continue,
                Err(why) => {
                    let e = RpcError::new(
                        ErrorCode::InternalError,
                        format!("the call's result could not be handed to JavaScript: {why}"),
                    );
                    match entry(env, undefined, &Settlement::Error(e)) {
                        Ok(entry) => entry,
                        // Nothing can be made any more (the environment is going away).
                        Err(_) => continue,
                    }
                }
            };
            let mut id = ptr::null_mut();
            sys::napi_create_double(env, *call as f64, &mut id);
            let (code, value, data) = entry;
            let mut c = ptr::null_mut();
            sys::napi_create_int32(env, code, &mut c);
            args.extend([id, c, value, data]);
        }
        slabs.seal();
        for chunk in args.chunks(SETTLE_ARGS) {
            let mut result = ptr::null_mut();
            sys::napi_call_function(
                env,
                undefined,
                settle,
                chunk.len(),
                chunk.as_ptr(),
                &mut result,
            );
        }
    }
}

/// The bytes of a result handed over as a slice of a shared Buffer, if it is one.
fn sliced(outcome: &Settlement) -> Option<&[u8]> {
    match outcome {
        Settlement::Value(Value::Buffer(b)) if !b.is_empty() && b.len() < SLICE_MAX => Some(b),
        _ => None,
    }
}

/// The shared Buffers that one batch's small Buffer results are cut from.
struct Slabs {
    /// The Buffer being filled: its value, its memory, its size and the bytes used.
    current: Option<(sys::napi_value, *mut u8, usize, usize)>,
    /// Bytes of the batch's small results not placed yet (a new slab is no bigger).
    left: usize,
}

impl Slabs {
    /// The `code, value, data` of `bytes` placed in a slab, or handed over as a Buffer of its own
    /// when the slab would hold it alone.
    ///
    /// # Safety
    /// Must run on `env`'s JS thread, within one handle scope for the whole batch.
    unsafe fn slice(
        &mut self,
        env: sys::napi_env,
        bytes: &[u8],
    ) -> Converted<(i32, sys::napi_value, sys::napi_value)> {
        let fits = matches!(self.current, Some((_, _, size, used)) if size - used >= bytes.len());
        if !fits {
            self.seal();
            // SLICE_MAX <= SLAB_BYTES (contract.rs), so the bounds are in order.
            let size = self.left.clamp(bytes.len(), SLAB_BYTES);
            let mut data = ptr::null_mut();
            let mut buffer = ptr::null_mut();
            // `data` receives `size` writable bytes.
            napi_try!(
                env,
                sys::napi_create_buffer(env, size, &mut data, &mut buffer),
                "creating a Buffer"
            );
            self.current = Some((buffer, data.cast(), size, 0));
        }
        let Some((buffer, data, size, used)) = self.current.as_mut() else {
            unreachable!("a slab was made above")
        };
        // SAFETY: the slab's memory holds `size` bytes, `used + bytes.len() <= size` (checked
        // or made so above), and nothing else writes it: the Buffer is not handed to JS yet.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(*used), bytes.len()) };
        let start = *used;
        *used += bytes.len();
        self.left -= bytes.len();
        if start == 0 && *used == *size {
            // The slab holds this result alone (the batch's only small one, or its last): it
            // is handed over as the result itself, with no slice to cut and nothing shared.
            let whole = *buffer;
            self.current = None;
            let mut undefined = ptr::null_mut();
            napi_try!(
                env,
                sys::napi_get_undefined(env, &mut undefined),
                "getting undefined"
            );
            return Ok((0, whole, undefined));
        }
        let mut place = ptr::null_mut();
        let packed = start as f64 * f64::from(SLICE_SPAN) + bytes.len() as f64;
        napi_try!(
            env,
            sys::napi_create_double(env, packed, &mut place),
            "creating a number"
        );
        Ok((RESULT_SLICE, *buffer, place))
    }

    /// Zeroes the unused end of the slab being filled: `napi_create_buffer` does not clear its
    /// memory, and every slice's `.buffer` shows the whole slab.
    fn seal(&mut self) {
        if let Some((_, data, size, used)) = self.current {
            // SAFETY: the slab's memory holds `size` bytes and `used <= size`; nothing else
            // writes it (the Buffer is not handed to JS yet).
            unsafe { ptr::write_bytes(data.add(used), 0, size - used) };
        }
    }
}

/// One settlement's `code, value, data`.
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn entry(
    env: sys::napi_env,
    undefined: sys::napi_value,
    outcome: &Settlement,
) -> Converted<(i32, sys::napi_value, sys::napi_value)> {
    // SAFETY: caller contract.
    unsafe {
        Ok(match outcome {
            Settlement::Value(v) => (0, to_js(env, v)?, undefined),
            Settlement::Text(text) => (0, text_to_js(env, text)?, undefined),
            Settlement::Json(text) => (RESULT_AS_JSON, text_to_js(env, text)?, undefined),
            Settlement::Progress(v) => (PROGRESS, to_js(env, v)?, undefined),
            Settlement::Error(e) => {
                let message = to_js(env, &Value::String(e.message.clone()))?;
                let data = match &e.data {
                    Some(d) => to_js(env, d)?,
                    None => undefined,
                };
                (e.code.code(), message, data)
            }
        })
    }
}

/// Counts the values in `v` when JSON text carries it unchanged (finite numbers other than -0,
/// no views, bytes or BigInts, nesting under JSON_MAX_DEPTH levels); `0` when JSON cannot
/// carry it. JavaScript counts params by the same rule (see `contract::JSON_MIN_VALUES`).
fn json_size(v: &Value, depth: usize) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::String(_) => 1,
        Value::Number(n) => usize::from(n.is_finite() && (*n != 0.0 || n.is_sign_positive())),
        Value::Array(items) if depth < JSON_MAX_DEPTH => {
            let mut n = 1;
            for item in items {
                match json_size(item, depth + 1) {
                    0 => return 0,
                    c => n += c,
                }
            }
            n
        }
        Value::Object(map) if depth < JSON_MAX_DEPTH => {
            let mut n = 1;
            for (_, item) in map.iter() {
                match json_size(item, depth + 1) {
                    0 => return 0,
                    c => n += c,
                }
            }
            n
        }
        _ => 0,
    }
}
