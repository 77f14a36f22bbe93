//! The options a pool is made with, as they cross from JavaScript, and their check.

use crate::pool::{timeout, OnFull, Options, Strategy, MAX_NICE_INCREMENT, MAX_THREADS};
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The pool options, as lib/options.js resolved them (`validateOptions`, then `nativeOptions`).
#[napi(object)]
pub struct PoolOptions {
    pub threads: u32,
    pub strategy: String,
    /// Infinity for no bound.
    pub max_queue: f64,
    /// onFull: 'wait'.
    pub wait: bool,
    pub timeout_ms: f64,
    pub nice_increment: u32,
}

/// The core's options of `o`, checked again: a pool never starts on options it cannot keep,
/// whatever the JavaScript side let through.
pub(super) fn options(o: &PoolOptions) -> Result<Options> {
    let strategy: Strategy = o
        .strategy
        .parse()
        .map_err(|e: String| Error::new(Status::InvalidArg, e))?;
    let limit = timeout::from_ms(o.timeout_ms)
        .map_err(|e| Error::new(Status::InvalidArg, format!("options.timeout {e}")))?;
    if o.threads as usize > MAX_THREADS {
        return Err(Error::new(
            Status::InvalidArg,
            format!(
                "options.threads must be at most {MAX_THREADS}, got {}",
                o.threads
            ),
        ));
    }
    if o.nice_increment > MAX_NICE_INCREMENT {
        return Err(Error::new(
            Status::InvalidArg,
            format!(
                "options.niceIncrement must be at most {MAX_NICE_INCREMENT}, got {}",
                o.nice_increment
            ),
        ));
    }
    Ok(Options {
        threads: o.threads as usize,
        strategy,
        max_queue: if o.max_queue.is_finite() {
            o.max_queue.max(0.0) as usize
        } else {
            usize::MAX
        },
        on_full: if o.wait { OnFull::Wait } else { OnFull::Reject },
        timeout: (!limit.is_zero()).then_some(limit),
        nice_increment: o.nice_increment as u8,
    })
}
