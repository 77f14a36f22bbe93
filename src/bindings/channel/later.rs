//! Wakes put off (see the module doc of `channel`, "Outcomes behind a backlog"): one thread for
//! the process, started the first time a wake is put off, that wakes each inbox handed to it
//! once its time has come. The queue is kept in time order: wakes are put off by one of two
//! holds (`HOLD`, `DEEP_HOLD`), so a short one may come due before a long one handed over
//! earlier.

use super::{lock, Inbox};
use crate::pool::Origin;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

struct Due {
    at: Instant,
    origin: Weak<Origin>,
    inbox: Arc<Inbox>,
}

#[derive(Default)]
struct Later {
    due: Mutex<VecDeque<Due>>,
    bell: Condvar,
}

/// The thread's queue, or `None` when the thread could not be started.
static LATER: OnceLock<Option<Arc<Later>>> = OnceLock::new();

fn later() -> Option<&'static Arc<Later>> {
    LATER
        .get_or_init(|| {
            let later = Arc::new(Later::default());
            let theirs = later.clone();
            std::thread::Builder::new()
                .name("corepool-wake".into())
                .spawn(move || run(&theirs))
                .ok()
                .map(|_| later)
        })
        .as_ref()
}

fn run(later: &Later) {
    let mut due = lock(&later.due);
    loop {
        let Some(first) = due.front() else {
            due = later.bell.wait(due).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = Instant::now();
        if first.at > now {
            let wait = first.at - now;
            due = later
                .bell
                .wait_timeout(due, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        let Some(Due { origin, inbox, .. }) = due.pop_front() else {
            continue;
        };
        drop(due);
        // An environment that is gone hears nothing more; one being torn down waits for this
        // window (`Origin::retire`) before its threadsafe function may go.
        if let Some(origin) = origin.upgrade() {
            if origin.enter() {
                // Cleared before the wake: an outcome pushed after this puts off a wake of its
                // own, or is taken by the drain this wake schedules.
                inbox.put_off.clear();
                // SAFETY: inside an `Origin::enter` window of the inbox's environment.
                unsafe { inbox.wake() };
                origin.leave();
            }
        }
        drop(inbox);
        due = lock(&later.due);
    }
}

/// Wakes `inbox`'s JS thread at `at` (inside an `enter` window of `origin`). False when no
/// thread can do it: the caller wakes it now instead.
pub(super) fn wake_later(origin: &Weak<Origin>, inbox: &Arc<Inbox>, at: Instant) -> bool {
    let Some(later) = later() else {
        return false;
    };
    let mut due = lock(&later.due);
    let at = insert_by(
        &mut due,
        Due {
            at,
            origin: origin.clone(),
            inbox: inbox.clone(),
        },
        |d| d.at,
    );
    drop(due);
    // The thread waits for the first entry's time (or for one): a new first entry is news.
    if at == 0 {
        later.bell.notify_one();
    }
    true
}

/// Whether one inbox's wake is put off, and until when (see the module doc of `channel`, the
/// protocol for the put-off wake): one atomic, so the time is there as soon as the wake is.
pub(super) struct PutOff {
    /// When the wake the wake-later thread holds comes, in nanoseconds since [`epoch`] (at
    /// least 1); [`NONE`] while none is put off.
    until: AtomicU64,
}

/// `PutOff::until` when no wake is put off.
const NONE: u64 = 0;

/// What an outcome that may wait does about the wake (see [`PutOff::join_or_take`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Hold {
    /// A wake put off already comes in time for it: it goes with that one.
    Joined,
    /// None is put off: the caller hands the inbox to the wake-later thread for its own time.
    Mine,
    /// The wake put off comes later than it may wait (put off behind a deeper backlog): wake
    /// the JS thread now.
    Now,
}

impl PutOff {
    pub(super) fn new() -> Self {
        PutOff {
            until: AtomicU64::new(NONE),
        }
    }

    /// An outcome just pushed may wait for its JS thread until `at`.
    pub(super) fn join_or_take(&self, at: Instant) -> Hold {
        let due = since_epoch(at);
        match self
            .until
            .compare_exchange(NONE, due, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => Hold::Mine,
            Err(until) if until <= due => Hold::Joined,
            Err(_) => Hold::Now,
        }
    }

    /// The wake put off comes now (or could not be handed over): outcomes pushed from here on
    /// put off one of their own, or are taken by the drain this wake schedules.
    pub(super) fn clear(&self) {
        self.until.store(NONE, Ordering::SeqCst);
    }
}

/// The instant `PutOff` times count from: the first one asked for.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Where [`epoch`] is on the scale of [`since_epoch`]: instants before it (made before the
/// first was asked for) stay below it, in order.
const BIAS: u64 = 1 << 62;

/// `at` in nanoseconds from [`epoch`], shifted by [`BIAS`] so that an instant before the epoch
/// keeps its order too (it used to count as the epoch itself); never 0 ([`NONE`]).
fn since_epoch(at: Instant) -> u64 {
    let e = epoch();
    let nanos = |d: Duration| {
        u64::try_from(d.as_nanos())
            .unwrap_or(u64::MAX)
            .min(BIAS - 1)
    };
    if at >= e {
        BIAS + nanos(at - e)
    } else {
        BIAS - nanos(e - at)
    }
}

/// Inserts `item` into `queue`, which is in order of `key`, after every entry whose key is not
/// later than its own (so equal keys keep their arrival order); returns where it went.
fn insert_by<T, K: Ord>(queue: &mut VecDeque<T>, item: T, key: impl Fn(&T) -> K) -> usize {
    let k = key(&item);
    // From the back: entries mostly arrive in time order, so this is usually one comparison.
    let at = queue.len() - queue.iter().rev().take_while(|e| key(e) > k).count();
    queue.insert(at, item);
    at
}

#[cfg(test)]
mod tests {
    use super::{insert_by, Hold, PutOff};
    use std::collections::VecDeque;
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    #[test]
    fn an_outcome_does_not_join_a_wake_that_comes_later_than_it_may_wait() {
        // One environment, two pools: a wake put off for 4 ms behind a deep backlog in one;
        // an outcome of the other, behind a shallow backlog, may wait 1 ms only. (Before this
        // check every outcome joined the wake put off, whenever it came.)
        let p = PutOff::new();
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        assert_eq!(p.join_or_take(ms(4)), Hold::Mine);
        assert_eq!(p.join_or_take(ms(1)), Hold::Now);
        assert_eq!(p.join_or_take(ms(4)), Hold::Joined);
        assert_eq!(p.join_or_take(ms(5)), Hold::Joined);
        // The wake comes: the next outcome puts off its own, for its own time.
        p.clear();
        assert_eq!(p.join_or_take(ms(1)), Hold::Mine);
        assert_eq!(p.join_or_take(ms(4)), Hold::Joined);
        assert_eq!(p.join_or_take(ms(0)), Hold::Now);
    }

    #[test]
    fn instants_before_the_epoch_keep_their_order() {
        // The epoch is the first instant asked for; an outcome's time may have been taken
        // before that (the race test below met it: every time before the epoch counted as the
        // epoch, and outcomes that may wait less joined a later wake).
        let e = super::epoch();
        let before = |n: u64| {
            e.checked_sub(Duration::from_millis(n))
                .expect("an instant 3 ms before the epoch")
        };
        let [a, b, c, d] =
            [before(3), before(1), e, e + Duration::from_millis(1)].map(super::since_epoch);
        assert!(a < b && b < c && c < d, "{a} {b} {c} {d}");
        assert!(a > 0, "never NONE");
    }

    #[test]
    fn of_outcomes_racing_one_puts_off_the_wake_and_each_other_joins_it_only_if_in_time() {
        // Eight threads at once, each with its own time (0..8 ms from one instant): exactly one
        // takes the wake, and its time is what the others were measured against.
        for round in 0..200 {
            let p = Arc::new(PutOff::new());
            let t = Instant::now();
            let start = Arc::new(Barrier::new(8));
            let outcomes: Vec<(u64, Hold)> = (0..8u64)
                .map(|i| {
                    let (p, start) = (p.clone(), start.clone());
                    let ms = (i * 5 + round) % 8;
                    std::thread::spawn(move || {
                        start.wait();
                        (ms, p.join_or_take(t + Duration::from_millis(ms)))
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect();
            let mine: Vec<u64> = outcomes
                .iter()
                .filter(|(_, h)| *h == Hold::Mine)
                .map(|(ms, _)| *ms)
                .collect();
            assert_eq!(mine.len(), 1, "round {round}: {outcomes:?}");
            for (ms, h) in &outcomes {
                match h {
                    Hold::Joined => assert!(*ms >= mine[0], "round {round}: {outcomes:?}"),
                    Hold::Now => assert!(*ms < mine[0], "round {round}: {outcomes:?}"),
                    Hold::Mine => {}
                }
            }
        }
    }

    fn order(keys: &[u32]) -> (Vec<(u32, usize)>, Vec<usize>) {
        let mut q = VecDeque::new();
        let places = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| insert_by(&mut q, (k, i), |e| e.0))
            .collect();
        (q.into_iter().collect(), places)
    }

    #[test]
    fn entries_in_time_order_stay_in_arrival_order() {
        let (q, places) = order(&[1, 2, 2, 5]);
        assert_eq!(q, vec![(1, 0), (2, 1), (2, 2), (5, 3)]);
        assert_eq!(places, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_shorter_hold_goes_before_longer_ones_and_after_its_equals() {
        // Two 4 ms wakes, then a 1 ms one due before both: it becomes the first (the thread
        // must hear of it); one due between them goes between.
        let (q, places) = order(&[40, 41, 10, 40, 10]);
        assert_eq!(q, vec![(10, 2), (10, 4), (40, 0), (40, 3), (41, 1)]);
        assert_eq!(places, vec![0, 1, 0, 2, 1]);
    }

    #[test]
    fn any_arrival_order_ends_sorted_and_stable() {
        // Every permutation of a small multiset of keys (equal keys tagged by arrival).
        let keys = [3u32, 1, 2, 1, 3];
        let mut perm: Vec<usize> = (0..keys.len()).collect();
        loop {
            let ks: Vec<u32> = perm.iter().map(|&i| keys[i]).collect();
            let (q, _) = order(&ks);
            let mut sorted: Vec<(u32, usize)> = ks.iter().copied().zip(0..).collect();
            sorted.sort_by_key(|e| e.0); // stable: equal keys by arrival
            assert_eq!(q, sorted, "arrival order {ks:?}");
            // next permutation
            let Some(i) = (0..perm.len() - 1).rev().find(|&i| perm[i] < perm[i + 1]) else {
                break;
            };
            let j = (i + 1..perm.len())
                .rev()
                .find(|&j| perm[j] > perm[i])
                .unwrap();
            perm.swap(i, j);
            perm[i + 1..].reverse();
        }
    }
}
