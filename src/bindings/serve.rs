//! `NativeServer`: the Node-API side of a JavaScript thread serving methods (see
//! `pool::server` for the scheduling, its invariants and departure).
//!
//! Wake-up: each server has one threadsafe function; the core calls it (through [`Wake`]) only
//! when a push finds the serving thread neither woken already nor in a drain cycle, and its
//! callback drains everything queued by then and hands it to JavaScript in one call. The
//! JavaScript side ends every drain cycle with `rest()` (see `Pool::rest`), which on a
//! worker_thread first polls briefly for the next call; the main thread never polls, its event
//! loop has other work.
//!
//! Teardown: an env cleanup hook, registered after the threadsafe function (hooks run in reverse
//! order, so it runs first), calls `Pool::depart`; after that the core never wakes this server
//! again, so Node may finalize the threadsafe function.
//!
//! SharedArrayBuffer views: the serving thread needs its own JS objects over the caller's
//! memory. The caller's JavaScript sends the typed arrays themselves (`postMessage` on a
//! process-wide BroadcastChannel shares the memory, it does not copy it) to the serving
//! environment, addressed by its thread id: just before the push when the caller's thread
//! places the job (`publish.rs`, called from the core's announce hook), or on the server's
//! request otherwise (`resend`). Jobs with views reach JavaScript without params; the serving
//! thread calls `params(token, views)` once it holds the views, and each `Value::View` is
//! replaced by the received typed array over the same memory (matched by address, length and
//! type). The native side never dereferences those views.

use super::contract::JSON_MIN_VALUES;
use super::convert::{self, from_js::MAX_VALUES, Converted, FromJs, List};
use super::tsfn::{self, Tsfn};
use super::RawValue;
use crate::pool::{Params, Pool, Server, Wake};
use crate::rpc::text::too_long_for_js;
use crate::rpc::{CancelReason, ErrorCode, JsText, Map, RpcError, Value};
use crate::shm::SharedView;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

mod hot;

/// A server's threadsafe function, as the core's [`Wake`].
struct Waker(Arc<Tsfn>);

impl Wake for Waker {
    fn wake(&self) {
        // SAFETY: the core calls `wake` only before `Pool::depart` returns (see
        // `pool::server`), and `depart` runs in the env cleanup hook, before Node finalizes the
        // threadsafe function; it is created before the server is registered.
        unsafe { self.0.call() };
    }
}

/// What a job with views waits for on its serving thread (see [`NativeServer::params`]).
enum Waiting {
    /// The views: its params, whose views the serving thread's own replace.
    Views(Vec<Value>),
    /// Its params themselves, which its caller posts whole (`Params::Posted`).
    Posted,
}

/// What the threadsafe function's callback and the cleanup hook need.
struct ServerCtx {
    pool: Arc<Pool>,
    server: Arc<Server>,
    /// Params of jobs with views, kept until the serving thread has the views.
    waiting: Mutex<HashMap<u64, Waiting>>,
    /// The origin ([`crate::pool::Origin::id`]) whose own calls this thread may answer by
    /// that environment's message port (`NativeServer::post_to`); 0: none.
    posts_to: AtomicU64,
}

type Slot = OnceLock<Arc<ServerCtx>>;

#[napi]
pub struct NativeServer {
    ctx: Arc<ServerCtx>,
    tsfn: Arc<Tsfn>,
}

/// Starts serving `methods` in this environment; `on_jobs(batch)` receives each batch (see
/// [`batch_to_js`]). `Err` (a TypeError in JS) when a name is a native command.
pub(crate) fn start(
    env: Env,
    pool: Arc<Pool>,
    methods: Vec<String>,
    thread: u32,
    concurrency: f64,
    on_jobs: Unknown,
) -> Result<NativeServer> {
    let raw_env = env.raw();
    let slot: Arc<Slot> = Arc::new(OnceLock::new());
    let tsfn = Arc::new(Tsfn::unset());
    // SAFETY: a Node-API callback on this env's JS thread; `on_jobs` is a value of this env
    // (Node-API checks it is a function); `call_js` reads its context as a Slot. Serving keeps
    // the thread alive by default, like a listening socket.
    let made = unsafe {
        tsfn.create(
            raw_env,
            on_jobs.raw(),
            c"corepool-serve",
            slot.clone(),
            call_js,
            true,
        )
    };
    if !made {
        return Err(Error::new(
            Status::InvalidArg,
            "corepool: serve needs a jobs callback",
        ));
    }
    let waker = Waker(tsfn.clone());
    let concurrency = if concurrency.is_finite() {
        concurrency.max(1.0) as usize
    } else {
        usize::MAX
    };
    let tag = u64::from(thread);
    let server = match pool.serve(methods, tag, tag, concurrency, waker) {
        Ok(server) => server,
        Err(e) => {
            // SAFETY: the core refused the server, so nothing will call the function.
            unsafe { tsfn.release() };
            let why = match e {
                crate::pool::ServeError::Native(name) => format!(
                    "corepool: {name:?} is a native command; a method is served natively or by \
                     JavaScript, not both"
                ),
                crate::pool::ServeError::Empty => {
                    "corepool: serve() needs at least one method".to_string()
                }
            };
            return Err(Error::new(Status::InvalidArg, why));
        }
    };
    let ctx = Arc::new(ServerCtx {
        pool,
        server,
        waiting: Mutex::new(HashMap::new()),
        posts_to: AtomicU64::new(0),
    });
    // The callback runs on this thread after we return, so the slot is filled by then.
    let _ = slot.set(ctx.clone());
    let hook_data = Arc::into_raw(ctx.clone()) as *mut c_void;
    // SAFETY: registered on the JS thread of a live env; `hook_data` is a leaked Arc<ServerCtx>
    // reclaimed exactly once by `depart_hook`. Registered after the threadsafe function, so it
    // runs before Node tears that down.
    unsafe { sys::napi_add_env_cleanup_hook(raw_env, Some(depart_hook), hook_data) };
    Ok(NativeServer { ctx, tsfn })
}

unsafe extern "C" fn depart_hook(data: *mut c_void) {
    // SAFETY: `data` is the Arc<ServerCtx> leaked in `start`, reclaimed only here.
    let ctx = unsafe { Arc::from_raw(data as *const ServerCtx) };
    ctx.pool.depart(&ctx.server);
}

unsafe extern "C" fn call_js(
    env: sys::napi_env,
    on_jobs: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || on_jobs.is_null() {
        return; // being torn down
    }
    // SAFETY: a server's threadsafe function is created with an Arc<Slot>.
    let slot: &Slot = unsafe { tsfn::context(context) };
    let Some(ctx) = slot.get() else { return };
    // Handed over even when empty (all tombstones): a closing server checks whether it is idle.
    // SAFETY: env is live and this is its JS thread (threadsafe-function callback); `on_jobs`
    // is the threadsafe function's JS function.
    unsafe {
        let batch = take_to_js(env, ctx);
        let mut undefined = ptr::null_mut();
        let mut out = ptr::null_mut();
        sys::napi_get_undefined(env, &mut undefined);
        sys::napi_call_function(env, undefined, on_jobs, 1, &batch, &mut out);
    }
}

/// The next batch (see [`batch_to_js`]), as far as the server's concurrency allows.
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn take_to_js(env: sys::napi_env, ctx: &ServerCtx) -> sys::napi_value {
    // SAFETY: caller contract.
    unsafe { batch_to_js(env, ctx, ctx.pool.take(&ctx.server)) }
}

/// A batch as one flat array: `nStops, nForgotten`, then the stop tokens, the forgotten tokens,
/// and six entries per job — `token, method, params, timeoutMs (0: none; what is left of the
/// call's limit otherwise, however small), listens, trace (the caller's trace context, a
/// string, or undefined)`; `listens` is a number: odd when the caller listens to progress, and
/// its half (rounded down) the call's id when the result may go by the caller's message port
/// (the call is its own, from the origin of [`NativeServer::post_to`]), else 0; params
/// are an array, the JSON text of one, a Buffer of structured-clone bytes
/// (`Params::Cloned`), or undefined while views are needed. (One array, not
/// three: a Node-API call costs about as much as handling the usual one-job batch in JavaScript.)
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn batch_to_js(
    env: sys::napi_env,
    ctx: &ServerCtx,
    batch: crate::pool::Batch,
) -> sys::napi_value {
    // SAFETY: live env on its JS thread (caller contract) for every call below.
    unsafe {
        let mut undefined = ptr::null_mut();
        sys::napi_get_undefined(env, &mut undefined);
        // A job whose params cannot be made is settled and left out.
        let mut entries = Vec::with_capacity(
            2 + batch.stops.len() + batch.forgotten.len() + 6 * batch.jobs.len(),
        );
        let mut push = |v: sys::napi_value| entries.push(v);
        let number = |x: f64| {
            let mut v = ptr::null_mut();
            sys::napi_create_double(env, x, &mut v);
            v
        };
        push(number(batch.stops.len() as f64));
        push(number(batch.forgotten.len() as f64));
        for &t in batch.stops.iter().chain(&batch.forgotten) {
            push(number(t as f64));
        }
        if !batch.forgotten.is_empty() {
            let mut waiting = ctx.waiting.lock().unwrap_or_else(|e| e.into_inner());
            for t in &batch.forgotten {
                waiting.remove(t);
            }
        }
        let mut last_method: Option<(Arc<str>, sys::napi_value)> = None;
        let posts_to = match ctx.posts_to.load(Ordering::Relaxed) {
            0 => u64::MAX, // no origin has this id
            id => id,
        };
        for job in batch.jobs {
            let token = job.token;
            let entry = (|| -> Converted<[sys::napi_value; 6]> {
                let method = match &last_method {
                    Some((m, v)) if Arc::ptr_eq(m, &job.method) || **m == *job.method => *v,
                    _ => {
                        let v = convert::to_js(env, &Value::String(job.method.to_string()))?;
                        last_method = Some((job.method.clone(), v));
                        v
                    }
                };
                let params = match job.params {
                    Params::Values(values) if job.views => {
                        ctx.waiting
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(job.token, Waiting::Views(values));
                        undefined
                    }
                    Params::Posted => {
                        ctx.waiting
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(job.token, Waiting::Posted);
                        undefined
                    }
                    Params::Values(values) => convert::to_js(env, &Value::Array(values))?,
                    // The parts lib/serve.js reads with lib/clone.js (moved buffers uncopied).
                    Params::Cloned(frame) => convert::cloned::frame_to_js(env, frame)?,
                    // Few values are built here. Many go on as JSON text, which JSON.parse in
                    // the serving thread turns into values far faster than Node-API builds
                    // them, and which keeps a lone surrogate as sent (results follow the same
                    // rule, `channel::json_size`).
                    Params::Packed(packed) if packed.values() < JSON_MIN_VALUES => {
                        convert::to_js(env, &Value::Array(packed.into_unpacked()?))?
                    }
                    Params::Packed(packed) => {
                        let text = packed.to_json()?;
                        if too_long_for_js(&text) {
                            return Err("the params are longer as JSON text than a JavaScript \
                                        string can be"
                                .into());
                        }
                        convert::text_to_js(env, &JsText::for_js(text))?
                    }
                };
                // What is left of the limit (it counts from `take`), never 0, which says none.
                let timeout = job.deadline.map_or(0.0, |d| {
                    let left = d.saturating_duration_since(Instant::now()).as_secs_f64() * 1000.0;
                    left.max(f64::MIN_POSITIVE)
                });
                let post = match job.own_call {
                    Some((origin, call)) if origin == posts_to && call < 1 << 52 => call,
                    _ => 0,
                };
                let listens = number((post * 2 + u64::from(job.watched)) as f64);
                let trace = match &job.trace {
                    Some(t) => convert::to_js(env, &Value::String(t.to_string()))?,
                    None => undefined,
                };
                Ok([
                    number(job.token as f64),
                    method,
                    params,
                    number(timeout),
                    listens,
                    trace,
                ])
            })();
            match entry {
                Ok(values) => values.into_iter().for_each(&mut push),
                // Its thread is being terminated: the job stays running, and the server's
                // departure settles it with ServerGone, as the other calls it was running.
                Err(_) if !convert::can_run_js(env) => {}
                // The job is running: settle it here, the handler will never see it.
                Err(e) => {
                    ctx.pool.complete(
                        &ctx.server,
                        token,
                        Err(RpcError::invalid_params(format!(
                            "the params cannot be made into JavaScript values on the serving \
                             thread: {e}"
                        ))),
                    );
                }
            }
        }
        // Made in one call (`convert::arrays`); if even that fails, the thread is going away and
        // its departure settles the jobs (ServerGone).
        convert::array_of(env, &entries).unwrap_or_else(|_| {
            let mut empty = ptr::null_mut();
            sys::napi_create_array(env, &mut empty);
            empty
        })
    }
}

/// True when every view inside `v` has a match among `views`.
fn resolved(v: &Value, views: &[(SharedView, sys::napi_value)]) -> bool {
    match v {
        Value::View(view) => views.iter().any(|(w, _)| w.same_memory(view)),
        Value::Array(items) => items.iter().all(|i| resolved(i, views)),
        Value::Object(m) => m.iter().all(|(_, i)| resolved(i, views)),
        _ => true,
    }
}

fn token(t: f64) -> u64 {
    t as u64
}

/// Why a handler's result holding a view over shared memory is refused.
const SHARED_IN_RESULT: &str =
    "the handler's result holds a typed array over a SharedArrayBuffer: results are \
                                copied, so write into a view the caller passed instead";

/// The handler of job `token` returned `value`: Ok(true) when jobs wait and a handler slot is
/// free (call `take()`). With `cloneable` (lib/serve.js), a value the conversion refuses (a
/// Date, a Map, a cycle, a function…) settles nothing and is `Err(why)`: the caller is
/// JavaScript, so lib/serve.js sends it as structured-clone bytes (`completeCloned`), or refuses
/// it (`refuse`) with the place of what structured clone cannot carry either, or with this
/// answer when reading it threw. With `shares` too (corepool/piscina's workers, whose results
/// share shared memory as Piscina's `postMessage` does), a value holding a view over shared
/// memory is such a value.
///
/// # Safety
/// On `env`'s JS thread, inside a Node-API callback, `value` a value of that env.
unsafe fn complete_with(
    ctx: &ServerCtx,
    env: sys::napi_env,
    token: f64,
    value: sys::napi_value,
    cloneable: bool,
    shares: bool,
) -> std::result::Result<bool, String> {
    let mut from = FromJs::new(env);
    from.refuse_undefined = cloneable;
    let mut path = String::from("result");
    // SAFETY: caller contract.
    let outcome = match unsafe { from.value(value, 0, &mut path) } {
        Ok(_) if !from.views.is_empty() && cloneable && shares => {
            return Err(SHARED_IN_RESULT.to_owned())
        }
        Ok(_) if !from.views.is_empty() => Err(RpcError::invalid_params(SHARED_IN_RESULT)),
        Ok(v) => Ok(v),
        // SAFETY: caller contract. Its thread is being terminated: the job stays running, and
        // the server's departure settles it with ServerGone.
        Err(_) if !unsafe { convert::can_run_js(env) } => return Ok(false),
        Err(why) if cloneable => return Err(why),
        Err(why) => Err(RpcError::invalid_params(why)),
    };
    Ok(ctx.pool.complete(&ctx.server, self::token(token), outcome))
}

#[napi]
impl NativeServer {
    #[napi(getter)]
    pub fn id(&self) -> f64 {
        self.ctx.server.id() as f64
    }

    /// Jobs queued or running on this server.
    #[napi(getter)]
    pub fn busy(&self) -> u32 {
        self.ctx.server.busy() as u32
    }

    /// The params of job `token`, with its views replaced by `views` (typed arrays of this
    /// environment); `null` when some view has no match yet; `false` when the params cannot be
    /// made here (the job is settled with InvalidParams then, or, as this thread is being
    /// terminated, with ServerGone once it has gone: drop it).
    #[napi(catch_unwind)]
    pub fn params(&self, env: Env, token: f64, views: Unknown) -> Result<Unknown<'_>> {
        let raw = env.raw();
        let token = self::token(token);
        let mut mine = Vec::new();
        let mut is_array = false;
        // SAFETY: a Node-API callback on this env's JS thread; `views` belongs to this env.
        unsafe { sys::napi_is_array(raw, views.raw(), &mut is_array) };
        if is_array {
            let mut len = 0u32;
            // SAFETY: a Node-API callback on this env's JS thread; `views` is an array of this env.
            unsafe { sys::napi_get_array_length(raw, views.raw(), &mut len) };
            // Any thread may post on the views channel: a job has at most as many views as
            // values, so no longer list is read.
            for i in 0..len.min(MAX_VALUES as u32) {
                let mut item = ptr::null_mut();
                // SAFETY: a Node-API callback on this env's JS thread; i < the length of `views`.
                unsafe { sys::napi_get_element(raw, views.raw(), i, &mut item) };
                // SAFETY: a Node-API callback on this env's JS thread; `item` is a value of this
                // env.
                if let Some(view) = unsafe { convert::shared_view_of(raw, item) } {
                    mine.push((view, item));
                }
            }
        }
        let mut out = ptr::null_mut();
        let mut waiting = self.ctx.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let params = match waiting.get(&token) {
            Some(Waiting::Posted) => {
                // The params themselves, the one item published (lib/views.js): an array.
                let mut first = ptr::null_mut();
                let mut is_params = false;
                if is_array {
                    // SAFETY: a Node-API callback on this env's JS thread; `views` is an array of
                    // this env (an index past its end reads undefined).
                    unsafe { sys::napi_get_element(raw, views.raw(), 0, &mut first) };
                    // SAFETY: as above; `first` is a value of this env.
                    unsafe { sys::napi_is_array(raw, first, &mut is_params) };
                }
                if !is_params {
                    // SAFETY: a Node-API callback on this env's JS thread; `out` is a live local.
                    unsafe { sys::napi_get_null(raw, &mut out) };
                    // SAFETY: `out` is a value of this env created in this callback scope.
                    return Ok(unsafe { Unknown::from_raw_unchecked(raw, out) });
                }
                waiting.remove(&token);
                // SAFETY: `first` is a value of this env created in this callback scope.
                return Ok(unsafe { Unknown::from_raw_unchecked(raw, first) });
            }
            Some(Waiting::Views(params)) if resolved(&Value::Array(params.clone()), &mine) => {
                let params = Value::Array(params.clone());
                waiting.remove(&token);
                params
            }
            _ => {
                // SAFETY: a Node-API callback on this env's JS thread; `out` is a live local.
                unsafe { sys::napi_get_null(raw, &mut out) };
                // SAFETY: `out` is a value of this env created in this callback scope.
                return Ok(unsafe { Unknown::from_raw_unchecked(raw, out) });
            }
        };
        drop(waiting);
        // SAFETY: a Node-API callback on this env's JS thread; every object in `mine` is a value of
        // this env.
        match unsafe { convert::to_js_with(raw, &params, &mine) } {
            Ok(made) => out = made,
            // SAFETY: a Node-API callback on this env's JS thread. Its thread is being terminated
            // (a failed conversion then says nothing of the params): the job stays running, and the
            // server's departure settles it with ServerGone, as `batch_to_js` and `complete` leave
            // theirs.
            Err(_) if !unsafe { convert::can_run_js(raw) } => {
                // SAFETY: a Node-API callback on this env's JS thread; `out` is a live local.
                unsafe { sys::napi_get_boolean(raw, false, &mut out) };
            }
            Err(why) => {
                let e = RpcError::invalid_params(format!(
                    "the params cannot be made into JavaScript values on the serving thread: {why}"
                ));
                self.ctx.pool.complete(&self.ctx.server, token, Err(e));
                // SAFETY: a Node-API callback on this env's JS thread; `out` is a live local.
                unsafe { sys::napi_get_boolean(raw, false, &mut out) };
            }
        }
        // SAFETY: `out` is a value of this env created in this callback scope.
        Ok(unsafe { Unknown::from_raw_unchecked(raw, out) })
    }

    /// The serving thread's hot functions over this server, `[complete, rest, take]`
    /// (`serve::hot`): lib/serve.js calls them for every job.
    #[napi(catch_unwind)]
    pub fn hot(&self, env: Env) -> Result<List<RawValue>> {
        // SAFETY: a Node-API callback on this env's JS thread; the functions are its values.
        let made = unsafe { hot::functions(env.raw(), &self.ctx) };
        made.map(|fs| fs.into_iter().map(RawValue).collect())
            .map_err(|why| Error::new(Status::GenericFailure, why))
    }

    /// The handler of job `token` returned a value lib/clone.js wrote as the `parts` of a
    /// structured-clone message (V8's bytes, then the ArrayBuffers it moves): copied here (but
    /// for buffers corepool handed over, moved on as they are), the moved ArrayBuffers detached
    /// (`convert::cloned`). As `complete`.
    #[napi(catch_unwind)]
    pub fn complete_cloned(&self, env: Env, token: f64, parts: Unknown) -> bool {
        // SAFETY: a Node-API callback on this env's JS thread; `parts` belongs to this env.
        let frame = unsafe {
            convert::cloned::frame_from_js(env.raw(), parts.raw(), "the handler's cloned result")
        };
        let outcome = frame
            .map(Value::Cloned)
            .map_err(|why| RpcError::new(ErrorCode::InternalError, why));
        self.ctx
            .pool
            .complete(&self.ctx.server, self::token(token), outcome)
    }

    /// The handler of job `token` posted its result on the caller's message port, under the
    /// call's id (see [`batch_to_js`]): the call settles with code `RESULT_POSTED` and this
    /// thread's id, and the caller's thread reads the result from that port (lib/posted.js).
    #[napi(catch_unwind)]
    pub fn complete_posted(&self, token: f64) -> bool {
        self.ctx.pool.complete(
            &self.ctx.server,
            self::token(token),
            // (The server's thread is the `threadId` it was made with, a u32.)
            Ok(Value::Cloned(crate::rpc::value::Cloned::posted(
                u32::try_from(self.ctx.server.thread()).unwrap_or(u32::MAX),
            ))),
        )
    }

    /// Whether job `token`'s call still waits for this handler's outcome (a snapshot: it may
    /// be settled otherwise at any time). A result is posted on the caller's port only then,
    /// so that a call settled otherwise rarely leaves one there (lib/posted.js drops those).
    #[napi(catch_unwind)]
    pub fn live(&self, token: f64) -> bool {
        self.ctx.pool.is_live(&self.ctx.server, self::token(token))
    }

    /// From now on, the own calls of the environment whose origin is `origin` (its channel's
    /// `originId`) come with their call ids, for the results this thread posts on that
    /// environment's message port (see [`batch_to_js`]); 0 stops it.
    #[napi(catch_unwind)]
    pub fn post_to(&self, origin: f64) {
        // A whole number an origin can have; anything else matches none.
        let id = if (1.0..9e15).contains(&origin) && origin.fract() == 0.0 {
            origin as u64
        } else {
            0
        };
        self.ctx.posts_to.store(id, Ordering::Relaxed);
    }

    /// The handler of job `token` returned a value that cannot be sent: the call settles with
    /// InvalidParams, `why` naming the place; with `data_clone` (structured clone cannot carry
    /// it either), with data `{ name: 'DataCloneError' }`, which lib/calls.js makes a
    /// DataCloneError of on the caller's side.
    #[napi(catch_unwind)]
    pub fn refuse(&self, token: f64, why: String, data_clone: bool) -> bool {
        let mut e = RpcError::invalid_params(why);
        if data_clone {
            let mut data = Map::new();
            data.push_unique("name".into(), Value::String("DataCloneError".into()));
            e = e.with_data(Value::Object(data));
        }
        self.ctx
            .pool
            .complete(&self.ctx.server, self::token(token), Err(e))
    }

    /// The handler of job `token` reports progress (`ctx.progress(value)`; lib/serve.js calls
    /// this only when the caller listens). `Some(why)` when `value` cannot be sent: it must be
    /// plain data, without typed arrays over SharedArrayBuffers.
    #[napi(catch_unwind)]
    pub fn progress(&self, env: Env, token: f64, value: Unknown) -> Option<String> {
        let mut from = FromJs::new(env.raw());
        let mut path = String::from("progress");
        // SAFETY: a Node-API callback on this env's JS thread; `value` belongs to this env.
        match unsafe { from.value(value.raw(), 0, &mut path) } {
            Ok(_) if !from.views.is_empty() => {
                Some("a progress value cannot hold a typed array over a SharedArrayBuffer".into())
            }
            Ok(v) => {
                self.ctx
                    .pool
                    .progress(&self.ctx.server, self::token(token), v);
                None
            }
            Err(why) => Some(why),
        }
    }

    /// The handler of job `token` threw or rejected: CommandFailed with `message` and `data`
    /// (an object; fields that cannot be sent are left out). Returns as `complete` does.
    #[napi(catch_unwind)]
    pub fn fail(&self, env: Env, token: f64, message: String, data: Unknown) -> bool {
        let raw = env.raw();
        let mut fields = Map::new();
        let mut keys = ptr::null_mut();
        // SAFETY: a Node-API callback on this env's JS thread; `data` belongs to this env.
        // lib/serve.js passes a plain object.
        let ok = unsafe {
            sys::napi_get_all_property_names(
                raw,
                data.raw(),
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        } == sys::Status::napi_ok;
        if ok {
            let mut len = 0u32;
            // SAFETY: a Node-API callback on this env's JS thread; `keys` is an array of this env.
            unsafe { sys::napi_get_array_length(raw, keys, &mut len) };
            for i in 0..len {
                let mut key = ptr::null_mut();
                let mut item = ptr::null_mut();
                // SAFETY: a Node-API callback on this env's JS thread; `keys`, `data` and the
                // out-pointers are this env's values and live locals.
                unsafe {
                    sys::napi_get_element(raw, keys, i, &mut key);
                    sys::napi_get_property(raw, data.raw(), key, &mut item);
                }
                // SAFETY: `key` is a string of this env (numbers_to_strings).
                let Ok(name) = (unsafe { convert::string(raw, key) }) else {
                    continue;
                };
                let mut from = FromJs::new(raw);
                let mut path = format!("data.{name}");
                // SAFETY: `item` is a value of this env.
                if let Ok(v) = unsafe { from.value(item, 0, &mut path) } {
                    if from.views.is_empty() {
                        fields.push_unique(name, v);
                    }
                }
            }
        }
        let e = RpcError::new(ErrorCode::CommandFailed, message).with_data(Value::Object(fields));
        self.ctx
            .pool
            .complete(&self.ctx.server, self::token(token), Err(e))
    }

    /// Job `token` cannot be run here (its params could not be made on this thread): it settles
    /// with InternalError saying `why`. Returns as `complete` does.
    #[napi(catch_unwind)]
    pub fn lost(&self, token: f64, why: String) -> bool {
        let e = RpcError::new(ErrorCode::InternalError, why);
        self.ctx
            .pool
            .complete(&self.ctx.server, self::token(token), Err(e))
    }

    /// Job `token` ran past its timeout (the serving thread's timer): it settles now. Returns
    /// the Timeout's message (the method and the limit), for the handler's signal; `None` if
    /// the job no longer runs.
    #[napi(catch_unwind)]
    pub fn stop(&self, token: f64) -> Option<String> {
        self.ctx
            .pool
            .stop(&self.ctx.server, self::token(token), CancelReason::Timeout)
            .map(|e| e.message)
    }

    /// Asks the caller of job `token` to send its views again; false when it cannot (the job
    /// is settled or its caller gone): complete the job then, its outcome is dropped.
    #[napi(catch_unwind)]
    pub fn resend(&self, token: f64) -> bool {
        self.ctx.pool.resend(&self.ctx.server, self::token(token))
    }

    /// Of these jobs waiting for views, those whose caller's environment is gone.
    #[napi(catch_unwind)]
    pub fn orphaned(&self, tokens: Vec<f64>) -> List<f64> {
        let tokens: Vec<u64> = tokens.into_iter().map(token).collect();
        self.ctx
            .pool
            .orphaned(&self.ctx.server, &tokens)
            .into_iter()
            .map(|t| t as f64)
            .collect()
    }

    /// Stops getting new calls; queued and running ones still finish here. False if already
    /// closed.
    #[napi(catch_unwind)]
    pub fn close(&self) -> bool {
        self.ctx.pool.unserve(&self.ctx.server)
    }

    /// After close() and once idle: leaves the pool's stats. No more wake-ups after this.
    #[napi(catch_unwind)]
    pub fn depart(&self) {
        self.ctx.pool.depart(&self.ctx.server);
    }

    /// Keeps this thread's event loop alive while serving (the default).
    #[napi(js_name = "ref", catch_unwind)]
    pub fn ref_(&self, env: Env) {
        // SAFETY: JS thread of the env that created the function.
        unsafe { self.tsfn.keep_alive(env.raw(), true) };
    }

    /// Lets this thread exit while serving if nothing else keeps it alive.
    #[napi(catch_unwind)]
    pub fn unref(&self, env: Env) {
        // SAFETY: as for `ref_`.
        unsafe { self.tsfn.keep_alive(env.raw(), false) };
    }
}
