//! `NativePool`: the JS handle on a core `Pool`, bound to one environment's `Channel`.
//!
//! Every method settles through the channel, never by throwing: argument mistakes become
//! RpcErrors delivered like any other outcome, so `exec`/`call` never throw synchronously.

use super::channel::Channel;
use super::convert::{self, FromJs};
use crate::commands;
use crate::pool::{OnFull, Options, Pool, Stats, Strategy};
use crate::rpc::{envelope, json, CancelReason, ErrorCode, RpcError, Value};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
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
    origin: Arc<crate::pool::Origin>,
    inbox: Arc<super::channel::Inbox>,
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

fn options(
    threads: u32,
    strategy: &str,
    max_queue: f64,
    wait: bool,
    timeout_ms: f64,
) -> Result<Options> {
    let strategy: Strategy = strategy
        .parse()
        .map_err(|e: String| Error::new(Status::InvalidArg, e))?;
    Ok(Options {
        threads: threads.max(1) as usize,
        strategy,
        max_queue: if max_queue.is_finite() {
            max_queue.max(0.0) as usize
        } else {
            usize::MAX
        },
        on_full: if wait { OnFull::Wait } else { OnFull::Reject },
        timeout: (timeout_ms > 0.0).then(|| Duration::from_secs_f64(timeout_ms / 1000.0)),
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
            run_time: lat(s.run_time),
            wait_time: lat(s.wait_time),
        }
    }
}

#[napi]
impl NativePool {
    /// A private pool. Options are validated in index.js; this checks them again.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        channel: &Channel,
        threads: u32,
        strategy: String,
        max_queue: f64,
        wait: bool,
        timeout_ms: f64,
    ) -> Result<Self> {
        let pool = spawn(options(threads, &strategy, max_queue, wait, timeout_ms)?)?;
        Ok(NativePool {
            pool,
            channel: channel_ref(channel),
            shared: false,
        })
    }

    /// A handle on the process-wide pool; the first call anywhere in the process creates it
    /// with its options, later calls must not ask for different ones.
    #[napi(factory, catch_unwind)]
    pub fn shared(
        channel: &Channel,
        threads: u32,
        strategy: String,
        max_queue: f64,
        wait: bool,
        timeout_ms: f64,
        explicit: bool,
    ) -> Result<Self> {
        let wanted = options(threads, &strategy, max_queue, wait, timeout_ms)?;
        let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let pool = match &*slot {
            Some(pool) => {
                let have = pool.options();
                let same = have.threads == wanted.threads
                    && have.strategy == wanted.strategy
                    && have.max_queue == wanted.max_queue
                    && have.on_full == wanted.on_full
                    && have.timeout == wanted.timeout;
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

    /// Runs `method(...params)`; settles call `id` through the channel.
    #[napi(catch_unwind)]
    pub fn call(
        &self,
        env: Env,
        id: f64,
        method: Unknown,
        params: Unknown,
        timeout_ms: Option<f64>,
        cancellable: bool,
    ) {
        let ch = self.channel.channel();
        ch.track();
        let id = id as u64;
        let (method, params) = match read_call(env.raw(), method, params) {
            Ok(x) => x,
            Err(e) => return ch.fail(id, e),
        };
        let control = self.pool.call(
            &self.channel.origin,
            id,
            &method,
            params,
            timeout(timeout_ms),
        );
        if let (Some(control), true) = (control, cancellable) {
            self.channel
                .inbox
                .cancellable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, control);
        }
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
