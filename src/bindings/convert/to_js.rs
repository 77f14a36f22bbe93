//! [`Value`] → JavaScript: results of native commands, params of JavaScript handlers.
//!
//! Objects get their entries as own data properties, as `JSON.parse` makes them
//! (`napi_define_properties`, never `napi_set_property`, which would run the `__proto__` setter
//! for a key `"__proto__"` and any setter someone put on `Object.prototype`).

use super::{napi_try, Converted};
use crate::rpc::text::MAX_JS_STRING;
use crate::rpc::value::Pending;
use crate::rpc::{JsText, Value};
use crate::shm::SharedView;
use napi::sys;
use std::ffi::c_void;
use std::ptr;

/// Creates the JS value of `value`.
///
/// # Safety
/// Must run on the env's JS thread.
pub unsafe fn to_js(env: sys::napi_env, value: &Value) -> Converted<sys::napi_value> {
    // SAFETY: caller contract.
    unsafe { to_js_with(env, value, &[]) }
}

/// As [`to_js`], with each [`Value::View`] replaced by the JS object in `views` over the same
/// memory (the serving thread's own typed arrays); a view with no match becomes `null`.
///
/// # Safety
/// Must run on the env's JS thread, with the `views` objects values of that env.
pub unsafe fn to_js_with(
    env: sys::napi_env,
    value: &Value,
    views: &[(SharedView, sys::napi_value)],
) -> Converted<sys::napi_value> {
    let mut out = ptr::null_mut();
    match value {
        Value::View(v) => match views.iter().find(|(w, _)| w.same_memory(v)) {
            Some((_, js)) => out = *js,
            None => {
                napi_try!(env, sys::napi_get_null(env, &mut out), "creating null");
            }
        },
        Value::Null => {
            napi_try!(env, sys::napi_get_null(env, &mut out), "creating null");
        }
        // Only a call's params hold functions, and the calling thread keeps those itself: no
        // result hands one back.
        Value::Function(_) => {
            napi_try!(
                env,
                sys::napi_get_undefined(env, &mut out),
                "creating undefined"
            );
        }
        // A render's unfinished result: an opaque handle the calling thread gives back to
        // `finishRender` (see `bindings/render/`).
        Value::Pending(pending) => {
            // SAFETY: as for this function.
            out = unsafe { pending_to_js(env, pending) }?;
        }
        Value::Bool(b) => {
            napi_try!(
                env,
                sys::napi_get_boolean(env, *b, &mut out),
                "creating a boolean"
            );
        }
        Value::Number(n) => {
            napi_try!(
                env,
                sys::napi_create_double(env, *n, &mut out),
                "creating a number"
            );
        }
        Value::String(s) => {
            napi_try!(
                env,
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out),
                "creating a string"
            );
        }
        Value::Array(_) | Value::Object(_) if !super::stack::room_left() => {
            return Err(super::stack::too_deep("a value", None));
        }
        Value::Array(items) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                // SAFETY: same env and thread.
                values.push(unsafe { to_js_with(env, item, views) }?);
            }
            // SAFETY: same env and thread; the values are of this env.
            out = unsafe { super::array_of(env, &values) }?;
        }
        Value::Object(map) => {
            napi_try!(
                env,
                sys::napi_create_object(env, &mut out),
                "creating an object"
            );
            let mut properties = Vec::with_capacity(map.len());
            for (k, item) in map.iter() {
                let mut key = ptr::null_mut();
                napi_try!(
                    env,
                    sys::napi_create_string_utf8(
                        env,
                        k.as_ptr().cast(),
                        k.len() as isize,
                        &mut key
                    ),
                    "creating a key"
                );
                // SAFETY: same env and thread.
                let value = unsafe { to_js_with(env, item, views) }?;
                properties.push(super::data_property(ptr::null(), key, value));
            }
            napi_try!(
                env,
                sys::napi_define_properties(env, out, properties.len(), properties.as_ptr()),
                "filling an object"
            );
        }
        Value::Bytes(bytes) => {
            let mut data: *mut std::ffi::c_void = ptr::null_mut();
            let mut buffer = ptr::null_mut();
            napi_try!(
                env,
                sys::napi_create_arraybuffer(env, bytes.len(), &mut data, &mut buffer),
                "creating an ArrayBuffer"
            );
            if !bytes.is_empty() {
                // SAFETY: the new ArrayBuffer's `data` is valid for bytes.len() bytes and not
                // aliased by anything else yet.
                unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data as *mut u8, bytes.len()) };
            }
            napi_try!(
                env,
                sys::napi_create_typedarray(
                    env,
                    sys::TypedarrayType::uint8_array,
                    bytes.len(),
                    buffer,
                    0,
                    &mut out
                ),
                "creating a Uint8Array"
            );
        }
        // A structured-clone message reaches JavaScript as its parts, for lib/clone.js to read
        // (the settle code or the job batch says what they are); where the frame is owned,
        // `cloned::frame_to_js` hands its moved buffers over without this copy.
        // SAFETY: caller contract.
        Value::Cloned(frame) => out = unsafe { super::cloned::frame_to_js(env, frame.clone()) }?,
        Value::Buffer(bytes) => {
            // One Node-API call: Node makes the Buffer without zero-filling it first, with
            // Buffer's prototype, so the caller needs no wrapping step.
            let mut data = ptr::null_mut();
            napi_try!(
                env,
                sys::napi_create_buffer_copy(
                    env,
                    bytes.len(),
                    bytes.as_ptr().cast(),
                    &mut data,
                    &mut out
                ),
                "creating a Buffer"
            );
        }
        Value::BigInt(b) => {
            napi_try!(
                env,
                sys::napi_create_bigint_words(
                    env,
                    i32::from(b.negative),
                    b.words.len(),
                    b.words.as_ptr(),
                    &mut out
                ),
                "creating a BigInt"
            );
        }
    }
    Ok(out)
}

/// Creates the JS string of `text` from whichever encoding it is in. A text longer than the
/// engine's longest string is an error (V8's RangeError is cleared).
///
/// # Safety
/// Must run on the env's JS thread.
pub unsafe fn text_to_js(env: sys::napi_env, text: &JsText) -> Converted<sys::napi_value> {
    // SAFETY: caller contract.
    unsafe { make_text(env, text) }.map_err(|why| {
        let (n, unit) = match text {
            JsText::Utf8(s) => (s.len(), "bytes of UTF-8"),
            JsText::Latin1(b) => (b.len(), "characters"),
            JsText::Utf16(u) => (u.len(), "UTF-16 units"),
        };
        if n > MAX_JS_STRING {
            format!(
                "a string of {n} {unit} is too long for JavaScript (its longest string has \
                 {MAX_JS_STRING} UTF-16 units)"
            )
        } else {
            why
        }
    })
}

/// # Safety
/// Must run on the env's JS thread.
unsafe fn make_text(env: sys::napi_env, text: &JsText) -> Converted<sys::napi_value> {
    let mut out = ptr::null_mut();
    let what = "creating a string";
    match text {
        JsText::Utf8(s) => {
            napi_try!(
                env,
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out),
                what
            );
        }
        JsText::Latin1(bytes) => {
            napi_try!(
                env,
                sys::napi_create_string_latin1(
                    env,
                    bytes.as_ptr().cast(),
                    bytes.len() as isize,
                    &mut out
                ),
                what
            );
        }
        JsText::Utf16(units) => {
            napi_try!(
                env,
                sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out),
                what
            );
        }
    }
    Ok(out)
}

/// A pending render as a JavaScript value: an external holding it.
///
/// # Safety
/// Must run on `env`'s JS thread.
pub(crate) unsafe fn pending_to_js(
    env: sys::napi_env,
    pending: &Pending,
) -> Converted<sys::napi_value> {
    let data = Box::into_raw(Box::new(pending.clone())) as *mut c_void;
    let mut out = ptr::null_mut();
    // SAFETY: caller contract; `data` is a leaked Box<Pending> that `drop_pending` reclaims
    // exactly once, when the external is collected.
    let status = unsafe {
        sys::napi_create_external(env, data, Some(drop_pending), ptr::null_mut(), &mut out)
    };
    if status != sys::Status::napi_ok {
        // SAFETY: creation failed, so no finalizer will run: reclaim it here.
        drop(unsafe { Box::from_raw(data as *mut Pending) });
        // SAFETY: caller contract.
        return Err(unsafe { super::failure(env, status, "handing over a pending render") });
    }
    Ok(out)
}

unsafe extern "C" fn drop_pending(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Pending> leaked in `pending_to_js`; Node finalizes once.
    drop(unsafe { Box::from_raw(data as *mut Pending) });
}
