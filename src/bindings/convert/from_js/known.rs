//! The values a conversion looks things up with (`Object.prototype`, the keys `"toJSON"` and
//! `"length"`, `Array.isArray`, `Object.getPrototypeOf`, `String.prototype.valueOf`): found on
//! first use, then kept per conversion in `FromJs::known` and per environment by reference
//! (`env_local`).

use super::{constructor_name, prototype_of, FromJs};
use crate::bindings::convert::Converted;
use crate::bindings::env_local::{self, EnvLocal};
use napi::sys;
use std::cell::RefCell;
use std::ptr;
use std::thread::LocalKey;

/// The values a conversion looks things up with, by index into `FromJs::known`.
pub(super) const OBJECT_PROTOTYPE: usize = 0;
pub(super) const TO_JSON: usize = 1;
pub(super) const IS_ARRAY: usize = 2;
pub(super) const GET_PROTOTYPE_OF: usize = 3;
pub(super) const LENGTH: usize = 4;
pub(super) const STRING_VALUE_OF: usize = 5;
pub(super) const KNOWN: usize = 6;

/// References to what an environment's conversions look things up with, by index (null: not
/// made yet): the `Object.prototype` met first (then recognised with one comparison), the keys
/// `"toJSON"` and `"length"`, and `Array.isArray`, `Object.getPrototypeOf` and
/// `String.prototype.valueOf` (taken from the global object then: a program that replaces them
/// later changes nothing here). Kept per environment (`env_local`).
#[derive(Clone, Copy)]
struct KnownRefs([sys::napi_ref; KNOWN]);

thread_local! {
    static CACHE: RefCell<Vec<(sys::napi_env, KnownRefs)>> = const { RefCell::new(Vec::new()) };
}

impl EnvLocal for KnownRefs {
    fn store() -> &'static LocalKey<RefCell<Vec<(sys::napi_env, Self)>>> {
        &CACHE
    }
}

/// `env`'s reference to `known[which]`, if it has one.
fn cached(env: sys::napi_env, which: usize) -> Option<sys::napi_ref> {
    env_local::get::<KnownRefs>(env)
        .map(|refs| refs.0[which])
        .filter(|r| !r.is_null())
}

impl FromJs {
    /// `known[which]`, from the environment's cache, made on first use.
    ///
    /// # Safety
    /// As for [`FromJs::value`].
    pub(super) unsafe fn known(&mut self, which: usize, path: &str) -> Converted<sys::napi_value> {
        let env = self.env;
        if !self.known[which].is_null() {
            return Ok(self.known[which]);
        }
        if let Some(reference) = cached(env, which) {
            // SAFETY: a reference made in this env (its entry, which goes before the env does:
            // `env_local`), on its thread. On failure the value is looked up again below.
            unsafe { sys::napi_get_reference_value(env, reference, &mut self.known[which]) };
            if !self.known[which].is_null() {
                return Ok(self.known[which]);
            }
        }
        let mut value = ptr::null_mut();
        match which {
            TO_JSON | LENGTH => {
                let key = if which == TO_JSON {
                    c"toJSON"
                } else {
                    c"length"
                };
                at_try!(
                    env,
                    path,
                    sys::napi_create_string_utf8(
                        env,
                        key.as_ptr(),
                        key.count_bytes() as isize,
                        &mut value
                    ),
                    "making a key"
                );
            }
            IS_ARRAY | GET_PROTOTYPE_OF | STRING_VALUE_OF => {
                let names: &[&std::ffi::CStr] = match which {
                    IS_ARRAY => &[c"Array", c"isArray"],
                    GET_PROTOTYPE_OF => &[c"Object", c"getPrototypeOf"],
                    _ => &[c"String", c"prototype", c"valueOf"],
                };
                // SAFETY: as for this function.
                value = unsafe { builtin(env, names, path) }?;
            }
            // Object.prototype is recognised by `is_object_prototype` and remembered there.
            _ => return Ok(ptr::null_mut()),
        }
        // SAFETY: as for this function; `value` is a value of this env.
        unsafe { self.remember(which, value) };
        Ok(value)
    }

    /// Keeps `value` as `known[which]` for this conversion and, by reference, for the
    /// environment's later ones.
    ///
    /// # Safety
    /// As for [`FromJs::value`], with `value` a value of this env.
    pub(super) unsafe fn remember(&mut self, which: usize, value: sys::napi_value) {
        let env = self.env;
        self.known[which] = value;
        let mut refs =
            env_local::get::<KnownRefs>(env).unwrap_or(KnownRefs([ptr::null_mut(); KNOWN]));
        if !refs.0[which].is_null() {
            return;
        }
        let mut reference = ptr::null_mut();
        // SAFETY: live env on its JS thread (caller contract); `value` belongs to it. The
        // reference lives until its entry goes (`env_local`) or the env is torn down.
        if unsafe { sys::napi_create_reference(env, value, 1, &mut reference) }
            != sys::Status::napi_ok
        {
            return;
        }
        refs.0[which] = reference;
        // (Not kept: looked up again next time.)
        // SAFETY: caller contract; the reference was made above.
        unsafe { env_local::keep(env, refs, reference) };
    }

    /// True when `proto` is an `Object.prototype`: of this realm or another one (a `vm`
    /// context, a test runner's sandbox), recognised by having no prototype itself and a
    /// `constructor` named "Object".
    ///
    /// # Safety
    /// As for [`FromJs::value`].
    pub(super) unsafe fn is_object_prototype(
        &mut self,
        proto: sys::napi_value,
        path: &str,
    ) -> Converted<bool> {
        let env = self.env;
        if self.known[OBJECT_PROTOTYPE].is_null() {
            if let Some(reference) = cached(env, OBJECT_PROTOTYPE) {
                // SAFETY: as in `known`. On failure the slow check below runs.
                unsafe {
                    sys::napi_get_reference_value(env, reference, &mut self.known[OBJECT_PROTOTYPE])
                };
            }
        }
        if !self.known[OBJECT_PROTOTYPE].is_null() {
            let mut same = false;
            at_try!(
                env,
                path,
                sys::napi_strict_equals(env, proto, self.known[OBJECT_PROTOTYPE], &mut same),
                "comparing prototypes"
            );
            if same {
                return Ok(true);
            }
        }
        // SAFETY: `proto` is an object of this env.
        let (_, t) = unsafe { prototype_of(env, proto, path, "reading a prototype") }?;
        if t != sys::ValueType::napi_null {
            return Ok(false);
        }
        // SAFETY: proto is an object of this env.
        let plain = unsafe { constructor_name(env, proto) }.is_some_and(|n| n == "Object");
        if plain && self.known[OBJECT_PROTOTYPE].is_null() {
            // SAFETY: as for this function; `proto` is a value of this env.
            unsafe { self.remember(OBJECT_PROTOTYPE, proto) };
        }
        Ok(plain)
    }
}

/// The value at `names` from the global object (`["Array", "isArray"]`: `Array.isArray`), read
/// as it is now.
///
/// # Safety
/// Must run on the live `env`'s JS thread.
pub(super) unsafe fn builtin(
    env: sys::napi_env,
    names: &[&std::ffi::CStr],
    path: &str,
) -> Converted<sys::napi_value> {
    let mut value = ptr::null_mut();
    at_try!(
        env,
        path,
        sys::napi_get_global(env, &mut value),
        "finding a builtin"
    );
    for name in names {
        let holder = value;
        at_try!(
            env,
            path,
            sys::napi_get_named_property(env, holder, name.as_ptr(), &mut value),
            "finding a builtin"
        );
    }
    Ok(value)
}
