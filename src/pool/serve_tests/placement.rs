//! Placing served calls: a name is native or served, never both; unserved and closed methods
//! are not found, and a broadcast cannot reach them; `leastbusy` picks the idle server and
//! gives ties to one bound to look anyway.

use super::*;

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
fn broadcast_of_a_served_method_is_refused() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (_server, _bell) = serve(&p, &["m"], 1);
    p.broadcast(&o, 1, "m", vec![], None);
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn a_served_job_names_its_callers_origin_and_call_only_for_a_javascript_callers_own_call() {
    // A serving thread posts a result on its caller's own port only for such a call (the
    // only kind that takes a structured-clone result), and only for the origin it was told.
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (a, _, rx_a) = origin();
    let (b, _, _rx_b) = origin();
    assert!(a.id() != 0 && b.id() != 0 && a.id() != b.id());
    let (server, _bell) = serve(&p, &["m"], 1);
    p.call(&a, 7, "m", vec![], None);
    p.call_as(
        &b,
        8,
        "m",
        vec![],
        None,
        Caller {
            watches_progress: true,
            ..Caller::default()
        },
    );
    let request = Value::Object(
        [
            ("jsonrpc".to_string(), Value::String("2.0".into())),
            ("method".to_string(), Value::String("m".into())),
            ("id".to_string(), Value::Number(1.0)),
        ]
        .into_iter()
        .collect(),
    );
    p.request(&a, 9, request, false, false, None);
    let batch = p.take(&server);
    let seen: Vec<_> = batch.jobs.iter().map(|j| (j.own_call, j.watched)).collect();
    assert_eq!(
        seen,
        vec![
            (Some((a.id(), 7)), false),
            (Some((b.id(), 8)), true),
            (None, false)
        ]
    );
    for job in &batch.jobs {
        p.complete(&server, job.token, Ok(Value::Null));
    }
    assert_eq!(recv(&rx_a).0, 7);
}
