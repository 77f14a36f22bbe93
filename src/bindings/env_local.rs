//! Values a thread keeps per Node-API environment: references made in that environment (the
//! array packer, the values conversions look things up with, the view publisher), found again
//! by the environment's address.
//!
//! A thread usually runs one environment, but not always: the addon loaded a second time into
//! one environment (its module cache cleared) gets an environment of its own, and calls
//! alternate between the two; an embedder may run environments one after another on one
//! thread, and a new one may get a freed one's address. So each environment has its own entry,
//! and an env cleanup hook, registered with the entry, removes it before Node frees the
//! environment and its references: an entry is never found by an environment it was not made
//! in, and nothing is made again and again.

use napi::sys;
use std::cell::RefCell;
use std::ffi::c_void;
use std::thread::LocalKey;

/// A kind of value kept per environment: `store` names the thread-local holding the entries.
pub(crate) trait EnvLocal: Copy + 'static {
    fn store() -> &'static LocalKey<RefCell<Vec<(sys::napi_env, Self)>>>;
}

/// Env cleanup hook: drops the entry of the environment `env` (the hook's data).
unsafe extern "C" fn forget<T: EnvLocal>(env: *mut c_void) {
    // (`try_with`: nothing to forget once the thread's locals are gone.)
    let _ = T::store().try_with(|s| s.borrow_mut().retain(|&(e, _)| e.cast::<c_void>() != env));
}

/// `env`'s entry, if it has one.
pub(crate) fn get<T: EnvLocal>(env: sys::napi_env) -> Option<T> {
    T::store().with(|s| s.borrow().iter().find(|&&(e, _)| e == env).map(|&(_, v)| v))
}

/// Sets `env`'s entry to `value`; false (and nothing is kept) when its removal could not be
/// arranged (the cleanup hook could not be registered).
///
/// # Safety
/// On `env`'s JS thread, `env` live.
unsafe fn set<T: EnvLocal>(env: sys::napi_env, value: T) -> bool {
    let found = T::store().with(|s| {
        let mut s = s.borrow_mut();
        match s.iter_mut().find(|(e, _)| *e == env) {
            Some(entry) => {
                entry.1 = value;
                true
            }
            None => false,
        }
    });
    if found {
        return true;
    }
    // Registered once per environment and kind, with the entry (Node refuses the same hook
    // twice). SAFETY: caller contract; `forget` only reads its data as an address.
    let hooked =
        unsafe { sys::napi_add_env_cleanup_hook(env, Some(forget::<T>), env.cast::<c_void>()) }
            == sys::Status::napi_ok;
    if hooked {
        T::store().with(|s| s.borrow_mut().push((env, value)));
    }
    hooked
}

/// [`set`] for an entry holding `reference` (null: none), just made in `env`: when the entry
/// cannot be kept, the reference is deleted (the value is made again when next needed).
///
/// # Safety
/// As for [`set`]; `reference` null or a reference of `env` that nothing else holds.
pub(crate) unsafe fn keep<T: EnvLocal>(env: sys::napi_env, value: T, reference: sys::napi_ref) {
    // SAFETY: caller contract.
    if !unsafe { set(env, value) } && !reference.is_null() {
        // SAFETY: caller contract: a reference of this env, held by nothing else.
        unsafe { sys::napi_delete_reference(env, reference) };
    }
}
