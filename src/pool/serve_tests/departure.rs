//! `destroy` and departing servers: queued calls go to the surviving servers, running ones
//! fail, the last server's departure leaves MethodNotFound, and under stress each call still
//! settles once.

use super::*;

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

#[test]
fn a_departure_remembers_how_many_running_calls_it_failed_by_thread() {
    // A pool of JavaScript workers asks, when a worker exits, whether its departure failed a
    // call (an uncaught exception then reached a caller) or none (it is the pool's 'error').
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (busy, _b1) = serve(&p, &["m"], 7);
    let (idle, _b2) = serve(&p, &["m"], 8);
    for id in 1..=4 {
        p.call(&o, id, "m", vec![], None).unwrap();
    }
    let running = p.take(&busy).jobs.len();
    assert_eq!(running, 2, "round-robin: two calls each");
    // A call finished before its server departs is not counted.
    let done = p.take(&idle).jobs;
    for job in &done {
        p.complete(&idle, job.token, Ok(Value::Null));
    }
    p.depart(&busy);
    p.depart(&idle);
    p.depart(&busy); // idempotent: nothing more to fail, nothing more counted
    assert_eq!(
        (p.abandoned_by(7), p.abandoned_by(8), p.abandoned_by(9)),
        (2, 0, 0)
    );
    let gone = (0..4)
        .filter(|_| matches!(recv(&rx).1, Err(e) if e.code == ErrorCode::ServerGone))
        .count();
    assert_eq!(gone, 2);
    // Only the latest departures that failed calls are kept: memory stays bounded.
    for tag in 100..300 {
        let (server, _bell) = serve(&p, &["m"], tag);
        p.call(&o, tag, "m", vec![], None).unwrap();
        assert_eq!(p.take(&server).jobs.len(), 1);
        p.depart(&server);
        assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::ServerGone);
    }
    assert_eq!((p.abandoned_by(299), p.abandoned_by(7)), (1, 0));
}
