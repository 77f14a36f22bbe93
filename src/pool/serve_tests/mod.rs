//! Tests of JavaScript-served methods, with Rust threads standing in for the serving JS threads.
//! This file holds the stand-ins (a serving thread's `Bell`, `serve`, `echo_server`); the tests
//! are grouped by feature in the files beside it.

mod admission;
mod alone_model;
mod departure;
mod drain;
mod expected;
mod placement;
mod stops;
mod views;

use super::test_support::{origin, recv, started};
use super::*;
use crate::rpc::{CancelReason, Outcome};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Condvar, Mutex as StdMutex};
use std::time::Instant;

/// A caller that announces views through `announce`.
fn announcing(announce: &mut dyn FnMut(u64, u64)) -> Caller<'_> {
    Caller {
        announce: Some(announce),
        ..Caller::default()
    }
}

fn pool(strategy: Strategy, max_queue: usize) -> Arc<Pool> {
    let options = Options {
        threads: 1,
        strategy,
        max_queue,
        ..Options::default()
    };
    Arc::new(started(options))
}

fn values(params: Params) -> Vec<Value> {
    params.into_values().unwrap()
}

/// A wake-up flag the stand-in JS thread waits on; counts wakes.
#[derive(Default)]
struct Bell {
    rung: StdMutex<bool>,
    cv: Condvar,
    wakes: AtomicUsize,
}

impl Wake for Arc<Bell> {
    fn wake(&self) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        *self.rung.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

impl Bell {
    /// Waits for a wake-up (true) or `stop` (false).
    fn wait(&self, stop: &AtomicBool) -> bool {
        let mut rung = self.rung.lock().unwrap();
        while !*rung {
            if stop.load(Ordering::Acquire) {
                return false;
            }
            rung = self
                .cv
                .wait_timeout(rung, Duration::from_millis(5))
                .unwrap()
                .0;
        }
        *rung = false;
        true
    }
}

fn serve(p: &Pool, methods: &[&str], tag: u64) -> (Arc<Server>, Arc<Bell>) {
    serve_at_once(p, methods, tag, usize::MAX)
}

/// A server that runs at most `concurrency` calls at once.
fn serve_at_once(
    p: &Pool,
    methods: &[&str],
    tag: u64,
    concurrency: usize,
) -> (Arc<Server>, Arc<Bell>) {
    let bell = Arc::new(Bell::default());
    let methods = methods.iter().map(|m| m.to_string()).collect();
    let server = p
        .serve(methods, tag, tag, concurrency, bell.clone())
        .unwrap();
    (server, bell)
}

/// A stand-in serving thread: answers every job with its first param, after `delay`.
fn echo_server(
    p: Arc<Pool>,
    server: Arc<Server>,
    bell: Arc<Bell>,
    stop: Arc<AtomicBool>,
    delay: Duration,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut served = 0;
        while bell.wait(&stop) {
            loop {
                for job in p.take(&server).jobs {
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                    let v = values(job.params).first().cloned().unwrap_or_default();
                    p.complete(&server, job.token, Ok(v));
                    served += 1;
                }
                if p.rest(&server, true, false) == Rest::Idle {
                    break;
                }
            }
        }
        served
    })
}
