//! JavaScript values ⇄ [`Value`], with raw Node-API calls (the hot path of every call).
//!
//! [`from_js`] reads params and results out of JavaScript; [`to_js`] makes JavaScript values of
//! results and params. This module holds what both directions share: strings, the error text of
//! a failed Node-API call, and the rule that no JavaScript exception is ever left pending. A
//! getter, a Proxy trap or a `toString` may throw in the middle of a conversion; every failed
//! call here takes that exception (`napi_get_and_clear_last_exception`) and turns it into the
//! conversion's error message, so that nothing escapes into the caller's JavaScript and every
//! call can still be settled through the normal path.

pub mod arrays;
pub mod cloned;
pub mod from_js;
pub(crate) mod stack;
pub mod to_js;

pub(crate) use arrays::{array_of, define_element, define_index, List};
pub use from_js::{shared_view_of, FromJs};
pub(crate) use from_js::{typed_array, view_for_call};
pub use to_js::{text_to_js, to_js, to_js_with};

use napi::sys;
use std::ptr;

/// `Err` carries a message; the caller turns it into the right error code.
pub type Converted<T> = Result<T, String>;

/// Runs a Node-API call; on failure returns `Err` from the enclosing function with a message
/// saying what failed (and what was thrown, if it threw: the exception is cleared).
macro_rules! napi_try {
    ($env:expr, $e:expr, $what:expr) => {
        // SAFETY: the caller of the enclosing unsafe fn guarantees a live env on its JS thread
        // and napi_values from that env; every out-pointer passed is a live local.
        let status = unsafe { $e };
        if status != sys::Status::napi_ok {
            // SAFETY: the caller of the enclosing unsafe fn guarantees a live env on its JS thread.
            return Err(unsafe { $crate::bindings::convert::failure($env, status, $what) });
        }
    };
}
pub(crate) use napi_try;

/// The message for a Node-API call that returned `status` while doing `what`. When it failed
/// because JavaScript threw (a getter, a Proxy trap), the exception is cleared and described.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
pub(crate) unsafe fn failure(env: sys::napi_env, status: sys::napi_status, what: &str) -> String {
    // SAFETY: caller contract.
    match unsafe { take_exception(env) } {
        Some(thrown) => format!("{what} threw {thrown}"),
        None => format!("Node-API call failed ({status}) while {what}"),
    }
}

/// Clears the pending JavaScript exception, if any, and describes it.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
pub(crate) unsafe fn take_exception(env: sys::napi_env) -> Option<String> {
    let mut pending = false;
    let mut e = ptr::null_mut();
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe {
        if sys::napi_is_exception_pending(env, &mut pending) != sys::Status::napi_ok || !pending {
            return None;
        }
        if sys::napi_get_and_clear_last_exception(env, &mut e) != sys::Status::napi_ok {
            return Some("an exception".into());
        }
        Some(describe_thrown(env, e))
    }
}

/// A short description of a thrown value: `Error: message` for errors, the value for
/// primitives. It reads nothing but an Error's `name` and `message`, and an exception thrown
/// while reading them (a hostile getter) is cleared and leaves a placeholder.
///
/// # Safety
/// Must run on the live `env`'s JS thread, with `e` a value of that env.
pub(crate) unsafe fn describe_thrown(env: sys::napi_env, e: sys::napi_value) -> String {
    const LONGEST: usize = 200;
    let mut t = 0;
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe { sys::napi_typeof(env, e, &mut t) };
    let text = match t {
        // SAFETY: `e` is a string of this env.
        sys::ValueType::napi_string => unsafe { prefix(env, e) },
        sys::ValueType::napi_number
        | sys::ValueType::napi_boolean
        | sys::ValueType::napi_bigint
        | sys::ValueType::napi_undefined
        | sys::ValueType::napi_null => {
            // Primitives other than symbols convert without running JavaScript.
            let mut s = ptr::null_mut();
            // SAFETY: caller contract: `e` is a value of the live env, on its JS thread.
            unsafe {
                if sys::napi_coerce_to_string(env, e, &mut s) == sys::Status::napi_ok {
                    prefix(env, s)
                } else {
                    take_exception_quietly(env);
                    "a primitive".into()
                }
            }
        }
        sys::ValueType::napi_object => {
            let mut is_error = false;
            // SAFETY: caller contract: `e` is a value of the live env. A Proxy is never an Error
            // here (no trap runs).
            unsafe { sys::napi_is_error(env, e, &mut is_error) };
            if is_error {
                // SAFETY: caller contract: `e` is an object of the live env, on its JS thread.
                let name = unsafe { string_property(env, e, c"name") };
                // SAFETY: caller contract: `e` is an object of the live env, on its JS thread.
                let message = unsafe { string_property(env, e, c"message") };
                match (name, message) {
                    (Some(n), Some(m)) => format!("{n}: {m}"),
                    (None, Some(m)) => format!("Error: {m}"),
                    (Some(n), None) => format!("{n} (whose message could not be read)"),
                    (None, None) => "an Error whose message could not be read".into(),
                }
            } else {
                "an object".into()
            }
        }
        sys::ValueType::napi_function => "a function".into(),
        sys::ValueType::napi_symbol => "a symbol".into(),
        _ => "a value".into(),
    };
    if text.len() <= LONGEST {
        return text;
    }
    let mut cut = LONGEST;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// `e[name]` when it is a string; `None` when it is not or reading it threw (cleared).
///
/// # Safety
/// Must run on the live `env`'s JS thread, with `e` an object of that env.
unsafe fn string_property(
    env: sys::napi_env,
    e: sys::napi_value,
    name: &std::ffi::CStr,
) -> Option<String> {
    let mut v = ptr::null_mut();
    let mut t = 0;
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe {
        if sys::napi_get_named_property(env, e, name.as_ptr(), &mut v) != sys::Status::napi_ok {
            take_exception_quietly(env);
            return None;
        }
        sys::napi_typeof(env, v, &mut t);
        if t != sys::ValueType::napi_string {
            return None;
        }
        Some(prefix(env, v))
    }
}

/// The start of the string `v`, for a message: never more than a few hundred bytes are read,
/// however long the string is.
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
unsafe fn prefix(env: sys::napi_env, v: sys::napi_value) -> String {
    let mut buf = [0u8; 256];
    let mut written = 0usize;
    // SAFETY: caller contract; Node-API writes at most buf.len() − 1 bytes of whole chars.
    let status = unsafe {
        sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), buf.len(), &mut written)
    };
    if status != sys::Status::napi_ok {
        return String::new();
    }
    String::from_utf8_lossy(&buf[..written.min(buf.len())]).into_owned()
}

/// The decimal digits of `n`, written at the end of `buf` before a closing NUL, so that they
/// can also be read as a C string (for error paths and index names, without an allocation).
pub(crate) fn itoa(mut n: usize, buf: &mut [u8; 21]) -> &str {
    let mut at = buf.len() - 1;
    buf[at] = 0;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..buf.len() - 1]).unwrap_or("?")
}

/// An own data property holding `value`, named by the C string `utf8name` or, when that is
/// null, by the key `name`: writable, enumerable and configurable, as `JSON.parse` and an
/// assignment to a new key make it, but defined (`napi_define_properties`), so that no setter
/// on a prototype runs.
pub(crate) fn data_property(
    utf8name: *const std::ffi::c_char,
    name: sys::napi_value,
    value: sys::napi_value,
) -> sys::napi_property_descriptor {
    sys::napi_property_descriptor {
        utf8name,
        name,
        method: None,
        getter: None,
        setter: None,
        value,
        attributes: sys::PropertyAttributes::writable
            | sys::PropertyAttributes::enumerable
            | sys::PropertyAttributes::configurable,
        data: ptr::null_mut(),
    }
}

/// Clears a pending exception without looking at it.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
pub(crate) unsafe fn take_exception_quietly(env: sys::napi_env) {
    let mut pending = false;
    let mut e = ptr::null_mut();
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe {
        sys::napi_is_exception_pending(env, &mut pending);
        if pending {
            sys::napi_get_and_clear_last_exception(env, &mut e);
        }
    }
}

/// A place in a value (`params[2].rows[7].name`) for an error message, shortened when it is
/// very long (a cyclic value's path repeats itself hundreds of times).
pub(crate) fn place(path: &str) -> std::borrow::Cow<'_, str> {
    const KEEP: usize = 60;
    if path.len() <= 2 * KEEP + 10 {
        return path.into();
    }
    let mut head = KEEP;
    while !path.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = path.len() - KEEP;
    while !path.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…{}", &path[..head], &path[tail..]).into()
}

/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn string(env: sys::napi_env, v: sys::napi_value) -> Converted<String> {
    let mut stack = [0u8; SMALL_STRING];
    // SAFETY: as for this function.
    Ok(match unsafe { read_utf8(env, v, &mut stack) }? {
        Utf8::Stack(s) => s.to_owned(),
        Utf8::Heap(s) => s,
    })
}

/// Calls `f` with the string `v` without allocating when it is short (method names).
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn with_str<R>(
    env: sys::napi_env,
    v: sys::napi_value,
    f: impl FnOnce(&str) -> R,
) -> Converted<R> {
    let mut stack = [0u8; SMALL_STRING];
    // SAFETY: as for this function.
    Ok(match unsafe { read_utf8(env, v, &mut stack) }? {
        Utf8::Stack(s) => f(s),
        Utf8::Heap(s) => f(&s),
    })
}

/// Strings of up to about this many bytes of UTF-8 are read through the stack.
const SMALL_STRING: usize = 256;

/// A string read as UTF-8: into the caller's stack buffer, or (too long for it) its own.
enum Utf8<'a> {
    Stack(&'a str),
    Heap(String),
}

/// Reads the string `v` as UTF-8, in one pass over it when it fits `stack`, else in two.
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
unsafe fn read_utf8<'a>(
    env: sys::napi_env,
    v: sys::napi_value,
    stack: &'a mut [u8; SMALL_STRING],
) -> Converted<Utf8<'a>> {
    let invalid = "a string was not valid UTF-8";
    let mut written = 0usize;
    napi_try!(
        env,
        sys::napi_get_value_string_utf8(
            env,
            v,
            stack.as_mut_ptr().cast(),
            SMALL_STRING,
            &mut written
        ),
        "reading a string"
    );
    // Node-API writes whole chars only, at most 4 bytes each, and at most SMALL_STRING − 1
    // bytes: when 4 more would still have fitted, nothing was left out. (Nearer the end, a
    // short write does not prove the string ended: the next char may just not have fitted.)
    if written + 4 < SMALL_STRING {
        let bytes = stack
            .get(..written)
            .ok_or_else(|| "a string was misread".to_string())?;
        // Node-API writes valid UTF-8 (lone surrogates become U+FFFD).
        return std::str::from_utf8(bytes)
            .map(Utf8::Stack)
            .map_err(|_| invalid.to_string());
    }
    // The length in UTF-16 units is known without reading the string; a unit takes at most 3
    // bytes of UTF-8 (a surrogate pair takes 4 for its 2 units, a lone surrogate becomes the
    // 3-byte U+FFFD), so one write into a buffer of that size (plus Node-API's NUL) reads it.
    // Measuring the UTF-8 length first would cost a pass of its own over the string.
    let mut units = 0usize;
    napi_try!(
        env,
        sys::napi_get_value_string_utf16(env, v, ptr::null_mut(), 0, &mut units),
        "measuring a string"
    );
    let size = units
        .checked_mul(3)
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| format!("a string of {units} UTF-16 units is too long to read"))?;
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(size)
        .map_err(|_| format!("no memory to read a string of {units} UTF-16 units"))?;
    napi_try!(
        env,
        sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), size, &mut written),
        "reading a string"
    );
    if written >= size {
        return Err("a string was misread".into());
    }
    // SAFETY: Node-API wrote `written` bytes of UTF-8 (then a NUL, left out) at the start of
    // the buffer, within its `size` bytes of capacity (checked above).
    unsafe { buf.set_len(written) };
    if buf.capacity() - written > written / 8 {
        buf.shrink_to_fit();
    }
    String::from_utf8(buf)
        .map(Utf8::Heap)
        .map_err(|_| invalid.to_string())
}

/// False once `env` can no longer run JavaScript: its thread is being terminated
/// (`worker.terminate()`) or is exiting. Then every Node-API call that may run JavaScript fails
/// with a pending-exception status although no exception is pending, so a conversion that
/// failed says nothing about the value it was given.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
pub unsafe fn can_run_js(env: sys::napi_env) -> bool {
    let mut pending = false;
    // SAFETY: caller contract; the out-pointers are live locals.
    unsafe {
        if sys::napi_is_exception_pending(env, &mut pending) != sys::Status::napi_ok {
            return false;
        }
        if pending {
            return true; // a real exception, thrown by JavaScript that did run
        }
        let mut array = ptr::null_mut();
        let mut undefined = ptr::null_mut();
        sys::napi_create_array(env, &mut array) == sys::Status::napi_ok
            && sys::napi_get_undefined(env, &mut undefined) == sys::Status::napi_ok
            && define_element(env, array, 0, undefined).is_ok()
    }
}

/// The string `v` as UTF-16 code units: a plain copy on the JS thread, however the string is
/// stored (see `rpc::text`).
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn string_utf16(env: sys::napi_env, v: sys::napi_value) -> Converted<Vec<u16>> {
    // SAFETY: caller contract; `read` gets a buffer of `n` units and a live out-pointer.
    unsafe {
        read_units(env, "UTF-16 units", |buf, n, written| {
            sys::napi_get_value_string_utf16(env, v, buf, n, written)
        })
    }
}

/// The string `v` as Latin-1, one byte per UTF-16 unit: a plain copy on the JS thread when V8
/// stores it as one byte per unit. Units above 0xFF would be cut to their low byte, so the
/// caller must know there are none (lib/params.js tests the text).
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn string_latin1(env: sys::napi_env, v: sys::napi_value) -> Converted<Vec<u8>> {
    // SAFETY: `v` is a string of the live env, on its JS thread (caller contract).
    unsafe {
        read_units(env, "characters", |buf: *mut u8, n, written| {
            sys::napi_get_value_string_latin1(env, v, buf.cast(), n, written)
        })
    }
}

/// The string `v`, every UTF-16 unit of which is ≤ 0xFF (the caller knows), read as Latin-1:
/// one copy of V8's one-byte string, kept as it is when it is ASCII (most templates), else
/// made UTF-8. (Anything above 0xFF would read as `?`.)
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn string_from_latin1(env: sys::napi_env, v: sys::napi_value) -> Converted<String> {
    // SAFETY: as for this function.
    let bytes = unsafe { string_latin1(env, v) }?;
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Ok(unsafe { String::from_utf8_unchecked(bytes) })
    } else {
        Ok(crate::rpc::text::latin1_to_utf8(&bytes))
    }
}

/// The used part of a packed-params tape (`rpc::packed`): a Float64Array whose entry 0 says how
/// many entries are used, itself included. Those are copied; the array is lib/params.js's own,
/// reused by the next call.
///
/// # Safety
/// `v` must be a value of the live `env`, on its JS thread.
pub unsafe fn packed_tape(env: sys::napi_env, v: sys::napi_value) -> Converted<Vec<f64>> {
    let mut kind = sys::TypedarrayType::int8_array;
    let mut length = 0usize;
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    // SAFETY: caller contract; out-pointers are live locals. (On a value that is not a typed
    // array, Node-API answers napi_invalid_arg and throws nothing.)
    let ok = unsafe {
        sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            ptr::null_mut(),
            ptr::null_mut(),
        ) == sys::Status::napi_ok
    };
    if !ok || kind != sys::TypedarrayType::float64_array || length == 0 || data.is_null() {
        return Err("packed params without their tape".into());
    }
    let data = data as *const f64;
    // SAFETY: `data` points at `length` ≥ 1 f64 elements of the array (Node-API's answer), which
    // nothing else touches while this JS thread runs here; read unaligned to assume nothing.
    let used = unsafe { data.read_unaligned() };
    let used = match crate::rpc::packed::whole(used, length) {
        Some(used) if used >= 1 => used,
        _ => return Err("packed params with a tape of a wrong length".into()),
    };
    let mut tape: Vec<f64> = Vec::new();
    tape.try_reserve_exact(used)
        .map_err(|_| format!("no memory to read packed params of {used} entries"))?;
    // SAFETY: `used` ≤ `length` elements are readable at `data` (above), and `tape` has room
    // for `used` f64s; the two do not overlap (the Vec is new). Copied as bytes, so alignment
    // does not matter.
    unsafe {
        ptr::copy_nonoverlapping(data.cast::<u8>(), tape.as_mut_ptr().cast::<u8>(), used * 8);
        tape.set_len(used);
    }
    Ok(tape)
}

/// A string's units through `read(buffer, capacity, written)`, a Node-API string reader of
/// `env`: measured (a null buffer), then written into a buffer of exactly that many and a NUL.
///
/// # Safety
/// `read` must be a Node-API string reader of the live `env` on its JS thread: with a null
/// buffer it sets the length, else it writes at most `capacity` units and sets `written`.
unsafe fn read_units<T>(
    env: sys::napi_env,
    unit: &str,
    read: impl Fn(*mut T, usize, &mut usize) -> sys::napi_status,
) -> Converted<Vec<T>> {
    let failed = |status, what| {
        // SAFETY: as for this function.
        Err(unsafe { failure(env, status, what) })
    };
    let mut len = 0usize;
    let status = read(ptr::null_mut(), 0, &mut len);
    if status != sys::Status::napi_ok {
        return failed(status, "measuring a string");
    }
    let mut buf: Vec<T> = Vec::new();
    buf.try_reserve_exact(len + 1)
        .map_err(|_| format!("no memory to read a string of {len} {unit}"))?;
    let mut written = 0usize;
    let status = read(buf.as_mut_ptr(), len + 1, &mut written);
    if status != sys::Status::napi_ok {
        return failed(status, "reading a string");
    }
    if written > len {
        return Err("a string was misread".into());
    }
    // SAFETY: Node-API wrote `written` units (then a NUL, left out) at the start of the
    // buffer, within its `len + 1` units of capacity (checked above).
    unsafe { buf.set_len(written) };
    Ok(buf)
}

/// `describeThrown(e)`: how the native side describes a thrown value in its messages
/// ([`describe_thrown`]), for JavaScript's messages about the same throws (lib/clone.js), so that
/// both say it alike.
#[napi_derive::napi(js_name = "describeThrown", catch_unwind)]
pub fn describe_thrown_js(env: napi::Env, e: napi::Unknown) -> String {
    use napi::JsValue;
    // SAFETY: a Node-API callback on `env`'s JS thread, with `e` one of its values.
    unsafe { describe_thrown(env.raw(), e.raw()) }
}
