//! Arrays and typed arrays crossing into [`Value`]: an array (or a Proxy of one) element by
//! element, its `length` never trusted to size an allocation; a typed array over a
//! SharedArrayBuffer as a [`SharedView`] (by reference), a Uint8Array over ordinary memory as
//! bytes (a copy), any other typed array refused.

use super::{FromJs, FIRST_RESERVE, MAX_VALUES};
use crate::bindings::convert::itoa;
use crate::bindings::convert::{napi_try, place, Converted};
use crate::rpc::Value;
use crate::shm::{ElementKind, SharedView};
use napi::sys;
use std::ptr;

/// Where an array's elements come from: a real array, or a Proxy whose target is one.
#[derive(Clone, Copy)]
pub(super) enum ArrayKind {
    Plain,
    Proxy,
}

impl FromJs {
    /// The elements of `v` (an array, or a Proxy whose target is an array), holes as `null`.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `v` an object of the given kind.
    pub(super) unsafe fn array(
        &mut self,
        v: sys::napi_value,
        kind: ArrayKind,
        depth: usize,
        path: &mut String,
        to_json_matters: bool,
    ) -> Converted<Value> {
        let env = self.env;
        if to_json_matters {
            if self.collected.is_none() {
                // SAFETY: v is an object of this env.
                unsafe { self.refuse_to_json(v, path, matches!(kind, ArrayKind::Proxy)) }?;
            }
            // (Not the params container: a value sent, not one of the call's own.)
            if let Some(collected) = &mut self.collected {
                collected.objects.push(v);
            }
        }
        let len: usize = match kind {
            ArrayKind::Plain => {
                let mut len = 0u32;
                at_try!(
                    env,
                    path,
                    sys::napi_get_array_length(env, v, &mut len),
                    "reading its length"
                );
                len as usize
            }
            ArrayKind::Proxy => {
                // JSON's LengthOfArrayLike, for a length that is a number.
                let mut length = ptr::null_mut();
                at_try!(
                    env,
                    path,
                    sys::napi_get_named_property(env, v, c"length".as_ptr(), &mut length),
                    "reading its length"
                );
                let mut n = f64::NAN;
                // SAFETY: live env on its JS thread (caller contract); `length` is a value of
                // it; a non-number answers napi_number_expected.
                let read = unsafe { sys::napi_get_value_double(env, length, &mut n) };
                if read != sys::Status::napi_ok {
                    return Err(format!(
                        "{} is a Proxy of an array whose length is not a number",
                        place(path)
                    ));
                }
                if n.is_nan() || n <= 0.0 {
                    0
                } else {
                    n.min(usize::MAX as f64) as usize
                }
            }
        };
        if len > self.budget {
            return Err(format!(
                "{} is an array of {len} elements: more than the {MAX_VALUES} values params may \
                 hold (pass bulk data in a SharedArrayBuffer: a typed array crosses by reference)",
                place(path)
            ));
        }
        let mut items: Vec<Value> = Vec::new();
        items
            .try_reserve_exact(len.min(FIRST_RESERVE))
            .map_err(|_| format!("{}: out of memory", place(path)))?;
        let mark = path.len();
        for i in 0..len {
            let mut item = ptr::null_mut();
            path.truncate(mark);
            path.push('[');
            path.push_str(itoa(i, &mut [0; 21]));
            path.push(']');
            // `len` fits in u32 for a real array; a Proxy's elements are read by name.
            at_try!(
                env,
                path,
                match kind {
                    ArrayKind::Plain => sys::napi_get_element(env, v, i as u32, &mut item),
                    ArrayKind::Proxy => {
                        let mut index = ptr::null_mut();
                        let status = sys::napi_create_double(env, i as f64, &mut index);
                        if status == sys::Status::napi_ok {
                            sys::napi_get_property(env, v, index, &mut item)
                        } else {
                            status
                        }
                    }
                },
                "reading it"
            );
            // SAFETY: item is a value of this env.
            let value = unsafe { self.value(item, depth + 1, path) }?;
            items
                .try_reserve(1)
                .map_err(|_| format!("{}: out of memory", place(path)))?;
            items.push(value);
        }
        path.truncate(mark);
        Ok(Value::Array(items))
    }
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
        env,
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
        _ => {
            return Err(format!(
                "{} is a typed array of an unknown kind",
                place(path)
            ))
        }
    };
    // `napi_is_arraybuffer` is false for a SharedArrayBuffer (V8's IsArrayBuffer).
    let mut plain = false;
    napi_try!(
        env,
        sys::napi_is_arraybuffer(env, buffer, &mut plain),
        "checking the buffer kind"
    );
    if plain {
        if kind == ElementKind::Uint8 {
            let mut bytes = Vec::new();
            if length > 0 && !data.is_null() {
                bytes
                    .try_reserve_exact(length)
                    .map_err(|_| format!("{}: no memory to copy {length} bytes", place(path)))?;
                // SAFETY: Node-API reports `data` valid for `length` bytes of this Uint8Array;
                // we are on the JS thread, so nothing detaches or writes it while we copy.
                bytes.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(data as *const u8, length)
                });
            }
            return Ok(Value::Bytes(bytes));
        }
        return Err(format!(
            "{} is a {} over an ordinary ArrayBuffer: pass it over a SharedArrayBuffer \
             (shared by reference) or as a plain array",
            place(path),
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
    // `length` elements of the SharedArrayBuffer, whose memory never moves (a growable one only
    // grows). The call that carries the view keeps this very typed array referenced until it
    // settles (FromJs::views, Inbox::keep), and a departing environment waits for its running jobs
    // (pool::origin), so the memory outlives every use of the view.
    match unsafe { SharedView::new(ptr, length, kind) } {
        Some(view) => Ok(Value::View(view)),
        None => Err(format!(
            "{} is not aligned for its element type",
            place(path)
        )),
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
        env,
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
    // SAFETY: live env and value (caller contract); v is a typed array. Only its address is used:
    // the view is compared, never dereferenced.
    match unsafe { typed_array(env, v, "") } {
        Ok(Value::View(view)) => Some(view),
        _ => None,
    }
}
