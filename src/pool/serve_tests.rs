//! Tests of JavaScript-served methods, with Rust threads standing in for the serving JS threads.

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

#[test]
fn served_calls_settle_once_with_their_value_and_roundrobin_spreads_them() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = vec![];
    let mut servers = vec![];
    for tag in 0..3 {
        let (server, bell) = serve(&p, &["add"], tag);
        servers.push(server.clone());
        handles.push(echo_server(
            p.clone(),
            server,
            bell,
            stop.clone(),
            Duration::ZERO,
        ));
    }
    let n = 3000u64;
    for i in 0..n {
        assert!(p
            .call(&o, i, "add", vec![Value::Number(i as f64)], None)
            .is_some());
    }
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let (id, outcome) = recv(&rx);
        assert_eq!(outcome.unwrap(), Value::Number(id as f64));
        assert!(!seen[id as usize], "call {id} settled twice");
        seen[id as usize] = true;
    }
    stop.store(true, Ordering::Release);
    let per: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(per, [1000, 1000, 1000]);
    let st = p.stats();
    assert_eq!(st.servers.len(), 3);
    assert_eq!(st.completed, n);
    assert_eq!(st.queued, 0);
    assert!(st
        .servers
        .iter()
        .all(|s| s.completed == 1000 && s.open && s.methods == ["add"]));
}

#[test]
fn wakes_are_batched() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, bell) = serve(&p, &["m"], 1);
    for i in 0..100 {
        p.call(&o, i, "m", vec![], None);
    }
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 1, "one wake per batch");
    let batch = p.take(&server);
    assert_eq!(batch.jobs.len(), 100);
    for job in batch.jobs {
        p.complete(&server, job.token, Ok(Value::Null));
    }
    for _ in 0..100 {
        recv(&rx).1.unwrap();
    }
    // Until its cycle ends, the thread is bound to look again: a call wakes nobody.
    p.call(&o, 100, "m", vec![], None);
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 1);
    assert_eq!(p.rest(&server, true, false), Rest::Work);
    let jobs = p.take(&server).jobs;
    assert_eq!(jobs.len(), 1);
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    recv(&rx).1.unwrap();
    // Once the cycle has ended idle, the next call wakes it.
    assert_eq!(p.rest(&server, true, false), Rest::Idle);
    p.call(&o, 101, "m", vec![], None);
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 2);
    // Over its budget, a thread is told to come back later, work or not, and meanwhile calls
    // wake nobody.
    assert_eq!(p.rest(&server, false, true), Rest::Later);
    p.call(&o, 102, "m", vec![], None);
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 2);
    let jobs = p.take(&server).jobs;
    assert_eq!(jobs.len(), 2);
    for job in jobs {
        p.complete(&server, job.token, Ok(Value::Null));
    }
    assert_eq!(p.rest(&server, false, true), Rest::Later);
    p.call(&o, 103, "m", vec![], None);
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 2);
    // Back with its budget, it takes what came and ends idle.
    assert_eq!(p.rest(&server, true, false), Rest::Work);
    let jobs = p.take(&server).jobs;
    assert_eq!(jobs.len(), 1);
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    assert_eq!(p.rest(&server, true, false), Rest::Idle);
    for _ in 0..3 {
        recv(&rx).1.unwrap();
    }
}

#[test]
fn a_resting_server_sees_a_call_or_is_woken_for_it_never_neither() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, bell) = serve(&p, &["m"], 1);
    // Nothing queued: it polls for the whole window, then wake-ups are on again.
    let t = Instant::now();
    assert_eq!(p.rest(&server, true, true), Rest::Idle);
    assert!(t.elapsed() >= Duration::from_micros(50));
    p.call(&o, 0, "m", vec![], None);
    assert_eq!(bell.wakes.load(Ordering::Relaxed), 1);
    assert!(bell.wait(&AtomicBool::new(false)));
    // Something queued: it says so at once.
    assert_eq!(p.rest(&server, true, true), Rest::Work);
    let jobs = p.take(&server).jobs;
    assert_eq!(jobs.len(), 1);
    // A handler still running: no polling (an async handler's continuation needs the event
    // loop), and wake-ups are on again at once.
    let polls = server.polls.load(Ordering::Relaxed);
    assert_eq!(p.rest(&server, true, true), Rest::Idle);
    assert_eq!(server.polls.load(Ordering::Relaxed), polls, "it polled");
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    recv(&rx).1.unwrap();
    // A call placed while it polls, at every point of the window and just past it: either the
    // poll sees it, or the call rings the bell (both when the call came before the cycle
    // began). Never neither: that would be a lost call.
    let mut seen_by_poll = 0;
    for i in 1..=400u64 {
        let before = bell.wakes.load(Ordering::Relaxed);
        let delay = Duration::from_micros((i * 7) % 80);
        let start = Arc::new(std::sync::Barrier::new(2));
        let caller = {
            let (p, o, start) = (p.clone(), o.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let t = Instant::now();
                while t.elapsed() < delay {
                    std::hint::spin_loop();
                }
                p.call(&o, i, "m", vec![], None);
            })
        };
        start.wait();
        // A cycle begins (it may find the call already there), and ends with its rest.
        let early = p.take(&server).jobs;
        let rest = early.is_empty().then(|| p.rest(&server, true, true));
        caller.join().unwrap();
        let woken = bell.wakes.load(Ordering::Relaxed) - before;
        assert!(woken <= 1, "call {i}: woken {woken} times");
        match rest {
            None => {} // taken at the start of the cycle
            Some(Rest::Idle) => assert_eq!(woken, 1, "call {i}: not seen by the poll, not woken"),
            Some(r) => {
                assert_eq!(r, Rest::Work);
                if woken == 0 {
                    seen_by_poll += 1;
                }
            }
        }
        if woken == 1 {
            assert!(bell.wait(&AtomicBool::new(false)));
        }
        let jobs = if early.is_empty() {
            p.take(&server).jobs
        } else {
            early
        };
        assert_eq!(jobs.len(), 1, "call {i}");
        p.complete(&server, jobs[0].token, Ok(Value::Null));
        assert_eq!(recv(&rx).0, i);
        // The cycle ends idle before the next round.
        assert_eq!(p.rest(&server, true, false), Rest::Idle);
    }
    assert!(seen_by_poll > 0, "no call was ever caught by polling alone");
    // A closed server does not poll.
    p.unserve(&server);
    let polls = server.polls.load(Ordering::Relaxed);
    assert_eq!(p.rest(&server, true, true), Rest::Idle);
    assert_eq!(
        server.polls.load(Ordering::Relaxed),
        polls,
        "a closed server polled"
    );
}

#[test]
fn stress_polling_servers_with_calls_straddling_the_window_settle_each_call_once() {
    let p = pool(Strategy::LeastBusy, usize::MAX);
    let (o, _, rx) = origin();
    let stop = Arc::new(AtomicBool::new(false));
    let servers: Vec<_> = (0..2)
        .map(|tag| {
            let (server, bell) = serve(&p, &["m"], tag);
            let (p, stop) = (p.clone(), stop.clone());
            // The serving thread as lib/serve.js runs it: woken, it runs drain cycles until one
            // ends idle; every few cycles it is over its budget and comes back later itself.
            std::thread::spawn(move || {
                let mut cycles = 0usize;
                while bell.wait(&stop) {
                    loop {
                        for job in p.take(&server).jobs {
                            let v = values(job.params).first().cloned().unwrap_or_default();
                            p.complete(&server, job.token, Ok(v));
                        }
                        cycles += 1;
                        match p.rest(&server, !cycles.is_multiple_of(5), true) {
                            Rest::Idle => break,
                            Rest::Work => {}
                            Rest::Later => std::thread::yield_now(),
                        }
                    }
                }
                (cycles, bell.wakes.load(Ordering::Relaxed))
            })
        })
        .collect();
    let (callers, per) = (3u64, 2000u64);
    let handles: Vec<_> = (0..callers)
        .map(|c| {
            let (p, o) = (p.clone(), o.clone());
            std::thread::spawn(move || {
                for i in 0..per {
                    let id = c * per + i;
                    p.call(&o, id, "m", vec![Value::Number(id as f64)], None);
                    // Gaps from none to past the polling window.
                    let gap = (id * 37) % 90;
                    if gap > 0 {
                        std::thread::sleep(Duration::from_micros(gap));
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total = callers * per;
    let mut seen = vec![false; total as usize];
    let mut sum = 0u64;
    for _ in 0..total {
        let (id, outcome) = recv(&rx);
        assert!(!seen[id as usize], "call {id} settled twice");
        seen[id as usize] = true;
        assert_eq!(outcome.unwrap(), Value::Number(id as f64));
        sum += id;
    }
    assert_eq!(sum, total * (total - 1) / 2);
    stop.store(true, Ordering::Release);
    let mut wakes = 0;
    for s in servers {
        let (cycles, w) = s.join().unwrap();
        assert!(cycles >= w, "every wake runs at least one cycle");
        wakes += w;
    }
    assert!(wakes <= total as usize, "at most one wake per call");
    let st = p.stats();
    assert_eq!((st.queued, st.running, st.completed), (0, 0, total));
}

#[test]
fn a_server_runs_at_most_concurrency_calls_and_the_rest_stay_queued() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let bell = Arc::new(Bell::default());
    let server = p.serve(vec!["m".into()], 1, 1, 2, bell).unwrap();
    for i in 0..5 {
        p.call(&o, i, "m", vec![Value::Number(i as f64)], None);
    }
    let first = p.take(&server).jobs;
    assert_eq!(first.len(), 2);
    assert!(p.take(&server).jobs.is_empty(), "no free handler slot");
    assert_eq!(p.stats().servers[0].queued, 3);
    // Departure now would move the 3 queued calls; finishing one frees a slot instead.
    assert!(p.complete(&server, first[0].token, Ok(Value::Null)));
    let next = p.take(&server).jobs;
    assert_eq!(next.len(), 1);
    assert_eq!(
        values(next[0].params.clone()),
        [Value::Number(2.0)],
        "in order"
    );
    let mut rest = vec![first[1].token, next[0].token];
    while let Some(token) = rest.pop() {
        if p.complete(&server, token, Ok(Value::Null)) {
            rest.extend(p.take(&server).jobs.iter().map(|j| j.token));
        }
    }
    for _ in 0..5 {
        recv(&rx).1.unwrap();
    }
    assert_eq!(server.busy(), 0);
}

#[test]
fn names_are_native_or_served_never_both() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let bell = Arc::new(Bell::default());
    let r = p.serve(vec!["ok".into(), "echo".into()], 1, 1, 1, bell.clone());
    assert_eq!(r.err(), Some(ServeError::Native("echo".into())));
    assert_eq!(
        p.serve(vec![], 1, 1, 1, bell).err(),
        Some(ServeError::Empty)
    );
    // Nothing was registered by the refused call.
    p.call(&o, 1, "ok", vec![], None);
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::MethodNotFound);
    // A native name still runs natively.
    p.call(&o, 2, "echo", vec![Value::Number(2.0)], None);
    assert_eq!(recv(&rx).1.unwrap(), Value::Number(2.0));
}

#[test]
fn unserved_and_closed_methods_are_not_found_and_closing_finishes_what_was_queued() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    p.call(&o, 1, "m", vec![], None);
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::MethodNotFound);
    let (server, _bell) = serve(&p, &["m"], 1);
    p.call(&o, 2, "m", vec![Value::Number(2.0)], None);
    assert!(p.unserve(&server));
    assert!(!p.unserve(&server));
    p.call(&o, 3, "m", vec![], None);
    let (id, outcome) = recv(&rx);
    assert_eq!(
        (id, outcome.unwrap_err().code),
        (3, ErrorCode::MethodNotFound)
    );
    // The call queued before close still runs on the closed server.
    let batch = p.take(&server);
    assert_eq!(batch.jobs.len(), 1);
    assert!(!p.stats().servers[0].open);
    p.complete(&server, batch.jobs[0].token, Ok(Value::Number(2.0)));
    assert_eq!(recv(&rx), (2, Ok(Value::Number(2.0))));
    assert_eq!(server.busy(), 0);
    p.depart(&server);
    assert!(p.stats().servers.is_empty());
}

#[test]
fn leastbusy_picks_the_idle_server() {
    let p = pool(Strategy::LeastBusy, usize::MAX);
    let (o, _, rx) = origin();
    let (busy, _b1) = serve(&p, &["m"], 1);
    let (idle, _b2) = serve(&p, &["m"], 2);
    // Load `busy` with 3 running jobs by pinning the choice: close `idle` meanwhile.
    p.unserve(&idle);
    for i in 0..3 {
        p.call(&o, i, "m", vec![], None);
    }
    let running = p.take(&busy).jobs;
    assert_eq!(running.len(), 3);
    let idle2 = {
        let bell = Arc::new(Bell::default());
        p.serve(vec!["m".into()], 3, 3, usize::MAX, bell).unwrap()
    };
    for i in 3..8 {
        p.call(&o, i, "m", vec![], None);
    }
    // 5 new calls: the idle server gets them until its load passes 3.
    assert_eq!(idle2.busy(), 4);
    assert_eq!(busy.busy(), 4);
    for job in running {
        p.complete(&busy, job.token, Ok(Value::Null));
    }
    for _ in 0..3 {
        recv(&rx).1.unwrap();
    }
}

#[test]
fn leastbusy_gives_ties_to_a_server_that_will_look_at_its_queue_anyway() {
    let p = pool(Strategy::LeastBusy, usize::MAX);
    let (o, _, rx) = origin();
    let (a, bell_a) = serve(&p, &["m"], 1);
    let (b, bell_b) = serve(&p, &["m"], 2);
    // 100 rounds, each with one server asleep and the other in a drain cycle (take) or owing
    // one (Later), both unloaded: a coin toss would give the sleeper a call in some round.
    for i in 0..100u64 {
        let (awake, asleep) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        assert!(
            awake.asleep() && asleep.asleep(),
            "round {i} began with a server awake"
        );
        if i % 4 < 2 {
            assert!(p.take(awake).jobs.is_empty());
        } else {
            assert_eq!(p.rest(awake, false, false), Rest::Later);
        }
        assert!(!awake.asleep());
        p.call(&o, i, "m", vec![Value::Number(i as f64)], None);
        assert_eq!((awake.busy(), asleep.busy()), (1, 0), "round {i}");
        let job = p.take(awake).jobs.pop().expect("the call");
        p.complete(awake, job.token, Ok(Value::Null));
        assert_eq!(p.rest(awake, true, false), Rest::Idle);
        assert_eq!(recv(&rx).0, i);
    }
    // Every call went to a server that was going to look anyway: nobody was woken.
    assert_eq!(bell_a.wakes.load(Ordering::Relaxed), 0);
    assert_eq!(bell_b.wakes.load(Ordering::Relaxed), 0);
}

#[test]
fn cancelling_a_queued_served_call_withdraws_it_and_a_running_one_settles_at_once() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 1);
    let queued = p.call(&o, 1, "m", vec![], None).unwrap();
    assert!(
        p.cancel(&queued, CancelReason::Aborted),
        "queued: caller settles"
    );
    let running = p.call(&o, 2, "m", vec![], None).unwrap();
    let batch = p.take(&server);
    assert_eq!(batch.jobs.len(), 1, "the tombstone is not handed over");
    let token = batch.jobs[0].token;
    assert!(!p.cancel(&running, CancelReason::Aborted));
    let (id, outcome) = recv(&rx);
    assert_eq!((id, outcome.unwrap_err().code), (2, ErrorCode::Aborted));
    // The handler is told to stop and still counts as running until it returns.
    let batch = p.take(&server);
    assert_eq!(batch.stops, [token]);
    assert_eq!(server.busy(), 1);
    p.complete(&server, token, Ok(Value::Null));
    assert_eq!(server.busy(), 0);
    assert!(
        rx.recv_timeout(Duration::from_millis(50)).is_err(),
        "settled twice"
    );
    let st = p.stats();
    assert_eq!((st.queued, st.running), (0, 0));
}

#[test]
fn timeouts_settle_at_the_stop_or_when_a_late_handler_returns() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 1);
    let ms = Some(Duration::from_millis(20));
    p.call(&o, 1, "m", vec![], ms);
    p.call(&o, 2, "m", vec![], ms);
    let taken = Instant::now();
    let jobs = p.take(&server).jobs;
    // The 20 ms count from the take.
    let deadline = jobs[0].deadline.expect("a deadline");
    assert!(deadline > taken && deadline <= Instant::now() + Duration::from_millis(20));
    // The serving thread's timer fires for job 1: it settles now.
    // Its handler's signal and its caller are told the same: the method and the limit.
    let said = "m timed out after 20 ms";
    let stop = p.stop(&server, jobs[0].token, CancelReason::Timeout);
    assert_eq!(stop.expect("it ran").message, said);
    let first = recv(&rx).1.unwrap_err();
    assert_eq!(
        (first.code, first.message.as_str()),
        (ErrorCode::Timeout, said)
    );
    // Job 2's handler blocked past its deadline: its answer is the timeout.
    std::thread::sleep(Duration::from_millis(30));
    p.complete(&server, jobs[1].token, Ok(Value::Null));
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    let (id, outcome) = recv(&rx);
    let late = outcome.unwrap_err();
    assert_eq!(
        (id, late.code, late.message.as_str()),
        (2, ErrorCode::Timeout, said)
    );
    // A job that no longer runs has no stop to tell.
    assert!(p
        .stop(&server, jobs[0].token, CancelReason::Timeout)
        .is_none());
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    assert_eq!(server.busy(), 0);
}

fn view_param(words: &mut [u32]) -> Value {
    // SAFETY: the buffer outlives the test's pool calls; served jobs never dereference views.
    let view = unsafe {
        crate::shm::SharedView::new(
            words.as_mut_ptr().cast(),
            words.len(),
            crate::shm::ElementKind::Uint32,
        )
    };
    Value::View(view.unwrap())
}

#[test]
fn views_are_announced_to_the_chosen_server_or_resent_on_request() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, sink, rx) = origin();
    let mut words = vec![0u32; 4];
    let (server, _bell) = serve(&p, &["m"], 7);
    let mut announced = vec![];
    p.call_as(
        &o,
        1,
        "m",
        vec![Value::Array(vec![view_param(&mut words)])],
        None,
        announcing(&mut |to, token| announced.push((to, token))),
    );
    p.call_as(
        &o,
        2,
        "m",
        vec![],
        None,
        announcing(&mut |_, _| panic!("no views, nothing to announce")),
    );
    let jobs = p.take(&server).jobs;
    assert!(jobs[0].views && !jobs[1].views);
    assert_eq!(announced, [(7, jobs[0].token)]);
    // A server without the views asks the caller for them.
    assert!(p.resend(&server, jobs[0].token));
    assert_eq!(*sink.resends.lock().unwrap(), [(1, 7, jobs[0].token)]);
    assert_eq!(p.orphaned(&server, &[jobs[0].token]), Vec::<u64>::new());
    for job in &jobs {
        p.complete(&server, job.token, Ok(Value::Null));
    }
    recv(&rx).1.unwrap();
    recv(&rx).1.unwrap();
    assert!(
        !p.resend(&server, jobs[0].token),
        "settled: nothing to resend"
    );
    // Announced then cancelled while queued: the server is told to forget the views.
    let c = p
        .call_as(
            &o,
            3,
            "m",
            vec![view_param(&mut words)],
            None,
            announcing(&mut |_, _| {}),
        )
        .unwrap();
    assert!(p.cancel(&c, CancelReason::Aborted));
    let batch = p.take(&server);
    assert!(batch.jobs.is_empty());
    assert_eq!(batch.forgotten.len(), 1);
    // A caller that is gone orphans its jobs.
    p.call(&o, 4, "m", vec![view_param(&mut words)], None);
    let jobs = p.take(&server).jobs;
    o.retire();
    assert!(!p.resend(&server, jobs[0].token));
    assert_eq!(p.orphaned(&server, &[jobs[0].token]), [jobs[0].token]);
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    assert_eq!(server.busy(), 0);
}

/// A pool of `threads` native threads with `maxQueue` `max_queue`.
fn bounded_pool(threads: usize, max_queue: usize, on_full: OnFull) -> Arc<Pool> {
    let options = Options {
        threads,
        strategy: Strategy::LeastBusy,
        max_queue,
        on_full,
        ..Options::default()
    };
    Arc::new(started(options))
}

/// `maxQueue` counts the calls that wait for a thread of their kind: with 2 threads and
/// `maxQueue` 3, exactly 5 calls are accepted while every thread is busy, native or served. The
/// native threads used to count as room for served calls (and each server as one thread
/// whatever its concurrency), so a served method took `maxQueue + threads + servers` calls.
#[test]
fn max_queue_counts_the_calls_that_wait_for_a_thread_of_their_kind() {
    let (o, _, rx) = origin();
    let refused = |rx: &Receiver<(u64, Outcome)>| {
        let (id, outcome) = recv(rx);
        (id, outcome.unwrap_err().code)
    };
    // Native: 2 sleeps run, 3 wait, the 6th is refused.
    let p = bounded_pool(2, 3, OnFull::Reject);
    let accepted: Vec<bool> = (0..6)
        .map(|i| {
            p.call(&o, i, "sleep", vec![Value::Number(200.0)], None)
                .is_some()
        })
        .collect();
    assert_eq!(accepted, [true, true, true, true, true, false]);
    assert_eq!(refused(&rx), (5, ErrorCode::QueueFull));
    p.destroy();
    for _ in 0..5 {
        let _ = recv(&rx);
    }
    // Served, in a pool whose 4 native threads are idle: the 2 servers run 2, 3 wait.
    let p = bounded_pool(4, 3, OnFull::Reject);
    let servers = [
        serve_at_once(&p, &["m"], 1, 1),
        serve_at_once(&p, &["m"], 2, 1),
    ];
    let accepted: Vec<bool> = (10..16)
        .map(|i| p.call(&o, i, "m", vec![], None).is_some())
        .collect();
    assert_eq!(accepted, [true, true, true, true, true, false]);
    assert_eq!(refused(&rx), (15, ErrorCode::QueueFull));
    // The servers start one call each; 3 still wait. The idle native threads are room for
    // native calls only: 4 sleeps run at once, a fifth would wait beside those 3: refused.
    for (server, _) in &servers {
        assert_eq!(p.take(server).jobs.len(), 1);
    }
    let accepted: Vec<bool> = (20..25)
        .map(|i| {
            p.call(&o, i, "sleep", vec![Value::Number(200.0)], None)
                .is_some()
        })
        .collect();
    assert_eq!(accepted, [true, true, true, true, false]);
    assert_eq!(refused(&rx), (24, ErrorCode::QueueFull));
    p.destroy();
}

#[test]
fn a_server_that_opens_admits_the_calls_that_wait_for_room() {
    let p = bounded_pool(1, 0, OnFull::Wait);
    let (o, _, rx) = origin();
    let (_first, _bell) = serve_at_once(&p, &["m"], 1, 1);
    for i in 0..3 {
        p.call(&o, i, "m", vec![], None);
    }
    assert_eq!(p.stats().waiting, 2);
    // Its capacity is room at once, not at the next call that ends.
    let (_second, _bell) = serve_at_once(&p, &["m"], 2, 2);
    let st = p.stats();
    assert_eq!((st.waiting, st.queued), (0, 3));
    p.destroy();
    for _ in 0..3 {
        assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
    }
}

#[test]
fn waiting_calls_are_admitted_to_servers_as_slots_free() {
    let options = Options {
        threads: 1,
        strategy: Strategy::RoundRobin,
        max_queue: 0,
        on_full: OnFull::Wait,
        ..Options::default()
    };
    let p = started(options);
    let (o, _, rx) = origin();
    let (server, _bell) = serve_at_once(&p, &["m"], 1, 1);
    for i in 0..6 {
        p.call(&o, i, "m", vec![Value::Number(i as f64)], None);
    }
    let mut done = vec![];
    while done.len() < 6 {
        for job in p.take(&server).jobs {
            p.complete(&server, job.token, Ok(values(job.params)[0].clone()));
        }
        while let Ok((id, outcome)) = rx.recv_timeout(Duration::from_millis(20)) {
            assert_eq!(outcome.unwrap(), Value::Number(id as f64));
            done.push(id);
        }
    }
    assert_eq!(done, [0, 1, 2, 3, 4, 5], "waiting calls keep their order");
}

#[test]
fn destroy_settles_queued_served_calls_and_stops_running_ones() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 1);
    p.call(&o, 1, "m", vec![], None);
    let jobs = p.take(&server).jobs;
    p.call(&o, 2, "m", vec![], None);
    p.destroy();
    let mut got: HashMap<u64, ErrorCode> = HashMap::new();
    for _ in 0..2 {
        let (id, outcome) = recv(&rx);
        got.insert(id, outcome.unwrap_err().code);
    }
    assert_eq!(got[&1], ErrorCode::PoolClosed);
    assert_eq!(got[&2], ErrorCode::PoolClosed);
    assert_eq!(p.take(&server).stops, [jobs[0].token]);
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn departing_servers_hand_queued_calls_to_survivors_and_fail_running_ones() {
    // 4 servers, 10,000 calls in flight, 2 depart mid-run: every call settles exactly once;
    // the departed servers' running calls fail with ServerGone, the rest are served.
    let p = pool(Strategy::LeastBusy, usize::MAX);
    let (o, _, rx) = origin();
    let stop = Arc::new(AtomicBool::new(false));
    let mut survivors = vec![];
    let mut leaving = vec![];
    for tag in 0..4 {
        let (server, bell) = serve(&p, &["m"], tag);
        if tag < 2 {
            survivors.push(echo_server(
                p.clone(),
                server,
                bell,
                stop.clone(),
                Duration::ZERO,
            ));
        } else {
            leaving.push(server);
        }
    }
    let n = 10_000u64;
    for i in 0..n {
        p.call(&o, i, "m", vec![Value::Number(i as f64)], None);
    }
    // The leaving servers start some jobs and never finish them; one more call each is queued.
    let mut started = 0;
    for (k, server) in leaving.iter().enumerate() {
        started += p.take(server).jobs.len();
        let id = n + k as u64;
        p.call(&o, id, "m", vec![Value::Number(id as f64)], None);
    }
    assert!(started > 0);
    for server in &leaving {
        p.depart(server);
    }
    let total = n + 2;
    let mut seen = vec![false; total as usize];
    let mut gone = 0;
    for _ in 0..total {
        let (id, outcome) = recv(&rx);
        match outcome {
            Ok(v) => assert_eq!(v, Value::Number(id as f64)),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::ServerGone);
                gone += 1;
            }
        }
        assert!(!seen[id as usize], "call {id} settled twice");
        seen[id as usize] = true;
    }
    assert_eq!(
        gone, started,
        "exactly the running calls of departed servers fail"
    );
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    stop.store(true, Ordering::Release);
    let served: usize = survivors.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(served as u64 + started as u64, total);
    let st = p.stats();
    assert_eq!(st.servers.len(), 2);
    assert_eq!((st.queued, st.running), (0, 0));
}

#[test]
fn the_last_server_departing_leaves_method_not_found() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 1);
    for i in 0..5 {
        p.call(&o, i, "m", vec![], None);
    }
    p.depart(&server);
    for _ in 0..5 {
        assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::MethodNotFound);
    }
    p.depart(&server); // idempotent
    assert_eq!(p.stats().queued, 0);
}

#[test]
fn broadcast_of_a_served_method_is_refused() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (_server, _bell) = serve(&p, &["m"], 1);
    p.broadcast(&o, 1, "m", vec![], None);
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::InvalidRequest);
}

/// A stand-in serving thread with bounded concurrency: takes, answers with the first param,
/// takes again while `complete` says jobs wait; stops (without finishing what it holds) when
/// `leave` is set, like a terminated worker.
fn bounded_server(
    p: Arc<Pool>,
    server: Arc<Server>,
    bell: Arc<Bell>,
    stop: Arc<AtomicBool>,
    leave: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while bell.wait(&stop) {
            let mut jobs = p.take(&server).jobs;
            loop {
                while let Some(job) = jobs.pop() {
                    if leave.load(Ordering::Acquire) {
                        return; // departs holding `job` and the rest: they must fail ServerGone
                    }
                    let v = values(job.params).first().cloned().unwrap_or_default();
                    if p.complete(&server, job.token, Ok(v)) {
                        jobs.extend(p.take(&server).jobs);
                    }
                }
                if p.rest(&server, true, true) == Rest::Idle {
                    break;
                }
                jobs = p.take(&server).jobs;
            }
        }
    })
}

#[test]
fn stress_cancels_completions_and_a_departure_settle_each_call_once() {
    for round in 0..3 {
        let p = pool(Strategy::LeastBusy, usize::MAX);
        let (o, _, rx) = origin();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = vec![];
        let mut leaving = None;
        for tag in 0..3 {
            let bell = Arc::new(Bell::default());
            let server = p
                .serve(vec!["m".into()], tag, tag, 4, bell.clone())
                .unwrap();
            let leave = Arc::new(AtomicBool::new(false));
            if tag == 0 {
                leaving = Some((server.clone(), leave.clone()));
            }
            threads.push(bounded_server(p.clone(), server, bell, stop.clone(), leave));
        }
        let per = 5000u64;
        let submitters: Vec<_> = (0..4u64)
            .map(|s| {
                let p = p.clone();
                let o = o.clone();
                std::thread::spawn(move || {
                    let mut withdrawn = vec![];
                    for i in 0..per {
                        let id = s * per + i;
                        let c = p.call(&o, id, "m", vec![Value::Number(id as f64)], None);
                        // Cancel every 7th call, racing its server.
                        if id % 7 == round {
                            if let Some(c) = c {
                                if p.cancel(&c, CancelReason::Aborted) {
                                    withdrawn.push(id);
                                }
                            }
                        }
                    }
                    withdrawn
                })
            })
            .collect();
        // Depart one server mid-run.
        std::thread::sleep(Duration::from_millis(5));
        let (server, leave) = leaving.unwrap();
        leave.store(true, Ordering::Release);
        p.depart(&server);
        let withdrawn: Vec<u64> = submitters
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        let total = 4 * per;
        let mut seen = vec![false; total as usize];
        // Withdrawn calls are settled by their canceller (the bindings), not by the pool.
        for id in &withdrawn {
            seen[*id as usize] = true;
        }
        for _ in 0..total - withdrawn.len() as u64 {
            let (id, outcome) = recv(&rx);
            assert!(!seen[id as usize], "round {round}: call {id} settled twice");
            seen[id as usize] = true;
            match outcome {
                Ok(v) => assert_eq!(v, Value::Number(id as f64)),
                Err(e) => assert!(
                    matches!(e.code, ErrorCode::Aborted | ErrorCode::ServerGone),
                    "round {round}: call {id}: {e}"
                ),
            }
        }
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "round {round}: an extra settlement"
        );
        stop.store(true, Ordering::Release);
        for t in threads {
            t.join().unwrap();
        }
        let st = p.stats();
        assert_eq!((st.queued, st.running), (0, 0), "round {round}");
        assert_eq!(st.servers.len(), 2);
    }
}

/// Every waiting call of a method whose last server goes away settles with MethodNotFound, one
/// after another as each gives its slot back. That chain runs in a loop, not as a recursion one
/// level per call: 100,000 waiting calls used to overflow the stack and abort the process.
#[test]
fn a_long_wait_list_settles_when_its_method_loses_its_servers() {
    let options = Options {
        threads: 1,
        strategy: Strategy::RoundRobin,
        max_queue: 0,
        on_full: OnFull::Wait,
        ..Options::default()
    };
    let p = started(options);
    let (o, _, rx) = origin();
    let n = 100_000u64;
    // Closed with one call running: its completion sets the chain off.
    let (closed, _bell) = serve_at_once(&p, &["m"], 1, 1);
    for i in 0..n {
        p.call(&o, i, "m", vec![], None);
    }
    assert_eq!(p.stats().waiting, n as usize - 1);
    let running = p.take(&closed).jobs;
    assert_eq!(running.len(), 1);
    p.unserve(&closed);
    p.complete(&closed, running[0].token, Ok(Value::Null));
    let mut not_found = 0;
    for _ in 0..n {
        match recv(&rx).1 {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.code, ErrorCode::MethodNotFound);
                not_found += 1;
            }
        }
    }
    assert_eq!(not_found, n - 1);
    // Departed with its calls queued: placing them again fails, and so does every waiting one.
    let (departing, _bell) = serve_at_once(&p, &["m"], 2, 1);
    for i in 0..n {
        p.call(&o, i, "m", vec![], None);
    }
    p.depart(&departing);
    for _ in 0..n {
        assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::MethodNotFound);
    }
    let st = p.stats();
    assert_eq!((st.queued, st.waiting, st.running), (0, 0, 0));
}

/// A pool of no native threads whose servers are expected (a pool of JS workers from a file).
fn worker_pool() -> Arc<Pool> {
    let options = Options {
        threads: 0,
        ..Options::default()
    };
    Arc::new(started(options))
}

#[test]
fn calls_to_expected_methods_wait_for_a_server_instead_of_failing() {
    let p = worker_pool();
    let (o, _, rx) = origin();
    p.expect(None);
    p.call(&o, 1, "m", vec![Value::Number(1.0)], None);
    p.call(&o, 2, "other", vec![], None);
    assert!(
        rx.recv_timeout(Duration::from_millis(50)).is_err(),
        "no server yet: nothing settles"
    );
    assert_eq!(p.stats().queued, 2);
    let (server, _bell) = serve(&p, &["m"], 4);
    // The methods are known now: a call waiting for one nobody serves fails.
    p.expect(Some(vec!["m".into()]));
    let (id, outcome) = recv(&rx);
    assert_eq!(
        (id, outcome.unwrap_err().code),
        (2, ErrorCode::MethodNotFound)
    );
    let jobs = p.take(&server).jobs;
    assert_eq!(jobs.len(), 1);
    p.complete(&server, jobs[0].token, Ok(Value::Number(7.0)));
    assert_eq!(recv(&rx), (1, Ok(Value::Number(7.0))));
    // A native command on a pool of no native threads is refused clearly.
    p.call(&o, 3, "echo", vec![Value::Null], None);
    let (id, outcome) = recv(&rx);
    assert_eq!(id, 3);
    assert!(outcome.unwrap_err().message.contains("no native threads"));
}

#[test]
fn when_the_last_server_leaves_its_queued_calls_wait_for_the_next() {
    let p = worker_pool();
    let (o, _, rx) = origin();
    p.expect(Some(vec!["m".into()]));
    let bell = Arc::new(Bell::default());
    let first = p.serve(vec!["m".into()], 1, 1, 1, bell).unwrap();
    for id in 0..3 {
        p.call(&o, id, "m", vec![Value::Number(id as f64)], None);
    }
    let running = p.take(&first).jobs;
    assert_eq!(running.len(), 1);
    p.depart(&first);
    // The one it ran is ServerGone; the two it had queued wait for the next server.
    let (id, outcome) = recv(&rx);
    assert_eq!((id, outcome.unwrap_err().code), (0, ErrorCode::ServerGone));
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    let (second, _bell2) = serve(&p, &["m"], 8);
    let jobs = p.take(&second).jobs;
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        let n = values(job.params.clone())[0].clone();
        p.complete(&second, job.token, Ok(n));
    }
    let mut got: Vec<(u64, Outcome)> = (0..2).map(|_| recv(&rx)).collect();
    got.sort_by_key(|(id, _)| *id);
    assert_eq!(
        got,
        vec![(1, Ok(Value::Number(1.0))), (2, Ok(Value::Number(2.0)))]
    );
}

#[test]
fn waiting_calls_fail_when_no_server_will_come_are_cancelled_alone_and_end_with_destroy() {
    let p = worker_pool();
    let (o, _, rx) = origin();
    p.expect(None);
    let control = p.call(&o, 1, "m", vec![], None).unwrap();
    p.call(&o, 2, "m", vec![], None);
    // A cancelled waiting call is settled by its canceller; no server ever runs it.
    assert!(p.cancel(&control, CancelReason::Aborted));
    p.fail_expected(RpcError::new(
        ErrorCode::InternalError,
        "the task file could not be loaded",
    ));
    let (id, outcome) = recv(&rx);
    assert_eq!(
        (id, outcome.unwrap_err().code),
        (2, ErrorCode::InternalError)
    );
    // Nothing is expected any more: a new call is MethodNotFound at once.
    p.call(&o, 3, "m", vec![], None);
    let (id, outcome) = recv(&rx);
    assert_eq!(
        (id, outcome.unwrap_err().code),
        (3, ErrorCode::MethodNotFound)
    );
    p.expect(None);
    p.call(&o, 4, "m", vec![], None);
    p.destroy();
    let (id, outcome) = recv(&rx);
    assert_eq!((id, outcome.unwrap_err().code), (4, ErrorCode::PoolClosed));
    let (server, _bell) = serve(&p, &["m"], 1);
    assert!(p.take(&server).jobs.is_empty());
    let st = p.stats();
    assert_eq!((st.queued, st.running), (0, 0));
}

#[test]
fn in_a_pool_of_workers_a_server_that_opens_takes_its_share_of_the_calls_queued_on_the_others() {
    let p = worker_pool();
    p.expect(Some(vec!["m".into()]));
    let (o, _, rx) = origin();
    let first = p
        .serve(vec!["m".into()], 1, 1, 1, Arc::new(Bell::default()))
        .unwrap();
    for id in 0..6 {
        p.call(&o, id, "m", vec![Value::Number(id as f64)], None);
    }
    let running = p.take(&first).jobs;
    assert_eq!(running.len(), 1);
    let second = p
        .serve(
            vec!["m".into()],
            2,
            2,
            usize::MAX,
            Arc::new(Bell::default()),
        )
        .unwrap();
    let moved = p.take(&second).jobs;
    assert!(
        !moved.is_empty(),
        "the new server got none of the 5 queued calls"
    );
    let mut settled = 0;
    for job in running.iter().chain(&moved) {
        let server = if moved.iter().any(|m| m.token == job.token) {
            &second
        } else {
            &first
        };
        p.complete(server, job.token, Ok(values(job.params.clone())[0].clone()));
        settled += 1;
    }
    // The rest run on the first server; each call settles once, with its own value.
    while settled < 6 {
        let jobs = p.take(&first).jobs;
        assert!(!jobs.is_empty());
        for job in jobs {
            p.complete(&first, job.token, Ok(values(job.params.clone())[0].clone()));
            settled += 1;
        }
    }
    let mut got: Vec<(u64, Outcome)> = (0..6).map(|_| recv(&rx)).collect();
    got.sort_by_key(|(id, _)| *id);
    for (id, outcome) in got {
        assert_eq!(outcome, Ok(Value::Number(id as f64)));
    }
}
