//! Pools of JavaScript workers: calls to expected methods wait for a server instead of
//! failing, are shared with a server that opens, and fail or end with `destroy` when no server
//! will come.

use super::*;

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
    // Nothing is expected any more: a new call fails at once, with the reason none will come.
    p.call(&o, 3, "m", vec![], None);
    let (id, outcome) = recv(&rx);
    let error = outcome.unwrap_err();
    assert_eq!(
        (id, error.code, error.message.as_str()),
        (
            3,
            ErrorCode::InternalError,
            "the task file could not be loaded"
        )
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
