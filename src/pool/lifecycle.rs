//! A pool's lifecycle: three flags that only ever go from false to true, and the answers of
//! the calls that meet them.
//!
//! - `closed` (`close()`, `destroy()`): no new call is accepted; everything accepted still
//!   runs, a `map`'s inputs included: they are sent as room frees up, each as a job that
//!   continues the accepted call ([`Lifecycle::admits`]).
//! - `destroyed` (`destroy()`, after `closed`): queued and waiting jobs settle with PoolClosed,
//!   running native commands see it through `Context::check` and stop, and from then on no job
//!   is admitted from the wait list or placed on a server. A job that a thread was placing as
//!   the flag went up is settled where it lands (`README.md` §4).
//! - `stopping` (`shutdown()`, `destroy()`, dropping the pool): worker threads exit once their
//!   queues are empty.
//!
//! `destroyed` and `stopping` are read with SeqCst everywhere, the strongest ordering one of
//! their readers uses (the worker's last look at `stopping` before it parks follows a SeqCst
//! fence); on x86 and AArch64 such a load costs what an Acquire load costs.

use crate::rpc::{ErrorCode, RpcError};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub(crate) struct Lifecycle {
    closed: AtomicBool,
    destroyed: AtomicBool,
    stopping: AtomicBool,
}

impl Lifecycle {
    /// `close()`: accept no new call.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether a new job is admitted: before `close()`, any; after it, only one that continues
    /// a call accepted before it (`continuing`: a map's later inputs), until `destroy()`.
    pub(crate) fn admits(&self, continuing: bool) -> bool {
        !self.is_closed() || (continuing && !self.is_destroyed())
    }

    /// `destroy()`: closed, then destroyed.
    pub(crate) fn destroy(&self) {
        self.closed.store(true, Ordering::Release);
        self.destroyed.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::SeqCst)
    }

    /// The flag running commands poll (through `Context::check`) to stop at `destroy()`.
    pub(crate) fn destroyed_flag(&self) -> &AtomicBool {
        &self.destroyed
    }

    /// Tells the worker threads to exit once their queues are empty (the caller wakes them).
    pub(crate) fn stop_threads(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Why a job queued on a worker without a thread never runs.
    pub(crate) fn no_thread_error(&self) -> RpcError {
        if self.is_destroyed() {
            destroyed_error()
        } else if self.is_stopping() {
            RpcError::new(
                ErrorCode::PoolClosed,
                "The pool was shut down: make calls before close()",
            )
        } else {
            RpcError::new(
                ErrorCode::InternalError,
                "corepool could not start one of its threads",
            )
        }
    }
}

/// The answer of a call made after `close()` or `destroy()`.
pub fn closed_error() -> RpcError {
    RpcError::new(
        ErrorCode::PoolClosed,
        "The pool is closed: make calls before close(), or make a new pool",
    )
}

/// The answer of a call that was queued or waiting when `destroy()` ran.
pub(crate) fn destroyed_error() -> RpcError {
    RpcError::new(
        ErrorCode::PoolClosed,
        "The pool was destroyed before the call ran: close() lets accepted calls finish",
    )
}
