//! Counts under shared-memory locks, from native threads: the native side of every lock
//! protocol in `crate::shm`, taken by a command while JavaScript threads take the same locks.
//!
//! `locked_add` takes its locks (one or several, through [`lock_all`], so in the same order as
//! JavaScript's `lockAll`) `times` times as this worker thread's native agent, and each time
//! adds one to a shared counter of three Int32 elements:
//!
//! ```text
//!   counter[i]       total: + 1 per entry; a plain read-then-write when a mutex of any kind
//!                    is among the locks (an overlap of two holders would lose an update),
//!                    an atomic add when only semaphores are (their holders may overlap)
//!   counter[i + 1]   inside: holders in the section now (atomic)
//!   counter[i + 2]   most: the most holders seen in the section at once (atomic maximum)
//! ```
//!
//! A reentrant mutex is taken `depth` times per entry (and given back as often). Waiting for a
//! lock stops when the call is aborted, times out or its pool is destroyed; a fair mutex's
//! ticket is then given up (`shm::fair_mutex`), so the queue moves on without this thread.

use crate::rpc::{params, Command, Context, ErrorCode, Map, RpcError, Value};
use crate::shm::backoff::Backoff;
use crate::shm::{
    fair_mutex, lock_all, owned_mutex, reentrant_mutex, Agent, ElementKind, FairMutex, Lock,
    LockError, Mutex, OwnedMutex, ReentrantMutex, Semaphore, SharedView, SharedWord, SharedWords,
};

pub struct LockedAdd;

const MAX_TIMES: f64 = 1e9;
const MAX_DEPTH: f64 = 64.0;
const MAX_LOCKS: usize = 16;
const TOTAL: usize = 0;
const INSIDE: usize = 1;
const MOST: usize = 2;
/// Spin-loop hints between the read and the write of the total: widens the window in which
/// an overlap would lose an update.
const WINDOW: u32 = 16;
/// Entries between two looks at whether the call must stop: an uncontended entry never waits,
/// so without these looks `times` entries (up to 10^9, minutes) would run past any abort or
/// timeout. An entry costs well under a microsecond, so a stop is seen within a millisecond.
const CHECK_EVERY: u64 = 1024;

impl Command for LockedAdd {
    fn name(&self) -> &'static str {
        "locked_add"
    }
    fn params(&self) -> &'static str {
        "{ locks: [{ kind: 'mutex' | 'semaphore' | 'owned' | 'reentrant' | 'fair', array: Int32Array, index?: integer }], counter: Int32Array, counterIndex?: integer, times: integer, depth?: integer }"
    }
    fn summary(&self) -> &'static str {
        "adds 1 to a shared counter `times` times, each under the given shared-memory locks; returns times"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        let job = Job::parse(&params)?;
        let agent = Agent::native();
        for n in 0..job.times {
            if n % CHECK_EVERY == 0 {
                ctx.check()?;
            }
            job.enter(agent, ctx)?;
        }
        Ok(Value::Number(job.times as f64))
    }
}

struct Job {
    locks: Vec<Lock>,
    counter: SharedWords,
    times: u64,
    depth: u32,
    /// A mutex of some kind is among the locks: holders never overlap.
    exclusive: bool,
}

impl Job {
    fn parse(params: &[Value]) -> Result<Job, RpcError> {
        params::expect_count("locked_add", params, 1..=1)?;
        let opts = params::object("locked_add: params", &params[0])?;
        for (key, _) in opts.iter() {
            if !matches!(
                key,
                "locks" | "counter" | "counterIndex" | "times" | "depth"
            ) {
                return Err(RpcError::invalid_params(format!(
                    "locked_add: unknown param {key:?} (expected locks, counter, counterIndex, times, depth)"
                )));
            }
        }
        let specs = match opts.get("locks").map(|v| (v, v.as_array())) {
            Some((_, Some(specs))) if (1..=MAX_LOCKS).contains(&specs.len()) => specs,
            Some((_, Some(specs))) => {
                return Err(RpcError::invalid_params(format!(
                    "locked_add: locks must hold 1 to {MAX_LOCKS} locks, got {}",
                    specs.len()
                )))
            }
            Some((other, None)) => {
                return Err(RpcError::invalid_params(format!(
                    "locked_add: locks must be an array, got {}",
                    other.kind()
                )))
            }
            None => return Err(RpcError::invalid_params("locked_add: locks is required")),
        };
        let locks = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| parse_lock(i, spec))
            .collect::<Result<Vec<_>, _>>()?;
        let counter_view = int32_view("locked_add: counter", required(opts, "counter")?)?;
        let counter_index = match opts.get("counterIndex") {
            None => 0,
            Some(v) => {
                params::integer("locked_add: counterIndex", v, 0.0..=u32::MAX as f64)? as usize
            }
        };
        let counter = SharedWords::new("locked_add: counter", counter_view, counter_index, 3)?;
        // The counter on a lock's words would be written under that lock, by its holders.
        let counter_end = counter.address() + 4 * counter.len();
        if let Some(i) = locks.iter().position(|l| {
            l.address() < counter_end && counter.address() < l.address() + 4 * l.words()
        }) {
            return Err(RpcError::invalid_params(format!(
                "locked_add: counter overlaps the words of locks[{i}]"
            )));
        }
        let times = params::integer(
            "locked_add: times",
            required(opts, "times")?,
            0.0..=MAX_TIMES,
        )? as u64;
        let depth = match opts.get("depth") {
            None => 1,
            Some(v) => params::integer("locked_add: depth", v, 1.0..=MAX_DEPTH)? as u32,
        };
        let exclusive = locks.iter().any(|l| !matches!(l, Lock::Semaphore(_)));
        Ok(Job {
            locks,
            counter,
            times,
            depth,
            exclusive,
        })
    }

    /// One entry: take the locks, count, give them back.
    fn enter(&self, agent: Agent, ctx: &Context) -> Result<(), RpcError> {
        let mut backoff = Backoff::new();
        let held = lock_all(&self.locks, agent, || {
            ctx.stop_reason().is_none() && backoff.snooze(None)
        })
        .map_err(refused)?;
        let Some(held) = held else {
            ctx.check()?;
            unreachable!("only a stop makes the wait give up");
        };
        for lock in self.reentrant() {
            for _ in 1..self.depth {
                lock.lock_with(agent, &mut || false).map_err(refused)?;
            }
        }
        let inside = self.counter.fetch_add(INSIDE, 1) + 1;
        let mut most = self.counter.load(MOST);
        while inside > most {
            match self.counter.compare_exchange(MOST, most, inside) {
                Ok(_) => break,
                Err(now) => most = now,
            }
        }
        if self.exclusive {
            let total = self.counter.load(TOTAL);
            for _ in 0..WINDOW {
                std::hint::spin_loop();
            }
            self.counter.store(TOTAL, total.wrapping_add(1));
        } else {
            self.counter.fetch_add(TOTAL, 1);
        }
        self.counter.fetch_add(INSIDE, -1);
        for lock in self.reentrant() {
            for _ in 1..self.depth {
                lock.unlock(agent).map_err(refused)?;
            }
        }
        held.release().map_err(refused)
    }

    fn reentrant(&self) -> impl Iterator<Item = &Lock> {
        self.locks
            .iter()
            .filter(|l| matches!(l, Lock::Reentrant(_)))
    }
}

/// A lock refused by its protocol (held by this thread already, released by someone else):
/// the command cannot go on.
fn refused(e: LockError) -> RpcError {
    RpcError::new(ErrorCode::CommandFailed, format!("locked_add: {e}"))
}

fn required<'v>(opts: &'v Map, key: &str) -> Result<&'v Value, RpcError> {
    opts.get(key)
        .ok_or_else(|| RpcError::invalid_params(format!("locked_add: {key} is required")))
}

fn int32_view<'v>(what: &str, value: &'v Value) -> Result<&'v SharedView, RpcError> {
    match value {
        Value::View(v) if v.kind() == ElementKind::Int32 => Ok(v),
        Value::View(v) => Err(RpcError::invalid_params(format!(
            "{what} must be an Int32Array over a SharedArrayBuffer, got {}",
            v.kind().js_name()
        ))),
        other => Err(RpcError::invalid_params(format!(
            "{what} must be an Int32Array over a SharedArrayBuffer, got {}",
            other.kind()
        ))),
    }
}

fn parse_lock(i: usize, spec: &Value) -> Result<Lock, RpcError> {
    let what = format!("locked_add: locks[{i}]");
    let spec = params::object(&what, spec)?;
    for (key, _) in spec.iter() {
        if !matches!(key, "kind" | "array" | "index") {
            return Err(RpcError::invalid_params(format!(
                "{what}: unknown key {key:?} (expected kind, array, index)"
            )));
        }
    }
    let kind = params::string(
        &format!("{what}.kind"),
        spec.get("kind")
            .ok_or_else(|| RpcError::invalid_params(format!("{what}.kind is required")))?,
    )?;
    let array = int32_view(
        &format!("{what}.array"),
        spec.get("array")
            .ok_or_else(|| RpcError::invalid_params(format!("{what}.array is required")))?,
    )?;
    let index = match spec.get("index") {
        None => 0,
        Some(v) => params::integer(&format!("{what}.index"), v, 0.0..=u32::MAX as f64)? as usize,
    };
    let words = |n| SharedWords::new(&what, array, index, n);
    Ok(match kind {
        "mutex" => Lock::Mutex(Mutex::new(SharedWord::new(&what, array.clone(), index)?)),
        "semaphore" => Lock::Semaphore(Semaphore::new(SharedWord::new(
            &what,
            array.clone(),
            index,
        )?)),
        "owned" => Lock::Owned(OwnedMutex::new(words(owned_mutex::WORDS)?)),
        "reentrant" => Lock::Reentrant(ReentrantMutex::new(words(reentrant_mutex::WORDS)?)),
        "fair" => Lock::Fair(FairMutex::new(words(fair_mutex::WORDS)?)),
        other => {
            return Err(RpcError::invalid_params(format!(
                "{what}.kind must be 'mutex', 'semaphore', 'owned', 'reentrant' or 'fair', got {other:?}"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::command::TestFlags;
    use crate::shm::view::leaked_view;
    use std::sync::atomic::Ordering;

    fn lock(kind: &str, array: &SharedView, index: usize) -> Value {
        let mut m = Map::new();
        m.insert("kind", Value::from(kind));
        m.insert("array", Value::View(array.clone()));
        m.insert("index", Value::Number(index as f64));
        Value::Object(m)
    }

    fn params(locks: Vec<Value>, counter: &SharedView, times: f64, depth: f64) -> Vec<Value> {
        let mut m = Map::new();
        m.insert("locks", Value::Array(locks));
        m.insert("counter", Value::View(counter.clone()));
        m.insert("times", Value::Number(times));
        m.insert("depth", Value::Number(depth));
        vec![Value::Object(m)]
    }

    #[test]
    fn every_kind_of_lock_counts_exactly_across_threads() {
        let words = leaked_view(4 * 64, ElementKind::Int32);
        words.store_i32(1, 2, Ordering::SeqCst); // the semaphore's permits
        let set = [
            ("mutex", 0),
            ("semaphore", 1),
            ("owned", 2),
            ("reentrant", 4),
            ("fair", 8),
        ];
        for (kind, index) in set {
            let counter = leaked_view(12, ElementKind::Int32);
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (words, counter) = (words.clone(), counter.clone());
                    std::thread::spawn(move || {
                        let flags = TestFlags::new();
                        let p = params(vec![lock(kind, &words, index)], &counter, 500.0, 3.0);
                        LockedAdd.run(p, &flags.ctx()).unwrap()
                    })
                })
                .collect();
            for t in threads {
                assert_eq!(t.join().unwrap(), Value::Number(500.0));
            }
            let read = |i| counter.load_i32(i, Ordering::SeqCst);
            assert_eq!(read(TOTAL), 2000, "{kind}: total");
            assert_eq!(read(INSIDE), 0, "{kind}: inside");
            let most = if kind == "semaphore" { 2 } else { 1 };
            assert!(
                read(MOST) >= 1 && read(MOST) <= most,
                "{kind}: most {}",
                read(MOST)
            );
        }
        assert_eq!(words.load_i32(1, Ordering::SeqCst), 2, "permits came back");
    }

    #[test]
    fn a_cancelled_wait_gives_up_its_ticket() {
        let words = leaked_view(4 * 40, ElementKind::Int32);
        let counter = leaked_view(12, ElementKind::Int32);
        let fair = FairMutex::new(SharedWords::new("t", &words, 0, fair_mutex::WORDS).unwrap());
        let other = Agent::new_js().unwrap();
        assert_eq!(fair.try_lock(other), Ok(true));
        let flags = TestFlags::new();
        flags
            .0
            .store(crate::rpc::CancelReason::Aborted as u8, Ordering::Release);
        let e = LockedAdd
            .run(
                params(vec![lock("fair", &words, 0)], &counter, 1.0, 1.0),
                &flags.ctx(),
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Aborted);
        fair.unlock(other).unwrap();
        assert!(!fair.is_locked(), "the abandoned ticket was skipped");
        assert_eq!(fair.try_lock(other), Ok(true));
    }

    #[test]
    fn a_stop_is_seen_between_entries_that_never_wait() {
        let words = leaked_view(4, ElementKind::Int32);
        let counter = leaked_view(12, ElementKind::Int32);
        let flags = TestFlags::new();
        flags
            .0
            .store(crate::rpc::CancelReason::Aborted as u8, Ordering::Release);
        let p = params(vec![lock("owned", &words, 0)], &counter, 100_000.0, 1.0);
        let e = LockedAdd.run(p, &flags.ctx()).unwrap_err();
        assert_eq!(e.code, ErrorCode::Aborted);
        assert!(
            counter.load_i32(TOTAL, Ordering::SeqCst) < CHECK_EVERY as i32,
            "it stopped within {CHECK_EVERY} entries"
        );
    }

    #[test]
    fn bad_params_are_invalid_params_with_a_reason() {
        let flags = TestFlags::new();
        let words = leaked_view(16, ElementKind::Int32);
        let bytes = leaked_view(16, ElementKind::Uint8);
        let counter = leaked_view(12, ElementKind::Int32);
        let cases: Vec<(Vec<Value>, &str)> = vec![
            (vec![], "takes 1 param"),
            (params(vec![], &counter, 1.0, 1.0), "1 to 16 locks"),
            (
                params(vec![lock("fair", &words, 0)], &counter, 1.0, 1.0),
                "room for 4 of the 36",
            ),
            (
                params(vec![lock("spin", &words, 0)], &counter, 1.0, 1.0),
                "kind must be 'mutex'",
            ),
            (
                params(vec![lock("owned", &words, 4)], &counter, 1.0, 1.0),
                "index 4 is out of range",
            ),
            (
                params(vec![lock("owned", &bytes, 0)], &counter, 1.0, 1.0),
                "got Uint8Array",
            ),
            (
                params(vec![lock("owned", &words, 0)], &bytes, 1.0, 1.0),
                "counter must be an Int32Array",
            ),
            (
                params(vec![lock("owned", &words, 0)], &counter, -1.0, 1.0),
                "times must be between 0",
            ),
            (
                params(vec![lock("owned", &words, 0)], &counter, 1.0, 65.0),
                "depth must be between 1 and 64",
            ),
            (
                params(
                    vec![lock("owned", &counter, 0), lock("mutex", &words, 2)],
                    &words,
                    1.0,
                    1.0,
                ),
                "counter overlaps the words of locks[1]",
            ),
        ];
        for (p, why) in cases {
            let e = LockedAdd.run(p, &flags.ctx()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams, "{why}");
            assert!(
                e.message.contains(why),
                "{:?} does not say {why:?}",
                e.message
            );
        }
        let twice = params(
            vec![lock("owned", &words, 1), lock("mutex", &words, 1)],
            &counter,
            1.0,
            1.0,
        );
        let e = LockedAdd.run(twice, &flags.ctx()).unwrap_err();
        assert_eq!(e.code, ErrorCode::CommandFailed);
        assert!(e.message.contains("same memory"), "{}", e.message);
    }
}
