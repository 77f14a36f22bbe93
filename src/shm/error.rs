//! What laying a shared-memory object over memory can refuse.
//!
//! Only memory the caller passed is ever refused, so every `Error` is the caller's mistake, and
//! is reported as one: an `InvalidParams` RpcError, through the one conversion in `rpc::error`
//! or, from the bindings, through napi's `InvalidArg` (which `lib/errors.js` maps to the same
//! code). Failures of the operations themselves (a lock that stays taken, a corrupt header) are
//! not this type: they are [`RingError`](super::RingError) and [`NotLocked`](super::NotLocked).

use std::fmt;

/// Memory that cannot hold the object asked of it: a typed array of the wrong element kind,
/// an index outside it, a ring buffer's region too small, too big or misaligned. The message
/// starts with the object's name (`"Mutex: index 4 is out of range …"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
