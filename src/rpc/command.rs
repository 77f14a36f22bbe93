//! Commands, the context they run in, and the registry that names them.
//!
//! A command is plain Rust: it gets its params and a [`Context`], and returns a [`Value`] or an
//! [`RpcError`]. Long-running commands call [`Context::check`] now and then, which is how abort,
//! timeout, `destroy()` and a departing worker_thread stop them (cooperative cancellation: a
//! thread is never killed, so no lock or buffer is left half-written).

use super::error::{ErrorCode, RpcError};
use super::packed::Packed;
use super::value::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
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
                "The pool was destroyed while the call ran: close() lets accepted calls finish",
            ),
            CancelReason::EnvGone => RpcError::new(
                ErrorCode::Aborted,
                "The JavaScript thread that made the call has exited",
            ),
            // What a Timeout says where its call's limit is not known: calls with a limit
            // say more (`Context::stop_error`, `RpcError::timed_out`).
            CancelReason::Timeout => RpcError::new(
                ErrorCode::Timeout,
                "The call ran longer than its timeout: raise the timeout or make the task shorter",
            ),
        }
    }
}

/// Where a running call's progress goes when its caller listens (`call(…, { onProgress })`).
/// Reports are advisory: the receiver keeps only the latest value per call.
pub trait Report: Sync {
    fn report(&self, value: Value);
}

/// A call reports progress at most this often; reports in between are skipped (the next one
/// carries the news), so a command may report at every checkpoint, however frequent.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(20);

/// What a running command can ask of the pool.
pub struct Context<'a> {
    cancel: &'a AtomicU8,
    env_gone: &'a AtomicBool,
    destroyed: &'a AtomicBool,
    deadline: Option<Deadline<'a>>,
    worker: usize,
    /// Set only when the caller listens (with the instant the context began reporting): a
    /// command's `progress` is one branch otherwise.
    progress: Option<(&'a dyn Report, Instant)>,
    /// When the next report may go, in ns after that instant (0: the first goes at once). An
    /// atomic, so that a context stays shareable with threads a command starts.
    next_report: AtomicU64,
    /// The params crossed packed (`rpc::packed`), so they hold plain data only.
    plain_params: bool,
}

/// A running call's time limit: when it must stop, and what its Timeout error names
/// ([`RpcError::timed_out`]: the method and the limit it was given).
#[derive(Clone, Copy, Debug)]
pub struct Deadline<'a> {
    pub at: Instant,
    pub limit: Duration,
    pub method: &'a str,
}

/// The flags a running call watches: its own cancel reason, its caller's environment, its pool.
pub struct StopFlags<'a> {
    pub cancel: &'a AtomicU8,
    pub env_gone: &'a AtomicBool,
    pub destroyed: &'a AtomicBool,
}

impl<'a> Context<'a> {
    pub fn new(flags: StopFlags<'a>, deadline: Option<Deadline<'a>>, worker: usize) -> Self {
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
            progress: None,
            next_report: AtomicU64::new(0),
            plain_params: false,
        }
    }

    /// The same context, for params that crossed packed (`Params::Packed`).
    pub fn with_plain_params(self) -> Self {
        Context {
            plain_params: true,
            ..self
        }
    }

    /// True when the params crossed packed: they hold nothing JSON cannot say (no functions,
    /// views, byte arrays or BigInts), so a command need not look for such values.
    pub fn plain_params(&self) -> bool {
        self.plain_params
    }

    /// The same context, reporting progress to `to` (its caller listens).
    pub fn reporting_to(self, to: &'a dyn Report) -> Self {
        Context {
            progress: Some((to, Instant::now())),
            ..self
        }
    }

    /// True when the caller listens to progress: a command may skip work that only feeds
    /// [`Context::progress`] otherwise.
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Reports how far the call has come (any value: a count, `{ done, of }`, …). `value` is
    /// made only when the caller listens and [`PROGRESS_INTERVAL`] has passed since the last
    /// report, so a command can call this at every checkpoint of its loop: without a listener
    /// it costs one branch.
    pub fn progress(&self, value: impl FnOnce() -> Value) {
        let Some((to, since)) = self.progress else {
            return;
        };
        let now = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let next = self.next_report.load(Ordering::Relaxed);
        if now < next {
            return;
        }
        let after = now.saturating_add(PROGRESS_INTERVAL.as_nanos() as u64);
        // One reporter per interval, also when threads of the command race for it.
        if self
            .next_report
            .compare_exchange(next, after, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            to.report(value());
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
            Some(d) if Instant::now() >= d.at => Some(CancelReason::Timeout),
            _ => None,
        }
    }

    /// The error of this call stopped for `reason`: a Timeout names the method and its limit.
    pub fn stop_error(&self, reason: CancelReason) -> RpcError {
        match (reason, self.deadline) {
            (CancelReason::Timeout, Some(d)) => RpcError::timed_out(d.method, d.limit),
            _ => reason.error(),
        }
    }

    /// `Err` when the call should stop; commands return it with `?`.
    pub fn check(&self) -> Result<(), RpcError> {
        match self.stop_reason() {
            Some(r) => Err(self.stop_error(r)),
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
    pub fn with_deadline(&self, deadline: Option<Deadline<'a>>) -> Context<'a> {
        Context {
            cancel: self.cancel,
            env_gone: self.env_gone,
            destroyed: self.destroyed,
            deadline,
            worker: self.worker,
            progress: self.progress,
            next_report: AtomicU64::new(self.next_report.load(Ordering::Relaxed)),
            plain_params: self.plain_params,
        }
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
    /// Runs the command with params that crossed packed (plain data, see `rpc::packed`): as
    /// values, unless the command reads them in place (`rpc::packed::tree`), which costs no
    /// allocation per value. Either way it must answer what `run` answers for their values.
    fn run_packed(&self, packed: Packed, ctx: &Context) -> Result<Value, RpcError> {
        let params = packed.into_unpacked().map_err(RpcError::invalid_params)?;
        self.run(params, ctx)
    }
}

/// The commands a pool can run, by name. Only own names resolve (`__proto__` is just unknown).
#[derive(Clone, Default)]
pub struct Registry {
    by_name: HashMap<&'static str, Arc<dyn Command>>,
    order: Vec<Arc<dyn Command>>,
    /// Commands named but not run (see [`Registry::names_only`]).
    named: Vec<&'static str>,
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

    /// A registry that runs none of these commands but knows their names: a pool with no
    /// native threads runs no command, yet a call to one should say why it finds none.
    pub fn names_only(&self) -> Registry {
        Registry {
            named: self.order.iter().map(|c| c.name()).collect(),
            ..Registry::default()
        }
    }

    /// The MethodNotFound of a call to `method` that no command and no server takes.
    pub fn not_found(&self, method: &str) -> RpcError {
        if self.named.contains(&method) {
            return RpcError::new(
                ErrorCode::MethodNotFound,
                format!(
                    "Method not found: {method:?} is a built-in command, and this pool runs no \
                     native threads (a pool started from a task file runs them only with \
                     nativeThreads ≥ 1), nor does any of its JavaScript servers serve it"
                ),
            );
        }
        RpcError::method_not_found(method)
    }
}

/// A command test's stop flags: `.0` is the cancel reason (store one to cancel), `.1` stands
/// for both the caller's environment and the pool (never gone).
#[cfg(test)]
#[derive(Default)]
pub struct TestFlags(pub AtomicU8, pub AtomicBool);

#[cfg(test)]
impl TestFlags {
    /// Not cancelled, nothing gone.
    pub fn new() -> TestFlags {
        TestFlags::default()
    }

    /// A context watching these flags, with no deadline.
    pub fn ctx(&self) -> Context<'_> {
        let flags = StopFlags {
            cancel: &self.0,
            env_gone: &self.1,
            destroyed: &self.1,
        };
        Context::new(flags, None, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Collect(Mutex<Vec<Value>>);
    impl Report for Collect {
        fn report(&self, value: Value) {
            self.0.lock().unwrap().push(value);
        }
    }

    fn flags() -> (AtomicU8, AtomicBool, AtomicBool) {
        (
            AtomicU8::new(0),
            AtomicBool::new(false),
            AtomicBool::new(false),
        )
    }

    #[test]
    fn without_a_listener_progress_never_makes_its_value() {
        let (cancel, env_gone, destroyed) = flags();
        let ctx = Context::new(
            StopFlags {
                cancel: &cancel,
                env_gone: &env_gone,
                destroyed: &destroyed,
            },
            None,
            0,
        );
        assert!(!ctx.wants_progress());
        for _ in 0..1000 {
            ctx.progress(|| unreachable!("nobody listens"));
        }
    }

    #[test]
    fn reports_go_at_once_then_at_most_once_per_interval() {
        let (cancel, env_gone, destroyed) = flags();
        let to = Collect(Mutex::new(Vec::new()));
        // Taken before the context, so that every report falls within `start.elapsed()`.
        let start = Instant::now();
        let ctx = Context::new(
            StopFlags {
                cancel: &cancel,
                env_gone: &env_gone,
                destroyed: &destroyed,
            },
            None,
            0,
        )
        .reporting_to(&to);
        assert!(ctx.wants_progress());
        let mut made = 0;
        let mut i = 0;
        // At least 5 intervals and 10,000 checkpoints, however slowly this thread runs.
        while start.elapsed() < PROGRESS_INTERVAL * 5 || i < 10_000 {
            i += 1;
            ctx.progress(|| {
                made += 1;
                Value::Number(i as f64)
            });
        }
        let intervals = start.elapsed().as_nanos() / PROGRESS_INTERVAL.as_nanos();
        let reports = to.0.lock().unwrap();
        assert_eq!(reports.len(), made, "a value is made only to be sent");
        assert_eq!(
            reports[0],
            Value::Number(1.0),
            "the first report goes at once"
        );
        // The first report, then one per whole interval at most; past the first interval a
        // checkpoint reports again.
        assert!(
            (2..=1 + intervals as usize).contains(&made),
            "{made} reports in {intervals} intervals"
        );
    }
}
