//! `maxQueue` with served calls: the bound counts the calls that wait for a thread of their
//! kind, and waiting calls are admitted to servers as slots free or servers open.

use super::*;

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
