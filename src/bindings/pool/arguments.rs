//! The arguments every call method checks the same way (its timeout, its method name), and the
//! errors that settle a call whose arguments are wrong: a call never throws, so each check
//! returns the [`RpcError`] the call settles with.

use crate::bindings::convert;
use crate::pool::timeout;
use crate::rpc::{ErrorCode, RpcError};
use napi::bindgen_prelude::*;
use napi::sys;
use std::time::Duration;

/// What is wrong with `value` as a timeout (`None`: nothing; `undefined` is none given): the
/// one rule of every timeout, a call's or a pool's, for JavaScript to throw or reject with
/// (`lib/options.js`, `lib/nats/names.js`). It is the rule the calls are held to, so the two
/// sides cannot disagree.
#[napi_derive::napi]
pub fn timeout_problem(env: Env, value: Unknown) -> Option<String> {
    // SAFETY: a Node-API callback on this env's JS thread; the value belongs to it.
    unsafe { timeout_of(env.raw(), value.raw()) }.err()
}

/// A call's `timeout` option: `undefined` → the pool's default (`None`); otherwise
/// milliseconds by [`timeout::from_ms`] (zero: no limit).
///
/// # Safety
/// On the JS thread of the env `v` belongs to.
pub(super) unsafe fn call_timeout(
    env: sys::napi_env,
    v: sys::napi_value,
) -> std::result::Result<Option<Duration>, RpcError> {
    // SAFETY: caller contract.
    unsafe { timeout_of(env, v) }
        .map_err(|why| RpcError::new(ErrorCode::InvalidRequest, format!("options.timeout {why}")))
}

/// `v` as a timeout, or what is wrong with it.
///
/// # Safety
/// On the JS thread of the env `v` belongs to.
unsafe fn timeout_of(
    env: sys::napi_env,
    v: sys::napi_value,
) -> std::result::Result<Option<Duration>, String> {
    let mut t = 0;
    // SAFETY: caller contract; out-pointers are live locals.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    match t {
        sys::ValueType::napi_undefined => Ok(None),
        sys::ValueType::napi_number => {
            let mut ms = 0.0;
            // SAFETY: caller contract (`v` of this env, on its JS thread); `v` is a number.
            unsafe { sys::napi_get_value_double(env, v, &mut ms) };
            timeout::from_ms(ms).map(Some)
        }
        _ => Err(format!(
            "{}, got a {}",
            timeout::RULE,
            // SAFETY: caller contract: `v` is a value of this env, on its JS thread.
            type_name(&unsafe { Unknown::from_raw_unchecked(env, v) })
        )),
    }
}

/// A call whose views could not be kept alive is not placed (its environment is going away).
pub(super) fn cannot_keep() -> RpcError {
    RpcError::new(
        ErrorCode::InternalError,
        "corepool: the call's shared memory could not be kept alive",
    )
}

/// `Ok` when `v` is a string, else the InvalidRequest error for a bad method.
///
/// # Safety
/// On the JS thread of the env `v` belongs to.
pub(super) unsafe fn method_str(
    env: sys::napi_env,
    v: sys::napi_value,
) -> std::result::Result<(), RpcError> {
    let mut t = 0;
    // SAFETY: caller contract.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    if t == sys::ValueType::napi_string {
        return Ok(());
    }
    // SAFETY: caller contract.
    let kind = type_name(
        &unsafe { Unknown::from_napi_value(env, v) }
            .map_err(|e| RpcError::failed(e.to_string()))?,
    );
    Err(RpcError::new(
        ErrorCode::InvalidRequest,
        format!("method must be a string, got {kind}"),
    ))
}

/// The method name of a call, or the error that settles it.
pub(super) fn read_method(
    env: sys::napi_env,
    method: &Unknown,
) -> std::result::Result<String, RpcError> {
    // SAFETY: a Node-API callback on this env's JS thread; the value belongs to this env.
    match unsafe { string_arg(env, method) } {
        Some(m) => Ok(m),
        None => Err(RpcError::new(
            ErrorCode::InvalidRequest,
            format!("method must be a string, got {}", type_name(method)),
        )),
    }
}

/// # Safety
/// On the JS thread of the env `v` belongs to.
pub(super) unsafe fn string_arg(env: sys::napi_env, v: &Unknown) -> Option<String> {
    if v.get_type().ok()? != ValueType::String {
        return None;
    }
    // SAFETY: v is a string of this env (checked above).
    unsafe { convert::string(env, v.raw()) }.ok()
}

pub(super) fn type_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "boolean",
        Ok(ValueType::Number) => "number",
        Ok(ValueType::String) => "string",
        Ok(ValueType::Symbol) => "symbol",
        Ok(ValueType::Object) => "object",
        Ok(ValueType::Function) => "function",
        Ok(ValueType::BigInt) => "bigint",
        _ => "an unknown type",
    }
}
