//! The error table: every error a call can end with, by JSON-RPC code.
//!
//! This is the one list of codes. The bindings export it to JavaScript (`RpcError.codes`), so
//! names and numbers are never written twice.

use super::value::Value;
use crate::shm;
use std::fmt;

macro_rules! codes {
    ($( $(#[$doc:meta])* $name:ident = $code:expr ),* $(,)?) => {
        /// A JSON-RPC error code (standard ones, then corepool's in the -32000 range).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $( $(#[$doc])* $name ),* }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            pub fn code(self) -> i32 {
                match self { $(ErrorCode::$name => $code),* }
            }

            pub fn name(self) -> &'static str {
                match self { $(ErrorCode::$name => stringify!($name)),* }
            }

            pub fn from_code(code: i32) -> Option<ErrorCode> {
                match code { $($code => Some(ErrorCode::$name),)* _ => None }
            }
        }
    };
}

codes! {
    /// `handle()` got text that is not JSON.
    ParseError = -32700,
    /// Not a valid request object.
    InvalidRequest = -32600,
    /// No command of that name.
    MethodNotFound = -32601,
    /// Wrong count, type or range of params.
    InvalidParams = -32602,
    /// A command panicked; the pool stays up.
    InternalError = -32603,
    /// A command returned an error.
    CommandFailed = -32000,
    /// `maxQueue` reached with `onFull: 'reject'`.
    QueueFull = -32001,
    /// Call after close()/destroy(), or queued when destroy() ran.
    PoolClosed = -32002,
    /// The call's AbortSignal fired.
    Aborted = -32003,
    /// Ran longer than its timeout.
    Timeout = -32004,
    /// The JavaScript thread serving the call exited while it ran.
    ServerGone = -32005,
}

/// An error outcome of a call: code, message and optional data, as JSON-RPC carries them.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::CommandFailed, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method:?}"),
        )
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.name(),
            self.code.code(),
            self.message
        )
    }
}

impl std::error::Error for RpcError {}

/// Shared memory refuses only memory its caller passed (see `shm::error`): the params were wrong.
impl From<shm::Error> for RpcError {
    fn from(e: shm::Error) -> Self {
        RpcError::invalid_params(e.message)
    }
}

pub type Outcome = Result<Value, RpcError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for &c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(c.code()), Some(c));
        }
        let mut seen: Vec<i32> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), ErrorCode::ALL.len());
        assert_eq!(ErrorCode::MethodNotFound.code(), -32601);
    }

    #[test]
    fn shared_memory_refusals_are_invalid_params_with_their_message() {
        let bytes = shm::view::leaked_view(8, shm::ElementKind::Uint8);
        let refused = shm::SharedWord::new("Mutex", bytes, 0).unwrap_err();
        let e = RpcError::from(refused.clone());
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert_eq!(e.message, refused.message);
        assert!(
            e.message.starts_with("Mutex: expected an Int32Array"),
            "{e}"
        );
    }
}
