//! Arrays made by native code: results of commands, params of JavaScript handlers, a serving
//! thread's batches, and the lists corepool's own JavaScript reads. Their elements are defined
//! as own data properties, as an array literal or `JSON.parse` makes them, never assigned with
//! `napi_set_element`: an assignment to an index an array does not have yet runs a setter that
//! someone put on `Array.prototype` for that index, which could take the value instead of the
//! array (a result would arrive without its items, a batch without its jobs).
//!
//! [`array_of`] makes a whole array in one call of a packer, `(...values) => values`, compiled
//! once per environment: a rest parameter collects the arguments without looking anything up,
//! and the one call costs less than the element stores it replaces (the serving thread built
//! each batch with one store per entry). [`define_element`] defines one element of an array
//! made before, as does the fallback for arrays too long to pass as arguments.

use super::{data_property, failure, itoa, napi_try, take_exception_quietly, Converted};
use crate::bindings::env_local::{self, EnvLocal};
use napi::sys;
use std::cell::RefCell;
use std::ptr;
use std::thread::LocalKey;

/// Most values made into one array by one call of the packer: they are that many arguments on
/// the stack, 128 KB (a call the stack has no room for fails with a RangeError, and the array is
/// defined element by element instead). Longer arrays are defined element by element, about
/// 1.6× slower; plain data that long usually travels as JSON text anyway.
pub(crate) const PACK_MAX: usize = 16 * 1024;

const PACKER_SOURCE: &str = "(...values) => values";

/// An environment's packer: made (a reference in that env), or not made (the engine refused
/// to compile it: arrays are defined element by element).
#[derive(Clone, Copy)]
enum Packer {
    Made(sys::napi_ref),
    Refused,
}

thread_local! {
    /// The packers of the environments on this thread (`env_local`).
    static PACKERS: RefCell<Vec<(sys::napi_env, Packer)>> = const { RefCell::new(Vec::new()) };
}

impl EnvLocal for Packer {
    fn store() -> &'static LocalKey<RefCell<Vec<(sys::napi_env, Self)>>> {
        &PACKERS
    }
}

/// The packer function of `env`, compiled on first use; None if it cannot be had.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
unsafe fn packer(env: sys::napi_env) -> Option<sys::napi_value> {
    let mut f = ptr::null_mut();
    match env_local::get::<Packer>(env) {
        Some(Packer::Refused) => return None,
        Some(Packer::Made(reference)) => {
            // SAFETY: a reference made in this env (its entry, which goes before the env does:
            // `env_local`), on its thread. On failure the packer is compiled again below.
            let status = unsafe { sys::napi_get_reference_value(env, reference, &mut f) };
            if status == sys::Status::napi_ok && !f.is_null() {
                return Some(f);
            }
        }
        None => {}
    }
    let mut source = ptr::null_mut();
    let mut reference = ptr::null_mut();
    // SAFETY: live env on its JS thread (caller contract); out-pointers are live locals. The
    // script only makes a function: it reads no global and runs no user code.
    let made = unsafe {
        sys::napi_create_string_utf8(
            env,
            PACKER_SOURCE.as_ptr().cast(),
            PACKER_SOURCE.len() as isize,
            &mut source,
        ) == sys::Status::napi_ok
            && sys::napi_run_script(env, source, &mut f) == sys::Status::napi_ok
            && sys::napi_create_reference(env, f, 1, &mut reference) == sys::Status::napi_ok
    };
    let packer = if made {
        Packer::Made(reference)
    } else {
        // SAFETY: caller contract. (An engine that cannot compile it says so every time.)
        unsafe { take_exception_quietly(env) };
        Packer::Refused
    };
    // (Not kept: this call uses it, the next makes one.)
    // SAFETY: caller contract; `reference` was made above, or is null.
    unsafe { env_local::keep(env, packer, if made { reference } else { ptr::null_mut() }) };
    made.then_some(f)
}

/// A new array holding `values` in order, as own data properties.
///
/// # Safety
/// Must run on the live `env`'s JS thread, with `values` values of that env.
pub(crate) unsafe fn array_of(
    env: sys::napi_env,
    values: &[sys::napi_value],
) -> Converted<sys::napi_value> {
    let mut out = ptr::null_mut();
    if !values.is_empty() && values.len() <= PACK_MAX {
        // SAFETY: caller contract.
        if let Some(pack) = unsafe { packer(env) } {
            let mut undefined = ptr::null_mut();
            // SAFETY: caller contract; `pack` is a function of this env; `values.len()`
            // arguments are read from `values`.
            let status = unsafe {
                sys::napi_get_undefined(env, &mut undefined);
                sys::napi_call_function(
                    env,
                    undefined,
                    pack,
                    values.len(),
                    values.as_ptr(),
                    &mut out,
                )
            };
            if status == sys::Status::napi_ok {
                return Ok(out);
            }
            // It could not run (a stack that is nearly full, a thread being terminated):
            // element by element below, which says why if that fails too.
            // SAFETY: caller contract.
            unsafe { take_exception_quietly(env) };
        }
    }
    napi_try!(
        env,
        sys::napi_create_array_with_length(env, values.len(), &mut out),
        "creating an array"
    );
    for (i, &v) in values.iter().enumerate() {
        // SAFETY: caller contract; `out` is an array of this env.
        unsafe { define_element(env, out, i as u32, v) }?;
    }
    Ok(out)
}

/// A list handed to JavaScript by a `#[napi]` function or object field (`stats().workers`,
/// `methods()`, the contract's tables) as an array made by [`array_of`]: napi-rs's own
/// conversion of a `Vec` assigns each element (`napi_set_element`), which a setter on
/// `Array.prototype` would take.
pub struct List<T>(pub Vec<T>);

impl<T> From<Vec<T>> for List<T> {
    fn from(items: Vec<T>) -> Self {
        List(items)
    }
}

impl<T> FromIterator<T> for List<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        List(items.into_iter().collect())
    }
}

impl<T> napi::bindgen_prelude::TypeName for List<T> {
    fn type_name() -> &'static str {
        "Array"
    }

    fn value_type() -> napi::ValueType {
        napi::ValueType::Object
    }
}

impl<T: napi::bindgen_prelude::ToNapiValue> napi::bindgen_prelude::ToNapiValue for List<T> {
    unsafe fn to_napi_value(env: sys::napi_env, list: Self) -> napi::Result<sys::napi_value> {
        let values = list
            .0
            .into_iter()
            // SAFETY: napi-rs calls this on `env`'s JS thread, with `env` live.
            .map(|item| unsafe { T::to_napi_value(env, item) })
            .collect::<napi::Result<Vec<_>>>()?;
        // SAFETY: as above; `values` were made in `env` just now.
        unsafe { array_of(env, &values) }.map_err(napi::Error::from_reason)
    }
}

/// Defines `array[index]` as an own data property holding `value` (writable, enumerable,
/// configurable, as an assignment to a new index would make it), without running any setter.
///
/// # Safety
/// Must run on the live `env`'s JS thread, with `array` and `value` values of that env.
pub(crate) unsafe fn define_element(
    env: sys::napi_env,
    array: sys::napi_value,
    index: u32,
    value: sys::napi_value,
) -> Converted<()> {
    // SAFETY: caller contract.
    let status = unsafe { define_index(env, array, index, value) };
    if status != sys::Status::napi_ok {
        // SAFETY: caller contract.
        return Err(unsafe { failure(env, status, "filling an array") });
    }
    Ok(())
}

/// [`define_element`], answering Node-API's status (a pending exception is left to the caller).
///
/// # Safety
/// As for [`define_element`].
pub(crate) unsafe fn define_index(
    env: sys::napi_env,
    array: sys::napi_value,
    index: u32,
    value: sys::napi_value,
) -> sys::napi_status {
    let mut name = [0u8; 21];
    let digits = itoa(index as usize, &mut name).len();
    let descriptor = data_property(
        name[name.len() - 1 - digits..].as_ptr().cast(),
        ptr::null_mut(),
        value,
    );
    // SAFETY: caller contract; `descriptor` and the NUL-terminated name it points to are live
    // locals.
    unsafe { sys::napi_define_properties(env, array, 1, &descriptor) }
}

#[cfg(test)]
mod tests {
    use super::super::itoa;

    #[test]
    fn index_names_are_decimal_and_terminated() {
        for i in [
            0,
            1,
            9,
            10,
            99,
            100,
            4095,
            65_536,
            1_000_000_007,
            u32::MAX as usize,
            usize::MAX,
        ] {
            let mut name = [0u8; 21];
            let digits = itoa(i, &mut name).to_string();
            assert_eq!(digits, i.to_string());
            assert_eq!(name[name.len() - 1], 0, "{i}");
            let start = name.len() - 1 - digits.len();
            assert_eq!(
                std::ffi::CStr::from_bytes_with_nul(&name[start..])
                    .unwrap()
                    .to_str()
                    .unwrap(),
                digits
            );
        }
    }
}
