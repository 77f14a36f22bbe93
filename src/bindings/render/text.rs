//! What functions return, read as text, and the errors of a render finished on the calling
//! thread. A Rust string cannot hold a lone surrogate, which mustache.js would write as it is:
//! such text is refused with [`LONE_SURROGATE`] rather than changed.

use crate::bindings::convert;
use crate::rpc::RpcError;
use napi::sys;

pub(super) fn internal(why: &str) -> RpcError {
    RpcError::new(
        crate::rpc::ErrorCode::InternalError,
        format!("corepool: {why}"),
    )
}

/// The error that stands for "a function threw": the exception itself stays pending and is
/// what the caller sees (see `answer`).
pub(super) fn thrown() -> RpcError {
    RpcError::failed("render: a function threw")
}

/// A helper's output or a function's with a lone surrogate: mustache.js writes it, a Rust
/// string cannot hold it.
pub(super) const LONE_SURROGATE: &str =
    "render: a function's output holds half of a surrogate pair (a lone \
     surrogate), which a Rust string cannot hold (render this template with mustache.js on the \
     main thread)";

/// `f` of the text `render(text)` was given.
///
/// # Safety
/// Must run on `env`'s JS thread, with `v` a value of env.
pub(super) unsafe fn with_text_arg<R>(
    env: sys::napi_env,
    v: sys::napi_value,
    f: impl FnMut(&str) -> R,
) -> Result<R, RpcError> {
    let mut kind = 0;
    // SAFETY: caller contract.
    unsafe { sys::napi_typeof(env, v, &mut kind) };
    if kind != sys::ValueType::napi_string {
        return Err(RpcError::failed(
            "render: a lambda's render() takes the template text, a string",
        ));
    }
    // SAFETY: caller contract; `v` is a string.
    unsafe { with_text(env, v, f) }
}

/// `f` of the string `v` (a function's output, or text a lambda renders), refused when it
/// holds a lone surrogate: a Rust string cannot hold one, and mustache.js would write it as it
/// is. Read as UTF-8, which for a short string is one copy into the stack; Node-API writes a
/// lone surrogate as U+FFFD, so text holding U+FFFD is read again as UTF-16, which tells a lone
/// surrogate from a U+FFFD of its own.
///
/// # Safety
/// Must run on `env`'s JS thread, with `v` a string of env.
pub(super) unsafe fn with_text<R>(
    env: sys::napi_env,
    v: sys::napi_value,
    mut f: impl FnMut(&str) -> R,
) -> Result<R, RpcError> {
    // SAFETY: caller contract.
    let done =
        unsafe { convert::with_str(env, v, |text| (!text.contains('\u{FFFD}')).then(|| f(text))) }
            .map_err(|why| internal(&why))?;
    if let Some(done) = done {
        return Ok(done);
    }
    // SAFETY: caller contract.
    let units = unsafe { convert::string_utf16(env, v) }.map_err(|why| internal(&why))?;
    let text = String::from_utf16(&units).map_err(|_| RpcError::failed(LONE_SURROGATE))?;
    Ok(f(&text))
}
