//! Agents: who holds an owner-checked lock, and what such a lock refuses.
//!
//! An owner-checked lock ([`OwnedMutex`](super::OwnedMutex), [`ReentrantMutex`](super::ReentrantMutex),
//! [`FairMutex`](super::FairMutex)) writes its holder's agent id into shared memory, so that
//! `unlock` by anyone else fails and a holder asking again is recognised. An id is a positive
//! Int32 below 2^30:
//!
//! ```text
//!   bit 31      0 (every lock word stays ≥ 0)
//!   bit 30      0 in an id; lock words may use it as a flag (OwnedMutex: "waiters")
//!   bit 29      NATIVE: set for native threads, clear for JavaScript agents
//!   bits 0..29  a serial number, ≥ 1
//! ```
//!
//! JavaScript agents are JS threads and, on a thread that asks for them, async contexts
//! (`lib/shm/agent.js`); native agents are the threads that run commands, one id per OS thread
//! ([`Agent::native`]). Both kinds draw from a process-wide counter of their own in this addon,
//! which every worker_thread shares (Rust statics are per process), so two agents never get the
//! same id, and the NATIVE bit tells a JavaScript waiter that the holder cannot wake it with
//! `Atomics.notify` (it then polls sooner). Counters never wrap: past 2^29 − 1 ids of a kind,
//! asking for another fails. Ids are never handed out twice by this module; JavaScript reuses
//! an async context's id itself, and only once that context holds nothing.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

/// Set in the ids of native threads.
pub const NATIVE: i32 = 1 << 29;
/// Serial numbers run from 1 to `SERIALS - 1`.
const SERIALS: i32 = 1 << 29;
/// Every id is below this; the bit above the ids, free for lock words' flags.
pub const ID_LIMIT: i32 = 1 << 30;

static NEXT_JS: AtomicI32 = AtomicI32::new(1);
static NEXT_NATIVE: AtomicI32 = AtomicI32::new(1);

thread_local! {
    /// This native thread's id, drawn on first use.
    static NATIVE_AGENT: Cell<i32> = const { Cell::new(0) };
}

/// A holder of owner-checked locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agent(i32);

/// Every id of a kind has been handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exhausted;

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "all {} agent ids have been handed out", SERIALS - 1)
    }
}

impl std::error::Error for Exhausted {}

fn draw(counter: &AtomicI32) -> Result<i32, Exhausted> {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < SERIALS).then_some(n + 1)
        })
        .map_err(|_| Exhausted)
}

impl Agent {
    /// A new JavaScript agent (a JS thread or an async context asks for one).
    pub fn new_js() -> Result<Agent, Exhausted> {
        draw(&NEXT_JS).map(Agent)
    }

    /// The calling native thread's agent.
    ///
    /// # Panics
    /// When 2^29 − 1 native threads have already asked (the process would have to start that
    /// many threads); a command's panic becomes an InternalError.
    pub fn native() -> Agent {
        NATIVE_AGENT.with(|id| {
            if id.get() == 0 {
                let serial = draw(&NEXT_NATIVE).expect("native agent ids");
                id.set(NATIVE | serial);
            }
            Agent(id.get())
        })
    }

    /// The agent whose id is `id`, if `id` can be one.
    pub fn from_id(id: i32) -> Option<Agent> {
        (id > 0 && id < ID_LIMIT && id & !NATIVE != 0).then_some(Agent(id))
    }

    pub fn id(self) -> i32 {
        self.0
    }

    pub fn is_native(self) -> bool {
        self.0 & NATIVE != 0
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_native() {
            "native"
        } else {
            "JavaScript"
        };
        write!(f, "{kind} agent {}", self.0)
    }
}

/// What a lock refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockError {
    /// `unlock` of a lock nobody holds.
    NotLocked,
    /// `unlock` by an agent that does not hold the lock.
    NotOwner { owner: Agent, caller: Agent },
    /// A non-reentrant lock asked for by the agent that holds it: waiting would never end.
    AlreadyHeld,
    /// A count at its largest: a reentrant mutex held `i32::MAX` times, or a semaphore given
    /// back more permits than an Int32 counts.
    CountOverflow,
    /// Two locks of one `lock_all` on the same memory.
    SameLockTwice,
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::NotLocked => f.write_str("the lock is not locked"),
            LockError::NotOwner { owner, caller } => {
                write!(f, "the lock is held by {owner}, not by the caller ({caller})")
            }
            LockError::AlreadyHeld => f.write_str(
                "the caller already holds this lock, which is not reentrant: waiting would never end",
            ),
            LockError::CountOverflow => write!(f, "the count is already {}, its largest", i32::MAX),
            LockError::SameLockTwice => f.write_str("two of the locks are on the same memory"),
        }
    }
}

impl std::error::Error for LockError {}

/// The id part of a lock word: the word without flags.
pub(crate) fn holder(word: i32) -> Option<Agent> {
    Agent::from_id(word & (ID_LIMIT - 1))
}

/// `unlock`'s check: the caller must be the holder recorded in `word`.
pub(crate) fn check_holder(word: i32, caller: Agent) -> Result<(), LockError> {
    match holder(word) {
        None => Err(LockError::NotLocked),
        Some(owner) if owner != caller => Err(LockError::NotOwner { owner, caller }),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_kinds_and_threads_and_leave_the_flag_bits_free() {
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let a = Agent::new_js().unwrap();
            assert!(!a.is_native());
            assert!(seen.insert(a.id()));
        }
        let natives: Vec<i32> = (0..8)
            .map(|_| std::thread::spawn(|| (Agent::native(), Agent::native())))
            .map(|t| t.join().unwrap())
            .map(|(a, b)| {
                assert_eq!(a, b, "one id per thread");
                a.id()
            })
            .collect();
        for id in natives {
            assert!(Agent::from_id(id).unwrap().is_native());
            assert!(seen.insert(id), "native id {id} collides");
        }
        for id in seen {
            assert!(id > 0 && id < ID_LIMIT, "{id} uses a flag bit");
        }
    }

    #[test]
    fn only_possible_ids_are_agents() {
        for bad in [0, -1, NATIVE, ID_LIMIT, ID_LIMIT | 5, i32::MIN] {
            assert_eq!(Agent::from_id(bad), None, "{bad}");
        }
        assert_eq!(
            holder(ID_LIMIT | 7),
            Agent::from_id(7),
            "flags are not the id"
        );
    }

    #[test]
    fn a_counter_stops_at_its_limit_instead_of_wrapping() {
        let c = AtomicI32::new(SERIALS - 1);
        assert_eq!(draw(&c), Ok(SERIALS - 1));
        assert_eq!(draw(&c), Err(Exhausted));
        assert_eq!(draw(&c), Err(Exhausted));
    }
}
