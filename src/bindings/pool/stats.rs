//! What `stats()` and `methods()` hand to JavaScript: the core's [`Stats`] as plain objects.

use crate::bindings::convert::List;
use crate::pool::Stats;
use napi_derive::napi;

#[napi(object)]
pub struct WorkerInfo {
    pub id: u32,
    pub queued: u32,
    pub running: u32,
    pub completed: f64,
    pub busy_ms: f64,
}

/// A JavaScript thread serving methods, in `stats().servers`.
#[napi(object, object_from_js = false)]
pub struct ServerInfo {
    pub id: f64,
    /// The serving thread's `threadId` (0: the main thread).
    pub thread: f64,
    pub methods: List<String>,
    /// False once `close()`d: it finishes what it has but gets no new calls.
    pub open: bool,
    pub queued: u32,
    /// Of `queued`, the calls that wait for a free handler slot (the rest its thread is about
    /// to take).
    pub waiting: u32,
    pub running: u32,
    pub completed: f64,
    pub busy_ms: f64,
}

#[napi(object)]
pub struct LatencyInfo {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[napi(object, object_from_js = false)]
pub struct StatsInfo {
    pub threads: u32,
    pub strategy: String,
    pub queued: u32,
    pub waiting: u32,
    pub running: u32,
    pub completed: f64,
    pub failed: f64,
    pub workers: List<WorkerInfo>,
    pub servers: List<ServerInfo>,
    pub run_time: LatencyInfo,
    pub wait_time: LatencyInfo,
}

#[napi(object)]
pub struct MethodInfo {
    pub name: String,
    pub params: String,
    pub summary: String,
}

impl From<Stats> for StatsInfo {
    fn from(s: Stats) -> Self {
        let lat = |p: crate::pool::Percentiles| LatencyInfo {
            p50: p.p50,
            p99: p.p99,
            max: p.max,
        };
        StatsInfo {
            threads: s.threads as u32,
            strategy: s.strategy.name().to_string(),
            queued: s.queued as u32,
            waiting: s.waiting as u32,
            running: s.running as u32,
            completed: s.completed as f64,
            failed: s.failed as f64,
            workers: s
                .workers
                .into_iter()
                .map(|w| WorkerInfo {
                    id: w.id as u32,
                    queued: w.queued as u32,
                    running: w.running as u32,
                    completed: w.completed as f64,
                    busy_ms: w.busy_ms,
                })
                .collect(),
            servers: s
                .servers
                .into_iter()
                .map(|sv| ServerInfo {
                    id: sv.id as f64,
                    thread: sv.thread as f64,
                    methods: sv.methods.into(),
                    open: sv.open,
                    queued: sv.queued as u32,
                    waiting: sv.waiting as u32,
                    running: sv.running as u32,
                    completed: sv.completed as f64,
                    busy_ms: sv.busy_ms,
                })
                .collect(),
            run_time: lat(s.run_time),
            wait_time: lat(s.wait_time),
        }
    }
}
