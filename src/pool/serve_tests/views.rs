//! SharedArrayBuffer views of served calls: announced to the chosen server by the caller's
//! thread, or resent when the server asks.

use super::*;

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
