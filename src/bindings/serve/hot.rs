//! The serving thread's hot functions, `complete(token, value, cloneable)`, `rest(budgetLeft,
//! longCalls)` and `take()`: the calls every job makes of the native side, as plain Node-API
//! functions bound to one server (as the caller's `call` is, `pool::call`). A generated method
//! of `NativeServer` pays for unwrapping its instance, checking its type tag and registering the
//! borrow of `&self` on every call, about as much as the rest of `complete` for a small result.
//! Each function owns a share of the server's context (its finalizer drops it), so nothing
//! reaches the context but through the function it was made with.

use super::{complete_with, take_to_js, ServerCtx};
use crate::bindings::callback_args;
use crate::bindings::contract::{REST_IDLE, REST_LATER};
use crate::pool::Rest;
use napi::sys;
use std::ffi::{c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::Arc;

/// `[complete, rest, take]` over `ctx` (see the module's notes), or Err if one cannot be made.
///
/// # Safety
/// On `env`'s JS thread, inside a Node-API callback.
pub(super) unsafe fn functions(
    env: sys::napi_env,
    ctx: &Arc<ServerCtx>,
) -> Result<[sys::napi_value; 3], &'static str> {
    type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;
    let made: [(&CStr, Callback); 3] = [(c"complete", complete), (c"rest", rest), (c"take", take)];
    let mut out = [ptr::null_mut(); 3];
    for (slot, (name, callback)) in out.iter_mut().zip(made) {
        let data = Arc::into_raw(ctx.clone()) as *mut c_void;
        // SAFETY: caller contract. `data` is a leaked Arc<ServerCtx> that the finalizer added
        // next reclaims exactly once, when the function is collected (or the env torn down);
        // until then the callback may borrow it. If the function cannot be made, or its
        // finalizer cannot be added, no finalizer will run, so the Arc is reclaimed here: the
        // function is then never handed to JavaScript (Err), so nothing can call it.
        unsafe {
            // (The finalizer is added only to a function that was made.)
            let made = sys::napi_create_function(
                env,
                name.as_ptr(),
                name.count_bytes() as isize,
                Some(callback),
                data,
                slot,
            ) == sys::Status::napi_ok
                && sys::napi_add_finalizer(
                    env,
                    *slot,
                    data,
                    Some(drop_ctx),
                    ptr::null_mut(),
                    ptr::null_mut(),
                ) == sys::Status::napi_ok;
            if !made {
                drop(Arc::from_raw(data as *const ServerCtx));
                return Err("corepool: could not create a serving function");
            }
        }
    }
    Ok(out)
}

unsafe extern "C" fn drop_ctx(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is an Arc<ServerCtx> leaked in `functions`; Node runs this finalizer once.
    drop(unsafe { Arc::from_raw(data as *const ServerCtx) });
}

/// Runs `body` with the function's arguments and context; a panic becomes a thrown Error (what
/// a generated method's `catch_unwind` does), never an unwind into Node-API.
///
/// # Safety
/// Inside a Node-API callback of a function made by [`functions`].
unsafe fn guarded<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    what: &CStr,
    body: impl FnOnce([sys::napi_value; N], &ServerCtx) -> sys::napi_value,
) -> sys::napi_value {
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: inside this function's Node-API callback (caller contract).
        let (argv, data) = unsafe { callback_args::<N>(env, info) };
        // SAFETY: `data` is the Arc<ServerCtx> owned by this function object, alive while it
        // can be called (see `functions`).
        let ctx = unsafe { &*(data as *const ServerCtx) };
        body(argv, ctx)
    }));
    run.unwrap_or_else(|_| {
        // SAFETY: on the env's JS thread, inside its callback.
        unsafe { sys::napi_throw_error(env, ptr::null(), what.as_ptr()) };
        ptr::null_mut()
    })
}

/// A number argument (anything else reads as NaN, which no token is).
///
/// # Safety
/// On `env`'s JS thread, `v` a value of it.
unsafe fn number(env: sys::napi_env, v: sys::napi_value) -> f64 {
    let mut n = f64::NAN;
    // SAFETY: caller contract; a non-number leaves `n` as it was.
    unsafe { sys::napi_get_value_double(env, v, &mut n) };
    n
}

/// A boolean argument (anything else reads as false).
///
/// # Safety
/// On `env`'s JS thread, `v` a value of it.
unsafe fn boolean(env: sys::napi_env, v: sys::napi_value) -> bool {
    let mut b = false;
    // SAFETY: caller contract; a non-boolean leaves `b` as it was.
    unsafe { sys::napi_get_value_bool(env, v, &mut b) };
    b
}

/// `complete(token, value, cloneable, shares)`: see [`complete_with`]. Answers a boolean (jobs
/// wait and a handler slot is free: call `take()`) or, with `cloneable`, why the value is refused
/// as plain data (a string).
unsafe extern "C" fn complete(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback of a function made by `functions`.
    unsafe {
        guarded::<4>(
            env,
            info,
            c"corepool: internal error in complete()",
            |argv, ctx| {
                let [token, value, cloneable, shares] = argv;
                let answer = complete_with(
                    ctx,
                    env,
                    number(env, token),
                    value,
                    boolean(env, cloneable),
                    boolean(env, shares),
                );
                let mut out = ptr::null_mut();
                match answer {
                    Ok(more) => sys::napi_get_boolean(env, more, &mut out),
                    Err(why) => sys::napi_create_string_utf8(
                        env,
                        why.as_ptr().cast(),
                        why.len() as isize,
                        &mut out,
                    ),
                };
                out
            },
        )
    }
}

/// `rest(budgetLeft, longCalls)`: ends a drain cycle. REST_IDLE (wake-ups are on again),
/// REST_LATER: take more after the event loop has had a turn (`budgetLeft` was false; no
/// wake-up will come for them), or the next batch, taken at once (there was work).
/// `longCalls`: this thread's calls are long ones (`contract.longCallMs` or more on average;
/// see `pool::origin::behind`).
unsafe extern "C" fn rest(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: a Node-API callback of a function made by `functions`.
    unsafe {
        guarded::<2>(
            env,
            info,
            c"corepool: internal error in rest()",
            |argv, ctx| {
                let [budget_left, long_calls] = argv;
                ctx.server.set_long_calls(boolean(env, long_calls));
                // The main thread (threadId 0) never polls: its event loop has other work.
                let may_poll = ctx.server.thread() != 0;
                let code = match ctx
                    .pool
                    .rest(&ctx.server, boolean(env, budget_left), may_poll)
                {
                    Rest::Work => return take_to_js(env, ctx),
                    Rest::Idle => REST_IDLE,
                    Rest::Later => REST_LATER,
                };
                let mut out = ptr::null_mut();
                sys::napi_create_uint32(env, code, &mut out);
                out
            },
        )
    }
}

/// `take()`: the next batch ([`take_to_js`]).
unsafe extern "C" fn take(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: a Node-API callback of a function made by `functions`.
    unsafe {
        guarded::<0>(
            env,
            info,
            c"corepool: internal error in take()",
            |_, ctx| take_to_js(env, ctx),
        )
    }
}
