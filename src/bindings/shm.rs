//! Node-API glue for the shared-memory toolkit (`lib/shm/`): the protocols live in
//! `crate::shm`, this file only hands them to JavaScript.
//!
//! The locks run their compare-exchanges inline in JavaScript (a native call would cost more
//! than the operation); from here they need only what JavaScript cannot make itself: agent ids
//! from the process-wide counter (`lockAgent`) and the address of a lock's words, checked to fit
//! (`shmAddress`), which orders `lockAll`. Their layouts come through the contract.
//!
//! Each constructor (`shmMutex`, `shmSemaphore`, `shmRing`) checks its typed array once, turns
//! it into a [`SharedView`] through `convert` (SharedArrayBuffers only), and returns an array
//! of plain Node-API functions bound to the native object. Plain functions, not class methods:
//! a generated method costs hundreds of nanoseconds in instance unwrapping (see `pool.rs`),
//! which would dwarf a lock or a ring-buffer copy.
//!
//! Lifetime: every bound function carries the typed array in a read-only, non-configurable
//! property, so the SharedArrayBuffer memory a function points into stays alive for as long as
//! the function can be called; each function's finalizer drops its share of the native object.
//!
//! None of these functions waits: lock attempts spin for about a microsecond at most and report
//! "busy" instead. The JavaScript wrapper waits in `Atomics.wait`/`Atomics.waitAsync` and calls
//! `Atomics.notify` after every native release, because native code can do neither
//! (`shm::mutex` explains why).

use super::convert;
use super::RawValue;
use crate::rpc::Value;
use crate::shm::{
    Agent, ElementKind, Moved, Mutex, RingBuffer, RingError, Semaphore, SharedView, SharedWord,
    SharedWords,
};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::cell::RefCell;
use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::sync::Arc;

/// What a bound function reports to JavaScript when it fails: an error code name from the
/// error table (lib/errors.js turns it into an RpcError) or a plain `Error`'s message.
enum Failure {
    Rpc(&'static CStr, String),
    Plain(String),
}

/// Results that bound functions hand back.
enum Answer {
    Int(i32),
    Bool(bool),
    Undefined,
}

/// The arguments a bound function reads (missing ones are `undefined`).
type Args = [sys::napi_value; 2];

type Bound<T> = fn(&T, sys::napi_env, &Args) -> std::result::Result<Answer, Failure>;

/// A Mutex's native operations: `[tryLock(): boolean, unlock(): void]`. corepool's JS `Mutex`
/// does the same compare-exchanges inline (cheaper than a native call; see bench/mutex.js);
/// these are what native code does, exposed so the tests can mix native and JS holders on one
/// word and the benchmark can keep measuring the design not chosen.
#[napi(catch_unwind)]
pub fn shm_mutex(env: Env, array: Unknown, index: f64) -> Result<RawValue> {
    let word = word(env, "Mutex", &array, index)?;
    let functions: [(&CStr, Bound<Mutex>); 2] = [
        (c"tryLock", |m, _, _| Ok(Answer::Bool(m.try_lock()))),
        (c"unlock", |m, _, _| {
            m.unlock()
                .map(|()| Answer::Undefined)
                .map_err(|e| Failure::Plain(format!("Mutex.unlock(): {e}")))
        }),
    ];
    bind(env, Arc::new(Mutex::new(word)), &array, &functions)
}

/// A Semaphore's operations: `[tryAcquire(): boolean, release(): void]`.
#[napi(catch_unwind)]
pub fn shm_semaphore(env: Env, array: Unknown, index: f64) -> Result<RawValue> {
    let word = word(env, "Semaphore", &array, index)?;
    let functions: [(&CStr, Bound<Semaphore>); 2] = [
        (c"tryAcquire", |s, _, _| Ok(Answer::Bool(s.try_acquire()))),
        (c"release", |s, _, _| {
            s.release()
                .map(|()| Answer::Undefined)
                .map_err(|e| Failure::Plain(format!("Semaphore.release(): {e}")))
        }),
    ];
    bind(env, Arc::new(Semaphore::new(word)), &array, &functions)
}

/// A new JavaScript agent id (`shm::agent`): `lib/shm/agent.js` asks once per thread, and for
/// the async contexts it opens.
#[napi(catch_unwind)]
pub fn lock_agent() -> Result<i32> {
    Agent::new_js()
        .map(Agent::id)
        .map_err(|e| Error::new(Status::GenericFailure, format!("corepool: {e}")))
}

/// The address of `array[index]`, after checking that the array is an Int32Array over a
/// SharedArrayBuffer holding `words` elements from `index` (messages start with `what`). The
/// address is a lock's place in the order `lockAll` takes locks in (`shm::lock_all`); user
/// space addresses fit a double exactly on the platforms corepool builds for.
#[napi(catch_unwind)]
pub fn shm_address(env: Env, what: String, array: Unknown, index: f64, words: u32) -> Result<f64> {
    let view = shared_view(env, &what, &array)?;
    let index = whole_index(&what, index)?;
    let words =
        SharedWords::new(&what, &view, index, words as usize).map_err(|e| invalid(e.message))?;
    Ok(words.address() as f64)
}

/// The largest ring whose byte counts, doubled, still fit the int32 the bound functions answer.
pub(crate) const MAX_RING_CAPACITY: usize = (1 << 30) - 1;

/// A RingBuffer's operations over `memory` (a Uint8Array over a whole SharedArrayBuffer laid
/// out as `shm::ring` says): `[write(data, limit?), readInto(target, limit?)]` (at most
/// `limit` bytes of the array when given), each answering
/// `2 · bytes moved + (1 if waiters on the length word must be woken)`, or -1 when the lock
/// stayed taken (wait on the lock word and retry).
#[napi(catch_unwind)]
pub fn shm_ring(env: Env, memory: Unknown) -> Result<RawValue> {
    let view = shared_view(env, "RingBuffer", &memory)?;
    let ring = RingBuffer::new(&view).map_err(|e| invalid(e.message))?;
    if ring.capacity() > MAX_RING_CAPACITY {
        return Err(invalid(format!(
            "RingBuffer: capacity {} is over the limit of {MAX_RING_CAPACITY} bytes",
            ring.capacity()
        )));
    }
    let functions: [(&CStr, Bound<RingBuffer>); 2] =
        [(c"write", ring_write), (c"readInto", ring_read_into)];
    bind(env, Arc::new(ring), &memory, &functions)
}

/// The Uint8Array `args[0]`, cut to its first `args[1]` bytes when that is a number: lets the
/// wrapper reuse one staging array for calls of any size.
fn bytes_arg(
    env: sys::napi_env,
    args: &Args,
    what: &str,
) -> std::result::Result<(SharedView, bool), Failure> {
    // SAFETY: a Node-API callback on env's JS thread; the caller uses the view only inside it.
    let (view, shared) = unsafe { convert::view_for_call(env, args[0], what) }
        .map_err(|m| Failure::Rpc(c"InvalidParams", m))?;
    let mut limit = f64::INFINITY;
    // SAFETY: a Node-API callback on env's JS thread; `args[1]` is a value of env; a non-number
    // leaves `limit` alone (napi_number_expected).
    unsafe { sys::napi_get_value_double(env, args[1], &mut limit) };
    if limit >= view.len() as f64 || limit.is_nan() {
        return Ok((view, shared));
    }
    let n = limit.max(0.0) as usize;
    let cut = view
        .sub_view(0, n, ElementKind::Uint8)
        .expect("a prefix of the view lies inside it");
    Ok((cut, shared))
}

fn ring_write(
    ring: &RingBuffer,
    env: sys::napi_env,
    args: &Args,
) -> std::result::Result<Answer, Failure> {
    let (mut src, shared) = bytes_arg(env, args, "RingBuffer.write: data")?;
    let written = if shared {
        // Another thread may write a shared source meanwhile: copy it out atomically first.
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.resize(src.len(), 0);
            src.load_bytes(0, &mut scratch);
            ring.try_write(&scratch)
        })
    } else {
        // SAFETY: an ordinary ArrayBuffer is reachable only from this JS thread, which is
        // inside this callback: nothing else reads, writes, detaches or frees it meanwhile.
        ring.try_write(unsafe { src.unshared_bytes_mut() })
    };
    ring_answer(written)
}

fn ring_read_into(
    ring: &RingBuffer,
    env: sys::napi_env,
    args: &Args,
) -> std::result::Result<Answer, Failure> {
    let (mut out, shared) = bytes_arg(env, args, "RingBuffer.readInto: target")?;
    let read = if shared {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.resize(out.len(), 0);
            let moved = ring.try_read_into(&mut scratch)?;
            out.store_bytes(0, &scratch[..moved.bytes]);
            Ok(moved)
        })
    } else {
        // SAFETY: as in `ring_write`: memory only this thread can reach, during this callback.
        ring.try_read_into(unsafe { out.unshared_bytes_mut() })
    };
    ring_answer(read)
}

/// `2 · bytes + wakes` (so `bytes = r >>> 1`, `wakes = r & 1`), or -1 for a taken lock.
fn ring_answer(
    moved: std::result::Result<Moved, RingError>,
) -> std::result::Result<Answer, Failure> {
    match moved {
        // bytes ≤ capacity ≤ MAX_RING_CAPACITY, so 2 · bytes + 1 fits an i32.
        Ok(m) => Ok(Answer::Int((m.bytes * 2 + usize::from(m.wakes)) as i32)),
        Err(RingError::Busy) => Ok(Answer::Int(-1)),
        Err(e) => Err(Failure::Plain(e.to_string())),
    }
}

thread_local! {
    /// Staging for copies to and from shared typed arrays (per JS thread, reused).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

/// A typed array over a SharedArrayBuffer, as a view native code may keep while the typed
/// array is alive.
fn shared_view(env: Env, what: &str, array: &Unknown) -> Result<SharedView> {
    let is_typed = array.is_typedarray().unwrap_or(false);
    if !is_typed {
        return Err(invalid(format!(
            "{what}: expected a typed array over a SharedArrayBuffer, got {}",
            kind_name(array)
        )));
    }
    let path = format!("{what}: the array");
    // SAFETY: a Node-API callback on env's JS thread; `array` is a typed array of this env.
    match unsafe { convert::typed_array(env.raw(), array.raw(), &path) } {
        Ok(Value::View(view)) => Ok(view),
        Ok(_) => Err(invalid(format!(
            "{what}: the array must be a view over a SharedArrayBuffer, not an ArrayBuffer"
        ))),
        Err(message) => Err(invalid(message)),
    }
}

fn whole_index(what: &str, index: f64) -> Result<usize> {
    if !(index.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&index)) {
        return Err(invalid(format!(
            "{what}: index must be a whole number ≥ 0, got {index}"
        )));
    }
    Ok(index as usize)
}

fn word(env: Env, what: &str, array: &Unknown, index: f64) -> Result<SharedWord> {
    let view = shared_view(env, what, array)?;
    let index = whole_index(what, index)?;
    SharedWord::new(what, view, index).map_err(|e| invalid(e.message))
}

fn kind_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::String) => "a string",
        Ok(ValueType::BigInt) => "a bigint",
        Ok(ValueType::Function) => "a function",
        _ => "an object",
    }
}

/// The data of one bound function: its operation and its share of the native object.
struct Binding<T> {
    target: Arc<T>,
    run: Bound<T>,
}

/// Makes one plain function per entry of `functions`, each bound to `target`, each holding
/// `memory` (the typed array `target` points into) in a read-only property. Returns them as a
/// JS array, in order.
fn bind<T: Send + Sync + 'static>(
    env: Env,
    target: Arc<T>,
    memory: &Unknown,
    functions: &[(&CStr, Bound<T>)],
) -> Result<RawValue> {
    let env = env.raw();
    let failed = |what: &str| Error::new(Status::GenericFailure, format!("corepool: {what}"));
    let mut array = ptr::null_mut();
    // SAFETY: a Node-API callback on env's JS thread; out-pointer is a live local.
    if unsafe { sys::napi_create_array_with_length(env, functions.len(), &mut array) }
        != sys::Status::napi_ok
    {
        return Err(failed("could not create an array"));
    }
    for (i, (name, run)) in functions.iter().enumerate() {
        let data = Box::into_raw(Box::new(Binding {
            target: target.clone(),
            run: *run,
        }));
        let mut f = ptr::null_mut();
        // SAFETY: a Node-API callback on env's JS thread. `data` is a leaked Box<Binding<T>>: if
        // creating the function fails it is reclaimed right here, otherwise the finalizer added
        // next reclaims it exactly once, when the function is collected (or the environment torn
        // down); until then `call::<T>` may borrow it.
        unsafe {
            let status = sys::napi_create_function(
                env,
                name.as_ptr(),
                name.to_bytes().len() as isize,
                Some(call::<T>),
                data.cast(),
                &mut f,
            );
            if status != sys::Status::napi_ok {
                drop(Box::from_raw(data));
                return Err(failed("could not create a function"));
            }
            sys::napi_add_finalizer(
                env,
                f,
                data.cast(),
                Some(drop_binding::<T>),
                ptr::null_mut(),
                ptr::null_mut(),
            );
            let keep = sys::napi_property_descriptor {
                utf8name: c"memory".as_ptr(),
                name: ptr::null_mut(),
                method: None,
                getter: None,
                setter: None,
                value: memory.raw(),
                // Not writable, not configurable: the property cannot be removed or replaced,
                // so the typed array lives at least as long as the function.
                attributes: sys::PropertyAttributes::default,
                data: ptr::null_mut(),
            };
            if sys::napi_define_properties(env, f, 1, &keep) != sys::Status::napi_ok
                || crate::bindings::convert::define_index(env, array, i as u32, f)
                    != sys::Status::napi_ok
            {
                return Err(failed("could not set up a function"));
            }
        }
    }
    Ok(RawValue(array))
}

/// The finalizer of a bound function: frees its share of the native object.
unsafe extern "C" fn drop_binding<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Binding<T>> leaked in `bind`; Node runs this finalizer once.
    drop(unsafe { Box::from_raw(data as *mut Binding<T>) });
}

/// The Node-API callback of every bound function: `f(a?, b?)`.
unsafe extern "C" fn call<T>(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let outcome = std::panic::catch_unwind(|| {
        // SAFETY: we are inside this function's Node-API callback.
        let (argv, data): (Args, _) = unsafe { super::callback_args::<2>(env, info) };
        // SAFETY: `data` is the Binding<T> owned by this function object, alive while it can
        // be called (see `bind`); its memory property keeps the shared memory alive too.
        let binding = unsafe { &*(data as *const Binding<T>) };
        (binding.run)(&binding.target, env, &argv)
    });
    let mut out = ptr::null_mut();
    // SAFETY: JS thread of a live env for every call below; out-pointers are live locals.
    unsafe {
        match outcome {
            Ok(Ok(Answer::Int(n))) => {
                sys::napi_create_int32(env, n, &mut out);
            }
            Ok(Ok(Answer::Bool(b))) => {
                sys::napi_get_boolean(env, b, &mut out);
            }
            Ok(Ok(Answer::Undefined)) => {
                sys::napi_get_undefined(env, &mut out);
            }
            Ok(Err(Failure::Rpc(code, message))) => throw(env, Some(code), &message),
            Ok(Err(Failure::Plain(message))) => throw(env, None, &message),
            Err(_) => throw(
                env,
                None,
                "corepool: internal error in a shared-memory call",
            ),
        }
    }
    out
}

/// # Safety
/// On the JS thread of the live `env`.
unsafe fn throw(env: sys::napi_env, code: Option<&CStr>, message: &str) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let code = code.map_or(ptr::null(), CStr::as_ptr);
    // SAFETY: caller contract; both strings outlive the call.
    unsafe { sys::napi_throw_error(env, code, message.as_ptr()) };
}
