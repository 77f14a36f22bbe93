//! Tests of the pool with native commands: every call settles once with its own result, the
//! strategies pick as documented, timeouts, cancels, `maxQueue`, close/destroy and retired
//! origins behave as `README.md` says, and stress runs with cancels keep the counts exact.
//! JavaScript-served methods are tested in `serve_tests/`; the helpers are `test_support.rs`.

use super::test_support::{origin, recv, started, wait_until};
use super::*;
use crate::commands;
use crate::rpc::{CancelReason, Map, Outcome};
use std::sync::mpsc::channel;
use std::sync::Mutex as StdMutex;

fn pool(threads: usize, strategy: Strategy) -> Pool {
    started(Options {
        threads,
        strategy,
        ..Options::default()
    })
}

fn sleep_params(ms: f64) -> Vec<Value> {
    vec![Value::Number(ms)]
}

#[test]
fn every_call_settles_exactly_once_with_its_own_result() {
    let p = pool(4, Strategy::Random);
    let (o, _, rx) = origin();
    let n = 20_000u64;
    for i in 0..n {
        p.call(&o, i, "echo", vec![Value::Number(i as f64)], None);
    }
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let (id, outcome) = recv(&rx);
        assert_eq!(outcome.unwrap(), Value::Number(id as f64));
        assert!(!seen[id as usize], "call {id} settled twice");
        seen[id as usize] = true;
    }
    assert!(
        rx.recv_timeout(Duration::from_millis(50)).is_err(),
        "an extra settlement arrived"
    );
    let st = p.stats();
    assert_eq!(st.completed, n);
    assert_eq!(st.queued, 0);
    assert_eq!(st.workers.iter().map(|w| w.completed).sum::<u64>(), n);
}

#[test]
fn roundrobin_serves_workers_in_turn() {
    let p = pool(3, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    for i in 0..9 {
        p.call(&o, i, "sleep", sleep_params(1.0), None);
    }
    for _ in 0..9 {
        recv(&rx).1.unwrap();
    }
    let per: Vec<u64> = p.stats().workers.iter().map(|w| w.completed).collect();
    assert_eq!(per, [3, 3, 3]);
}

#[test]
fn leastbusy_avoids_a_busy_worker() {
    let p = pool(2, Strategy::LeastBusy);
    let (o, _, rx) = origin();
    // An hour's sleep: the worker stays busy however slowly the rest runs (destroy stops it).
    p.call(&o, 0, "sleep", sleep_params(3_600_000.0), None);
    let running = || p.stats().workers.iter().position(|w| w.running == 1);
    wait_until("the long call starts", || running().is_some());
    let busy = running().unwrap();
    // One at a time, so the idle worker's load is 0 and the busy one's is 1 at every pick.
    for i in 1..=5 {
        p.call(&o, i, "echo", vec![Value::Number(i as f64)], None);
        let (id, out) = recv(&rx);
        assert_eq!((id, out.unwrap()), (i, Value::Number(i as f64)));
    }
    assert_eq!(
        p.stats().workers[busy].completed,
        0,
        "a short call went to the busy worker"
    );
    p.destroy(); // stops the long call
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
}

#[test]
fn leastbusy_gives_a_tie_to_the_worker_that_is_not_parked() {
    let p = pool(4, Strategy::LeastBusy);
    let (o, _, rx) = origin();
    let workers = p.scheduler.workers();
    let all_parked = || {
        wait_until("idle workers park", || workers.iter().all(|w| w.asleep()));
    };
    // 40 rounds with every worker idle and one of them (in turn) not parked: a coin toss
    // among the four would miss it in some round.
    for i in 0..40u64 {
        all_parked();
        let target = (i % 4) as usize;
        // It looks as if it still polled: the tie is its, and the push does not unpark it.
        workers[target].pretend_sleeping(false);
        let before: Vec<u64> = p.stats().workers.iter().map(|w| w.completed).collect();
        p.call(&o, i, "echo", vec![Value::Number(i as f64)], None);
        workers[target].pretend_sleeping(true);
        workers[target].wake();
        let (id, out) = recv(&rx);
        assert_eq!((id, out.unwrap()), (i, Value::Number(i as f64)));
        let after: Vec<u64> = p.stats().workers.iter().map(|w| w.completed).collect();
        let ran: Vec<usize> = (0..4).filter(|&w| after[w] > before[w]).collect();
        assert_eq!(ran, [target], "round {i}");
    }
}

#[test]
fn unknown_method_and_own_names_only() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    for (i, m) in ["nope", "__proto__", "toString", "constructor", ""]
        .iter()
        .enumerate()
    {
        assert!(p.call(&o, i as u64, m, vec![], None).is_none());
        let e = recv(&rx).1.unwrap_err();
        assert_eq!(e.code, ErrorCode::MethodNotFound, "{m}");
    }
}

#[test]
fn a_panicking_command_is_an_internal_error_and_the_pool_keeps_serving() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    p.call(&o, 1, "panic", vec!["boom".into()], None);
    let e = recv(&rx).1.unwrap_err();
    std::panic::set_hook(prev);
    assert_eq!(e.code, ErrorCode::InternalError);
    assert!(e.message.contains("boom"), "{}", e.message);
    p.call(&o, 2, "echo", vec![Value::Number(2.0)], None);
    assert_eq!(recv(&rx).1.unwrap(), Value::Number(2.0));
}

#[test]
fn timeout_counts_from_start_and_stops_the_command() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    // The second call waits 300 ms in the queue, longer than its 250 ms timeout, which starts
    // only when it runs. The third would hold the only worker for an hour.
    p.call(&o, 1, "sleep", sleep_params(300.0), None);
    p.call(
        &o,
        2,
        "sleep",
        sleep_params(1.0),
        Some(Duration::from_millis(250)),
    );
    p.call(
        &o,
        3,
        "sleep",
        sleep_params(3_600_000.0),
        Some(Duration::from_millis(50)),
    );
    let mut got = std::collections::HashMap::new();
    for _ in 0..3 {
        let (id, out) = recv(&rx);
        got.insert(id, out);
    }
    assert!(got[&1].is_ok());
    assert_eq!(got[&2].as_ref().unwrap(), &Value::Number(1.0));
    let timed_out = got[&3].as_ref().unwrap_err();
    assert_eq!(timed_out.code, ErrorCode::Timeout);
    assert_eq!(
        timed_out.message,
        "sleep timed out after 50 ms: raise the timeout or make the task shorter"
    );
    // The timeout stopped the hour's sleep: the only worker serves the next call.
    p.call(&o, 4, "echo", vec![Value::Number(4.0)], None);
    assert_eq!(recv(&rx), (4, Ok(Value::Number(4.0))));
    assert_eq!(p.stats().workers[0].running, 0);
}

#[test]
fn cancel_removes_a_queued_call_and_stops_a_running_one() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    let running = p
        .call(&o, 1, "sleep", sleep_params(10_000.0), None)
        .unwrap();
    let queued = p.call(&o, 2, "echo", vec![Value::Null], None).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        p.cancel(&queued, CancelReason::Aborted),
        "a queued call is withdrawn at once"
    );
    assert_eq!(p.stats().queued, 0);
    assert!(
        !p.cancel(&running, CancelReason::Aborted),
        "a running call settles via its worker"
    );
    let (id, out) = recv(&rx);
    assert_eq!(id, 1);
    assert_eq!(out.unwrap_err().code, ErrorCode::Aborted);
    // The withdrawn call never runs and never settles through the pool.
    p.call(&o, 3, "echo", vec![Value::Null], None);
    assert_eq!(recv(&rx).0, 3);
}

#[test]
fn max_queue_reject_and_wait() {
    let options = Options {
        threads: 1,
        max_queue: 2,
        ..Options::default()
    };
    let p = started(options);
    let (o, _, rx) = origin();
    // Long enough to outlast the next three calls on a loaded machine: it holds the one thread
    // (accepted calls count from admission, so no wait for it to start is needed).
    p.call(&o, 0, "sleep", sleep_params(1000.0), None);
    p.call(&o, 1, "echo", vec![Value::Null], None);
    p.call(&o, 2, "echo", vec![Value::Null], None);
    assert!(p.call(&o, 3, "echo", vec![Value::Null], None).is_none());
    let (id, out) = recv(&rx);
    assert_eq!((id, out.unwrap_err().code), (3, ErrorCode::QueueFull));
    for _ in 0..3 {
        recv(&rx).1.unwrap();
    }

    let options = Options {
        threads: 1,
        max_queue: 1,
        on_full: OnFull::Wait,
        ..Options::default()
    };
    let p = started(options);
    for i in 0..50 {
        p.call(&o, 100 + i, "sleep", sleep_params(0.5), None);
        let st = p.stats();
        assert!(
            st.queued + st.running <= 2,
            "maxQueue 1 + 1 thread exceeded: {st:?}"
        );
    }
    let mut order = vec![];
    for _ in 0..50 {
        let (id, out) = recv(&rx);
        out.unwrap();
        order.push(id);
    }
    assert_eq!(
        order,
        (100..150).collect::<Vec<_>>(),
        "waiting calls keep their order"
    );
}

#[test]
fn closed_pool_rejects_and_destroy_settles_everything() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    p.call(&o, 1, "sleep", sleep_params(10_000.0), None);
    for i in 2..12 {
        p.call(&o, i, "echo", vec![Value::Null], None);
    }
    std::thread::sleep(Duration::from_millis(20));
    p.destroy();
    let mut codes = vec![];
    for _ in 0..11 {
        codes.push(recv(&rx).1.unwrap_err().code);
    }
    assert!(
        codes.iter().all(|c| *c == ErrorCode::PoolClosed),
        "{codes:?}"
    );
    assert!(p.call(&o, 99, "echo", vec![Value::Null], None).is_none());
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
}

#[test]
fn retired_origin_jobs_never_run_and_running_ones_stop() {
    let p = pool(2, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    // Sleeps of an hour: retire() returns only if it stops them rather than waiting.
    for i in 0..2 {
        p.call(&o, i, "sleep", sleep_params(3_600_000.0), None);
    }
    for i in 2..100 {
        p.call(&o, i, "echo", vec![Value::Null], None);
    }
    std::thread::sleep(Duration::from_millis(20));
    let (retired, was_retired) = channel();
    let o2 = o.clone();
    std::thread::spawn(move || {
        o2.retire();
        retired.send(()).unwrap();
    });
    was_retired
        .recv_timeout(Duration::from_secs(60))
        .expect("retire waited for the sleeps to finish");
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "a retired origin got an outcome"
    );
    let (o2, _, rx2) = origin();
    p.call(&o2, 7, "echo", vec![Value::Number(7.0)], None);
    assert_eq!(recv(&rx2).1.unwrap(), Value::Number(7.0));
}

#[test]
fn json_rpc_requests_batches_and_text() {
    let p = pool(2, Strategy::LeastBusy);
    let (o, _, rx) = origin();
    let text = |t: &str| {
        p.handle(&o, 0, t, false, None);
        match recv(&rx).1.unwrap() {
            Value::String(s) => s,
            other => panic!("handle answered {other:?}"),
        }
    };
    assert_eq!(
        text(r#"{"jsonrpc":"2.0","method":"fibonacci","params":[90],"id":7}"#),
        r#"{"jsonrpc":"2.0","result":"2880067194370816120","id":7}"#
    );
    assert!(text("{oops").starts_with(r#"{"jsonrpc":"2.0","error":{"code":-32700"#));
    assert!(text("[]").contains(r#""code":-32600"#));
    assert_eq!(
        text(r#"{"jsonrpc":"2.0","method":"echo","params":[1]}"#),
        ""
    );
    assert_eq!(
        text(
            r#"[{"jsonrpc":"2.0","method":"echo","params":[1],"id":1},
                {"jsonrpc":"2.0","method":"echo","params":[2]},
                {"jsonrpc":"2.0","method":"nope","id":"x"},
                1,
                {"jsonrpc":"2.0","method":"echo","params":[3],"id":3}]"#
        ),
        concat!(
            r#"[{"jsonrpc":"2.0","result":1,"id":1},"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: \"nope\": check the name against pool.methods()"},"id":"x"},"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected an object, got number"},"id":null},"#,
            r#"{"jsonrpc":"2.0","result":3,"id":3}]"#
        )
    );
    assert_eq!(
        text(r#"[{"jsonrpc":"2.0","method":"echo","params":[2]}]"#),
        ""
    );
}

#[test]
fn handle_cancellable_cancels_each_request_alone_and_answers_once() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    let text = |v: Outcome| match v.unwrap() {
        Value::String(s) => s,
        other => panic!("handle answered {other:?}"),
    };
    // One thread: the first sleep runs, the echo and the second sleep wait in its queue.
    // Sleeps of an hour: the answer comes only if the cancels stop them.
    let batch = r#"[{"jsonrpc":"2.0","method":"sleep","params":[3600000],"id":1},
        {"jsonrpc":"2.0","method":"echo","params":["kept"],"id":2},
        {"jsonrpc":"2.0","method":"sleep","params":[3600000],"id":3},
        7,
        {"jsonrpc":"2.0","method":"nope","id":5}]"#;
    let mut requests = p.handle_cancellable(&o, 1, batch, false, None);
    std::thread::sleep(Duration::from_millis(20));
    // The queued sleep is withdrawn (answered by the copy of its reply), the running one
    // stops; places answered at once, out of range or already cancelled are passed over.
    p.cancel_requests(&mut requests, &[2, 3, 4, 99], &o);
    p.cancel_requests(&mut requests, &[0, 2, 0], &o);
    let (call, answer) = recv(&rx);
    assert_eq!(call, 1, "a cancelled sleep ran on");
    assert_eq!(
        text(answer),
        concat!(
            r#"[{"jsonrpc":"2.0","error":{"code":-32003,"message":"The call was aborted"},"id":1},"#,
            r#"{"jsonrpc":"2.0","result":"kept","id":2},"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32003,"message":"The call was aborted"},"id":3},"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected an object, got number"},"id":null},"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: \"nope\": check the name against pool.methods()"},"id":5}]"#
        )
    );
    // A cancel that comes after the answer changes nothing: no second answer.
    p.cancel_requests(&mut requests, &[0, 1, 2], &o);
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());

    // A lone request, withdrawn while queued behind a running one.
    let mut running = p.handle_cancellable(
        &o,
        2,
        r#"{"jsonrpc":"2.0","method":"sleep","params":[3600000],"id":"a"}"#,
        false,
        None,
    );
    let mut queued = p.handle_cancellable(
        &o,
        3,
        r#"{"jsonrpc":"2.0","method":"sleep","params":[10000],"id":"b"}"#,
        false,
        None,
    );
    p.cancel_requests(&mut queued, &[0], &o);
    assert_eq!(
        recv(&rx),
        (3, Ok(Value::String(r#"{"jsonrpc":"2.0","error":{"code":-32003,"message":"The call was aborted"},"id":"b"}"#.into())))
    );
    p.cancel_requests(&mut running, &[0], &o);
    let (call, answer) = recv(&rx);
    assert_eq!((call, text(answer).contains("-32003")), (2, true));
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    assert_eq!(p.stats().queued + p.stats().running, 0);
}

#[test]
fn broadcast_runs_once_on_every_worker() {
    let p = pool(3, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    p.broadcast(&o, 1, "sleep", sleep_params(20.0), None);
    let out = recv(&rx).1.unwrap();
    assert_eq!(out.as_array().unwrap().len(), 3);
    let per: Vec<u64> = p.stats().workers.iter().map(|w| w.completed).collect();
    assert_eq!(per, [1, 1, 1]);
}

#[test]
fn happycoin_with_a_seed_is_deterministic_and_every_coin_is_valid() {
    let p = pool(2, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    let mut opts = Map::new();
    opts.insert("attempts", Value::Number(2_000_000.0));
    opts.insert("seed", Value::Number(42.0));
    p.call(&o, 1, "happycoin", vec![Value::Object(opts.clone())], None);
    p.call(&o, 2, "happycoin", vec![Value::Object(opts)], None);
    let a = recv(&rx).1.unwrap();
    let b = recv(&rx).1.unwrap();
    assert_eq!(a, b);
    let coins = a
        .as_object()
        .unwrap()
        .get("coins")
        .unwrap()
        .as_array()
        .unwrap()
        .to_vec();
    assert!(!coins.is_empty());
    for c in coins {
        let n: u64 = c.as_str().unwrap().parse().unwrap();
        assert!(
            commands::is_happy(n) && n.is_multiple_of(10_000),
            "{n} is not a Happycoin"
        );
    }
    for bad in [f64::NAN, f64::INFINITY, -1.0, 2f64.powi(60), 1.5] {
        let mut opts = Map::new();
        opts.insert("attempts", Value::Number(bad));
        p.call(&o, 3, "happycoin", vec![Value::Object(opts)], None);
        assert_eq!(
            recv(&rx).1.unwrap_err().code,
            ErrorCode::InvalidParams,
            "attempts {bad}"
        );
    }
}

#[test]
fn stress_many_submitters_with_cancels_settle_each_call_once_with_its_value() {
    let p = Arc::new(pool(4, Strategy::LeastBusy));
    let mut joins = vec![];
    for t in 0..4u64 {
        let p = p.clone();
        joins.push(std::thread::spawn(move || {
            let (o, _, rx) = origin();
            let n = 5_000u64;
            let mut controls = vec![];
            for i in 0..n {
                let c = p
                    .call(&o, i, "echo", vec![Value::Number((t * n + i) as f64)], None)
                    .unwrap();
                if i % 7 == 0 {
                    controls.push((i, c));
                }
            }
            let mut withdrawn = std::collections::HashSet::new();
            for (i, c) in controls {
                if p.cancel(&c, CancelReason::Aborted) {
                    withdrawn.insert(i);
                }
            }
            let mut settled = vec![false; n as usize];
            for _ in 0..(n as usize - withdrawn.len()) {
                let (id, out) = recv(&rx);
                assert!(
                    !withdrawn.contains(&id),
                    "withdrawn call {id} settled anyway"
                );
                assert!(!settled[id as usize], "call {id} settled twice");
                settled[id as usize] = true;
                match out {
                    Ok(v) => assert_eq!(
                        v.as_f64().unwrap() as u64,
                        t * n + id,
                        "call {id} got another's value"
                    ),
                    Err(e) => assert_eq!(e.code, ErrorCode::Aborted),
                }
            }
            assert!(
                rx.recv_timeout(Duration::from_millis(50)).is_err(),
                "an extra settlement arrived"
            );
        }));
    }
    for j in joins {
        j.join().unwrap();
    }
    assert_eq!(p.stats().queued, 0);
}

#[test]
fn a_dead_worker_settles_its_queue_and_gets_no_more_jobs() {
    let p = pool(2, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    // Occupy both workers, queue one more call on each, then declare worker 1 dead as if its
    // thread could not be created.
    p.call(&o, 0, "sleep", sleep_params(100.0), None);
    p.call(&o, 1, "sleep", sleep_params(100.0), None);
    wait_until("the sleeps start", || p.stats().running >= 2);
    p.call(&o, 2, "echo", vec![Value::Number(2.0)], None);
    p.call(&o, 3, "echo", vec![Value::Number(3.0)], None);
    p.scheduler.retire_worker(1);
    let (id, out) = recv(&rx);
    assert_eq!((id, out.unwrap_err().code), (3, ErrorCode::InternalError));
    for i in 10..20 {
        p.call(&o, i, "echo", vec![Value::Number(i as f64)], None);
    }
    let mut ok = 0;
    for _ in 0..13 {
        let (id, out) = recv(&rx);
        assert!(out.is_ok(), "call {id} failed: {out:?}");
        ok += 1;
    }
    assert_eq!(ok, 13);
    let st = p.stats();
    assert_eq!(
        st.workers[1].completed, 1,
        "only the sleep that was already running"
    );
    assert_eq!(st.queued, 0);
}

#[test]
fn a_cancelled_call_lets_go_of_its_params_at_once() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    // The only thread is busy: the next calls stay queued.
    p.call(&o, 0, "sleep", sleep_params(2_000.0), None);
    let mut controls = Vec::new();
    for id in 1..=3 {
        let big = Value::String("x".repeat(1 << 20));
        controls.push(p.call(&o, id, "echo", vec![big], None).unwrap());
    }
    for control in &controls {
        assert!(!control.params_dropped());
        assert!(p.cancel(control, CancelReason::Aborted));
        // The tombstone is still in the worker's queue; its params are gone already.
        assert!(control.params_dropped());
    }
    p.destroy();
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
}

/// A thread admitting a waiting call is held between taking it off the wait list and pushing
/// it, while `destroy()` runs and the call's worker ends: the push must still settle it.
#[test]
fn a_call_admitted_while_destroy_runs_is_settled_not_stranded() {
    let options = Options {
        threads: 3,
        strategy: Strategy::RoundRobin,
        max_queue: 0,
        on_full: OnFull::Wait,
        ..Options::default()
    };
    let p = started(options);
    let (o, _, rx) = origin();
    // Round robin: the long calls hold workers 0 and 1, the short one worker 2; the fourth
    // call waits for room and, admitted by worker 2, goes to worker 0 (the counter is at 3).
    p.call(&o, 0, "sleep", sleep_params(60_000.0), None);
    p.call(&o, 1, "sleep", sleep_params(60_000.0), None);
    let (held_tx, held_rx) = channel::<()>();
    let (go_tx, go_rx) = channel::<()>();
    let go_rx = StdMutex::new(go_rx);
    let held_tx = StdMutex::new(held_tx);
    p.scheduler.admission().set_pause(Arc::new(move || {
        held_tx.lock().unwrap().send(()).unwrap();
        go_rx.lock().unwrap().recv().unwrap();
    }));
    p.call(&o, 2, "sleep", sleep_params(20.0), None);
    p.call(&o, 3, "echo", vec![Value::Number(3.0)], None);
    held_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("worker 2 admits the waiting call");
    p.destroy();
    // Worker 0's long call stops, and its thread ends: it will serve nothing more.
    wait_until("worker 0 ends after destroy()", || {
        !p.scheduler.workers()[0].is_alive()
    });
    go_tx.send(()).unwrap();
    let mut settled: Vec<(u64, Outcome)> = (0..4).map(|_| recv(&rx)).collect();
    settled.sort_by_key(|(id, _)| *id);
    assert_eq!(settled[3].0, 3);
    assert_eq!(
        settled[3].1.as_ref().unwrap_err().code,
        ErrorCode::PoolClosed
    );
    assert_eq!(p.stats().queued, 0);
}

/// Answers whether its context says the params crossed packed.
struct SaysPlainParams;

impl crate::rpc::Command for SaysPlainParams {
    fn name(&self) -> &'static str {
        "says_plain_params"
    }
    fn params(&self) -> &'static str {
        "..."
    }
    fn summary(&self) -> &'static str {
        "whether the params crossed packed"
    }
    fn run(&self, _: Vec<Value>, ctx: &crate::rpc::Context) -> Result<Value, RpcError> {
        Ok(Value::Bool(ctx.plain_params()))
    }
}

#[test]
fn a_command_is_told_when_its_params_crossed_packed_and_a_bad_tape_is_invalid_params() {
    use crate::rpc::packed::{Packed, ARRAY, NULL};
    let mut registry = crate::rpc::Registry::new();
    registry.register(SaysPlainParams);
    let p = Pool::new(Options::default(), registry).unwrap();
    let (o, _, rx) = origin();
    let packed = |tape: Vec<f64>| {
        Params::Packed(Packed {
            first: None,
            tape,
            text: crate::rpc::JsText::Latin1(vec![]),
        })
    };
    let (a, n) = (f64::from(ARRAY), f64::from(NULL));
    p.call(
        &o,
        1,
        "says_plain_params",
        packed(vec![5.0, 1.0, a, 1.0, n]),
        None,
    );
    assert_eq!(recv(&rx), (1, Ok(Value::Bool(true))));
    p.call(&o, 2, "says_plain_params", vec![Value::Null], None);
    assert_eq!(recv(&rx), (2, Ok(Value::Bool(false))));
    p.call(
        &o,
        3,
        "says_plain_params",
        packed(vec![5.0, 1.0, a, 2.0, n]),
        None,
    );
    let (id, outcome) = recv(&rx);
    assert_eq!(id, 3);
    assert_eq!(outcome.unwrap_err().code, ErrorCode::InvalidParams);
}

#[test]
fn after_close_only_a_call_that_continues_an_accepted_one_is_admitted_until_destroy() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    let continuing = || Caller {
        continuing: true,
        ..Caller::default()
    };
    p.close();
    assert!(p
        .call(&o, 1, "echo", vec![Value::Number(1.0)], None)
        .is_none());
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
    p.call_as(&o, 2, "echo", vec![Value::Number(2.0)], None, continuing());
    assert_eq!(recv(&rx), (2, Ok(Value::Number(2.0))));
    // A map's chunk continues the same way.
    let chunk = p.call_each(&o, 3, "echo", vec![Value::Number(3.0)], None, true);
    assert!(matches!(chunk, Ok(Some(_))));
    assert_eq!(recv(&rx).0, 3);
    p.destroy();
    assert!(p
        .call_as(&o, 4, "echo", vec![Value::Number(4.0)], None, continuing())
        .is_none());
    assert_eq!(recv(&rx), (4, Err(crate::pool::lifecycle::closed_error())));
    assert!(matches!(
        p.call_each(&o, 5, "echo", vec![Value::Number(5.0)], None, true),
        Ok(None)
    ));
    assert_eq!(recv(&rx).1.unwrap_err().code, ErrorCode::PoolClosed);
}

#[test]
fn cloned_or_posted_params_are_invalid_for_a_native_command_and_the_pool_keeps_serving() {
    // Structured-clone bytes, and params their caller posts to a serving thread (shared memory
    // beside structured-clone values), never reach a native command.
    let p = pool(1, Strategy::RoundRobin);
    let (o, _, rx) = origin();
    for (id, params) in [
        (1, Params::Cloned(vec![0xff, 0x0f].into())),
        (3, Params::Posted),
    ] {
        p.call(&o, id, "echo", params, None);
        let (got, outcome) = recv(&rx);
        let e = outcome.unwrap_err();
        assert_eq!((got, e.code), (id, ErrorCode::InvalidParams));
        assert_eq!(e.message, job::CLONED_TO_NATIVE);
        p.call(&o, id + 1, "echo", vec![Value::Number(2.0)], None);
        assert_eq!(recv(&rx), (id + 1, Ok(Value::Number(2.0))));
    }
}

#[test]
fn a_cloned_result_reaches_a_plain_call_as_it_is_and_a_json_rpc_answer_as_invalid_params() {
    let (o, _, rx) = origin();
    let bytes = Value::Cloned(vec![1, 2, 3].into());
    Reply::Call(1).finish(Ok(bytes.clone()), &o);
    assert_eq!(recv(&rx), (1, Ok(bytes.clone())));
    Reply::Response {
        call: 2,
        id: Some(Value::Number(7.0)),
        text: true,
    }
    .finish(Ok(bytes), &o);
    let (id, answer) = recv(&rx);
    let text = answer.unwrap();
    let text = text.as_str().unwrap();
    assert_eq!(id, 2);
    assert!(text.contains("\"code\":-32602"), "{text}");
    assert!(text.contains("JSON-RPC answer cannot carry"), "{text}");
    assert!(text.contains("\"id\":7"), "{text}");
}

#[test]
fn an_observed_call_tells_its_thread_wait_and_run_before_its_outcome_and_others_do_not() {
    let p = pool(1, Strategy::RoundRobin);
    let (o, sink, rx) = origin();
    let timed = || Caller {
        timed: true,
        ..Caller::default()
    };
    // The one thread sleeps on call 1 until it is cancelled, after call 2 was queued: call 2
    // waits behind it.
    let first = p
        .call_as(&o, 1, "sleep", sleep_params(3_600_000.0), None, timed())
        .unwrap();
    wait_until("call 1 runs", || p.stats().running == 1);
    p.call_as(&o, 2, "echo", vec![Value::Number(2.0)], None, timed());
    p.call(&o, 3, "echo", vec![Value::Number(3.0)], None);
    p.cancel(&first, CancelReason::Aborted);
    assert_eq!(recv(&rx).0, 1);
    // Told before the outcome was delivered (call 2 may have run since).
    assert_eq!(sink.ran.lock().unwrap()[0].0, 1);
    assert_eq!(recv(&rx), (2, Ok(Value::Number(2.0))));
    assert_eq!(recv(&rx), (3, Ok(Value::Number(3.0))));
    // A sleep of 20 ms runs at least 20 ms.
    p.call_as(&o, 4, "sleep", sleep_params(20.0), None, timed());
    assert_eq!(recv(&rx).0, 4);
    let all = sink.ran.lock().unwrap().clone();
    // Call 3 is not observed: nothing told of it.
    assert_eq!(all.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [1, 2, 4]);
    assert!(all.iter().all(|(_, ran)| ran.thread == 0));
    assert!(all[1].1.wait > Duration::ZERO);
    assert!(all[2].1.run >= Duration::from_millis(20));
}
