//! Reading a command's positional params with clear InvalidParams messages.

use super::error::RpcError;
use super::value::{Map, Value};
use std::ops::RangeInclusive;

/// Checks the number of params a command got.
pub fn expect_count(
    method: &str,
    params: &[Value],
    range: RangeInclusive<usize>,
) -> Result<(), RpcError> {
    let n = params.len();
    if range.contains(&n) {
        return Ok(());
    }
    let want = if range.start() == range.end() {
        format!("{}", range.start())
    } else {
        format!("{} to {}", range.start(), range.end())
    };
    Err(RpcError::invalid_params(format!(
        "{method} takes {want} param{}, got {n}",
        if *range.end() == 1 { "" } else { "s" }
    )))
}

/// A number that must be a whole number within `range`.
pub fn integer(what: &str, value: &Value, range: RangeInclusive<f64>) -> Result<f64, RpcError> {
    let n = match value {
        Value::Number(n) => *n,
        other => {
            return Err(RpcError::invalid_params(format!(
                "{what} must be a number, got {}",
                other.kind()
            )))
        }
    };
    if !n.is_finite() || n.fract() != 0.0 {
        return Err(RpcError::invalid_params(format!(
            "{what} must be a whole number, got {}",
            js(n)
        )));
    }
    if !range.contains(&n) {
        return Err(RpcError::invalid_params(format!(
            "{what} must be between {} and {}, got {}",
            js(*range.start()),
            js(*range.end()),
            js(n)
        )));
    }
    Ok(n)
}

/// An object param.
pub fn object<'v>(what: &str, value: &'v Value) -> Result<&'v Map, RpcError> {
    value.as_object().ok_or_else(|| {
        RpcError::invalid_params(format!("{what} must be an object, got {}", value.kind()))
    })
}

/// A string param.
pub fn string<'v>(what: &str, value: &'v Value) -> Result<&'v str, RpcError> {
    value.as_str().ok_or_else(|| {
        RpcError::invalid_params(format!("{what} must be a string, got {}", value.kind()))
    })
}

fn js(n: f64) -> String {
    let mut s = String::new();
    super::number::format_number(n, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_rejects_nan_fractions_and_out_of_range() {
        let r = 0.0..=10.0;
        assert!(integer("n", &Value::Number(f64::NAN), r.clone()).is_err());
        assert!(integer("n", &Value::Number(1.5), r.clone()).is_err());
        assert!(integer("n", &Value::Number(-1.0), r.clone()).is_err());
        assert!(integer("n", &Value::from("1"), r.clone()).is_err());
        assert_eq!(integer("n", &Value::Number(10.0), r).unwrap(), 10.0);
    }

    #[test]
    fn count_message_says_what_was_expected() {
        let e = expect_count("sleep", &[], 1..=1).unwrap_err();
        assert_eq!(e.message, "sleep takes 1 param, got 0");
    }
}
