//! `NativePool`: the JS handle on a core `Pool`, bound to one environment's `Channel`.
//!
//! Every method settles through the channel, never by throwing: argument mistakes become
//! RpcErrors delivered like any other outcome, so `exec`/`call` never throw synchronously.
//!
//! - `mod.rs` (this file): the handle, its constructors and its methods.
//! - `call.rs`: the hot call behind `exec`/`call`, a plain function with named arguments.
//! - `arguments.rs`: the checks every call method makes of its timeout and method name.
//! - `options.rs`: the pool's options as they cross, checked again.
//! - `stats.rs`: `stats()` and `methods()` as plain objects.

mod arguments;
mod call;
mod options;
mod stats;

pub use arguments::timeout_problem;
pub use options::PoolOptions;
pub use stats::{LatencyInfo, MethodInfo, ServerInfo, StatsInfo, WorkerInfo};

use super::channel::{lock, Channel, Inbox};
use super::convert::{self, FromJs, List};
use super::publish::publish;
use super::serve::{self, NativeServer};
use super::RawValue;
use crate::bindings::contract::{CALL_CLONED, CALL_POSTED};
use crate::commands;
use crate::pool::{closed_error, Caller, Cancelled, Options, Origin, Params, Pool};
use crate::rpc::{envelope, json, CancelReason, ErrorCode, RpcError, Value};
use arguments::{call_timeout, cannot_keep, read_method, string_arg};
use call::Hot;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
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

/// The channel's shared parts (the JS object itself stays owned by lib/calls.js).
struct ChannelRef {
    origin: Arc<Origin>,
    inbox: Arc<Inbox>,
    channel: *const Channel,
}

impl ChannelRef {
    fn channel(&self) -> &Channel {
        // SAFETY: lib/calls.js keeps its environment's one Channel alive for the whole life of
        // the environment (a module-level constant), and NativePool objects live in the same
        // environment and are only used on its JS thread.
        unsafe { &*self.channel }
    }
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

#[napi]
impl NativePool {
    /// A private pool. Options are validated in lib/options.js; this checks them again.
    #[napi(constructor, catch_unwind)]
    pub fn new(channel: &Channel, options: PoolOptions) -> Result<Self> {
        let pool = spawn(options::options(&options)?)?;
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
        let wanted = options::options(&options)?;
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

    /// The expected servers will run `calls` calls at once (maxThreads × concurrency of a pool
    /// of JavaScript workers; Infinity: no bound): `maxQueue` counts with it until they are up.
    #[napi(catch_unwind)]
    pub fn plan_served(&self, calls: f64) {
        // `as` saturates (Infinity → usize::MAX) and makes NaN 0: no plan.
        let calls = calls.max(0.0) as usize;
        self.pool.plan_served(calls);
    }

    /// Calls waiting for a server fail with InternalError `message`, and none is expected any
    /// more (the workers' task file could not be loaded): until `expect`, calls that find no
    /// server fail with it too.
    #[napi(catch_unwind)]
    pub fn fail_expected(&self, message: String) {
        self.pool
            .fail_expected(RpcError::new(ErrorCode::InternalError, message));
    }

    /// How many running calls the exit of JavaScript thread `thread` (a worker's threadId)
    /// settled with ServerGone; 0 if none. Known once its 'exit' event is.
    #[napi(catch_unwind)]
    pub fn abandoned_by(&self, thread: f64) -> u32 {
        if !(thread >= 0.0 && thread.fract() == 0.0 && thread <= u64::MAX as f64) {
            return 0;
        }
        u32::try_from(self.pool.abandoned_by(thread as u64)).unwrap_or(u32::MAX)
    }

    /// A function `call(id, method, params, timeoutMs, flags, tape, text)` bound to this pool
    /// (`tape` with the `packed` flag, `text` with `packedAfterString`; see `rpc::packed`): the
    /// hot path of `exec`/`call`, made as a plain Node-API function (no class unwrapping),
    /// which costs a fraction of a generated method. Settles call `id` through the channel.
    #[napi(catch_unwind)]
    pub fn caller(&self, env: Env) -> Result<RawValue> {
        let hot = Hot {
            pool: self.pool.clone(),
            origin: self.channel.origin.clone(),
            inbox: self.channel.inbox.clone(),
            closed: self.closed.clone(),
        };
        call::bind(env, hot)
    }

    /// Stops call `id` (its AbortSignal fired): a queued call settles now, a running one as
    /// soon as its command checks, or now if a JavaScript thread runs it. `end_thread`: that
    /// thread's server departs too if it has no other call to answer, and the thread's id (its
    /// `threadId`) is returned, for the caller to terminate it (corepool/piscina ends the
    /// worker of an aborted task, as Piscina does); otherwise undefined.
    #[napi(catch_unwind)]
    pub fn cancel(&self, id: f64, end_thread: Option<bool>) -> Option<f64> {
        let id = id as u64;
        let control = self
            .channel
            .inbox
            .cancellable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)?;
        match self
            .pool
            .cancel_call(&control, CancelReason::Aborted, end_thread == Some(true))
        {
            Cancelled::Withdrawn => {
                self.channel
                    .channel()
                    .fail(id, CancelReason::Aborted.error());
                None
            }
            Cancelled::Stopped {
                thread,
                ended: true,
            } => Some(thread as f64),
            Cancelled::Stopped { .. } | Cancelled::Asked => None,
        }
    }

    /// Cancels call `id` (made `cancellable`) only if it has not started: true when it was
    /// withdrawn (it settles with Aborted); a running call goes on and stays cancellable.
    #[napi(catch_unwind)]
    pub fn withdraw(&self, id: f64) -> bool {
        let id = id as u64;
        let cancellable = || {
            self.channel
                .inbox
                .cancellable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        // Not held across the pool's locks (as in `cancel`).
        let Some(control) = cancellable().get(&id).cloned() else {
            return false;
        };
        if !self.pool.withdraw(&control, CancelReason::Aborted) {
            return false;
        }
        cancellable().remove(&id);
        self.channel
            .channel()
            .fail(id, CancelReason::Aborted.error());
        true
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
            self.cancel(id, None);
        }
    }

    /// Starts one call of `method` per item of `items[from..from + ids.length]`, call `ids[i]`
    /// with the one param `items[from + i]`: what `map` sends in one crossing instead of one
    /// per item. Each call settles through the channel on its own, as `exec`'s do; with
    /// `cancellable`, each can be cancelled by id. `continuing`: the calls continue a map
    /// accepted before `close()`, which still takes them (see `pool::Caller`). `trace`: the
    /// caller's trace context, which every call carries (`pool::Caller::trace`). `kinds`, when
    /// given, says how `items[k]` crosses, as the hot call's flags do: `contract::CALL_CLONED`,
    /// the parts of a structured-clone message of its params array (lib/clone.js);
    /// `contract::CALL_POSTED`, its params array posted to the serving thread; anything else,
    /// the one param itself, converted here.
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
        continuing: bool,
        trace: Option<String>,
        kinds: Option<Uint32Array>,
    ) {
        let trace: Option<Arc<str>> = trace.map(Arc::from);
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
            if self.closed.load(Ordering::Acquire) && !continuing {
                ch.fail(id, closed_error());
                continue;
            }
            let mut item = ptr::null_mut();
            // SAFETY: a Node-API callback on this env's JS thread; `items` belongs to it. A missing
            // element (or a failed read) is `undefined` or an error.
            let read =
                unsafe { sys::napi_get_element(raw, items.raw(), from + i as u32, &mut item) };
            if read != sys::Status::napi_ok {
                // SAFETY: a Node-API callback on this env's JS thread.
                let why = unsafe { convert::failure(raw, read, "reading an item") };
                ch.fail(id, RpcError::invalid_params(why));
                continue;
            }
            let mut from_js = FromJs::new(raw);
            let kind = kinds
                .as_ref()
                .and_then(|k| k.get((from as usize).checked_add(i)?).copied());
            let params = match kind {
                Some(CALL_CLONED) => {
                    // SAFETY: a Node-API callback on this env's JS thread; `item` is a value of
                    // this env.
                    unsafe { convert::cloned::frame_from_js(raw, item, "the cloned params") }
                        .map(Params::Cloned)
                        .map_err(RpcError::invalid_params)
                }
                Some(CALL_POSTED) => {
                    // Kept and published as the call's one view, as the hot call does.
                    from_js.views.push(item);
                    Ok(Params::Posted)
                }
                // SAFETY: a Node-API callback on this env's JS thread; `item` is a value of this
                // env.
                _ => unsafe { from_js.params_of_one(item) }.map(Params::Values),
            };
            let params = match params {
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
                continuing,
                trace: trace.clone(),
                timed: false,
                alone: false,
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
    /// `{ results, errors }`, or with the error of the whole chunk. `continuing` as in
    /// `call_many`.
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
        continuing: bool,
    ) {
        let raw = env.raw();
        let ch = self.channel.channel();
        let inbox = &self.channel.inbox;
        ch.track();
        let id = id as u64;
        let mut from_js = FromJs::new(raw);
        let mut convert = || -> std::result::Result<(Vec<Value>, Option<Duration>), RpcError> {
            if self.closed.load(Ordering::Acquire) && !continuing {
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
                // SAFETY: a Node-API callback on this env's JS thread; `items` belongs to it. An
                // element past the end is `undefined`.
                let read = unsafe { sys::napi_get_element(raw, items.raw(), i, &mut item) };
                if read != sys::Status::napi_ok {
                    // SAFETY: a Node-API callback on this env's JS thread.
                    let why = unsafe { convert::failure(raw, read, "reading an item") };
                    return Err(RpcError::invalid_params(why));
                }
                // One conversion for the chunk: its budget bounds what all its items hold.
                let mut path = format!("inputs[{i}]");
                // SAFETY: a Node-API callback on this env's JS thread; `item` is a value of this
                // env.
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
        match self.pool.call_each(
            &self.channel.origin,
            id,
            &method,
            values,
            timeout,
            continuing,
        ) {
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

    /// Answers a JSON-RPC request object or batch with response object(s); each request carries
    /// `trace`, the caller's trace context, to a JavaScript server (`Caller::trace`).
    #[napi(catch_unwind)]
    pub fn request(&self, env: Env, id: f64, request: Unknown, trace: Option<String>) {
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
                let trace = trace.map(Arc::from);
                self.pool
                    .request(&self.channel.origin, id, value, false, closed, trace)
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
    /// cancelled alone while the call is in flight (`cancel_requests`). Each carries `trace`,
    /// the caller's trace context, to a JavaScript server (`Caller::trace`).
    #[napi(catch_unwind)]
    pub fn handle(
        &self,
        env: Env,
        id: f64,
        text: Unknown,
        cancellable: Option<bool>,
        trace: Option<String>,
    ) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        // SAFETY: a Node-API callback on this env's JS thread; `text` belongs to this env.
        match unsafe { string_arg(env.raw(), &text) } {
            Some(text) => {
                let closed = self.closed.load(Ordering::Acquire);
                let origin = &self.channel.origin;
                let trace = trace.map(Arc::from);
                if cancellable == Some(true) {
                    let requests = self
                        .pool
                        .handle_cancellable(origin, id, &text, closed, trace);
                    // Inserted after the requests were submitted: on this JS thread, before
                    // the settle callback can run, which forgets it when the call settles.
                    lock(&self.channel.inbox.requests).insert(id, requests);
                } else {
                    self.pool.handle(origin, id, &text, closed, trace)
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
            // SAFETY: a Node-API callback on this env's JS thread; `params` belongs to it.
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
    pub fn methods(&self) -> List<MethodInfo> {
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
    /// pool's threads (lib/pool.js closes this handle instead).
    #[napi(catch_unwind)]
    pub fn destroy(&self) {
        self.closed.store(true, Ordering::Release);
        if !self.shared {
            self.pool.destroy();
        }
    }
}

fn channel_ref(channel: &Channel) -> ChannelRef {
    ChannelRef {
        origin: channel.origin.clone(),
        inbox: channel.inbox.clone(),
        channel: channel as *const Channel,
    }
}
