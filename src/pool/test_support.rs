//! What the pool's tests share (`tests.rs`, `serve_tests/`): an origin whose outcomes arrive
//! on a channel, a bounded wait for the next one, and a pool with the built-in commands.

use super::{Deliver, Options, Origin, Pool, Ran};
use crate::commands;
use crate::rpc::Outcome;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records outcomes (sent on a channel), resend requests, and how observed calls ran.
pub(super) struct Sink {
    tx: Mutex<Sender<(u64, Outcome)>>,
    pub(super) resends: Mutex<Vec<(u64, u64, u64)>>,
    pub(super) ran: Mutex<Vec<(u64, Ran)>>,
}

impl Deliver for Arc<Sink> {
    fn deliver(&self, call: u64, outcome: Outcome) {
        let _ = self.tx.lock().unwrap().send((call, outcome));
    }
    fn resend(&self, call: u64, to: u64, token: u64) {
        self.resends.lock().unwrap().push((call, to, token));
    }
    fn ran(&self, call: u64, ran: Ran) {
        self.ran.lock().unwrap().push((call, ran));
    }
}

/// A caller's environment: its outcomes arrive on the receiver, its resend requests in the sink.
pub(super) fn origin() -> (Arc<Origin>, Arc<Sink>, Receiver<(u64, Outcome)>) {
    let (tx, rx) = channel();
    let sink = Arc::new(Sink {
        tx: Mutex::new(tx),
        resends: Mutex::new(Vec::new()),
        ran: Mutex::new(Vec::new()),
    });
    (Arc::new(Origin::new(sink.clone())), sink, rx)
}

/// The next outcome; a test fails rather than hangs when a call never settles.
pub(super) fn recv(rx: &Receiver<(u64, Outcome)>) -> (u64, Outcome) {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a call did not settle within 20 s")
}

/// Waits until `done()` holds, looking every millisecond; a test fails rather than hangs when it
/// never does (a hang guard: nothing here says how soon it should).
pub(super) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let hung = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        if std::time::Instant::now() >= hung {
            panic!("hung: {what}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A pool with `options` and the built-in commands.
pub(super) fn started(options: Options) -> Pool {
    Pool::new(options, commands::registry()).unwrap()
}
