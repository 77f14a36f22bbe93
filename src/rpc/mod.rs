//! The protocol: values, errors, commands and the JSON-RPC 2.0 envelope. No threads, no napi.

pub mod bigint;
pub mod command;
pub mod envelope;
pub mod error;
pub mod json;
pub mod params;
pub mod text;
pub mod value;

pub use command::{CancelReason, Command, Context, Registry, StopFlags};
pub use error::{ErrorCode, Outcome, RpcError};
pub use text::JsText;
pub use value::{Map, Value};
