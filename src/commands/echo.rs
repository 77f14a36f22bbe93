//! `echo(value)`: returns its param. A call that does nothing else measures the pool's own
//! cost (submit, schedule, settle; `bench/dispatch.js`). Shared views are refused: a result is
//! a copy, and echoing lent memory back would hand the caller a second handle on it.

use crate::rpc::{params, Command, Context, RpcError, Value};

/// Returns its param: the cost of a round trip through the pool and nothing else.
pub struct Echo;

impl Command for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn params(&self) -> &'static str {
        "value: any"
    }
    fn summary(&self) -> &'static str {
        "returns its param (measures dispatch overhead)"
    }
    fn run(&self, mut params: Vec<Value>, _ctx: &Context) -> Result<Value, RpcError> {
        params::expect_count("echo", &params, 1..=1)?;
        let value = params.pop().unwrap_or_default();
        if value.has_view() {
            // Results are copied, never shared: echoing the caller's memory back is not a copy.
            return Err(RpcError::invalid_params(
                "echo: a typed array over a SharedArrayBuffer cannot be echoed (results are \
                 copied, shared memory is only lent to the call)",
            ));
        }
        Ok(value)
    }
}
