//! `sleep(ms)`: holds a worker for `ms` milliseconds, then returns `ms`. For scheduling tests
//! and demos: it waits through `Context::sleep`, so a cancel, a timeout or `destroy()` ends it
//! at once instead of after the full time.

use crate::rpc::{params, Command, Context, RpcError, Value};
use std::time::Duration;

/// Holds a worker for `ms` milliseconds (cancellable); for scheduling tests and demos.
pub struct Sleep;

/// One day: longer sleeps are almost surely a unit mistake.
const MAX_MS: f64 = 86_400_000.0;

impl Command for Sleep {
    fn name(&self) -> &'static str {
        "sleep"
    }
    fn params(&self) -> &'static str {
        "ms: number"
    }
    fn summary(&self) -> &'static str {
        "holds a worker for ms milliseconds, then returns ms"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        params::expect_count("sleep", &params, 1..=1)?;
        let ms = match &params[0] {
            Value::Number(n) if n.is_finite() && (0.0..=MAX_MS).contains(n) => *n,
            other => {
                return Err(RpcError::invalid_params(format!(
                    "sleep: ms must be a number from 0 to {MAX_MS}, got {}",
                    crate::rpc::json::to_string(other)
                )))
            }
        };
        ctx.sleep(Duration::from_secs_f64(ms / 1000.0))?;
        Ok(Value::Number(ms))
    }
}
