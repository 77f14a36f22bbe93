//! JavaScript values ⇄ [`Value`], with raw Node-API calls (the hot path of every call).
//!
//! What crosses: JSON values; typed arrays over a SharedArrayBuffer as [`SharedView`]s (by
//! reference: the JS side keeps the array referenced until the call settles, which keeps the
//! memory alive); Uint8Arrays/Buffers over ordinary memory and BigInts by value. Everything else
//! (functions, symbols, Dates, class instances, Maps, non-shared typed arrays other than
//! Uint8Array, cycles) is refused with an InvalidParams error that names the value's place and
//! type, instead of being silently changed the way `JSON.stringify` would change it.

use crate::rpc::value::BigInt;
use crate::rpc::{JsText, Map, RpcError, Value};
use crate::shm::{ElementKind, SharedView};
use napi::sys;
use std::ptr;

/// A JavaScript nesting deeper than this is almost surely a cycle.
const MAX_DEPTH: usize = 512;

/// `Err` carries a message; the caller turns it into the right error code.
pub type Converted<T> = Result<T, String>;

macro_rules! napi_try {
    ($e:expr, $what:expr) => {
        // SAFETY: the caller of the enclosing unsafe fn guarantees a live env on its JS thread
        // and napi_values from that env; every out-pointer passed is a live local.
        let status = unsafe { $e };
        if status != sys::Status::napi_ok {
            return Err(format!("Node-API call failed ({}) while {}", status, $what));
        }
    };
}

/// Converts JS → Value for one env; caches `Object.prototype` for the plain-object check.
pub struct FromJs {
    env: sys::napi_env,
    object_prototype: sys::napi_value,
    /// Every typed array over a SharedArrayBuffer met, in conversion order: a call of a
    /// JavaScript-served method sends these objects to the serving thread.
    pub views: Vec<sys::napi_value>,
}

thread_local! {
    /// This thread's environment and a reference to the `Object.prototype` its conversions met
    /// first, so that later conversions recognise it with one comparison.
    static OBJECT_PROTOTYPE: std::cell::Cell<(sys::napi_env, sys::napi_ref)> =
        const { std::cell::Cell::new((ptr::null_mut(), ptr::null_mut())) };
}

impl FromJs {
    pub fn new(env: sys::napi_env) -> Self {
        FromJs {
            env,
            object_prototype: ptr::null_mut(),
            views: Vec::new(),
        }
    }

    pub fn env(&self) -> sys::napi_env {
        self.env
    }

    /// Converts every element of a JS array (the params of a call).
    ///
    /// # Safety
    /// Must run on the env's JS thread, with `array` a value of that env.
    pub unsafe fn params(&mut self, array: sys::napi_value) -> Result<Vec<Value>, RpcError> {
        let env = self.env;
        let wrap = |m: String| RpcError::invalid_params(m);
        let mut is_array = false;
        // SAFETY: live env and value (caller contract).
        unsafe { sys::napi_is_array(env, array, &mut is_array) };
        if !is_array {
            // SAFETY: as above.
            let v = unsafe { self.value(array, 0, &mut String::from("params")) }.map_err(wrap)?;
            return Ok(vec![v]);
        }
        let mut len = 0u32;
        // SAFETY: as above; `array` is an array.
        unsafe { sys::napi_get_array_length(env, array, &mut len) };
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut item = ptr::null_mut();
            // SAFETY: as above; i < length.
            unsafe { sys::napi_get_element(env, array, i, &mut item) };
            let mut path = format!("params[{i}]");
            // SAFETY: as above.
            out.push(unsafe { self.value(item, 0, &mut path) }.map_err(wrap)?);
        }
        Ok(out)
    }

    /// Converts one JS value. `path` names its place for error messages.
    ///
    /// # Safety
    /// Must run on the env's JS thread, with `v` a value of that env.
    pub unsafe fn value(
        &mut self,
        v: sys::napi_value,
        depth: usize,
        path: &mut String,
    ) -> Converted<Value> {
        let env = self.env;
        let mut t = 0;
        napi_try!(sys::napi_typeof(env, v, &mut t), "reading a type");
        match t {
            sys::ValueType::napi_undefined | sys::ValueType::napi_null => Ok(Value::Null),
            sys::ValueType::napi_boolean => {
                let mut b = false;
                napi_try!(sys::napi_get_value_bool(env, v, &mut b), "reading a boolean");
                Ok(Value::Bool(b))
            }
            sys::ValueType::napi_number => {
                let mut n = 0.0;
                napi_try!(sys::napi_get_value_double(env, v, &mut n), "reading a number");
                Ok(Value::Number(n))
            }
            // SAFETY: v is a string of this env.
            sys::ValueType::napi_string => unsafe { string(env, v) }.map(Value::String),
            // SAFETY: v is a bigint of this env.
            sys::ValueType::napi_bigint => unsafe { bigint(env, v) }.map(Value::BigInt),
            sys::ValueType::napi_function => Err(format!(
                "{path} is a function: functions (such as Mustache lambdas) cannot be sent to a \
                 native thread; compute the value first, or render with mustache.js on the main thread"
            )),
            sys::ValueType::napi_symbol => Err(format!("{path} is a symbol, which cannot be sent")),
            sys::ValueType::napi_object => {
                if depth >= MAX_DEPTH {
                    return Err(format!(
                        "{path} is nested more than {MAX_DEPTH} levels deep (is the value cyclic?)"
                    ));
                }
                // SAFETY: v is an object of this env.
                unsafe { self.object(v, depth, path) }
            }
            _ => Err(format!("{path} has a type that cannot be sent")),
        }
    }

    /// # Safety
    /// As for [`FromJs::value`], with `v` an object.
    unsafe fn object(
        &mut self,
        v: sys::napi_value,
        depth: usize,
        path: &mut String,
    ) -> Converted<Value> {
        let env = self.env;
        let mut flag = false;
        napi_try!(
            sys::napi_is_array(env, v, &mut flag),
            "checking for an array"
        );
        if flag {
            let mut len = 0u32;
            napi_try!(
                sys::napi_get_array_length(env, v, &mut len),
                "reading an array length"
            );
            let mut items = Vec::with_capacity(len as usize);
            for i in 0..len {
                let mut item = ptr::null_mut();
                napi_try!(
                    sys::napi_get_element(env, v, i, &mut item),
                    "reading an array element"
                );
                let mark = path.len();
                path.push_str(&format!("[{i}]"));
                // SAFETY: item is a value of this env.
                items.push(unsafe { self.value(item, depth + 1, path) }?);
                path.truncate(mark);
            }
            return Ok(Value::Array(items));
        }
        napi_try!(
            sys::napi_is_typedarray(env, v, &mut flag),
            "checking for a typed array"
        );
        if flag {
            // SAFETY: v is a typed array of this env.
            let value = unsafe { typed_array(env, v, path) }?;
            if let Value::View(_) = value {
                self.views.push(v);
            }
            return Ok(value);
        }
        napi_try!(
            sys::napi_is_arraybuffer(env, v, &mut flag),
            "checking for an ArrayBuffer"
        );
        if flag {
            return Err(format!(
                "{path} is an ArrayBuffer: pass a typed-array view (e.g. a Uint8Array) instead"
            ));
        }
        napi_try!(
            sys::napi_is_dataview(env, v, &mut flag),
            "checking for a DataView"
        );
        if flag {
            return Err(format!("{path} is a DataView: pass a typed array instead"));
        }
        napi_try!(sys::napi_is_date(env, v, &mut flag), "checking for a Date");
        if flag {
            return Err(format!(
                "{path} is a Date, which JSON would turn into a string: pass date.toISOString() \
                 (or render with mustache.js on the main thread)"
            ));
        }
        // Only plain objects: a class instance may compute fields in getters on its prototype,
        // which JSON.stringify would silently drop.
        let mut proto = ptr::null_mut();
        napi_try!(
            sys::napi_get_prototype(env, v, &mut proto),
            "reading a prototype"
        );
        let mut proto_type = 0;
        napi_try!(
            sys::napi_typeof(env, proto, &mut proto_type),
            "reading a prototype type"
        );
        if proto_type != sys::ValueType::napi_null {
            // SAFETY: proto is a value of this env.
            let plain = unsafe { self.is_object_prototype(proto) }?;
            if !plain {
                // SAFETY: v is an object of this env.
                let name =
                    unsafe { constructor_name(env, v) }.unwrap_or_else(|| "an object".into());
                return Err(format!(
                    "{path} is an instance of {name}: only plain objects, arrays, numbers, strings, \
                     booleans, null, BigInts, Uint8Arrays and typed arrays over SharedArrayBuffers \
                     can be sent (copy the fields you need into a plain object)"
                ));
            }
        }
        let mut keys = ptr::null_mut();
        napi_try!(
            sys::napi_get_all_property_names(
                env,
                v,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            ),
            "listing object keys"
        );
        let mut len = 0u32;
        napi_try!(
            sys::napi_get_array_length(env, keys, &mut len),
            "counting object keys"
        );
        let mut map = Map::with_capacity(len as usize);
        for i in 0..len {
            let mut key = ptr::null_mut();
            napi_try!(
                sys::napi_get_element(env, keys, i, &mut key),
                "reading a key"
            );
            let mut item = ptr::null_mut();
            napi_try!(
                sys::napi_get_property(env, v, key, &mut item),
                "reading a property"
            );
            // SAFETY: key is a string of this env (numbers_to_strings).
            let name = unsafe { string(env, key) }?;
            let mark = path.len();
            path.push('.');
            path.push_str(&name);
            // SAFETY: item is a value of this env.
            let value = unsafe { self.value(item, depth + 1, path) }?;
            path.truncate(mark);
            // Own enumerable keys are unique, so no duplicate check is needed.
            map.push_unique(name, value);
        }
        Ok(Value::Object(map))
    }

    /// True when `proto` is an `Object.prototype`: of this realm or another one (a `vm`
    /// context, a test runner's sandbox), recognised by having no prototype itself and a
    /// `constructor` named "Object".
    ///
    /// # Safety
    /// As for [`FromJs::value`].
    unsafe fn is_object_prototype(&mut self, proto: sys::napi_value) -> Converted<bool> {
        let env = self.env;
        if self.object_prototype.is_null() {
            let (cached_env, reference) = OBJECT_PROTOTYPE.with(|c| c.get());
            if cached_env == env && !reference.is_null() {
                // SAFETY: `reference` was made in this env (checked above) on this thread (a
                // thread-local) and lives as long as the env. On failure the value stays null
                // and the slow check below runs.
                unsafe {
                    sys::napi_get_reference_value(env, reference, &mut self.object_prototype)
                };
            }
        }
        if !self.object_prototype.is_null() {
            let mut same = false;
            napi_try!(
                sys::napi_strict_equals(env, proto, self.object_prototype, &mut same),
                "comparing prototypes"
            );
            if same {
                return Ok(true);
            }
        }
        let mut parent = ptr::null_mut();
        napi_try!(
            sys::napi_get_prototype(env, proto, &mut parent),
            "reading a prototype"
        );
        let mut t = 0;
        napi_try!(
            sys::napi_typeof(env, parent, &mut t),
            "reading a prototype type"
        );
        if t != sys::ValueType::napi_null {
            return Ok(false);
        }
        // SAFETY: proto is an object of this env.
        let plain = unsafe { constructor_name(env, proto) }.is_some_and(|n| n == "Object");
        if plain {
            self.object_prototype = proto;
            if OBJECT_PROTOTYPE.with(|c| c.get().0) != env {
                let mut reference = ptr::null_mut();
                // SAFETY: live env on its JS thread (caller contract); `proto` is an object of
                // it. The reference lives until the env is torn down (Node frees it then).
                let made = unsafe { sys::napi_create_reference(env, proto, 1, &mut reference) };
                if made == sys::Status::napi_ok {
                    OBJECT_PROTOTYPE.with(|c| c.set((env, reference)));
                }
            }
        }
        Ok(plain)
    }
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
            && sys::napi_set_element(env, array, 0, undefined) == sys::Status::napi_ok
    }
}

/// The string `v` as UTF-16 code units: a plain copy on the JS thread, however the string is
/// stored (see `rpc::text`).
///
/// # Safety
/// `v` must be a string of the live `env`, on its JS thread.
pub unsafe fn string_utf16(env: sys::napi_env, v: sys::napi_value) -> Converted<Vec<u16>> {
    let mut len = 0usize;
    napi_try!(
        sys::napi_get_value_string_utf16(env, v, ptr::null_mut(), 0, &mut len),
        "measuring a string"
    );
    let mut buf = vec![0u16; len + 1];
    let mut written = 0usize;
    napi_try!(
        sys::napi_get_value_string_utf16(env, v, buf.as_mut_ptr(), len + 1, &mut written),
        "reading a string"
    );
    buf.truncate(written);
    Ok(buf)
}

/// Creates the JS string of `text` from whichever encoding it is in.
///
/// # Safety
/// Must run on the env's JS thread.
pub unsafe fn text_to_js(env: sys::napi_env, text: &JsText) -> Converted<sys::napi_value> {
    let mut out = ptr::null_mut();
    match text {
        JsText::Utf8(s) => {
            napi_try!(
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out),
                "creating a string"
            );
        }
        JsText::Latin1(bytes) => {
            napi_try!(
                sys::napi_create_string_latin1(
                    env,
                    bytes.as_ptr().cast(),
                    bytes.len() as isize,
                    &mut out
                ),
                "creating a string"
            );
        }
        JsText::Utf16(units) => {
            napi_try!(
                sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out),
                "creating a string"
            );
        }
    }
    Ok(out)
}

/// # Safety
/// `v` must be a bigint of the live `env`, on its JS thread.
unsafe fn bigint(env: sys::napi_env, v: sys::napi_value) -> Converted<BigInt> {
    let mut sign = 0i32;
    let mut count = 0usize;
    napi_try!(
        sys::napi_get_value_bigint_words(env, v, ptr::null_mut(), &mut count, ptr::null_mut()),
        "measuring a BigInt"
    );
    let mut words = vec![0u64; count];
    napi_try!(
        sys::napi_get_value_bigint_words(env, v, &mut sign, &mut count, words.as_mut_ptr()),
        "reading a BigInt"
    );
    Ok(BigInt {
        negative: sign != 0,
        words,
    })
}

/// A typed array as a call param: a [`SharedView`] over a SharedArrayBuffer, a copy of a
/// Uint8Array over ordinary memory, or an error naming `path`.
///
/// # Safety
/// `v` must be a typed array of the live `env`, on its JS thread.
pub(crate) unsafe fn typed_array(
    env: sys::napi_env,
    v: sys::napi_value,
    path: &str,
) -> Converted<Value> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    napi_try!(
        sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset
        ),
        "reading a typed array"
    );
    let kind = match kind {
        sys::TypedarrayType::int8_array => ElementKind::Int8,
        sys::TypedarrayType::uint8_array => ElementKind::Uint8,
        sys::TypedarrayType::uint8_clamped_array => ElementKind::Uint8Clamped,
        sys::TypedarrayType::int16_array => ElementKind::Int16,
        sys::TypedarrayType::uint16_array => ElementKind::Uint16,
        sys::TypedarrayType::int32_array => ElementKind::Int32,
        sys::TypedarrayType::uint32_array => ElementKind::Uint32,
        sys::TypedarrayType::float32_array => ElementKind::Float32,
        sys::TypedarrayType::float64_array => ElementKind::Float64,
        sys::TypedarrayType::bigint64_array => ElementKind::BigInt64,
        sys::TypedarrayType::biguint64_array => ElementKind::BigUint64,
        _ => return Err(format!("{path} is a typed array of an unknown kind")),
    };
    // `napi_is_arraybuffer` is false for a SharedArrayBuffer (V8's IsArrayBuffer).
    let mut plain = false;
    napi_try!(
        sys::napi_is_arraybuffer(env, buffer, &mut plain),
        "checking the buffer kind"
    );
    if plain {
        if kind == ElementKind::Uint8 {
            let bytes = if length == 0 || data.is_null() {
                Vec::new()
            } else {
                // SAFETY: Node-API reports `data` valid for `length` bytes of this Uint8Array;
                // we are on the JS thread, so nothing detaches or writes it while we copy.
                unsafe { std::slice::from_raw_parts(data as *const u8, length) }.to_vec()
            };
            return Ok(Value::Bytes(bytes));
        }
        return Err(format!(
            "{path} is a {} over an ordinary ArrayBuffer: pass it over a SharedArrayBuffer \
             (shared by reference) or as a plain array",
            kind.js_name()
        ));
    }
    let ptr = if length == 0 || data.is_null() {
        // An empty view is never dereferenced; any aligned non-null address will do.
        kind.size() as *mut u8
    } else {
        data as *mut u8
    };
    // SAFETY: `ptr` is the view's first element (Node-API adjusts it by byteOffset), valid for
    // `length` elements of the SharedArrayBuffer, whose memory never moves; the JS side keeps
    // the array referenced until the call settles, and a departing environment waits for its
    // running jobs (pool::origin), so the memory outlives every use of the view.
    match unsafe { SharedView::new(ptr, length, kind) } {
        Some(view) => Ok(Value::View(view)),
        None => Err(format!("{path} is not aligned for its element type")),
    }
}

/// The memory of typed array `v`, shared or not, as a view for use during the current
/// Node-API callback only, and whether it lies in a SharedArrayBuffer. For arguments that
/// native code reads or fills synchronously (a ring buffer's `write(data)`); memory that native
/// code keeps must come from [`typed_array`], which accepts only SharedArrayBuffers.
///
/// # Safety
/// `v` must be a value of the live `env`, on its JS thread, and the view must not be used after
/// the callback returns (an ordinary ArrayBuffer may then be detached or collected).
pub(crate) unsafe fn view_for_call(
    env: sys::napi_env,
    v: sys::napi_value,
    what: &str,
) -> Converted<(SharedView, bool)> {
    let mut kind = 0;
    let mut length = 0usize;
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    // SAFETY: live env and value (caller contract); out-pointers are live locals. Node-API
    // answers napi_invalid_arg when `v` is not a typed array.
    let status = unsafe {
        sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset,
        )
    };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
        return Err(format!("{what} must be a Uint8Array"));
    }
    let mut plain = false;
    napi_try!(
        sys::napi_is_arraybuffer(env, buffer, &mut plain),
        "checking the buffer kind"
    );
    let ptr = if length == 0 || data.is_null() {
        // An empty view is never dereferenced; any non-null address will do.
        ptr::NonNull::<u8>::dangling().as_ptr()
    } else {
        data as *mut u8
    };
    // SAFETY: Node-API reports `ptr` valid for `length` bytes of the Uint8Array; the caller
    // uses the view only while this callback runs, when the array's buffer cannot be detached
    // or collected (the argument keeps it alive, and only this JS thread could detach it).
    match unsafe { SharedView::new(ptr, length, ElementKind::Uint8) } {
        Some(view) => Ok((view, !plain)),
        None => Err(format!("{what} could not be read")),
    }
}

/// The memory a typed array over a SharedArrayBuffer views, to match it with a
/// [`Value::View`] of the same memory; `None` for any other value.
///
/// # Safety
/// `v` must be a value of the live `env`, on its JS thread.
pub unsafe fn shared_view_of(env: sys::napi_env, v: sys::napi_value) -> Option<SharedView> {
    let mut is_typed = false;
    // SAFETY: live env and value (caller contract).
    unsafe { sys::napi_is_typedarray(env, v, &mut is_typed) };
    if !is_typed {
        return None;
    }
    // SAFETY: as above; v is a typed array. Only its address is used: the view is compared,
    // never dereferenced.
    match unsafe { typed_array(env, v, "") } {
        Ok(Value::View(view)) => Some(view),
        _ => None,
    }
}

/// # Safety
/// `v` must be an object of the live `env`, on its JS thread.
unsafe fn constructor_name(env: sys::napi_env, v: sys::napi_value) -> Option<String> {
    let mut ctor = ptr::null_mut();
    let mut name = ptr::null_mut();
    // SAFETY: live env, v an object (caller contract).
    unsafe {
        if sys::napi_get_named_property(env, v, c"constructor".as_ptr(), &mut ctor)
            != sys::Status::napi_ok
        {
            return None;
        }
        if sys::napi_get_named_property(env, ctor, c"name".as_ptr(), &mut name)
            != sys::Status::napi_ok
        {
            return None;
        }
        let mut t = 0;
        sys::napi_typeof(env, name, &mut t);
        if t != sys::ValueType::napi_string {
            return None;
        }
        string(env, name).ok().filter(|s| !s.is_empty())
    }
}

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
                napi_try!(sys::napi_get_null(env, &mut out), "creating null");
            }
        },
        Value::Null => {
            napi_try!(sys::napi_get_null(env, &mut out), "creating null");
        }
        Value::Bool(b) => {
            napi_try!(
                sys::napi_get_boolean(env, *b, &mut out),
                "creating a boolean"
            );
        }
        Value::Number(n) => {
            napi_try!(
                sys::napi_create_double(env, *n, &mut out),
                "creating a number"
            );
        }
        Value::String(s) => {
            napi_try!(
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out),
                "creating a string"
            );
        }
        Value::Array(items) => {
            napi_try!(
                sys::napi_create_array_with_length(env, items.len(), &mut out),
                "creating an array"
            );
            for (i, item) in items.iter().enumerate() {
                // SAFETY: same env and thread.
                let v = unsafe { to_js_with(env, item, views) }?;
                napi_try!(
                    sys::napi_set_element(env, out, i as u32, v),
                    "filling an array"
                );
            }
        }
        Value::Object(map) => {
            napi_try!(sys::napi_create_object(env, &mut out), "creating an object");
            for (k, item) in map.iter() {
                let mut key = ptr::null_mut();
                napi_try!(
                    sys::napi_create_string_utf8(
                        env,
                        k.as_ptr().cast(),
                        k.len() as isize,
                        &mut key
                    ),
                    "creating a key"
                );
                // SAFETY: same env and thread.
                let v = unsafe { to_js_with(env, item, views) }?;
                napi_try!(
                    sys::napi_set_property(env, out, key, v),
                    "filling an object"
                );
            }
        }
        Value::Bytes(bytes) => {
            let mut data: *mut std::ffi::c_void = ptr::null_mut();
            let mut buffer = ptr::null_mut();
            napi_try!(
                sys::napi_create_arraybuffer(env, bytes.len(), &mut data, &mut buffer),
                "creating an ArrayBuffer"
            );
            if !bytes.is_empty() {
                // SAFETY: the new ArrayBuffer's `data` is valid for bytes.len() bytes and not
                // aliased by anything else yet.
                unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data as *mut u8, bytes.len()) };
            }
            napi_try!(
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
        Value::BigInt(b) => {
            napi_try!(
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
