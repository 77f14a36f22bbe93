//! A model-based property test of jobs that run alone (`ServedJob::alone`, corepool/piscina's
//! tasks with a signal) mixed with ordinary ones: random calls, drain cycles, completions,
//! cancels (an alone call's cancel ends its thread, as corepool/piscina's abort does), timeouts
//! that fire on the serving thread, servers that join, close and depart, the pool's close and
//! destroy, over one to three servers of concurrency one to three, with each placement
//! strategy, `maxQueue` (none, or 0 to 3, rejecting or waiting) and, as in a pool of
//! JavaScript workers, expected servers (calls wait for one while none serves).
//!
//! The stand-in serving threads keep the serving protocol exactly: a server runs a drain cycle
//! (takes until `rest` says idle) only when its bell rang, or when a completion said there is
//! more to take, and it departs once closed and idle. So a wake-up that never comes shows as
//! a call left unsettled at the end, not as something a busy loop would have found anyway.
//!
//! Invariants, checked after every step: never more jobs running on a server than its
//! concurrency; a job that runs alone has nothing beside it; a withdrawn call was not running;
//! a cancel that ends a thread leaves no unsettled call on it. At the end, once every handler
//! has returned: every call settled exactly once, and no server holds anything.
//!
//! [`CASES`] cases (`PROPTEST_CASES` runs more); a failure prints the smallest list of steps
//! found, and proptest saves its seed under `proptest-regressions/`, replayed first by every
//! later run.

use super::*;
use crate::pool::{Cancelled, Strategy as Placement};
use proptest::collection::vec;
use proptest::prelude::{any, prop_oneof, proptest, Just, ProptestConfig};
use proptest::strategy::Strategy as Generate;
use std::collections::HashSet;
use std::sync::mpsc::TryRecvError;

const CASES: u32 = 1024;
/// At most this many servers serve at once.
const MAX_SERVERS: usize = 3;

#[derive(Clone, Debug)]
enum Step {
    /// A call, alone or ordinary.
    Call { alone: bool },
    /// The server (its index among the live ones, modulo) runs a drain cycle, if it was woken.
    Cycle(usize),
    /// A handler of that server returns (its running job, modulo).
    Complete(usize, usize),
    /// A call (modulo) is cancelled; an alone call's cancel asks to end its thread.
    Cancel(usize),
    /// The server's timer for a running job (modulo) fires: the call settles now, its handler
    /// goes on until it returns.
    Stop(usize, usize),
    /// The server stops taking new calls (a worker retired for idleness): it departs once idle.
    Close(usize),
    /// The server's environment goes away (its worker crashed).
    Depart(usize),
    /// A new server of this concurrency joins, if fewer than MAX_SERVERS serve.
    Serve(usize),
    /// The pool closes: later calls are refused, the accepted ones still run.
    ClosePool,
    /// The pool is destroyed: what waits settles with PoolClosed, what runs is stopped.
    Destroy,
}

/// The pool's options and kind.
#[derive(Clone, Debug)]
struct Config {
    strategy: Placement,
    max_queue: usize,
    on_full: OnFull,
    /// A pool of JavaScript workers: it expects servers of "m" (calls wait for one when none
    /// serves, as calls wait for workers that start) and plans for MAX_SERVERS × 3 calls.
    expects: bool,
    concurrencies: Vec<usize>,
}

fn config() -> impl Generate<Value = Config> {
    (
        proptest::sample::select(Placement::ALL.to_vec()),
        prop_oneof![1 => Just(usize::MAX), 2 => 0usize..4],
        any::<bool>(),
        any::<bool>(),
        vec(1usize..=3, 1..=MAX_SERVERS),
    )
        .prop_map(
            |(strategy, max_queue, wait, expects, concurrencies)| Config {
                strategy,
                max_queue,
                on_full: if wait { OnFull::Wait } else { OnFull::Reject },
                expects,
                concurrencies,
            },
        )
}

fn step() -> impl Generate<Value = Step> {
    prop_oneof![
        4 => any::<bool>().prop_map(|alone| Step::Call { alone }),
        4 => any::<usize>().prop_map(Step::Cycle),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(s, k)| Step::Complete(s, k)),
        1 => any::<usize>().prop_map(Step::Cancel),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(s, k)| Step::Stop(s, k)),
        1 => any::<usize>().prop_map(Step::Close),
        1 => any::<usize>().prop_map(Step::Depart),
        1 => (1usize..=3).prop_map(Step::Serve),
        1 => Just(Step::ClosePool),
        1 => Just(Step::Destroy),
    ]
}

struct Stand {
    server: Arc<Server>,
    bell: Arc<Bell>,
    tag: u64,
    concurrency: usize,
    /// Taken and not yet returned: (token, call).
    running: Vec<(u64, u64)>,
    /// A completion said there is more to take, or rest did not say idle.
    owed: bool,
    closing: bool,
}

struct Model {
    p: Arc<Pool>,
    o: Arc<Origin>,
    rx: Receiver<(u64, Outcome)>,
    stands: Vec<Stand>,
    next_tag: u64,
    /// Every call made: (id, control, alone).
    calls: Vec<(u64, Option<Arc<Control>>, bool)>,
    /// Settlements seen on the origin, by call.
    settled: HashMap<u64, usize>,
    /// Calls whose cancel withdrew them (their caller settles them).
    withdrawn: HashSet<u64>,
    expects: bool,
    destroyed: bool,
}

impl Model {
    fn new(config: &Config) -> Model {
        let (o, _, rx) = origin();
        let options = Options {
            threads: 1,
            strategy: config.strategy,
            max_queue: config.max_queue,
            on_full: config.on_full,
            ..Options::default()
        };
        let p = Arc::new(started(options));
        if config.expects {
            p.expect(Some(vec!["m".to_string()]));
            p.plan_served(MAX_SERVERS * 3);
        }
        let mut m = Model {
            p,
            expects: config.expects,
            o,
            rx,
            stands: Vec::new(),
            next_tag: 1,
            calls: Vec::new(),
            settled: HashMap::new(),
            withdrawn: HashSet::new(),
            destroyed: false,
        };
        for &c in &config.concurrencies {
            m.serve(c);
        }
        m
    }

    fn serve(&mut self, concurrency: usize) {
        if self.stands.len() >= MAX_SERVERS {
            return;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        let (server, bell) = serve_at_once(&self.p, &["m"], tag, concurrency);
        self.stands.push(Stand {
            server,
            bell,
            tag,
            concurrency,
            running: Vec::new(),
            owed: false,
            closing: false,
        });
    }

    fn is_settled(&self, id: u64) -> bool {
        self.settled.get(&id).copied().unwrap_or(0) > 0 || self.withdrawn.contains(&id)
    }

    fn unsettled(&mut self) -> bool {
        self.collect();
        (0..self.calls.len() as u64).any(|id| !self.is_settled(id))
    }

    fn is_alone(&self, id: u64) -> bool {
        self.calls[id as usize].2
    }

    fn collect(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok((id, _)) => *self.settled.entry(id).or_insert(0) += 1,
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => panic!("the origin's channel closed"),
            }
        }
    }

    /// A drain cycle of stand `s` if it has one to run; true if it ran one.
    fn cycle(&mut self, s: usize) -> bool {
        let rung = std::mem::take(&mut *self.stands[s].bell.rung.lock().unwrap());
        if !rung && !self.stands[s].owed {
            return false;
        }
        loop {
            let batch = self.p.take(&self.stands[s].server);
            for job in batch.jobs {
                let id = match values(job.params).first() {
                    Some(Value::Number(n)) => *n as u64,
                    other => panic!("a job without its call's number: {other:?}"),
                };
                assert!(
                    !self.withdrawn.contains(&id),
                    "call {id} was taken after its cancel withdrew it"
                );
                self.stands[s].running.push((job.token, id));
            }
            self.check_running(s);
            match self.p.rest(&self.stands[s].server, true, false) {
                Rest::Idle => {
                    self.stands[s].owed = false;
                    return true;
                }
                Rest::Later => {
                    self.stands[s].owed = true;
                    return true;
                }
                Rest::Work => {}
            }
        }
    }

    fn check_running(&self, s: usize) {
        let stand = &self.stands[s];
        let running = &stand.running;
        assert!(
            running.len() <= stand.concurrency,
            "server {} runs {} jobs, its concurrency is {}",
            stand.tag,
            running.len(),
            stand.concurrency
        );
        if running.len() > 1 {
            for &(_, id) in running {
                assert!(
                    !self.is_alone(id),
                    "call {id} runs alone, yet server {} runs {:?} with it",
                    stand.tag,
                    running
                );
            }
        }
    }

    fn complete(&mut self, s: usize, k: usize) -> bool {
        if self.stands[s].running.is_empty() {
            return false;
        }
        let k = k % self.stands[s].running.len();
        let (token, id) = self.stands[s].running.remove(k);
        if self
            .p
            .complete(&self.stands[s].server, token, Ok(Value::Number(id as f64)))
        {
            self.stands[s].owed = true;
        }
        true
    }

    fn cancel(&mut self, k: usize) {
        if self.calls.is_empty() {
            return;
        }
        let (id, control, alone) = self.calls[k % self.calls.len()].clone();
        let Some(control) = control else { return };
        match self.p.cancel_call(&control, CancelReason::Aborted, alone) {
            Cancelled::Withdrawn => {
                for stand in &self.stands {
                    assert!(
                        !stand.running.iter().any(|&(_, r)| r == id),
                        "call {id} was withdrawn while it ran"
                    );
                }
                assert!(self.withdrawn.insert(id), "call {id} was withdrawn twice");
            }
            Cancelled::Stopped { thread, ended } => {
                self.collect();
                let s = self
                    .stands
                    .iter()
                    .position(|st| st.tag == thread)
                    .unwrap_or_else(|| panic!("call {id} was stopped on a server that left"));
                assert!(
                    self.stands[s].running.iter().any(|&(_, r)| r == id),
                    "call {id} was stopped on server {thread}, which does not run it"
                );
                if ended {
                    assert!(alone, "only an alone call's cancel ends its thread");
                    for &(_, other) in &self.stands[s].running {
                        assert!(
                            self.is_settled(other),
                            "ending server {thread} for call {id} would lose call {other}"
                        );
                    }
                    // Its worker is terminated: the environment goes.
                    self.depart(s);
                }
            }
            Cancelled::Asked => {}
        }
    }

    fn depart(&mut self, s: usize) {
        let stand = self.stands.remove(s);
        self.p.depart(&stand.server);
    }

    /// Closed servers with nothing left depart, as a retired worker's does.
    fn retire(&mut self) {
        let mut s = 0;
        while s < self.stands.len() {
            let st = &self.stands[s];
            if st.closing && st.running.is_empty() && st.server.busy() == 0 {
                self.depart(s);
            } else {
                s += 1;
            }
        }
    }

    fn apply(&mut self, step: &Step) {
        match *step {
            Step::Call { alone } => {
                let id = self.calls.len() as u64;
                let caller = Caller {
                    alone,
                    ..Caller::default()
                };
                let control = self.p.call_as(
                    &self.o,
                    id,
                    "m",
                    vec![Value::Number(id as f64)],
                    None,
                    caller,
                );
                self.calls.push((id, control, alone));
            }
            Step::Cycle(s) if !self.stands.is_empty() => {
                self.cycle(s % self.stands.len());
            }
            Step::Complete(s, k) if !self.stands.is_empty() => {
                self.complete(s % self.stands.len(), k);
            }
            Step::Cancel(k) => self.cancel(k),
            Step::Stop(s, k) if !self.stands.is_empty() => {
                let st = &self.stands[s % self.stands.len()];
                if !st.running.is_empty() {
                    let (token, _) = st.running[k % st.running.len()];
                    self.p.stop(&st.server, token, CancelReason::Timeout);
                }
            }
            Step::Close(s) if !self.stands.is_empty() => {
                let s = s % self.stands.len();
                self.p.unserve(&self.stands[s].server);
                self.stands[s].closing = true;
            }
            Step::Depart(s) if !self.stands.is_empty() => self.depart(s % self.stands.len()),
            Step::Serve(c) => self.serve(c),
            Step::ClosePool => self.p.close(),
            Step::Destroy => {
                self.p.destroy();
                self.destroyed = true;
            }
            _ => {}
        }
        self.retire();
        self.collect();
        self.check_nothing_held_up();
    }

    /// While an open server has a free slot, no other server holds jobs up behind a job that
    /// runs alone there; while one has nothing to do, no alone job waits behind running jobs
    /// on another either.
    fn check_nothing_held_up(&self) {
        for taker in &self.stands {
            let server = &taker.server;
            if !server.accepting() {
                continue;
            }
            let empty = server.busy() == 0;
            let room = server.placement_load(false) < server.concurrency();
            if !room {
                continue;
            }
            for other in &self.stands {
                if other.tag == taker.tag {
                    continue;
                }
                let (live, alone) = other.server.live_queued();
                let held = if other.server.runs_alone() {
                    if empty {
                        live
                    } else {
                        live - alone
                    }
                } else if empty && !other.running.is_empty() {
                    alone
                } else {
                    0
                };
                assert_eq!(
                    held, 0,
                    "server {} holds {held} jobs up (live queued {live}, alone {alone}, runs alone: {}) while server {} has {}",
                    other.tag,
                    other.server.runs_alone(),
                    taker.tag,
                    if empty { "nothing to do" } else { "a free slot" }
                );
            }
        }
    }

    /// Every handler returns and every server drains as woken, until nothing moves.
    fn finish(&mut self) {
        loop {
            let mut moved = false;
            for s in 0..self.stands.len() {
                moved |= self.cycle(s);
            }
            for s in 0..self.stands.len() {
                moved |= self.complete(s, 0);
            }
            let before = self.stands.len();
            self.retire();
            moved |= self.stands.len() != before;
            // A pool of workers starts one while calls wait for it (and it is not destroyed).
            if !moved
                && self.expects
                && !self.destroyed
                && self.stands.iter().all(|st| st.closing)
                && self.unsettled()
                && self.stands.len() < MAX_SERVERS
            {
                self.serve(1);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        self.collect();
        for &(id, _, alone) in &self.calls {
            let seen = self.settled.get(&id).copied().unwrap_or(0)
                + usize::from(self.withdrawn.contains(&id));
            assert_eq!(seen, 1, "call {id} (alone: {alone}) settled {seen} times");
        }
        for st in &self.stands {
            assert_eq!(
                (st.server.busy(), st.server.placement_load(false)),
                (0, 0),
                "server {} still holds jobs",
                st.tag
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() { ProptestConfig::default().cases } else { CASES },
        ..ProptestConfig::default()
    })]

    #[test]
    fn alone_and_ordinary_jobs_settle_once_and_alone_ones_never_run_beside_another(
        config in config(),
        steps in vec(step(), 1..120),
    ) {
        let mut m = Model::new(&config);
        for s in &steps {
            m.apply(s);
        }
        m.finish();
    }
}

/// A stand-in serving thread that holds its jobs: each round it takes what it may, checks that
/// a job that runs alone has nothing beside it, and returns one job it holds, picked at random;
/// it sleeps once it holds nothing and `rest` says idle. Returns the calls it ran.
fn holding_server(
    p: Arc<Pool>,
    server: Arc<Server>,
    bell: Arc<Bell>,
    stop: Arc<AtomicBool>,
    alone: Arc<Vec<bool>>,
) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut seed = server.tag().wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut running: Vec<(u64, u64)> = Vec::new();
        let mut ran = Vec::new();
        while bell.wait(&stop) {
            loop {
                for job in p.take(&server).jobs {
                    let Some(Value::Number(n)) = values(job.params).first().cloned() else {
                        panic!("a job without its call's number");
                    };
                    running.push((job.token, n as u64));
                }
                assert!(running.len() <= server.concurrency());
                if running.len() > 1 {
                    for &(_, id) in &running {
                        assert!(
                            !alone[id as usize],
                            "call {id} runs alone beside {running:?}"
                        );
                    }
                }
                if !running.is_empty() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let (token, id) = running.swap_remove(seed as usize % running.len());
                    p.complete(&server, token, Ok(Value::Number(id as f64)));
                    ran.push(id);
                    continue;
                }
                if p.rest(&server, true, true) == Rest::Idle {
                    break;
                }
            }
        }
        ran
    })
}

#[test]
fn under_real_threads_alone_jobs_never_run_beside_another_and_every_call_settles_once() {
    // The model above is one thread; here three serving threads race the calling one (and the
    // alone-job handshake between a caller and a server falling idle is real). A quarter of
    // the calls run alone; one alone call in three is cancelled right after it is made.
    let n = 20_000u64;
    let alone: Arc<Vec<bool>> = Arc::new((0..n).map(|i| i % 4 == 1).collect());
    let p = pool(Placement::LeastBusy, usize::MAX);
    let (o, _, rx) = origin();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (1..=3)
        .map(|tag| {
            let (server, bell) = serve_at_once(&p, &["m"], tag, 3);
            holding_server(p.clone(), server, bell, stop.clone(), alone.clone())
        })
        .collect();
    let mut withdrawn = HashSet::new();
    let mut cancelled = HashSet::new();
    for id in 0..n {
        let caller = Caller {
            alone: alone[id as usize],
            ..Caller::default()
        };
        let control = p
            .call_as(&o, id, "m", vec![Value::Number(id as f64)], None, caller)
            .expect("accepted");
        if alone[id as usize] && id % 3 == 0 {
            cancelled.insert(id);
            if p.cancel_call(&control, CancelReason::Aborted, false) == Cancelled::Withdrawn {
                withdrawn.insert(id);
            }
        }
    }
    let mut outcomes: HashMap<u64, Outcome> = HashMap::new();
    for _ in 0..n as usize - withdrawn.len() {
        let (id, outcome) = recv(&rx);
        assert!(!withdrawn.contains(&id), "withdrawn call {id} settled");
        assert!(
            outcomes.insert(id, outcome).is_none(),
            "call {id} settled twice"
        );
    }
    assert!(rx.recv_timeout(Duration::from_millis(20)).is_err());
    stop.store(true, Ordering::Release);
    let mut ran = HashSet::new();
    for t in threads {
        for id in t.join().unwrap() {
            assert!(ran.insert(id), "call {id} ran twice");
        }
    }
    for (id, outcome) in &outcomes {
        match outcome {
            Ok(v) => {
                assert_eq!(*v, Value::Number(*id as f64));
                assert!(ran.contains(id), "call {id} has a result but never ran");
            }
            // Cancelled on its way (a stop asked while it was handed from one server to
            // another, or while it ran): it may not have run.
            Err(e) => {
                assert_eq!(e.code, ErrorCode::Aborted);
                assert!(
                    cancelled.contains(id),
                    "call {id} failed without a cancel: {e:?}"
                );
            }
        }
    }
    assert!(ran.is_disjoint(&withdrawn), "a withdrawn call ran");
    let st = p.stats();
    assert_eq!((st.queued, st.running), (0, 0));
}
