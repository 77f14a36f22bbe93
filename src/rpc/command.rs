//! Commands, the context they run in, and the registry that names them.
//!
//! A command is plain Rust: it gets its params and a [`Context`], and returns a [`Value`] or an
//! [`RpcError`]. Long-running commands call [`Context::check`] now and then, which is how abort,
//! timeout, `destroy()` and a departing worker_thread stop them (cooperative cancellation: a
//! thread is never killed, so no lock or buffer is left half-written).

use super::error::{ErrorCode, RpcError};
use super::value::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a running call was asked to stop. Stored in one `AtomicU8` per job; the first reason wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CancelReason {
    Aborted = 1,
    Destroyed = 2,
    EnvGone = 3,
    Timeout = 4,
}

impl CancelReason {
    pub fn from_u8(n: u8) -> Option<CancelReason> {
        match n {
            1 => Some(CancelReason::Aborted),
            2 => Some(CancelReason::Destroyed),
            3 => Some(CancelReason::EnvGone),
            4 => Some(CancelReason::Timeout),
            _ => None,
        }
    }

    pub fn error(self) -> RpcError {
        match self {
            CancelReason::Aborted => RpcError::new(ErrorCode::Aborted, "The call was aborted"),
            CancelReason::Destroyed => RpcError::new(
                ErrorCode::PoolClosed,
                "The pool was destroyed while the call ran",
            ),
            CancelReason::EnvGone => RpcError::new(
                ErrorCode::Aborted,
                "The JavaScript thread that made the call has exited",
            ),
            CancelReason::Timeout => {
                RpcError::new(ErrorCode::Timeout, "The call ran longer than its timeout")
            }
        }
    }
}

/// What a running command can ask of the pool.
pub struct Context<'a> {
    cancel: &'a AtomicU8,
    env_gone: &'a AtomicBool,
    destroyed: &'a AtomicBool,
    deadline: Option<Instant>,
    worker: usize,
}

/// The flags a running call watches: its own cancel reason, its caller's environment, its pool.
pub struct StopFlags<'a> {
    pub cancel: &'a AtomicU8,
    pub env_gone: &'a AtomicBool,
    pub destroyed: &'a AtomicBool,
}

impl<'a> Context<'a> {
    pub fn new(flags: StopFlags<'a>, deadline: Option<Instant>, worker: usize) -> Self {
        let StopFlags {
            cancel,
            env_gone,
            destroyed,
        } = flags;
        Self {
            cancel,
            env_gone,
            destroyed,
            deadline,
            worker,
        }
    }

    /// Why the call should stop, if it should.
    pub fn stop_reason(&self) -> Option<CancelReason> {
        if let Some(r) = CancelReason::from_u8(self.cancel.load(Ordering::Acquire)) {
            return Some(r);
        }
        if self.env_gone.load(Ordering::Acquire) {
            return Some(CancelReason::EnvGone);
        }
        if self.destroyed.load(Ordering::Acquire) {
            return Some(CancelReason::Destroyed);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(CancelReason::Timeout),
            _ => None,
        }
    }

    /// `Err` when the call should stop; commands return it with `?`.
    pub fn check(&self) -> Result<(), RpcError> {
        match self.stop_reason() {
            Some(r) => Err(r.error()),
            None => Ok(()),
        }
    }

    /// Sleeps for `d`, waking early (with the reason as error) when the call must stop.
    /// Sleeps in short slices so that a stop is seen within a few milliseconds.
    pub fn sleep(&self, d: Duration) -> Result<(), RpcError> {
        const SLICE: Duration = Duration::from_millis(2);
        let end = Instant::now() + d;
        loop {
            self.check()?;
            let now = Instant::now();
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(SLICE));
        }
    }

    /// The index of the worker running the call.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// The same context with a deadline of its own (one item of a map's chunk, which has a
    /// limit per item): it stops for the call's reasons, or at `deadline`.
    pub fn with_deadline(&self, deadline: Option<Instant>) -> Context<'a> {
        Context { deadline, ..*self }
    }
}

/// The error of a command that panicked, with what it panicked with.
pub fn panicked(command: &str, payload: &(dyn std::any::Any + Send)) -> RpcError {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    RpcError::new(
        ErrorCode::InternalError,
        format!("command {command:?} panicked: {what}"),
    )
}

/// A native command. Implement it and add one line to `commands::registry()`.
pub trait Command: Send + Sync + 'static {
    /// The method name callers use.
    fn name(&self) -> &'static str;
    /// Its parameters, for `pool.methods()` (e.g. `"max: number"`).
    fn params(&self) -> &'static str;
    /// One line saying what it does.
    fn summary(&self) -> &'static str;
    /// Runs the command on a worker thread.
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError>;
}

/// The commands a pool can run, by name. Only own names resolve (`__proto__` is just unknown).
#[derive(Clone, Default)]
pub struct Registry {
    by_name: HashMap<&'static str, Arc<dyn Command>>,
    order: Vec<Arc<dyn Command>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command. Panics on a duplicate name: that is a programming error in the list.
    pub fn register(&mut self, command: impl Command) -> &mut Self {
        let command: Arc<dyn Command> = Arc::new(command);
        let name = command.name();
        assert!(
            self.by_name.insert(name, command.clone()).is_none(),
            "command {name:?} registered twice"
        );
        self.order.push(command);
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Command>> {
        self.by_name.get(name)
    }

    pub fn commands(&self) -> impl Iterator<Item = &Arc<dyn Command>> {
        self.order.iter()
    }
}
