//! How a call picks its worker, at submit time (the book's `getWorker()`).
//!
//! - `RoundRobin` cycles 0, 1, …, n−1 from one shared counter.
//! - `Random` picks uniformly.
//! - `LeastBusy` picks a worker with the fewest queued + running calls. Among those, one that
//!   is awake (polling for work, or about to look at its queue anyway) wins over one that
//!   sleeps, since it takes the call without a wake-up; remaining ties are broken uniformly at
//!   random (the book's version always favours worker 0 on ties). Loads are read with relaxed
//!   atomics: with concurrent submitters the choice is made on a snapshot, which is the best
//!   any scheduler without a global lock can do.

use std::cell::Cell;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    RoundRobin,
    Random,
    LeastBusy,
}

impl Strategy {
    /// Every strategy, in the order the docs list them.
    pub const ALL: [Strategy; 3] = [Strategy::RoundRobin, Strategy::Random, Strategy::LeastBusy];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::RoundRobin => "roundrobin",
            Strategy::Random => "random",
            Strategy::LeastBusy => "leastbusy",
        }
    }

    /// Picks a worker among `n` (n ≥ 1); `load(i)` is worker i's queued + running count and
    /// whether it sleeps (waking it costs a system call on each side).
    pub fn pick(
        self,
        n: usize,
        next: &AtomicUsize,
        load: impl Fn(usize) -> (usize, bool),
    ) -> usize {
        match self {
            Strategy::RoundRobin => next.fetch_add(1, Ordering::Relaxed) % n,
            Strategy::Random => random_below(n),
            Strategy::LeastBusy => {
                let mut best = (usize::MAX, true);
                let mut pick = 0;
                let mut ties = 0;
                for i in 0..n {
                    let l = load(i);
                    if l < best {
                        best = l;
                        pick = i;
                        ties = 1;
                    } else if l == best {
                        // Reservoir sampling: each of the k tied workers ends up chosen with 1/k.
                        ties += 1;
                        if random_below(ties) == 0 {
                            pick = i;
                        }
                    }
                }
                pick
            }
        }
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Strategy::ALL
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| {
                let names: Vec<String> = Strategy::ALL
                    .iter()
                    .map(|st| format!("'{}'", st.name()))
                    .collect();
                format!(
                    "unknown strategy {s:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// A uniform integer in 0..n from a per-thread xorshift generator.
pub fn random_below(n: usize) -> usize {
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u8(1);
            h.finish() | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        // Lemire's multiply-shift: unbiased enough for scheduling (bias < n / 2^64).
        ((u128::from(x) * n as u128) >> 64) as usize
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundrobin_cycles() {
        let next = AtomicUsize::new(0);
        let picks: Vec<_> = (0..7)
            .map(|_| Strategy::RoundRobin.pick(3, &next, |_| (0, false)))
            .collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn leastbusy_picks_a_minimum_and_breaks_ties_at_random() {
        let next = AtomicUsize::new(0);
        let loads = [3, 1, 4, 1, 5, 1];
        let mut seen = [0usize; 6];
        for _ in 0..6000 {
            let w = Strategy::LeastBusy.pick(6, &next, |i| (loads[i], true));
            assert_eq!(loads[w], 1, "picked a worker with more load than another");
            seen[w] += 1;
        }
        for i in [1, 3, 5] {
            assert!(
                seen[i] > 1500,
                "tie member {i} picked {} of 6000 times",
                seen[i]
            );
        }
    }

    #[test]
    fn leastbusy_prefers_an_awake_worker_among_the_least_loaded() {
        let next = AtomicUsize::new(0);
        // (load, asleep): 2 is among the least loaded but asleep; 3 and 5 are too, and awake;
        // 1 and 4 are awake but busier.
        let workers = [
            (1, true),
            (1, false),
            (0, true),
            (0, false),
            (2, false),
            (0, false),
        ];
        let mut seen = [0usize; 6];
        for _ in 0..6000 {
            seen[Strategy::LeastBusy.pick(6, &next, |i| workers[i])] += 1;
        }
        assert_eq!(seen[0] + seen[1] + seen[2] + seen[4], 0, "{seen:?}");
        assert!(seen[3] > 2500 && seen[5] > 2500, "{seen:?}");
    }

    #[test]
    fn random_reaches_every_worker() {
        let next = AtomicUsize::new(0);
        let mut seen = [0usize; 4];
        for _ in 0..4000 {
            seen[Strategy::Random.pick(4, &next, |_| (0, true))] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn parses_names_and_rejects_others() {
        assert_eq!(
            "leastbusy".parse::<Strategy>().unwrap(),
            Strategy::LeastBusy
        );
        assert!("LeastBusy".parse::<Strategy>().is_err());
    }
}
