//! The error table: every error a call can end with, by JSON-RPC code.
//!
//! This is the one list of codes. The bindings export it to JavaScript (`RpcError.codes`), so
//! names and numbers are never written twice.

use super::number::format_number;
use super::value::Value;
use crate::shm;
use std::fmt;
use std::time::Duration;

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
    /// No host was there to take the call (a remote pool, `corepool/nats`: nobody listens on
    /// its subject, or the connection to the NATS server is down).
    Unavailable = -32006,
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
            format!("Method not found: {method:?}: check the name against pool.methods()"),
        )
    }

    /// The Timeout of a call of `method` that ran past `limit` (`render timed out after
    /// 1000 ms: raise the timeout or make the task shorter`): every kind of call says it this way, native commands, map items and
    /// JavaScript-served methods alike. The limit is written as JavaScript writes the number
    /// of ms (`pool::timeout` keeps limits to the nanosecond, so a limit reads back as given).
    pub fn timed_out(method: &str, limit: Duration) -> Self {
        let mut message = String::with_capacity(method.len() + 32);
        if !method.is_empty()
            && method
                .chars()
                .all(|c| c.is_alphanumeric() || "_$.:/-".contains(c))
        {
            message.push_str(method);
        } else {
            // A name a reader could not tell apart from the sentence ('', 'a b'): quoted.
            message.push_str(&format!("{method:?}"));
        }
        message.push_str(" timed out after ");
        format_number(limit.as_nanos() as f64 / 1e6, &mut message);
        message.push_str(" ms: raise the timeout or make the task shorter");
        Self::new(ErrorCode::Timeout, message)
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
    fn a_timeout_names_the_method_and_the_limit_as_javascript_writes_it() {
        let said = |method: &str, limit: Duration| RpcError::timed_out(method, limit).message;
        assert_eq!(
            said("render", Duration::from_secs(1)),
            "render timed out after 1000 ms: raise the timeout or make the task shorter"
        );
        assert_eq!(
            said("sleep", Duration::from_micros(1500)),
            "sleep timed out after 1.5 ms: raise the timeout or make the task shorter"
        );
        assert_eq!(
            said("echo", Duration::from_nanos(1)),
            "echo timed out after 0.000001 ms: raise the timeout or make the task shorter"
        );
        assert_eq!(
            said("a.b/c", Duration::from_millis(86_400_000)),
            "a.b/c timed out after 86400000 ms: raise the timeout or make the task shorter"
        );
        // Names that would blur into the sentence are quoted.
        assert_eq!(
            said("", Duration::from_millis(5)),
            "\"\" timed out after 5 ms: raise the timeout or make the task shorter"
        );
        assert_eq!(
            said("two words", Duration::from_millis(5)),
            "\"two words\" timed out after 5 ms: raise the timeout or make the task shorter"
        );
        assert_eq!(
            RpcError::timed_out("x", Duration::from_millis(1)).code,
            ErrorCode::Timeout
        );
    }

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
