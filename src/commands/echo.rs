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
        Ok(params.pop().unwrap_or_default())
    }
}
