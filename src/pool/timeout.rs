//! Time limits on calls, as JavaScript gives them: a number of milliseconds (an `f64`).
//!
//! One rule for a call's `timeout` and for the pool's default: `0` and `Infinity` mean no
//! limit; any other positive number is a limit of at least one nanosecond (so `1e-9` is a tiny
//! limit, never "none"); a limit too long for a [`Duration`] or for the clock (`1e22`,
//! `Number.MAX_VALUE`) can never be reached and is kept as [`Duration::MAX`], which no deadline
//! is made of. NaN and negative numbers are refused.
//!
//! A limit is the nearest whole number of nanoseconds (not the next one up: `33.2 * 1e6` is
//! 33200000.000000004 in binary floating point), so that a Timeout error, which states the
//! limit ([`RpcError::timed_out`]), reads `33.2 ms` back as it was given.

use crate::rpc::Deadline;
#[cfg(doc)]
use crate::rpc::RpcError;
use std::time::{Duration, Instant};

/// What a timeout must be, as an error message says it.
pub const RULE: &str = "must be a number of ms ≥ 0 (0 or Infinity: no limit)";

/// The limit `ms` milliseconds, [`Duration::ZERO`] for none; `Err` says what is wrong.
pub fn from_ms(ms: f64) -> Result<Duration, String> {
    if ms.is_nan() || ms < 0.0 {
        return Err(format!("{RULE}, got {ms}"));
    }
    if ms == 0.0 || ms == f64::INFINITY {
        return Ok(Duration::ZERO);
    }
    let nanos = (ms * 1e6).round();
    // `as` saturates: every limit past u64::MAX ns (584 years) is the same unreachable one.
    Ok(if nanos >= u64::MAX as f64 {
        Duration::MAX
    } else {
        Duration::from_nanos((nanos as u64).max(1))
    })
}

/// When a call started at `start` with `limit` must stop; `None` when the limit is none or
/// lies past what the clock can represent.
pub fn deadline(start: Instant, limit: Option<Duration>) -> Option<Instant> {
    limit
        .filter(|l| !l.is_zero())
        .and_then(|l| start.checked_add(l))
}

/// A native call of `method` started at `start` with `limit`, as its [`Context`] watches it:
/// when it must stop, and what its Timeout error names. `None` as for [`deadline`].
///
/// [`Context`]: crate::rpc::Context
pub fn running_limit(
    method: &str,
    start: Instant,
    limit: Option<Duration>,
) -> Option<Deadline<'_>> {
    let at = deadline(start, limit)?;
    Some(Deadline {
        at,
        limit: limit.unwrap_or_default(),
        method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::RpcError;

    #[test]
    fn zero_and_infinity_are_no_limit() {
        assert_eq!(from_ms(0.0), Ok(Duration::ZERO));
        assert_eq!(from_ms(-0.0), Ok(Duration::ZERO));
        assert_eq!(from_ms(f64::INFINITY), Ok(Duration::ZERO));
    }

    #[test]
    fn tiny_limits_are_limits() {
        for ms in [1e-9, f64::MIN_POSITIVE, 5e-324, 1e-6] {
            let d = from_ms(ms).unwrap();
            assert!(!d.is_zero(), "{ms} ms became no limit");
            assert!(d <= Duration::from_nanos(1), "{ms} ms became {d:?}");
        }
        assert_eq!(from_ms(1.5).unwrap(), Duration::from_micros(1500));
    }

    #[test]
    fn limits_read_back_as_given() {
        // 33.2 · 1e6 is a hair above 33200000 in binary: the next nanosecond up would make the
        // Timeout say 33.200001 ms.
        for (ms, text) in [
            (33.2, "33.2"),
            (2.007, "2.007"),
            (0.1, "0.1"),
            (1000.0, "1000"),
            (1e-9, "0.000001"),
        ] {
            let limit = from_ms(ms).unwrap();
            assert_eq!(
                RpcError::timed_out("m", limit).message,
                format!("m timed out after {text} ms: raise the timeout or make the task shorter"),
                "{ms}"
            );
        }
    }

    #[test]
    fn huge_limits_never_overflow_the_clock() {
        let now = Instant::now();
        for ms in [1e13, 1e16, 1e22, 1e300, f64::MAX] {
            let d = from_ms(ms).unwrap();
            assert!(d >= Duration::from_secs(300 * 365 * 86_400), "{ms}");
            // Either a far deadline or none; never a panic.
            if let Some(at) = deadline(now, Some(d)) {
                assert!(at > now);
            }
        }
        assert_eq!(deadline(now, Some(Duration::MAX)), None);
        assert_eq!(deadline(now, Some(Duration::ZERO)), None);
        assert_eq!(deadline(now, None), None);
    }

    #[test]
    fn nan_and_negatives_are_refused() {
        for ms in [f64::NAN, -1.0, -1e-9, f64::NEG_INFINITY] {
            assert!(from_ms(ms).is_err(), "{ms}");
        }
    }
}
