//! Stopping served calls: a cancel withdraws a queued call and settles a running one at once;
//! timeouts settle at the stop, or when a late handler returns.

use super::*;

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
fn a_cancel_that_stops_a_running_served_call_says_which_thread_ran_it() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 7);
    let queued = p.call(&o, 1, "m", vec![], None).unwrap();
    assert_eq!(
        p.cancel_call(&queued, CancelReason::Aborted, true),
        Cancelled::Withdrawn
    );
    let running = p.call(&o, 2, "m", vec![], None).unwrap();
    let token = p.take(&server).jobs[0].token;
    // Its server's thread (7 here); not asked to end it: the server stays.
    assert_eq!(
        p.cancel_call(&running, CancelReason::Aborted, false),
        Cancelled::Stopped {
            thread: 7,
            ended: false
        }
    );
    assert_eq!(recv(&rx).0, 2);
    // Stopped already: a second cancel stops nothing, and names no thread.
    assert_eq!(
        p.cancel_call(&running, CancelReason::Aborted, true),
        Cancelled::Asked
    );
    p.complete(&server, token, Ok(Value::Null));
    // Finished: nothing to stop either.
    let done = p.call(&o, 3, "m", vec![], None).unwrap();
    let token = p.take(&server).jobs[0].token;
    p.complete(&server, token, Ok(Value::Null));
    assert_eq!(recv(&rx).0, 3);
    assert_eq!(
        p.cancel_call(&done, CancelReason::Aborted, true),
        Cancelled::Asked
    );
    assert_eq!(p.stats().servers.len(), 1, "still serving");
}

#[test]
fn ending_the_thread_of_a_stopped_call_departs_its_server_only_when_it_answers_nobody_else() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    // As a task-file pool: calls wait for a server of the file's methods while none serves.
    p.expect(Some(vec!["m".into()]));
    let (o, _, rx) = origin();
    let (busy, _b1) = serve_at_once(&p, &["m"], 5, 2);
    // Two calls run on server 5; the first is stopped: the second is still awaited there.
    let first = p.call(&o, 1, "m", vec![], None).unwrap();
    let second = p.call(&o, 2, "m", vec![], None).unwrap();
    let tokens: Vec<u64> = p.take(&busy).jobs.iter().map(|j| j.token).collect();
    assert_eq!(tokens.len(), 2);
    assert_eq!(
        p.cancel_call(&first, CancelReason::Aborted, true),
        Cancelled::Stopped {
            thread: 5,
            ended: false
        }
    );
    assert_eq!(recv(&rx).0, 1);
    // A call queued behind them: with the second stopped too, server 5 has nobody to answer
    // and departs; the queued call moves to the server that comes next, and runs there.
    let third = p.call(&o, 3, "m", vec![], None).unwrap();
    assert_eq!(
        p.cancel_call(&second, CancelReason::Aborted, true),
        Cancelled::Stopped {
            thread: 5,
            ended: true
        }
    );
    assert_eq!(recv(&rx).0, 2);
    assert!(p.stats().servers.is_empty(), "server 5 departed");
    // Its handlers returning late changes nothing.
    for token in tokens {
        p.complete(&busy, token, Ok(Value::Null));
    }
    let (next, _b2) = serve(&p, &["m"], 6);
    let jobs = p.take(&next).jobs;
    assert_eq!(jobs.len(), 1, "the queued call was not lost");
    p.complete(&next, jobs[0].token, Ok(Value::from(3.0)));
    let (id, outcome) = recv(&rx);
    assert_eq!((id, outcome.is_ok()), (3, true));
    drop(third);
    assert!(
        rx.recv_timeout(Duration::from_millis(50)).is_err(),
        "settled twice"
    );
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
    let said = "m timed out after 20 ms: raise the timeout or make the task shorter";
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

#[test]
fn withdrawing_takes_back_a_call_not_started_and_leaves_a_running_one_be() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve_at_once(&p, &["m"], 1, 1);
    let first = p.call(&o, 1, "m", vec![], None).unwrap();
    let second = p.call(&o, 2, "m", vec![], None).unwrap();
    let jobs = p.take(&server).jobs;
    assert_eq!(
        jobs.len(),
        1,
        "one call at a time: the first runs, the second waits"
    );
    assert!(
        !p.withdraw(&first, CancelReason::Aborted),
        "running: not withdrawn"
    );
    assert!(
        p.withdraw(&second, CancelReason::Aborted),
        "queued: withdrawn, the caller settles it"
    );
    // The running call is untouched: its handler's answer is its outcome, not Aborted.
    p.complete(&server, jobs[0].token, Ok(Value::Number(1.0)));
    assert_eq!(recv(&rx), (1, Ok(Value::Number(1.0))));
    assert!(
        p.take(&server).jobs.is_empty(),
        "the withdrawn call never runs"
    );
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    let st = p.stats();
    assert_eq!((st.queued, st.running), (0, 0));
}

#[test]
fn a_call_whose_server_departs_says_which_thread_ran_it() {
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (server, _bell) = serve(&p, &["m"], 7);
    p.call(&o, 1, "m", vec![], None).unwrap();
    assert_eq!(p.take(&server).jobs.len(), 1);
    p.depart(&server);
    let (id, outcome) = recv(&rx);
    let e = outcome.unwrap_err();
    assert_eq!((id, e.code), (1, ErrorCode::ServerGone));
    let thread = match e.data {
        Some(Value::Object(data)) => data.get("thread").cloned(),
        _ => None,
    };
    assert_eq!(thread, Some(Value::Number(7.0)));
}

#[test]
fn a_running_job_is_live_until_its_call_is_settled_by_anyone() {
    // A serving thread posts a result on its caller's port only while the job is live.
    let p = pool(Strategy::RoundRobin, usize::MAX);
    let (o, _, rx) = origin();
    let (gone, _, _rx_gone) = origin();
    let (server, _bell) = serve(&p, &["m"], 1);
    p.call(&o, 1, "m", vec![], None);
    p.call(&o, 2, "m", vec![], None);
    p.call(&gone, 3, "m", vec![], None);
    let jobs = p.take(&server).jobs;
    assert!(jobs.iter().all(|j| p.is_live(&server, j.token)));
    // Stopped (its timer fired): settled, though its handler still runs.
    assert!(p
        .stop(&server, jobs[0].token, CancelReason::Timeout)
        .is_some());
    assert!(!p.is_live(&server, jobs[0].token));
    // Completed.
    p.complete(&server, jobs[1].token, Ok(Value::Null));
    assert!(!p.is_live(&server, jobs[1].token));
    // Its caller's environment is gone.
    gone.retire();
    assert!(!p.is_live(&server, jobs[2].token));
    // Never a job of this server.
    assert!(!p.is_live(&server, u64::MAX));
    let mut settled: Vec<u64> = (0..2).map(|_| recv(&rx).0).collect();
    settled.sort_unstable();
    assert_eq!(settled, vec![1, 2]);
    p.complete(&server, jobs[0].token, Ok(Value::Null));
    p.complete(&server, jobs[2].token, Ok(Value::Null));
    assert_eq!(server.busy(), 0);
}
