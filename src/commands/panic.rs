//! `panic(message?)`: panics inside the worker on purpose. It shows, to users and to the tests,
//! that a panicking command becomes InternalError for its call alone (every job runs under
//! `catch_unwind`, `pool::worker`) and that the worker thread keeps serving.

use crate::rpc::{Command, Context, RpcError, Value};

/// Panics on purpose, so users (and our tests) can see that a panicking command becomes an
/// InternalError and the pool keeps serving.
pub struct Panic;

impl Command for Panic {
    fn name(&self) -> &'static str {
        "panic"
    }
    fn params(&self) -> &'static str {
        "message?: string"
    }
    fn summary(&self) -> &'static str {
        "panics inside the worker (the call rejects with InternalError; the pool survives)"
    }
    fn run(&self, params: Vec<Value>, _ctx: &Context) -> Result<Value, RpcError> {
        let message = params
            .first()
            .and_then(Value::as_str)
            .unwrap_or("panic command called");
        panic!("{message}");
    }
}
