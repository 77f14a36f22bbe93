//! The protocol: values, errors, commands and the JSON-RPC 2.0 envelope. No threads, no napi.
//!
//! Each module imports only modules of the layers before its own (and `crate::shm`, for views
//! and for the one conversion of its errors), so none of them forms a circle:
//! 1. [`number`] (JavaScript's Number→String), [`bigint`], [`text`];
//! 2. [`value`];
//! 3. [`error`] (with `From<shm::Error>`), [`json`] (parsing and writing);
//! 4. [`params`], [`envelope`], [`command`].

pub mod bigint;
pub mod command;
pub mod envelope;
pub mod error;
pub mod json;
pub mod number;
pub mod packed;
pub mod params;
pub mod text;
pub mod value;

/// A seeded xorshift64 generator for the randomized tests of this module's parts.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

pub use command::{CancelReason, Command, Context, Deadline, Registry, Report, StopFlags};
pub use error::{ErrorCode, Outcome, RpcError};
pub use text::JsText;
pub use value::{FunctionId, Map, Value};
