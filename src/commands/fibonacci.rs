//! `fibonacci(n)`: the book's command, F(n) exactly, as a decimal string (a JavaScript number
//! is exact only up to F(78)). Big-integer addition on base-10^18 limbs, checking for a cancel
//! as it goes; `n` is capped at 100,000 (20,899 digits, milliseconds).

use crate::rpc::{params, Command, Context, RpcError, Value};

/// F(n) in decimal (F(0) = 0, F(1) = 1), exact at any size, like the book's BigInt version.
pub struct Fibonacci;

/// F(100000) has 20,899 digits and takes milliseconds; beyond that is not a sensible RPC.
const MAX_N: f64 = 100_000.0;

impl Command for Fibonacci {
    fn name(&self) -> &'static str {
        "fibonacci"
    }
    fn params(&self) -> &'static str {
        "n: integer 0..100000"
    }
    fn summary(&self) -> &'static str {
        "F(n) as a decimal string"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        params::expect_count("fibonacci", &params, 1..=1)?;
        let n = params::integer("fibonacci: n", &params[0], 0.0..=MAX_N)? as u64;
        Ok(Value::String(fibonacci(n, ctx)?))
    }
}

/// Base-10^18 limbs, least significant first.
const BASE: u64 = 1_000_000_000_000_000_000;

fn fibonacci(n: u64, ctx: &Context) -> Result<String, RpcError> {
    let (mut a, mut b) = (vec![0u64], vec![1u64]);
    for i in 0..n {
        // (a, b) = (b, a + b)
        let mut carry = 0;
        let mut sum = Vec::with_capacity(b.len() + 1);
        for (j, limb) in b.iter().enumerate() {
            let s = limb + a.get(j).copied().unwrap_or(0) + carry;
            sum.push(s % BASE);
            carry = s / BASE;
        }
        if carry > 0 {
            sum.push(carry);
        }
        a = std::mem::replace(&mut b, sum);
        if i % 1024 == 0 {
            ctx.check()?;
        }
    }
    let mut out = a.last().copied().unwrap_or(0).to_string();
    for limb in a.iter().rev().skip(1) {
        out.push_str(&format!("{limb:018}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU8};

    #[test]
    fn known_values() {
        let (c, g) = (AtomicU8::new(0), AtomicBool::new(false));
        let flags = crate::rpc::StopFlags {
            cancel: &c,
            env_gone: &g,
            destroyed: &g,
        };
        let ctx = Context::new(flags, None, 0);
        assert_eq!(fibonacci(0, &ctx).unwrap(), "0");
        assert_eq!(fibonacci(1, &ctx).unwrap(), "1");
        assert_eq!(fibonacci(90, &ctx).unwrap(), "2880067194370816120");
        assert_eq!(fibonacci(100, &ctx).unwrap(), "354224848179261915075");
        let f1000 = fibonacci(1000, &ctx).unwrap();
        assert_eq!(f1000.len(), 209);
        assert!(f1000.starts_with("43466557686937456435688527675040625802564660517371780402481729"));
    }
}
