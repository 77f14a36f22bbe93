//! Node-API glue: the only module that imports `napi`. It converts values and wires the
//! completion channel; no scheduling or protocol logic lives here.
//!
//! - `contract.rs`: every name, code, flag, limit and shared-memory layout JavaScript shares.
//! - `convert/`: JavaScript values ⇄ `Value` (`from_js/`, `to_js.rs`), the arrays native code
//!   makes (`arrays.rs`) and the stack a conversion may still use (`stack.rs`).
//! - `env_local.rs`: what a thread keeps per Node-API environment.
//! - `channel/`: one environment's completion path (`mod.rs`) and its settle batch
//!   (`settle.rs`); `tsfn.rs`: the threadsafe function both it and the servers use.
//! - `pool/`: `NativePool`, the handle on a pool, and `call.rs`, the hot call behind `exec`.
//! - `serve.rs`: `NativeServer`, a JavaScript thread serving methods, and `serve/hot.rs`, the
//!   functions it finishes each job with; `publish.rs`: how a call's SharedArrayBuffer views
//!   reach it.
//! - `render/`: the calling thread's side of a render with functions (`src/render/README.md`).
//! - `shm.rs`: the shared-memory toolkit's native half (`lib/shm/`).
//!
//! Imports go one way: `env_local` and `tsfn` import none of the others; `convert` imports
//! `env_local`; `publish` and `shm` import `convert`; `contract` reads limits from `convert`
//! and `shm`; `channel`, `serve` and `render` import those; `pool` imports `channel`, `serve`
//! and those. [`RawValue`] and [`callback_args`], used by all, live here.

pub mod channel;
pub mod contract;
pub mod convert;
pub(crate) mod env_local;
pub mod pool;
pub mod publish;
pub mod render;
pub mod serve;
pub mod shm;
pub(crate) mod tsfn;

use napi::bindgen_prelude::{Result, ToNapiValue};
use napi::sys;

/// A napi_value handed back to JS as is: what a `#[napi]` function returns when it made the
/// value itself with raw Node-API calls.
pub struct RawValue(pub(crate) sys::napi_value);

impl ToNapiValue for RawValue {
    unsafe fn to_napi_value(_env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        Ok(v.0)
    }
}

/// The first `N` arguments of a Node-API callback (missing ones are `undefined`) and the data
/// pointer its function was created with.
///
/// # Safety
/// Must be called inside a Node-API callback, with that callback's `env` and `info`.
pub(crate) unsafe fn callback_args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> ([sys::napi_value; N], *mut std::ffi::c_void) {
    let mut argc = N;
    let mut argv = [std::ptr::null_mut(); N];
    let mut data = std::ptr::null_mut();
    // SAFETY: inside a Node-API callback (caller contract); `argv` has room for `argc` values
    // and Node-API fills missing ones with `undefined`.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            std::ptr::null_mut(),
            &mut data,
        )
    };
    (argv, data)
}
