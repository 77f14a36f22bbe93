//! The hot call: `call(id, method, params, timeoutMs, flags, tape, text, trace)`, the function behind
//! `exec` and `call`, bound to one pool. It is a plain Node-API function, not a method of
//! `NativePool`: a generated method pays for unwrapping its instance, several times what this
//! function costs. So its JavaScript signature stays positional and its flags a number (an
//! object per call would cost more than the call), but the first thing it does is name them:
//! [`CallArgs`] holds the arguments, [`Flags`] the decoded bits (`contract::CALL_*`), and the
//! rest of the call reads names.
//!
//! Settling: once the call is tracked, it settles exactly once through the channel, with its
//! job's outcome or with the error that stopped it here; nothing is thrown into the caller's
//! JavaScript (see `hot_call`).

use super::arguments::{call_timeout, cannot_keep, method_str};
use crate::bindings::callback_args;
use crate::bindings::channel::Inbox;
use crate::bindings::contract::{
    CALL_ALONE, CALL_CANCELLABLE, CALL_CLONED, CALL_FIRST_LATIN1, CALL_FUNCTIONS, CALL_PACKED,
    CALL_PACKED_AFTER_STRING, CALL_PACKED_LATIN1, CALL_POSTED, CALL_PROGRESS, CALL_TIMED,
    CALL_TRACED,
};
use crate::bindings::convert::from_js::FUNCTIONS_ONLY_RENDER;
use crate::bindings::convert::{self, FromJs};
use crate::bindings::publish::publish;
use crate::bindings::RawValue;
use crate::pool::{closed_error, Caller, Control, Origin, Params, Pool};
use crate::rpc::packed::Packed;
use crate::rpc::{ErrorCode, JsText, RpcError};
use napi::bindgen_prelude::*;
use napi::sys;
use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What the hot `call` function needs, owned by the function object.
pub(super) struct Hot {
    pub(super) pool: Arc<Pool>,
    pub(super) origin: Arc<Origin>,
    pub(super) inbox: Arc<Inbox>,
    /// The handle's `closed` flag: calls made after `close()` settle with PoolClosed.
    pub(super) closed: Arc<AtomicBool>,
}

/// The function `call` over `hot`, which it owns: its finalizer drops `hot` when the function
/// is collected (or the environment torn down).
pub(super) fn bind(env: Env, hot: Hot) -> Result<RawValue> {
    let data = Arc::into_raw(Arc::new(hot)) as *mut c_void;
    let mut f = ptr::null_mut();
    // SAFETY: a Node-API callback on this env's JS thread (`NativePool::caller`). `data` is a
    // leaked Arc<Hot> that the finalizer added below reclaims exactly once, when the function
    // is collected (or the env torn down); until then `hot_call` may borrow it. If the function
    // cannot be made, no finalizer will run, so the Arc is reclaimed here.
    unsafe {
        let status =
            sys::napi_create_function(env.raw(), c"call".as_ptr(), 4, Some(hot_call), data, &mut f);
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

unsafe extern "C" fn drop_hot(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<Hot> leaked in `bind`; Node runs this finalizer once.
    drop(unsafe { Arc::from_raw(data as *const Hot) });
}

/// How a string argument is read: lib/params.js says when every UTF-16 unit of it fits a byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Units {
    /// Every unit ≤ 0xFF: read as Latin-1, a copy of V8's one-byte string.
    OneByte,
    /// Any units.
    Any,
}

/// How packed params crossed (`rpc::packed`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Packing {
    /// The units of the packed text.
    text: Units,
    /// `Some`: the first param, a string, crossed on its own as `params`, with these units,
    /// and the text of the others as `text` (`packedAfterString`).
    first: Option<Units>,
}

/// The `flags` argument, decoded once at the boundary.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Flags {
    /// The call carries an AbortSignal: keep its control so that `cancel` finds it.
    cancellable: bool,
    /// The caller listens to the call's progress.
    watches_progress: bool,
    /// The call (`pool.render`) may hold functions: the call function then returns
    /// `[functions, objects]`, what `finishRender` needs (`bindings/render/`).
    may_hold_functions: bool,
    /// `None`: `params` is an array of values (or a cloned message's parts).
    packed: Option<Packing>,
    /// `params` is the parts of a structured-clone message (lib/clone.js), for a method served
    /// by JavaScript (not with `packed`).
    cloned: bool,
    /// `params` is posted to the serving thread (`contract::CALL_POSTED`; not with `packed`
    /// or `cloned`).
    posted: bool,
    /// The 8th argument is the caller's trace context (`contract::CALL_TRACED`).
    traced: bool,
    /// The call is observed: how it ran comes before its settlement (`contract::CALL_TIMED`).
    timed: bool,
    /// A JavaScript-served call runs alone on its serving thread (`contract::CALL_ALONE`).
    alone: bool,
}

impl Flags {
    fn from_bits(bits: u32) -> Flags {
        let units = |bit: u32| {
            if bits & bit != 0 {
                Units::OneByte
            } else {
                Units::Any
            }
        };
        Flags {
            cancellable: bits & CALL_CANCELLABLE != 0,
            watches_progress: bits & CALL_PROGRESS != 0,
            may_hold_functions: bits & CALL_FUNCTIONS != 0,
            cloned: bits & CALL_CLONED != 0 && bits & CALL_PACKED == 0,
            posted: bits & CALL_POSTED != 0 && bits & (CALL_PACKED | CALL_CLONED) == 0,
            traced: bits & CALL_TRACED != 0,
            timed: bits & CALL_TIMED != 0,
            alone: bits & CALL_ALONE != 0,
            packed: (bits & CALL_PACKED != 0).then(|| Packing {
                text: units(CALL_PACKED_LATIN1),
                first: (bits & CALL_PACKED_AFTER_STRING != 0).then(|| units(CALL_FIRST_LATIN1)),
            }),
        }
    }
}

/// Where a call's params are, by how they crossed.
enum ParamsArg {
    /// An array of values, converted here.
    Values(sys::napi_value),
    /// The parts of a structured-clone message (lib/clone.js): copied here, the moved
    /// ArrayBuffers detached (`convert::cloned`).
    Cloned(sys::napi_value),
    /// The params array itself, posted to the serving thread as a job's views are
    /// (`contract::CALL_POSTED`).
    Posted(sys::napi_value),
    /// Packed params (`rpc::packed`): the text, the tape, and the first param when it crossed
    /// on its own.
    Packed {
        text: (sys::napi_value, Units),
        tape: sys::napi_value,
        first: Option<(sys::napi_value, Units)>,
    },
}

/// One call's arguments, named.
struct CallArgs {
    /// The id the call settles under.
    id: u64,
    /// The method's name (anything else settles with InvalidRequest).
    method: sys::napi_value,
    params: ParamsArg,
    /// The `timeout` option (`undefined`: the pool's default).
    timeout_ms: sys::napi_value,
    flags: Flags,
    /// The caller's trace context, when `flags.traced`.
    trace: Option<sys::napi_value>,
}

impl CallArgs {
    /// Names the eight positional arguments of `call`.
    ///
    /// # Safety
    /// Inside `call`'s Node-API callback, with its arguments.
    unsafe fn read(env: sys::napi_env, argv: [sys::napi_value; 8]) -> CallArgs {
        let [id, method, params, timeout_ms, flags, tape, text, trace] = argv;
        let mut id_number = 0.0;
        let mut bits = 0u32;
        // SAFETY: the argv values belong to this env (caller contract); out-pointers are live
        // locals. A value of another type leaves them 0, which lib/calls.js never passes.
        unsafe {
            sys::napi_get_value_double(env, id, &mut id_number);
            sys::napi_get_value_uint32(env, flags, &mut bits);
        }
        let flags = Flags::from_bits(bits);
        let params = match flags.packed {
            None if flags.cloned => ParamsArg::Cloned(params),
            None if flags.posted => ParamsArg::Posted(params),
            None => ParamsArg::Values(params),
            Some(Packing { text: units, first }) => ParamsArg::Packed {
                text: (if first.is_some() { text } else { params }, units),
                tape,
                first: first.map(|units| (params, units)),
            },
        };
        CallArgs {
            id: id_number as u64,
            method,
            params,
            timeout_ms,
            flags,
            trace: flags.traced.then_some(trace),
        }
    }
}

/// The caller's trace context: the string `trace`, or `None` for anything else (lib/pool.js
/// passes a string with `CALL_TRACED`; a call never fails for want of its trace context).
///
/// # Safety
/// On `env`'s JS thread, with `trace` a value of env.
unsafe fn read_trace(env: sys::napi_env, trace: sys::napi_value) -> Option<Arc<str>> {
    let mut t = 0;
    // SAFETY: caller contract; `t` is a live local.
    unsafe { sys::napi_typeof(env, trace, &mut t) };
    if t != sys::ValueType::napi_string {
        return None;
    }
    // SAFETY: caller contract; `trace` is a string (checked above).
    unsafe { convert::string(env, trace) }.ok().map(Arc::from)
}

/// The params of a call, read out of JavaScript.
///
/// # Safety
/// On `env`'s JS thread, with `params`' values of env.
unsafe fn read_params(
    env: sys::napi_env,
    params: &ParamsArg,
    from: &mut FromJs,
) -> std::result::Result<Params, RpcError> {
    let (text, tape, first) = match *params {
        // SAFETY: caller contract.
        ParamsArg::Values(array) => return Ok(Params::Values(unsafe { from.params(array) }?)),
        ParamsArg::Cloned(parts) => {
            // One copy of each part, none of a buffer corepool handed over (the moved
            // ArrayBuffers are detached once copied).
            // SAFETY: caller contract.
            let frame = unsafe { convert::cloned::frame_from_js(env, parts, "the cloned params") }
                .map_err(RpcError::invalid_params)?;
            return Ok(Params::Cloned(frame));
        }
        ParamsArg::Posted(array) => {
            // The array is kept and published as the call's one view (see `hot_call`).
            from.views.push(array);
            return Ok(Params::Posted);
        }
        ParamsArg::Packed { text, tape, first } => (text, tape, first),
    };
    // The text read as Latin-1 when lib/params.js says every unit fits a byte, else as UTF-16:
    // a copy here either way, and the tape's used part copied; the worker unpacks them (see
    // `rpc::packed`). lib/params.js passes strings and a Float64Array; anything else is an
    // InvalidParams error of the conversion, not undefined behaviour.
    let text = match text {
        // SAFETY: caller contract.
        (text, Units::OneByte) => unsafe { convert::string_latin1(env, text) }.map(JsText::Latin1),
        // SAFETY: caller contract.
        (text, Units::Any) => unsafe { convert::string_utf16(env, text) }.map(JsText::Utf16),
    }
    .map_err(RpcError::invalid_params)?;
    // SAFETY: caller contract.
    let tape = unsafe { convert::packed_tape(env, tape) }.map_err(RpcError::invalid_params)?;
    let first = match first {
        None => None,
        // SAFETY: caller contract.
        Some((first, Units::OneByte)) => Some(unsafe { convert::string_from_latin1(env, first) }),
        // SAFETY: caller contract.
        Some((first, Units::Any)) => Some(unsafe { convert::string(env, first) }),
    };
    let first = first.transpose().map_err(RpcError::invalid_params)?;
    Ok(Params::Packed(Packed { first, tape, text }))
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
        let (argv, data) = unsafe { callback_args::<8>(env, info) };
        // SAFETY: `data` is the Arc<Hot> owned by this function object, alive while it can be
        // called (see `bind`).
        let hot = unsafe { &*(data as *const Hot) };
        // SAFETY: inside this function's Node-API callback, with its arguments.
        let args = unsafe { CallArgs::read(env, argv) };
        // SAFETY: JS thread of the env that owns the inbox.
        unsafe { hot.inbox.track(env) };
        tracked = Some((hot, args.id));
        let mut from = FromJs::new(env);
        let control = (|| -> std::result::Result<Option<Arc<Control>>, RpcError> {
            if hot.closed.load(Ordering::Acquire) {
                return Err(closed_error());
            }
            // SAFETY: the method is a value of this env, on its JS thread.
            unsafe { method_str(env, args.method) }?;
            let mut functions_refused = false;
            if args.flags.may_hold_functions {
                // Functions only for the native render: a served method would get them as
                // nothing at all.
                // SAFETY: the method is a string of this env (checked above), on its JS thread.
                let render = unsafe { convert::with_str(env, args.method, |m| m == "render") }
                    .unwrap_or(false);
                if render && hot.pool.runs_natively("render") {
                    from.collect_functions(0, 0);
                } else {
                    functions_refused = true;
                }
            }
            // SAFETY: the timeout is a value of this env, on its JS thread.
            let timeout = unsafe { call_timeout(env, args.timeout_ms) }?;
            // SAFETY: the params are values of this env, on its JS thread.
            let params = unsafe { read_params(env, &args.params, &mut from) }?;
            // Packed params carry functions as numbered slots (lib/params.js): refused here as
            // value by value does, for any method but the native render. (A render sent to a
            // JavaScript server: rare, so the whole tape may be walked to find out.)
            if let (true, Params::Packed(packed)) = (functions_refused, &params) {
                if packed.holds_function()? {
                    return Err(RpcError::invalid_params(format!(
                        "the view holds a function: {FUNCTIONS_ONLY_RENDER}"
                    )));
                }
            }
            // SAFETY: on this env's JS thread, before the call can settle.
            if !unsafe { hot.inbox.keep(env, args.id, &from.views) } {
                return Err(cannot_keep());
            }
            let views = &from.views;
            let submit = |m: &str| {
                // Only a JavaScript server uses the trace context: not read for a native command.
                let trace = match args.trace {
                    Some(t) if !hot.pool.runs_natively(m) => {
                        // SAFETY: the trace context is a value of this env, on its JS thread.
                        unsafe { read_trace(env, t) }
                    }
                    _ => None,
                };
                placed = true;
                // A JS-served method gets the views from this thread's JavaScript (pool::server).
                // SAFETY: on this env's JS thread; the views are values of this env.
                let mut announce = |to, token| unsafe { publish(env, to, token, views, false) };
                let caller = Caller {
                    watches_progress: args.flags.watches_progress,
                    announce: (!views.is_empty()).then_some(&mut announce as _),
                    continuing: false,
                    trace,
                    timed: args.flags.timed,
                    alone: args.flags.alone,
                };
                hot.pool
                    .call_as(&hot.origin, args.id, m, params, timeout, caller)
            };
            // SAFETY: the method is a string of this env (checked above), on its JS thread.
            unsafe { convert::with_str(env, args.method, submit) }.map_err(RpcError::invalid_params)
        })();
        match control {
            Ok(Some(control)) if args.flags.cancellable => {
                hot.inbox
                    .cancellable
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(args.id, control);
            }
            Ok(_) => {}
            Err(e) if !placed => {
                placed = true; // answered: the error settles it
                hot.origin.deliver(args.id, Err(e));
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
    // SAFETY: caller contract. A failure gives a null value, which the next calls refuse.
    unsafe {
        let list = |values: &[sys::napi_value]| convert::array_of(env, values).ok();
        match (list(functions), list(objects)) {
            (Some(f), Some(o)) => convert::array_of(env, &[f, o]).unwrap_or(ptr::null_mut()),
            _ => ptr::null_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_decode_into_names() {
        assert_eq!(
            Flags::from_bits(0),
            Flags {
                cancellable: false,
                watches_progress: false,
                may_hold_functions: false,
                traced: false,
                timed: false,
                alone: false,
                packed: None,
                cloned: false,
                posted: false,
            }
        );
        let all = CALL_CANCELLABLE
            | CALL_PROGRESS
            | CALL_FUNCTIONS
            | CALL_PACKED
            | CALL_PACKED_LATIN1
            | CALL_PACKED_AFTER_STRING
            | CALL_FIRST_LATIN1
            | CALL_TRACED
            | CALL_TIMED
            | CALL_ALONE;
        assert_eq!(
            Flags::from_bits(all),
            Flags {
                cancellable: true,
                watches_progress: true,
                may_hold_functions: true,
                traced: true,
                timed: true,
                alone: true,
                packed: Some(Packing {
                    text: Units::OneByte,
                    first: Some(Units::OneByte),
                }),
                cloned: false,
                posted: false,
            }
        );
        // Cloned bytes are the params array as a whole: never packed as well.
        assert!(Flags::from_bits(CALL_CLONED).cloned);
        assert!(!Flags::from_bits(CALL_CLONED | CALL_PACKED).cloned);
        // Posted params are the params array itself: never packed or cloned as well.
        assert!(Flags::from_bits(CALL_POSTED).posted);
        assert!(!Flags::from_bits(CALL_POSTED | CALL_PACKED).posted);
        assert!(!Flags::from_bits(CALL_POSTED | CALL_CLONED).posted);
        // Packing bits mean nothing without `packed`.
        assert_eq!(
            Flags::from_bits(CALL_PACKED_LATIN1 | CALL_FIRST_LATIN1).packed,
            None
        );
        assert_eq!(
            Flags::from_bits(CALL_PACKED | CALL_PACKED_AFTER_STRING).packed,
            Some(Packing {
                text: Units::Any,
                first: Some(Units::Any),
            })
        );
    }
}
