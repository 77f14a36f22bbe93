//! What a pool is asked to be: its threads, strategy, queue bound and time limit. Read-only
//! once the pool is built; the owners that enforce a setting keep their own copy of it
//! (admission: `max_queue` and `on_full`).

use super::strategy::Strategy;
use std::time::Duration;

/// What `onFull` says to do when `maxQueue` is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFull {
    Reject,
    Wait,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub threads: usize,
    pub strategy: Strategy,
    /// Most jobs waiting in queues (not running); `usize::MAX` for no bound.
    pub max_queue: usize,
    pub on_full: OnFull,
    /// Default limit on a call's running time.
    pub timeout: Option<Duration>,
    /// How much lower than the process the worker threads' scheduling priority is (a nice
    /// increment, 0..=19; see `worker::lower_priority`).
    pub nice_increment: u8,
}

/// The largest nice increment: nice values end at 19.
pub const MAX_NICE_INCREMENT: u32 = 19;

/// Most threads a pool may have (a bound on what a mistyped option can start).
pub const MAX_THREADS: usize = 1024;

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: num_cpus::get().max(1),
            strategy: Strategy::LeastBusy,
            max_queue: usize::MAX,
            on_full: OnFull::Reject,
            timeout: None,
            nice_increment: 0,
        }
    }
}
