//! How an idle thread of the pool waits for work before it sleeps: a native worker between
//! jobs (`worker.rs`), and a JavaScript thread serving methods at the end of a drain cycle
//! (`server/`). Both poll their queue for [`IDLE_SPIN`], one [`idle_pause`] per round, and
//! only then go to sleep behind their own wake-up handshake.

use std::thread;
use std::time::Duration;

/// How long an idle thread of the pool (a native worker, or a JavaScript thread serving
/// methods) polls its queue before it sleeps: a caller that submits again within this window (a
/// burst, or a sequential caller's next call) costs no wake-up, neither its system call nor its
/// latency. Polling yields the CPU between rounds ([`idle_pause`]), so it does not starve the
/// threads that have work.
pub(crate) const IDLE_SPIN: Duration = Duration::from_micros(50);

/// One round of idle polling: a few pause hints, then the rest of the time slice to any thread
/// that wants the core.
pub(crate) fn idle_pause() {
    for _ in 0..32 {
        std::hint::spin_loop();
    }
    thread::yield_now();
}
