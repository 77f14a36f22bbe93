//! Wakes put off (see the module doc of `channel`, "Outcomes behind a backlog"): one thread for
//! the process, started the first time a wake is put off, that wakes each inbox handed to it
//! once its time has come. The times come in order (every wake is put off by the same
//! `HOLD`), so a queue in arrival order is a queue in time order.

use super::{lock, Inbox};
use crate::pool::Origin;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
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
                inbox.deferred.store(false, Ordering::SeqCst);
                // SAFETY: inside an `Origin::enter` window of the inbox's environment.
                unsafe { inbox.wake() };
                origin.leave();
            }
        }
        drop(inbox);
        due = lock(&later.due);
    }
}

/// Wakes `inbox`'s JS thread `after` from now (inside an `enter` window of `origin`). False
/// when no thread can do it: the caller wakes it now instead.
pub(super) fn wake_later(origin: &Weak<Origin>, inbox: &Arc<Inbox>, after: Duration) -> bool {
    let Some(later) = later() else {
        return false;
    };
    let mut due = lock(&later.due);
    let first = due.is_empty();
    due.push_back(Due {
        at: Instant::now() + after,
        origin: origin.clone(),
        inbox: inbox.clone(),
    });
    drop(due);
    if first {
        later.bell.notify_one();
    }
    true
}
