//! Lock-free counters and latency histograms for `pool.stats()`.
//!
//! A histogram has log-linear buckets over microseconds: 8 sub-buckets per power of two, so a
//! reported percentile is within 12.5% of the true value. Recording is one relaxed
//! `fetch_add`; reading sums the buckets (a snapshot that may be a few records behind).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const SUB: usize = 8;
const BUCKETS: usize = 64 * SUB;

pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    max_us: AtomicU64,
}

/// p50, p99 and max, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max_us: AtomicU64::new(0),
        }
    }
}

fn bucket_of(us: u64) -> usize {
    if us < SUB as u64 {
        return us as usize;
    }
    let log = 63 - us.leading_zeros() as usize; // ≥ 3
    let sub = ((us >> (log - 3)) & (SUB as u64 - 1)) as usize;
    ((log - 2) * SUB + sub).min(BUCKETS - 1)
}

/// The upper bound (µs) of a bucket: what a percentile falling in it reports.
fn bucket_top(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let log = b / SUB + 2;
    let sub = (b % SUB) as u64;
    ((SUB as u64 + sub + 1) << (log - 3)) - 1
}

impl Histogram {
    pub fn record(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        self.buckets[bucket_of(us)].fetch_add(1, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    pub fn percentiles(&self) -> Percentiles {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let max = self.max_us.load(Ordering::Relaxed);
        if total == 0 {
            return Percentiles::default();
        }
        let at = |q: f64| {
            let rank = ((total as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (b, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return bucket_top(b).min(max);
                }
            }
            max
        };
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            p50: ms(at(0.5)),
            p99: ms(at(0.99)),
            max: ms(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for us in 0..100_000u64 {
            let b = bucket_of(us);
            assert!(b >= last);
            last = b;
            let top = bucket_top(b);
            assert!(top >= us, "{us} in bucket {b} with top {top}");
            assert!(
                top as f64 <= us as f64 * 1.125 + 1.0,
                "{us}: top {top} too loose"
            );
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let h = Histogram::default();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let p = h.percentiles();
        assert!((p.p50 - 50.0).abs() <= 50.0 * 0.125, "{p:?}");
        assert!((p.p99 - 99.0).abs() <= 99.0 * 0.125, "{p:?}");
        assert_eq!(p.max, 100.0);
    }
}
