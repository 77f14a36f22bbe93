//! `NativePool`: the JS handle on a core `Pool`, bound to one environment's `Channel`.
//!
//! Every method settles through the channel, never by throwing: argument mistakes become
//! RpcErrors delivered like any other outcome, so `exec`/`call` never throw synchronously.

use super::channel::{lock, Channel, Inbox};
use super::contract::{
    CALL_CANCELLABLE, CALL_FIRST_LATIN1, CALL_FUNCTIONS, CALL_PACKED, CALL_PACKED_AFTER_STRING,
    CALL_PACKED_LATIN1, CALL_PROGRESS,
};
use super::convert::{self, FromJs};
use super::publish::publish;
use super::serve::{self, NativeServer};
use super::RawValue;
use crate::commands;
use crate::pool::Origin;
use crate::pool::{
    closed_error, timeout, Caller, Control, OnFull, Options, Params, Pool, Stats, Strategy,
    MAX_NICE_INCREMENT, MAX_THREADS,
};
use crate::rpc::packed::Packed;
use crate::rpc::{envelope, json, CancelReason, ErrorCode, JsText, RpcError, Value};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The process-wide pool behind `Pool.shared()`: every environment gets a handle to it.
static SHARED: Mutex<Option<Arc<Pool>>> = Mutex::new(None);

/// Private pools that other environments may attach to (`NativePool.attach`), by id: a pool of
/// JavaScript workers started from a file is a private pool its workers serve. Weak: the pool
/// lives as long as its own handles do.
static ATTACHABLE: Mutex<Vec<(u64, std::sync::Weak<Pool>)>> = Mutex::new(Vec::new());

#[napi]
pub struct NativePool {
    pool: Arc<Pool>,
    channel: ChannelRef,
    shared: bool,
    /// This handle was closed (for a private pool, the pool too): calls made through it are
    /// answered with PoolClosed.
    closed: Arc<AtomicBool>,
}

/// The channel's shared parts (the JS object itself stays owned by index.js).
struct ChannelRef {
    origin: Arc<Origin>,
    inbox: Arc<Inbox>,
    channel: *const Channel,
}

impl ChannelRef {
    fn channel(&self) -> &Channel {
        // SAFETY: index.js keeps its environment's one Channel alive for the whole life of
        // the environment (a module-level constant), and NativePool objects live in the same
        // environment and are only used on its JS thread.
        unsafe { &*self.channel }
    }
}

/// The pool options, as index.js resolved them (`validateOptions`).
#[napi(object)]
pub struct PoolOptions {
    pub threads: u32,
    pub strategy: String,
    /// Infinity for no bound.
    pub max_queue: f64,
    /// onFull: 'wait'.
    pub wait: bool,
    pub timeout_ms: f64,
    pub nice_increment: u32,
}

fn options(o: &PoolOptions) -> Result<Options> {
    let strategy: Strategy = o
        .strategy
        .parse()
        .map_err(|e: String| Error::new(Status::InvalidArg, e))?;
    let limit = timeout::from_ms(o.timeout_ms)
        .map_err(|e| Error::new(Status::InvalidArg, format!("options.timeout {e}")))?;
    if o.threads as usize > MAX_THREADS {
        return Err(Error::new(
            Status::InvalidArg,
            format!(
                "options.threads must be at most {MAX_THREADS}, got {}",
                o.threads
            ),
        ));
    }
    if o.nice_increment > MAX_NICE_INCREMENT {
        return Err(Error::new(
            Status::InvalidArg,
            format!(
                "options.niceIncrement must be at most {MAX_NICE_INCREMENT}, got {}",
                o.nice_increment
            ),
        ));
    }
    Ok(Options {
        threads: o.threads as usize,
        strategy,
        max_queue: if o.max_queue.is_finite() {
            o.max_queue.max(0.0) as usize
        } else {
            usize::MAX
        },
        on_full: if o.wait { OnFull::Wait } else { OnFull::Reject },
        timeout: (!limit.is_zero()).then_some(limit),
        nice_increment: o.nice_increment as u8,
    })
}

/// Starts a pool. One of no native threads has no native commands either: its methods are
/// all its JavaScript servers' (a task file may export a function named `render`); it only
/// names the commands in the error of a call to one that no server takes.
fn spawn(options: Options) -> Result<Arc<Pool>> {
    let registry = if options.threads == 0 {
        commands::registry().names_only()
    } else {
        commands::registry()
    };
    Pool::new(options, registry).map(Arc::new).map_err(|e| {
        Error::new(
            Status::GenericFailure,
            format!("corepool: could not start threads: {e}"),
        )
    })
}

/// A call's `timeout` option: `undefined` → the pool's default (`None`); otherwise
/// milliseconds by [`timeout::from_ms`] (zero: no limit).
///
/// # Safety
/// On the JS thread of the env `v` belongs to.
unsafe fn call_timeout(
    env: sys::napi_env,
    v: sys::napi_value,
) -> std::result::Result<Option<Duration>, RpcError> {
    let mut t = 0;
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    let bad =
        |why: String| RpcError::new(ErrorCode::InvalidRequest, format!("options.timeout {why}"));
    match t {
        sys::ValueType::napi_undefined => Ok(None),
        sys::ValueType::napi_number => {
            let mut ms = 0.0;
            // SAFETY: as above; `v` is a number.
            unsafe { sys::napi_get_value_double(env, v, &mut ms) };
            timeout::from_ms(ms).map(Some).map_err(bad)
        }
        _ => Err(bad(format!(
            "must be a number of ms ≥ 0 (0 or Infinity: no limit), got a {}",
            // SAFETY: as above.
            type_name(&unsafe { Unknown::from_raw_unchecked(env, v) })
        ))),
    }
}

#[napi(object)]
pub struct WorkerInfo {
    pub id: u32,
    pub queued: u32,
    pub running: u32,
    pub completed: f64,
    pub busy_ms: f64,
}

/// A JavaScript thread serving methods, in `stats().servers`.
#[napi(object)]
pub struct ServerInfo {
    pub id: f64,
    /// The serving thread's `threadId` (0: the main thread).
    pub thread: f64,
    pub methods: Vec<String>,
    /// False once `close()`d: it finishes what it has but gets no new calls.
    pub open: bool,
    pub queued: u32,
    pub running: u32,
    pub completed: f64,
    pub busy_ms: f64,
}

#[napi(object)]
pub struct LatencyInfo {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[napi(object)]
pub struct StatsInfo {
    pub threads: u32,
    pub strategy: String,
    pub queued: u32,
    pub waiting: u32,
    pub running: u32,
    pub completed: f64,
    pub failed: f64,
    pub workers: Vec<WorkerInfo>,
    pub servers: Vec<ServerInfo>,
    pub run_time: LatencyInfo,
    pub wait_time: LatencyInfo,
}

#[napi(object)]
pub struct MethodInfo {
    pub name: String,
    pub params: String,
    pub summary: String,
}

impl From<Stats> for StatsInfo {
    fn from(s: Stats) -> Self {
        let lat = |p: crate::pool::Percentiles| LatencyInfo {
            p50: p.p50,
            p99: p.p99,
            max: p.max,
        };
        StatsInfo {
            threads: s.threads as u32,
            strategy: s.strategy.name().to_string(),
            queued: s.queued as u32,
            waiting: s.waiting as u32,
            running: s.running as u32,
            completed: s.completed as f64,
            failed: s.failed as f64,
            workers: s
                .workers
                .into_iter()
                .map(|w| WorkerInfo {
                    id: w.id as u32,
                    queued: w.queued as u32,
                    running: w.running as u32,
                    completed: w.completed as f64,
                    busy_ms: w.busy_ms,
                })
                .collect(),
            servers: s
                .servers
                .into_iter()
                .map(|sv| ServerInfo {
                    id: sv.id as f64,
                    thread: sv.thread as f64,
                    methods: sv.methods,
                    open: sv.open,
                    queued: sv.queued as u32,
                    running: sv.running as u32,
                    completed: sv.completed as f64,
                    busy_ms: sv.busy_ms,
                })
                .collect(),
            run_time: lat(s.run_time),
            wait_time: lat(s.wait_time),
        }
    }
}

#[napi]
impl NativePool {
    /// A private pool. Options are validated in index.js; this checks them again.
    #[napi(constructor, catch_unwind)]
    pub fn new(channel: &Channel, options: PoolOptions) -> Result<Self> {
        let pool = spawn(self::options(&options)?)?;
        let mut attachable = ATTACHABLE.lock().unwrap_or_else(|e| e.into_inner());
        attachable.retain(|(_, pool)| pool.strong_count() > 0);
        attachable.push((pool.id(), Arc::downgrade(&pool)));
        drop(attachable);
        Ok(NativePool {
            pool,
            channel: channel_ref(channel),
            shared: false,
            closed: Arc::new(AtomicBool::new(false)),
        })
    }

    /// A handle on the process-wide pool; the first call anywhere in the process creates it
    /// with its options, later calls must not ask for different ones.
    #[napi(factory, catch_unwind)]
    pub fn shared(channel: &Channel, options: PoolOptions, explicit: bool) -> Result<Self> {
        let wanted = self::options(&options)?;
        let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let pool = match &*slot {
            Some(pool) => {
                let have = pool.options();
                let same = have.threads == wanted.threads
                    && have.strategy == wanted.strategy
                    && have.max_queue == wanted.max_queue
                    && have.on_full == wanted.on_full
                    && have.timeout == wanted.timeout
                    && have.nice_increment == wanted.nice_increment;
                if explicit && !same {
                    return Err(Error::new(
                        Status::InvalidArg,
                        format!(
                            "Pool.shared() already exists with threads={}, strategy='{}': options apply only to the first call",
                            have.threads,
                            have.strategy.name()
                        ),
                    ));
                }
                pool.clone()
            }
            None => {
                let pool = spawn(wanted)?;
                *slot = Some(pool.clone());
                pool
            }
        };
        Ok(NativePool {
            pool,
            channel: channel_ref(channel),
            shared: true,
            closed: Arc::new(AtomicBool::new(false)),
        })
    }

    #[napi(getter)]
    pub fn threads(&self) -> u32 {
        self.pool.options().threads as u32
    }

    #[napi(getter)]
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The pool's id, for `attach` from another environment.
    #[napi(getter)]
    pub fn id(&self) -> f64 {
        self.pool.id() as f64
    }

    /// A handle, for this environment, on the private pool `id` made in another one (its
    /// JavaScript workers attach to serve it). Like a shared handle, closing it closes only
    /// the handle. Throws when the pool is gone.
    #[napi(factory, catch_unwind)]
    pub fn attach(channel: &Channel, id: f64) -> Result<Self> {
        let pool = ATTACHABLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(pool_id, _)| *pool_id as f64 == id)
            .and_then(|(_, pool)| pool.upgrade())
            .ok_or_else(|| {
                Error::new(
                    Status::InvalidArg,
                    format!("corepool: no pool {id} to attach to"),
                )
            })?;
        Ok(NativePool {
            pool,
            channel: channel_ref(channel),
            shared: true,
            closed: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Calls to `methods` (undefined: any method not native) wait for a server instead of
    /// failing with MethodNotFound: the pool's JavaScript workers will serve them.
    #[napi(catch_unwind)]
    pub fn expect(&self, methods: Option<Vec<String>>) {
        self.pool.expect(methods);
    }

    /// The expected servers will run `calls` calls at once (minThreads × concurrency of a pool
    /// of JavaScript workers; Infinity: no bound): `maxQueue` counts with it until they are up.
    #[napi(catch_unwind)]
    pub fn plan_served(&self, calls: f64) {
        // `as` saturates (Infinity → usize::MAX) and makes NaN 0: no plan.
        let calls = calls.max(0.0) as usize;
        self.pool.plan_served(calls);
    }

    /// Calls waiting for a server fail with InternalError `message`, and none is expected any
    /// more (the workers' task file could not be loaded).
    #[napi(catch_unwind)]
    pub fn fail_expected(&self, message: String) {
        self.pool
            .fail_expected(RpcError::new(ErrorCode::InternalError, message));
    }

    /// A function `call(id, method, params, timeoutMs, flags, tape, text)` bound to this pool
    /// (`tape` with the `packed` flag, `text` with `packedAfterString`; see `rpc::packed`): the
    /// hot path of `exec`/`call`, made as a plain Node-API function (no class unwrapping),
    /// which costs a fraction of a generated method. Settles call `id` through the channel.
    #[napi(catch_unwind)]
    pub fn caller(&self, env: Env) -> Result<RawValue> {
        let hot = Arc::new(Hot {
            pool: self.pool.clone(),
            origin: self.channel.origin.clone(),
            inbox: self.channel.inbox.clone(),
            closed: self.closed.clone(),
        });
        let data = Arc::into_raw(hot) as *mut c_void;
        let mut f = ptr::null_mut();
        // SAFETY: a Node-API callback on this env's JS thread. `data` is a leaked Arc<Hot>
        // that the finalizer added below reclaims exactly once, when the function is collected
        // (or the env torn down); until then `hot_call` may borrow it.
        unsafe {
            let status = sys::napi_create_function(
                env.raw(),
                c"call".as_ptr(),
                4,
                Some(hot_call),
                data,
                &mut f,
            );
            if status != sys::Status::napi_ok {
                drop(Arc::from_raw(data as *const Hot));
                return Err(Error::new(
                    Status::GenericFailure,
                    "corepool: could not create the call function",
                ));
            }
            sys::napi_add_finalizer(
                env.raw(),
                f,
                data,
                Some(drop_hot),
                ptr::null_mut(),
                ptr::null_mut(),
            );
        }
        Ok(RawValue(f))
    }

    /// Stops call `id` (its AbortSignal fired): a queued call settles now, a running one as
    /// soon as its command checks.
    #[napi(catch_unwind)]
    pub fn cancel(&self, id: f64) {
        let id = id as u64;
        let control = self
            .channel
            .inbox
            .cancellable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(control) = control {
            if self.pool.cancel(&control, CancelReason::Aborted) {
                self.channel
                    .channel()
                    .fail(id, CancelReason::Aborted.error());
            }
        }
    }

    /// Cancels the requests at `places` (a batch's indices; 0 for a lone request) of
    /// `handle` call `id`, made with `cancellable`; places and calls no longer in hand are
    /// passed over.
    #[napi(catch_unwind)]
    pub fn cancel_requests(&self, id: f64, places: Vec<u32>) {
        let id = id as u64;
        // Taken out while cancelling: a cancel may settle requests, and nothing of that runs
        // JavaScript, but the map is not held across the pool's locks either way.
        let Some(mut requests) = lock(&self.channel.inbox.requests).remove(&id) else {
            return;
        };
        self.pool
            .cancel_requests(&mut requests, &places, &self.channel.origin);
        lock(&self.channel.inbox.requests).insert(id, requests);
    }

    /// `cancel` for many calls at once (a `map` that stops).
    #[napi(catch_unwind)]
    pub fn cancel_many(&self, ids: Float64Array) {
        for &id in ids.iter() {
            self.cancel(id);
        }
    }

    /// Starts one call of `method` per item of `items[from..from + ids.length]`, call `ids[i]`
    /// with the one param `items[from + i]`: what `map` sends in one crossing instead of one
    /// per item. Each call settles through the channel on its own, as `exec`'s do; with
    /// `cancellable`, each can be cancelled by id.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn call_many(
        &self,
        env: Env,
        ids: Float64Array,
        method: String,
        items: Unknown,
        from: u32,
        timeout_ms: Unknown,
        cancellable: bool,
    ) {
        let raw = env.raw();
        let ch = self.channel.channel();
        let inbox = &self.channel.inbox;
        // SAFETY: a Node-API callback on this env's JS thread; the value belongs to it.
        let timeout = unsafe { call_timeout(raw, timeout_ms.raw()) };
        for (i, &id) in ids.iter().enumerate() {
            ch.track();
            let id = id as u64;
            let timeout = match &timeout {
                Ok(t) => *t,
                Err(e) => {
                    ch.fail(id, e.clone());
                    continue;
                }
            };
            if self.closed.load(Ordering::Acquire) {
                ch.fail(id, closed_error());
                continue;
            }
            let mut item = ptr::null_mut();
            // SAFETY: as above; a missing element (or a failed read) is `undefined` or an error.
            let read =
                unsafe { sys::napi_get_element(raw, items.raw(), from + i as u32, &mut item) };
            if read != sys::Status::napi_ok {
                // SAFETY: as above.
                let why = unsafe { convert::failure(raw, read, "reading an item") };
                ch.fail(id, RpcError::invalid_params(why));
                continue;
            }
            let mut from_js = FromJs::new(raw);
            // SAFETY: as above; `item` is a value of this env.
            let params = match unsafe { from_js.params_of_one(item) } {
                Ok(params) => params,
                Err(e) => {
                    ch.fail(id, e);
                    continue;
                }
            };
            // SAFETY: on this env's JS thread, before the call can settle.
            if !unsafe { inbox.keep(raw, id, &from_js.views) } {
                ch.fail(id, cannot_keep());
                continue;
            }
            let views = &from_js.views;
            // SAFETY: on this env's JS thread; the views are values of this env.
            let mut announce = |to, token| unsafe { publish(raw, to, token, views, false) };
            let caller = Caller {
                watches_progress: false,
                announce: (!views.is_empty()).then_some(&mut announce as _),
            };
            let control =
                self.pool
                    .call_as(&self.channel.origin, id, &method, params, timeout, caller);
            if let (Some(control), true) = (control, cancellable) {
                inbox
                    .cancellable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, control);
            }
        }
    }

    /// True when `method` is a native command this pool runs (a `map` of it goes in chunks).
    #[napi]
    pub fn runs_natively(&self, method: String) -> bool {
        self.pool.runs_natively(&method)
    }

    /// One call `id` that runs the native command `method` once per item of
    /// `items[from..from + count]` (see `pool::each`): a chunk of a `map`. It settles with
    /// `{ results, errors }`, or with the error of the whole chunk.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn call_chunk(
        &self,
        env: Env,
        id: f64,
        method: String,
        items: Unknown,
        from: u32,
        count: u32,
        timeout_ms: Unknown,
        cancellable: bool,
    ) {
        let raw = env.raw();
        let ch = self.channel.channel();
        let inbox = &self.channel.inbox;
        ch.track();
        let id = id as u64;
        let mut from_js = FromJs::new(raw);
        let mut convert = || -> std::result::Result<(Vec<Value>, Option<Duration>), RpcError> {
            if self.closed.load(Ordering::Acquire) {
                return Err(closed_error());
            }
            // SAFETY: a Node-API callback on this env's JS thread; the values belong to it.
            let timeout = unsafe { call_timeout(raw, timeout_ms.raw()) }?;
            let mut values = Vec::new();
            values
                .try_reserve_exact(count as usize)
                .map_err(|_| RpcError::invalid_params("no memory for the map's items"))?;
            for i in from..from.saturating_add(count) {
                let mut item = ptr::null_mut();
                // SAFETY: as above; an element past the end is `undefined`.
                let read = unsafe { sys::napi_get_element(raw, items.raw(), i, &mut item) };
                if read != sys::Status::napi_ok {
                    // SAFETY: as above.
                    let why = unsafe { convert::failure(raw, read, "reading an item") };
                    return Err(RpcError::invalid_params(why));
                }
                // One conversion for the chunk: its budget bounds what all its items hold.
                let mut path = format!("inputs[{i}]");
                // SAFETY: as above; `item` is a value of this env.
                let value = unsafe { from_js.value(item, 0, &mut path) };
                values.push(value.map_err(RpcError::invalid_params)?);
            }
            Ok((values, timeout))
        };
        let (values, timeout) = match convert() {
            Ok(converted) => converted,
            Err(e) => return ch.fail(id, e),
        };
        // SAFETY: on this env's JS thread, before the call can settle.
        if !unsafe { inbox.keep(raw, id, &from_js.views) } {
            return ch.fail(id, cannot_keep());
        }
        match self
            .pool
            .call_each(&self.channel.origin, id, &method, values, timeout)
        {
            Ok(Some(control)) if cancellable => {
                inbox
                    .cancellable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, control);
            }
            Ok(_) => {}
            Err(_) => ch.fail(
                id,
                RpcError::new(
                    ErrorCode::InternalError,
                    format!("corepool: {method:?} is not a native command of this pool"),
                ),
            ),
        }
    }

    /// Answers a JSON-RPC request object or batch with response object(s).
    #[napi(catch_unwind)]
    pub fn request(&self, env: Env, id: f64, request: Unknown) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        let mut from = FromJs::new(env.raw());
        let mut path = String::from("request");
        // SAFETY: a Node-API callback on this env's JS thread; `request` belongs to this env.
        match unsafe { from.value(request.raw(), 0, &mut path) } {
            // SAFETY: on this env's JS thread, before the call can settle.
            Ok(_) if !unsafe { self.channel.inbox.keep(env.raw(), id, &from.views) } => {
                ch.fail(id, cannot_keep())
            }
            Ok(value) => {
                let closed = self.closed.load(Ordering::Acquire);
                self.pool
                    .request(&self.channel.origin, id, value, false, closed)
            }
            Err(why) => {
                let e = RpcError::new(ErrorCode::InvalidRequest, format!("Invalid Request: {why}"));
                self.channel
                    .origin
                    .deliver(id, Ok(envelope::error_response(Value::Null, e)));
            }
        }
    }

    /// Answers JSON-RPC text with JSON text. With `cancellable`, each of its requests can be
    /// cancelled alone while the call is in flight (`cancel_requests`).
    #[napi(catch_unwind)]
    pub fn handle(&self, env: Env, id: f64, text: Unknown, cancellable: Option<bool>) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        // SAFETY: a Node-API callback on this env's JS thread; `text` belongs to this env.
        match unsafe { string_arg(env.raw(), &text) } {
            Some(text) => {
                let closed = self.closed.load(Ordering::Acquire);
                let origin = &self.channel.origin;
                if cancellable == Some(true) {
                    let requests = self.pool.handle_cancellable(origin, id, &text, closed);
                    // Inserted after the requests were submitted: on this JS thread, before
                    // the settle callback can run, which forgets it when the call settles.
                    lock(&self.channel.inbox.requests).insert(id, requests);
                } else {
                    self.pool.handle(origin, id, &text, closed)
                }
            }
            None => {
                let e = RpcError::new(
                    ErrorCode::InvalidRequest,
                    "Invalid Request: handle() takes a string of JSON",
                );
                let answer = json::to_string(&envelope::error_response(Value::Null, e));
                self.channel.origin.deliver(id, Ok(Value::String(answer)));
            }
        }
    }

    /// Runs `method(...params)` once on every worker.
    #[napi(catch_unwind)]
    pub fn broadcast(
        &self,
        env: Env,
        id: f64,
        method: Unknown,
        params: Unknown,
        timeout_ms: Unknown,
    ) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        let raw = env.raw();
        let mut from = FromJs::new(raw);
        let mut call = || -> std::result::Result<(), RpcError> {
            if self.closed.load(Ordering::Acquire) {
                return Err(closed_error());
            }
            // SAFETY: a Node-API callback on this env's JS thread; the values belong to it.
            let timeout = unsafe { call_timeout(raw, timeout_ms.raw()) }?;
            let method = read_method(raw, &method)?;
            // SAFETY: as above.
            let params = unsafe { from.params(params.raw()) }?;
            // SAFETY: on this env's JS thread, before the call can settle.
            if !unsafe { self.channel.inbox.keep(raw, id, &from.views) } {
                return Err(cannot_keep());
            }
            self.pool
                .broadcast(&self.channel.origin, id, &method, params, timeout);
            Ok(())
        };
        if let Err(e) = call() {
            ch.fail(id, e);
        }
    }

    /// Makes this environment a server of `methods`, running at most `concurrency` calls at
    /// once; `on_jobs(batch)` gets each batch (see `serve.rs`). Throws for a
    /// native command's name.
    #[napi(catch_unwind)]
    pub fn serve(
        &self,
        env: Env,
        methods: Vec<String>,
        thread: u32,
        concurrency: f64,
        on_jobs: Unknown,
    ) -> Result<NativeServer> {
        serve::start(
            env,
            self.pool.clone(),
            methods,
            thread,
            concurrency,
            on_jobs,
        )
    }

    #[napi(catch_unwind)]
    pub fn stats(&self) -> StatsInfo {
        self.pool.stats().into()
    }

    #[napi(catch_unwind)]
    pub fn methods(&self) -> Vec<MethodInfo> {
        self.pool
            .registry()
            .commands()
            .map(|c| MethodInfo {
                name: c.name().into(),
                params: c.params().into(),
                summary: c.summary().into(),
            })
            .collect()
    }

    /// Stops accepting calls through this handle (a shared pool's threads are process-wide:
    /// only this handle stops; a private pool stops).
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if !self.shared {
            self.pool.close();
        }
    }

    /// Lets the threads exit (after close() and a drain). No effect on the shared pool.
    #[napi(catch_unwind)]
    pub fn shutdown(&self) {
        if !self.shared {
            self.pool.shutdown();
        }
    }

    /// Settles queued calls with PoolClosed and stops running ones. No effect on the shared
    /// pool's threads (index.js rejects this handle's calls instead).
    #[napi(catch_unwind)]
    pub fn destroy(&self) {
        self.closed.store(true, Ordering::Release);
        if !self.shared {
            self.pool.destroy();
        }
    }
}

/// What the hot `call` function needs, owned by the function object.
struct Hot {
    pool: Arc<Pool>,
    origin: Arc<Origin>,
    inbox: Arc<Inbox>,
    closed: Arc<AtomicBool>,
}

unsafe extern "C" fn drop_hot(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<Hot> leaked in `caller`; Node runs this finalizer once.
    drop(unsafe { Arc::from_raw(data as *const Hot) });
}

unsafe extern "C" fn hot_call(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // Exactly once per call, whatever happens: once tracked, the call settles through the
    // channel (an error delivered here, or the job's outcome once the pool has it), and nothing
    // is thrown into the caller's JavaScript; `placed` says it is answered one way or the other.
    let mut tracked: Option<(&Hot, u64)> = None;
    let mut placed = false;
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: we are inside this function's Node-API callback.
        let (argv, data) = unsafe { super::callback_args::<7>(env, info) };
        // SAFETY: `data` is the Arc<Hot> owned by this function object, alive while it can be
        // called (see `caller`).
        let hot = unsafe { &*(data as *const Hot) };
        let mut id = 0.0;
        let mut flags = 0u32;
        // SAFETY: the argv values belong to this env; out-pointers are live locals.
        unsafe {
            sys::napi_get_value_double(env, argv[0], &mut id);
            sys::napi_get_value_uint32(env, argv[4], &mut flags);
        }
        let id = id as u64;
        // SAFETY: JS thread of the env that owns the inbox.
        unsafe { hot.inbox.track(env) };
        tracked = Some((hot, id));
        let mut from = FromJs::new(env);
        let control = (|| -> std::result::Result<Option<Arc<Control>>, RpcError> {
            if hot.closed.load(Ordering::Acquire) {
                return Err(closed_error());
            }
            // SAFETY: argv values belong to this env, on its JS thread.
            unsafe { method_str(env, argv[1]) }?;
            if flags & CALL_FUNCTIONS != 0 {
                // Functions only for the native render: a served method would get them as
                // nothing at all.
                // SAFETY: as above; argv[1] is a string.
                let render =
                    unsafe { convert::with_str(env, argv[1], |m| m == "render") }.unwrap_or(false);
                if render && hot.pool.runs_natively("render") {
                    from.collect_functions(0, 0);
                }
            }
            // SAFETY: as above.
            let timeout = unsafe { call_timeout(env, argv[3]) }?;
            let params = if flags & CALL_PACKED != 0 {
                // The text read as Latin-1 when lib/params.js says every unit fits a byte, else
                // as UTF-16: a copy here either way, and the tape's used part copied; the
                // worker unpacks them (see `rpc::packed`).
                let after_string = flags & CALL_PACKED_AFTER_STRING != 0;
                let text_arg = argv[if after_string { 6 } else { 2 }];
                let text = if flags & CALL_PACKED_LATIN1 != 0 {
                    // SAFETY: as above; lib/params.js passes a string with this flag.
                    unsafe { convert::string_latin1(env, text_arg) }.map(JsText::Latin1)
                } else {
                    // SAFETY: as above.
                    unsafe { convert::string_utf16(env, text_arg) }.map(JsText::Utf16)
                }
                .map_err(RpcError::invalid_params)?;
                // SAFETY: as above.
                let tape = unsafe { convert::packed_tape(env, argv[5]) }
                    .map_err(RpcError::invalid_params)?;
                let first = if after_string {
                    // lib/params.js passes the first param, a string (with CALL_FIRST_LATIN1, one
                    // whose units all fit a byte).
                    let first = if flags & CALL_FIRST_LATIN1 != 0 {
                        // SAFETY: as above.
                        unsafe { convert::string_from_latin1(env, argv[2]) }
                    } else {
                        // SAFETY: as above.
                        unsafe { convert::string(env, argv[2]) }
                    };
                    Some(first.map_err(RpcError::invalid_params)?)
                } else {
                    None
                };
                Params::Packed(Packed { first, tape, text })
            } else {
                // SAFETY: as above.
                Params::Values(unsafe { from.params(argv[2]) }?)
            };
            // SAFETY: on this env's JS thread, before the call can settle.
            if !unsafe { hot.inbox.keep(env, id, &from.views) } {
                return Err(cannot_keep());
            }
            let views = &from.views;
            let watches_progress = flags & CALL_PROGRESS != 0;
            let submit = |m: &str| {
                placed = true;
                // A JS-served method gets the views from this thread's JavaScript (pool::server).
                // SAFETY: on this env's JS thread; the views are values of this env.
                let mut announce = |to, token| unsafe { publish(env, to, token, views, false) };
                let caller = Caller {
                    watches_progress,
                    announce: (!views.is_empty()).then_some(&mut announce as _),
                };
                hot.pool
                    .call_as(&hot.origin, id, m, params, timeout, caller)
            };
            // SAFETY: argv[1] is a string of this env (checked above), on its JS thread.
            unsafe { convert::with_str(env, argv[1], submit) }.map_err(RpcError::invalid_params)
        })();
        match control {
            Ok(Some(control)) if flags & CALL_CANCELLABLE != 0 => {
                hot.inbox
                    .cancellable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, control);
            }
            Ok(_) => {}
            Err(e) if !placed => {
                placed = true; // answered: the error settles it
                hot.origin.deliver(id, Err(e));
            }
            Err(_) => {}
        }
        match from.collected {
            // SAFETY: on this env's JS thread; the collected values belong to it.
            Some(collected) if placed && !collected.functions.is_empty() => unsafe {
                handles(env, &collected.functions, &collected.objects)
            },
            _ => ptr::null_mut(),
        }
    }));
    match result {
        Ok(undefined) => undefined,
        Err(_) => {
            match (tracked, placed) {
                // Tracked but neither placed nor answered: answer it now.
                (Some((hot, id)), false) => {
                    let e = RpcError::new(
                        ErrorCode::InternalError,
                        "corepool: internal error in call()",
                    );
                    hot.origin.deliver(id, Err(e));
                }
                // Not tracked: nothing will settle it, so the JavaScript side must (it rejects
                // the call when this throws).
                (None, _) => {
                    // SAFETY: JS thread of a live env, inside this function's callback.
                    unsafe {
                        sys::napi_throw_error(
                            env,
                            ptr::null(),
                            c"corepool: internal error in call()".as_ptr(),
                        )
                    };
                }
                _ => {}
            }
            ptr::null_mut()
        }
    }
}

/// `[functions, objects]` as JavaScript arrays (null if they cannot be made: then the render
/// cannot finish, and says so).
///
/// # Safety
/// On `env`'s JS thread, with values of env.
unsafe fn handles(
    env: sys::napi_env,
    functions: &[sys::napi_value],
    objects: &[sys::napi_value],
) -> sys::napi_value {
    let mut pair = ptr::null_mut();
    // SAFETY: caller contract; out-pointers are live locals; a failed call leaves a null
    // value, which the next calls refuse.
    unsafe {
        sys::napi_create_array_with_length(env, 2, &mut pair);
        for (at, list) in [functions, objects].into_iter().enumerate() {
            let mut array = ptr::null_mut();
            sys::napi_create_array_with_length(env, list.len(), &mut array);
            for (i, &v) in list.iter().enumerate() {
                sys::napi_set_element(env, array, i as u32, v);
            }
            sys::napi_set_element(env, pair, at as u32, array);
        }
    }
    pair
}

/// A call whose views could not be kept alive is not placed (its environment is going away).
fn cannot_keep() -> RpcError {
    RpcError::new(
        ErrorCode::InternalError,
        "corepool: the call's shared memory could not be kept alive",
    )
}

/// `Ok` when `v` is a string, else the InvalidRequest error for a bad method.
///
/// # Safety
/// On the JS thread of the env `v` belongs to.
unsafe fn method_str(env: sys::napi_env, v: sys::napi_value) -> std::result::Result<(), RpcError> {
    let mut t = 0;
    // SAFETY: caller contract.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    if t == sys::ValueType::napi_string {
        return Ok(());
    }
    // SAFETY: caller contract.
    let kind = type_name(
        &unsafe { Unknown::from_napi_value(env, v) }
            .map_err(|e| RpcError::failed(e.to_string()))?,
    );
    Err(RpcError::new(
        ErrorCode::InvalidRequest,
        format!("method must be a string, got {kind}"),
    ))
}

fn channel_ref(channel: &Channel) -> ChannelRef {
    ChannelRef {
        origin: channel.origin.clone(),
        inbox: channel.inbox.clone(),
        channel: channel as *const Channel,
    }
}

/// The method name of a call, or the error that settles it.
fn read_method(env: sys::napi_env, method: &Unknown) -> std::result::Result<String, RpcError> {
    // SAFETY: a Node-API callback on this env's JS thread; the value belongs to this env.
    match unsafe { string_arg(env, method) } {
        Some(m) => Ok(m),
        None => Err(RpcError::new(
            ErrorCode::InvalidRequest,
            format!("method must be a string, got {}", type_name(method)),
        )),
    }
}

/// # Safety
/// On the JS thread of the env `v` belongs to.
unsafe fn string_arg(env: sys::napi_env, v: &Unknown) -> Option<String> {
    if v.get_type().ok()? != ValueType::String {
        return None;
    }
    // SAFETY: v is a string of this env (checked above).
    unsafe { convert::string(env, v.raw()) }.ok()
}

fn type_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "boolean",
        Ok(ValueType::Number) => "number",
        Ok(ValueType::String) => "string",
        Ok(ValueType::Symbol) => "symbol",
        Ok(ValueType::Object) => "object",
        Ok(ValueType::Function) => "function",
        Ok(ValueType::BigInt) => "bigint",
        _ => "an unknown type",
    }
}
