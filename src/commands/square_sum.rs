//! `square_sum(max)`: the book's command, Σ √i for 0 ≤ i < max, summed in the order
//! JavaScript's loop sums it so that the result is bit for bit the same. It checks for a cancel
//! every 65,536 terms, so a long sum stops soon after an abort or a timeout.

use crate::rpc::{params, Command, Context, RpcError, Value};

/// The book's `square_sum`: Σ √i for 0 ≤ i < max, as JavaScript's loop computes it.
pub struct SquareSum;

impl Command for SquareSum {
    fn name(&self) -> &'static str {
        "square_sum"
    }
    fn params(&self) -> &'static str {
        "max: integer 0..2^53"
    }
    fn summary(&self) -> &'static str {
        "sum of the square roots of 0..max"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        params::expect_count("square_sum", &params, 1..=1)?;
        let max =
            params::integer("square_sum: max", &params[0], 0.0..=9_007_199_254_740_991.0)? as u64;
        let mut sum = 0.0f64;
        let mut i = 0u64;
        while i < max {
            let end = max.min(i + (1 << 16));
            while i < end {
                sum += (i as f64).sqrt();
                i += 1;
            }
            ctx.check()?;
        }
        Ok(Value::Number(sum))
    }
}
