//! The calling thread's side of a render whose view or config holds JavaScript functions (see
//! `render/functions.rs` for the two passes): the handle a pending render travels to
//! JavaScript as, `finishRender`, which fills its slots by calling the functions, and the
//! `render` that lambdas get.
//!
//! For such a call, JavaScript keeps `[functions, objects]`: the functions and the arrays and
//! objects its params held, in the order the conversion met them (`FromJs::collect_functions`),
//! which the call function returned and `pool.render` hands back to `finishRender`. A
//! function's `this` is looked up there: the very object of the caller's view, not a copy.
//! Values functions return are read the same way and appended.
//!
//! The helpers (`lib/render.js`) do in JavaScript what mustache.js does in JavaScript: `write`
//! makes the text a tag writes of a value (`'' + value`, `String(value)`, `escape(value)`),
//! calling the value first when it is a function; `section` calls a section's function and,
//! should it return a lambda, the lambda with the raw text and its `render`, in the same call
//! (one crossing into JavaScript per section, its `returned` word saying which it gave back),
//! or tells whether an inverted section renders. The rest is native: finding the functions and
//! their `this`, reading what sections' functions return, and all the rendering around them.
//!
//! Errors: a JavaScript exception (a function threw) stays pending and propagates to the
//! caller's JavaScript as it is; an error of the render's own comes back as
//! `[code, message, data?]`.
//!
//! - `mod.rs` (this file): the functions JavaScript calls (`finishRender`, `renderInScope`,
//!   `renderSectionText`, `renderHelperMemory`) and the answer each gives.
//! - `host.rs`: [`host::JsHost`], the engine's `Functions` on the calling thread: every
//!   crossing into JavaScript a render makes.
//! - `live.rs`: the lambdas running on this thread, by token, for their `render(text)`.
//! - `text.rs`: reading what functions return as text, and the errors of a render finished
//!   here.
//!
//! The protocol as a whole (states, owners, crossings, shared memory) is `src/render/README.md`.

mod host;
mod live;
mod text;

use super::convert::{text_to_js, to_js};
use super::RawValue;
use crate::render::functions::pending::PendingRender;
use crate::render::functions::WRITE_RUN_MAX;
use crate::rpc::text::JsText;
use crate::rpc::value::Pending;
use crate::rpc::{RpcError, Value};
use host::JsHost;
use live::{not_live, Live};
use napi::bindgen_prelude::{Env, Error, JsValue, Result as NapiResult, Status, Unknown};
use napi::sys;
use napi_derive::napi;
use std::ptr;
use text::{internal, with_text_arg};

/// `finishRender(pending, [functions, objects], helpers)`: fills the pending render's slots on
/// this thread and returns its output (a string, or a Buffer if it asked for bytes), or
/// `[code, message, data?]` for an error of the render's; a function's exception propagates.
#[napi(catch_unwind)]
pub fn finish_render(
    env: Env,
    pending: Unknown,
    handles: Unknown,
    helpers: Unknown,
) -> NapiResult<RawValue> {
    let env = env.raw();
    // SAFETY: a Node-API callback on env's JS thread, with values of env.
    let outcome = unsafe { finish(env, pending.raw(), handles.raw(), helpers.raw()) };
    // SAFETY: a Node-API callback on env's JS thread.
    unsafe { answer(env, outcome) }
}

/// `renderInScope(token, text)`: what a lambda's `render(text)` does (lib/render.js wraps it):
/// renders `text` in the views the lambda was called in, while that call runs.
#[napi(catch_unwind)]
pub fn render_in_scope(env: Env, token: f64, text: Unknown) -> NapiResult<RawValue> {
    let env = env.raw();
    let rendered = |text: &str| {
        let (render, _) = Live::find(token).ok_or_else(not_live)?;
        // SAFETY: the pointer is registered only while the `section` call that made the
        // closure is on this thread's stack (see `Live`), and this runs on that thread.
        let render = unsafe { &*render };
        render(text).map(Value::String)
    };
    // SAFETY: a Node-API callback on env's JS thread; `text` is a value of env.
    let outcome = unsafe { with_text_arg(env, text.raw(), rendered) }.and_then(|r| r);
    // SAFETY: a Node-API callback on env's JS thread.
    unsafe { answer(env, outcome) }
}

/// `renderSectionText(token)`: the raw text of the section whose lambda has `token` (what the
/// lambda gets), while the section's function or lambda runs. The `section` helper asks for it
/// only for a lambda whose section's text did not come with the call (a long one: see
/// `RAW_TEXT_WITH_CALL`).
#[napi(catch_unwind)]
pub fn render_section_text(env: Env, token: f64) -> NapiResult<RawValue> {
    let env = env.raw();
    let outcome = Live::find(token).ok_or_else(not_live).map(|(_, raw)| {
        // SAFETY: registered only while the section's text, borrowed from its template, is
        // alive (see `Live`), and this runs on the thread that registered it.
        Value::from(unsafe { &*raw })
    });
    // SAFETY: a Node-API callback on env's JS thread.
    unsafe { answer(env, outcome) }
}

/// `renderHelperMemory()`: `[returned, runArgs]`, the memory the helpers and this side share
/// (lib/render.js keeps both in its frozen helpers object, which only this addon gets):
/// `returned`, an Int32Array of 1, what `section` and `writeRun` say they returned; `runArgs`,
/// a Float64Array of 4 × `WRITE_RUN_MAX`, `writeRun`'s arguments going and the texts' lengths
/// coming back. Made here, with V8's own constructors, so that no constructor of the caller's
/// ever holds them.
#[napi(catch_unwind)]
pub fn render_helper_memory(env: Env) -> NapiResult<RawValue> {
    let env = env.raw();
    let typed = |kind: sys::napi_typedarray_type, length: usize, bytes: usize| {
        let mut buffer = ptr::null_mut();
        let mut data = ptr::null_mut();
        let mut array = ptr::null_mut();
        // SAFETY: a Node-API callback on env's JS thread; out-pointers are live locals.
        let ok = unsafe {
            sys::napi_create_arraybuffer(env, bytes, &mut data, &mut buffer) == sys::Status::napi_ok
                && sys::napi_create_typedarray(env, kind, length, buffer, 0, &mut array)
                    == sys::Status::napi_ok
        };
        ok.then_some(array)
    };
    let returned = typed(sys::TypedarrayType::int32_array, 1, 4);
    let args = typed(
        sys::TypedarrayType::float64_array,
        4 * WRITE_RUN_MAX,
        32 * WRITE_RUN_MAX,
    );
    let mut pair = ptr::null_mut();
    let made = match (returned, args) {
        // SAFETY: a Node-API callback on env's JS thread; `returned` and `args` are values of env,
        // `pair` a live local.
        (Some(returned), Some(args)) => unsafe {
            crate::bindings::convert::array_of(env, &[returned, args])
                .map(|made| pair = made)
                .is_ok()
        },
        _ => false,
    };
    if !made {
        return Err(Error::new(
            Status::GenericFailure,
            "corepool: could not make the render helpers' memory",
        ));
    }
    Ok(RawValue(pair))
}

/// The JavaScript value of an outcome: the output, `[code, message]` (`[code, message, data]`
/// when the error has data: a parse error's place), or (a function threw) nothing, with the
/// exception left pending.
///
/// # Safety
/// Must run on `env`'s JS thread.
unsafe fn answer(env: sys::napi_env, outcome: Result<Value, RpcError>) -> NapiResult<RawValue> {
    let mut pending = false;
    // SAFETY: caller contract.
    unsafe { sys::napi_is_exception_pending(env, &mut pending) };
    if pending {
        return Ok(RawValue(ptr::null_mut()));
    }
    let made = match outcome {
        // A long output (a list's rows) is made in the cheapest form for V8 (Latin-1 when it
        // fits, as the pool threads' outputs are): UTF-8 would be decoded here, on the calling
        // thread, byte by byte.
        // SAFETY: caller contract.
        Ok(Value::String(output)) => unsafe { text_to_js(env, &JsText::for_js(output)) },
        // SAFETY: caller contract.
        Ok(output) => unsafe { to_js(env, &output) },
        Err(e) => {
            let mut pair = vec![
                Value::Number(f64::from(e.code.code())),
                Value::String(e.message),
            ];
            pair.extend(e.data);
            let pair = Value::Array(pair);
            // SAFETY: caller contract.
            unsafe { to_js(env, &pair) }
        }
    };
    made.map(RawValue)
        .map_err(|why| Error::new(Status::GenericFailure, why))
}

/// # Safety
/// Must run in a Node-API callback on `env`'s JS thread, with values of `env`.
unsafe fn finish(
    env: sys::napi_env,
    pending: sys::napi_value,
    handles: sys::napi_value,
    helpers: sys::napi_value,
) -> Result<Value, RpcError> {
    let mut data = ptr::null_mut();
    // SAFETY: caller contract; a value that is not an external fails here.
    let status = unsafe { sys::napi_get_value_external(env, pending, &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return Err(internal("finishRender takes a pending render"));
    }
    // SAFETY: the only externals this addon makes hold a Box<Pending>
    // (`convert::to_js::pending_to_js`), alive while the external is (an argument of this call).
    let pending: &Pending = unsafe { &*(data as *const Pending) };
    let render = pending
        .0
        .downcast_ref::<PendingRender>()
        .ok_or_else(|| internal("finishRender takes a pending render"))?;
    let unfinished = render
        .take()
        .ok_or_else(|| internal("a pending render was finished twice"))?;
    let finishing = unfinished.finishing();
    // SAFETY: caller contract.
    let host = unsafe { JsHost::new(env, &finishing, handles, helpers) }?;
    let out = finishing.fill(&host)?;
    Ok(unfinished.output().value(out))
}
