//! Lock-free counters and latency histograms for `pool.stats()`.
//!
//! [`Counters`] holds the pool-wide figures. Nothing in the pool decides anything from them:
//! they are kept exact by the threads that move jobs (see `job.rs`) and only read for
//! `stats()`, with relaxed loads (a snapshot).
//!
//! A histogram has log-linear buckets over microseconds: 8 sub-buckets per power of two, so a
//! reported percentile is within 12.5% of the true value. Recording is one relaxed
//! `fetch_add`; reading sums the buckets (a snapshot that may be a few records behind).

use super::strategy::Strategy;
use crate::rpc::Outcome;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// What `pool.stats()` reports.
#[derive(Clone, Debug)]
pub struct Stats {
    pub threads: usize,
    pub strategy: Strategy,
    pub queued: usize,
    pub waiting: usize,
    pub running: usize,
    pub completed: u64,
    pub failed: u64,
    pub workers: Vec<WorkerStats>,
    /// JavaScript threads serving methods.
    pub servers: Vec<ServerStats>,
    pub run_time: Percentiles,
    pub wait_time: Percentiles,
}

/// One worker's counters, for `stats()`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerStats {
    pub id: usize,
    pub queued: usize,
    pub running: usize,
    pub completed: u64,
    pub busy_ms: f64,
}

/// One server's counters, for `stats()`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStats {
    pub id: u64,
    /// The serving thread's id as the bindings gave it (`threadId` in Node).
    pub thread: u64,
    pub methods: Vec<String>,
    /// False once closed: it finishes what it has but gets nothing new.
    pub open: bool,
    pub queued: usize,
    /// Of `queued`, the calls that wait for a handler slot: the rest its thread takes at its
    /// next look ([`crate::pool::Server`]'s take rules).
    pub waiting: usize,
    pub running: usize,
    pub completed: u64,
    pub busy_ms: f64,
}

/// The pool-wide counters.
#[derive(Default)]
pub(crate) struct Counters {
    /// Jobs in worker and server queues in state QUEUED. Incremented before a job becomes
    /// QUEUED and decremented by the thread that moves it out of QUEUED (the worker or server
    /// that starts it, or whoever withdraws it), so it never underflows and is exact when the
    /// pool is quiet.
    queued: AtomicUsize,
    completed: AtomicU64,
    failed: AtomicU64,
    /// How long jobs ran.
    run_time: Histogram,
    /// How long jobs waited from submission to their start.
    wait_time: Histogram,
}

impl Counters {
    /// A job is about to become QUEUED.
    pub(crate) fn add_queued(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// A job left QUEUED (started or withdrawn).
    pub(crate) fn sub_queued(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// Counts a settled job by its outcome.
    pub(crate) fn record(&self, outcome: &Outcome) {
        match outcome {
            Ok(_) => self.completed.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Counts a job settled with an error outside [`Counters::record`] (a stop, a departure).
    pub(crate) fn add_failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_run(&self, d: Duration) {
        self.run_time.record(d);
    }

    pub(crate) fn record_wait(&self, d: Duration) {
        self.wait_time.record(d);
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    pub(crate) fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    pub(crate) fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    pub(crate) fn run_time(&self) -> Percentiles {
        self.run_time.percentiles()
    }

    pub(crate) fn wait_time(&self) -> Percentiles {
        self.wait_time.percentiles()
    }
}

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
