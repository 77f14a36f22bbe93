//! `NativePool`: the JS handle on a core `Pool`, bound to one environment's `Channel`.
//!
//! Every method settles through the channel, never by throwing: argument mistakes become
//! RpcErrors delivered like any other outcome, so `exec`/`call` never throw synchronously.

use super::channel::{Channel, Inbox};
use super::convert::{self, FromJs};
use super::serve::{self, NativeServer};
use crate::commands;
use crate::pool::Origin;
use crate::pool::{OnFull, Options, Params, Pool, Stats, Strategy, MAX_NICE_INCREMENT};
use crate::rpc::{envelope, json, CancelReason, ErrorCode, JsText, RpcError, Value};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The process-wide pool behind `Pool.shared()`: every environment gets a handle to it.
static SHARED: Mutex<Option<Arc<Pool>>> = Mutex::new(None);

#[napi]
pub struct NativePool {
    pool: Arc<Pool>,
    channel: ChannelRef,
    shared: bool,
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
    Ok(Options {
        threads: o.threads.max(1) as usize,
        strategy,
        max_queue: if o.max_queue.is_finite() {
            o.max_queue.max(0.0) as usize
        } else {
            usize::MAX
        },
        on_full: if o.wait { OnFull::Wait } else { OnFull::Reject },
        timeout: (o.timeout_ms > 0.0).then(|| Duration::from_secs_f64(o.timeout_ms / 1000.0)),
        nice_increment: o.nice_increment.min(MAX_NICE_INCREMENT) as u8,
    })
}

fn spawn(options: Options) -> Result<Arc<Pool>> {
    Pool::new(options, commands::registry())
        .map(Arc::new)
        .map_err(|e| {
            Error::new(
                Status::GenericFailure,
                format!("corepool: could not start threads: {e}"),
            )
        })
}

/// `undefined` → the pool's default; 0 → no limit; otherwise milliseconds.
fn timeout(ms: Option<f64>) -> Option<Duration> {
    ms.map(|ms| {
        if ms > 0.0 {
            Duration::from_secs_f64(ms / 1000.0)
        } else {
            Duration::ZERO
        }
    })
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
        Ok(NativePool {
            pool,
            channel: channel_ref(channel),
            shared: false,
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

    /// A function `call(id, method, params, timeoutMs, flags)` bound to this pool: the
    /// hot path of `exec`/`call`, made as a plain Node-API function (no class unwrapping),
    /// which costs a fraction of a generated method. Settles call `id` through the channel.
    #[napi(catch_unwind)]
    pub fn caller(&self, env: Env) -> Result<RawValue> {
        let hot = Arc::new(Hot {
            pool: self.pool.clone(),
            origin: self.channel.origin.clone(),
            inbox: self.channel.inbox.clone(),
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
            Ok(value) => self.pool.request(&self.channel.origin, id, value, false),
            Err(why) => {
                let e = RpcError::new(ErrorCode::InvalidRequest, format!("Invalid Request: {why}"));
                self.channel
                    .origin
                    .deliver(id, Ok(envelope::error_response(Value::Null, e)));
            }
        }
    }

    /// Answers JSON-RPC text with JSON text.
    #[napi(catch_unwind)]
    pub fn handle(&self, env: Env, id: f64, text: Unknown) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        // SAFETY: a Node-API callback on this env's JS thread; `text` belongs to this env.
        match unsafe { string_arg(env.raw(), &text) } {
            Some(text) => self.pool.handle(&self.channel.origin, id, &text),
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
        timeout_ms: Option<f64>,
    ) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        match read_call(env.raw(), method, params) {
            Ok((method, params)) => self.pool.broadcast(
                &self.channel.origin,
                id,
                &method,
                params,
                timeout(timeout_ms),
            ),
            Err(e) => ch.fail(id, e),
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

    /// Stops accepting calls (a shared pool's threads are process-wide: only this handle stops).
    #[napi(catch_unwind)]
    pub fn close(&self) {
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
        if !self.shared {
            self.pool.destroy();
        }
    }
}

/// `flags` bits of the hot `call` function (index.js sets them).
const CALL_CANCELLABLE: u32 = 1;
/// `params` is the JSON text of the params array (plain data only; see index.js).
const CALL_JSON_PARAMS: u32 = 2;

/// What the hot `call` function needs, owned by the function object.
struct Hot {
    pool: Arc<Pool>,
    origin: Arc<Origin>,
    inbox: Arc<Inbox>,
}

/// A napi_value handed back to JS as is.
pub struct RawValue(pub(crate) sys::napi_value);

impl ToNapiValue for RawValue {
    unsafe fn to_napi_value(_env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        Ok(v.0)
    }
}

unsafe extern "C" fn drop_hot(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<Hot> leaked in `caller`; Node runs this finalizer once.
    drop(unsafe { Arc::from_raw(data as *const Hot) });
}

unsafe extern "C" fn hot_call(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let result = std::panic::catch_unwind(|| {
        // SAFETY: we are inside this function's Node-API callback.
        let (argv, data) = unsafe { super::callback_args::<5>(env, info) };
        // SAFETY: `data` is the Arc<Hot> owned by this function object, alive while it can be
        // called (see `caller`).
        let hot = unsafe { &*(data as *const Hot) };
        // SAFETY: JS thread of the env that owns the inbox.
        unsafe { hot.inbox.track(env) };
        let mut id = 0.0;
        let mut flags = 0u32;
        let mut timeout_ms = None;
        // SAFETY: the argv values belong to this env; out-pointers are live locals.
        unsafe {
            sys::napi_get_value_double(env, argv[0], &mut id);
            sys::napi_get_value_uint32(env, argv[4], &mut flags);
            let mut t = 0;
            sys::napi_typeof(env, argv[3], &mut t);
            if t == sys::ValueType::napi_number {
                let mut ms = 0.0;
                sys::napi_get_value_double(env, argv[3], &mut ms);
                timeout_ms = Some(ms);
            }
        }
        let id = id as u64;
        let cancellable = flags & CALL_CANCELLABLE != 0;
        let mut views = Vec::new();
        let params = if flags & CALL_JSON_PARAMS != 0 {
            // SAFETY: argv[2] belongs to this env, on its JS thread; index.js passes a string
            // with this flag.
            // Read as UTF-16: a copy here; the worker decodes it (see `rpc::text`).
            match unsafe { convert::string_utf16(env, argv[2]) } {
                Ok(units) => Params::Json(JsText::Utf16(units)),
                Err(e) => return hot.origin.deliver(id, Err(RpcError::invalid_params(e))),
            }
        } else {
            let mut from = FromJs::new(env);
            // SAFETY: argv[2] belongs to this env, on its JS thread.
            match unsafe { from.params(argv[2]) } {
                Ok(p) => {
                    views = from.views;
                    Params::Values(p)
                }
                Err(e) => return hot.origin.deliver(id, Err(e)),
            }
        };
        let timeout = timeout(timeout_ms);
        let submit = |m: &str| {
            if views.is_empty() {
                return hot.pool.call(&hot.origin, id, m, params, timeout);
            }
            // A JS-served method gets the views from this thread's JavaScript (pool::server).
            // SAFETY: on this env's JS thread; the views are values of this env.
            let mut announce = |to, token| unsafe { serve::publish(env, to, token, &views) };
            hot.pool
                .call_announced(&hot.origin, id, m, params, timeout, &mut announce)
        };
        // SAFETY: argv[1] belongs to this env, on its JS thread.
        let control = match unsafe { method_str(env, argv[1]) } {
            Ok(()) => unsafe { convert::with_str(env, argv[1], submit) }.unwrap_or(None),
            Err(e) => return hot.origin.deliver(id, Err(e)),
        };
        if let (Some(control), true) = (control, cancellable) {
            hot.inbox
                .cancellable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, control);
        }
    });
    if result.is_err() {
        // SAFETY: JS thread of a live env.
        unsafe {
            sys::napi_throw_error(
                env,
                ptr::null(),
                c"corepool: internal error in call()".as_ptr(),
            )
        };
    }
    ptr::null_mut()
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

/// The method name and params of a call, or the error that settles it.
fn read_call(
    env: sys::napi_env,
    method: Unknown,
    params: Unknown,
) -> std::result::Result<(String, Vec<Value>), RpcError> {
    // SAFETY: a Node-API callback on this env's JS thread; the values belong to this env.
    let method = match unsafe { string_arg(env, &method) } {
        Some(m) => m,
        None => {
            let kind = type_name(&method);
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                format!("method must be a string, got {kind}"),
            ));
        }
    };
    let mut from = FromJs::new(env);
    // SAFETY: as above.
    let params = unsafe { from.params(params.raw()) }?;
    Ok((method, params))
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
