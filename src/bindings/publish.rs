//! The view publisher: how a call's SharedArrayBuffer views reach the JavaScript thread that
//! serves it. lib/views.js registers one `publish(to, token, views, resent)` function per
//! environment at load ([`set_publisher`]); the caller's thread calls it just before it pushes
//! a job with views onto a server's queue (the core's announce hook, which the pool's call
//! functions set), and the channel calls it again when a server asks for the views (`resent`). The
//! function posts the typed arrays on a process-wide BroadcastChannel, which shares their
//! memory instead of copying it (see `serve.rs` for the serving side).

use crate::bindings::env_local::{self, EnvLocal};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use std::cell::RefCell;
use std::ptr;
use std::thread::LocalKey;

/// A reference to an environment's `publish(to, token, views, resent)` function, kept per
/// environment (`env_local`).
#[derive(Clone, Copy)]
struct Publisher(sys::napi_ref);

thread_local! {
    static PUBLISHERS: RefCell<Vec<(sys::napi_env, Publisher)>> = const { RefCell::new(Vec::new()) };
}

impl EnvLocal for Publisher {
    fn store() -> &'static LocalKey<RefCell<Vec<(sys::napi_env, Self)>>> {
        &PUBLISHERS
    }
}

/// Registers this environment's `publish(to, token, views, resent)`, which sends a call's typed
/// arrays over SharedArrayBuffers to serving environment `to` for job `token` (`resent`: asked
/// for again). lib/views.js calls it once at load.
#[napi(catch_unwind)]
pub fn set_publisher(env: Env, publish: Unknown) -> Result<()> {
    let raw = env.raw();
    let mut reference = ptr::null_mut();
    // SAFETY: a Node-API callback on this env's JS thread; `publish` belongs to this env.
    let status = unsafe { sys::napi_create_reference(raw, publish.raw(), 1, &mut reference) };
    if status != sys::Status::napi_ok {
        return Err(Error::new(Status::InvalidArg, "corepool: bad publisher"));
    }
    // The reference lives as long as the environment (Node frees references at teardown); its
    // entry goes before (`env_local`).
    // (Not kept: without a publisher, a server asks for the views, `resend`.)
    // SAFETY: a Node-API callback on this env's JS thread; the reference was made above.
    unsafe { env_local::keep(raw, Publisher(reference), reference) };
    Ok(())
}

/// Calls this environment's publisher with `views` for job `token` on serving environment `to`.
///
/// # Safety
/// Must run on `env`'s JS thread, with `views` values of that env.
pub(crate) unsafe fn publish(
    env: sys::napi_env,
    to: u64,
    token: u64,
    views: &[sys::napi_value],
    resent: bool,
) {
    let Some(Publisher(reference)) = env_local::get::<Publisher>(env) else {
        return; // no publisher: the server will ask for the views (resend)
    };
    // SAFETY: live env on its JS thread (caller contract) for every call below.
    unsafe {
        let mut f = ptr::null_mut();
        if sys::napi_get_reference_value(env, reference, &mut f) != sys::Status::napi_ok {
            return;
        }
        let Ok(array) = crate::bindings::convert::array_of(env, views) else {
            return; // the server will ask for the views (resend)
        };
        let mut a = ptr::null_mut();
        let mut b = ptr::null_mut();
        let mut c = ptr::null_mut();
        sys::napi_create_double(env, to as f64, &mut a);
        sys::napi_create_double(env, token as f64, &mut b);
        sys::napi_get_boolean(env, resent, &mut c);
        let mut undefined = ptr::null_mut();
        sys::napi_get_undefined(env, &mut undefined);
        let argv = [a, b, array, c];
        let mut result = ptr::null_mut();
        sys::napi_call_function(env, undefined, f, 4, argv.as_ptr(), &mut result);
        // publish() catches its own errors; never let one escape into the caller's exec().
        let mut pending = false;
        sys::napi_is_exception_pending(env, &mut pending);
        if pending {
            let mut e = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut e);
        }
    }
}
