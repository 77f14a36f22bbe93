//! Tests of the fair mutex (`fair_mutex.rs`): only the holder unlocks, waiters are served in
//! ticket order, a waiter that gives up is skipped (its turn going to exactly one side), and
//! threads giving up at random never overlap, stall the queue or exceed the span of tickets.

use super::*;
use crate::shm::backoff::Backoff;
use crate::shm::view::leaked_view;
use crate::shm::{ElementKind, SharedView};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

fn fair() -> (FairMutex, SharedView) {
    let v = leaked_view(4 * (WORDS + 1), ElementKind::Int32);
    let m = FairMutex::new(SharedWords::new("FairMutex", &v, 1, WORDS).unwrap());
    (m, v)
}

fn js() -> Agent {
    Agent::new_js().unwrap()
}

#[test]
fn only_the_holder_unlocks_and_nobody_barges_past_a_queue() {
    let (m, _) = fair();
    let (a, b) = (js(), js());
    assert_eq!(m.unlock(a), Err(LockError::NotLocked));
    assert!(!m.is_locked());
    assert_eq!(m.try_lock(a), Ok(true));
    assert_eq!((m.owner(), m.is_locked()), (Some(a), true));
    assert_eq!(m.try_lock(a), Err(LockError::AlreadyHeld));
    assert_eq!(m.lock(a, None), Err(LockError::AlreadyHeld));
    assert_eq!(m.try_lock(b), Ok(false));
    assert_eq!(
        m.unlock(b),
        Err(LockError::NotOwner {
            owner: a,
            caller: b
        })
    );
    m.unlock(a).unwrap();
    assert_eq!((m.owner(), m.is_locked()), (None, false));
    // A queued waiter makes try_lock fail even while the lock is between holders.
    m.words.fetch_add(NEXT, 1);
    assert_eq!(m.try_lock(b), Ok(false));
}

#[test]
fn waiters_are_served_in_the_order_they_arrived() {
    let (m, _) = fair();
    let first = js();
    assert_eq!(m.lock(first, None), Ok(true));
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut handles = Vec::new();
    for i in 0..6 {
        let drawn = m.words.load(NEXT);
        let (m2, order) = (m.clone(), order.clone());
        handles.push(std::thread::spawn(move || {
            let me = Agent::native();
            assert_eq!(m2.lock(me, None), Ok(true));
            order.lock().unwrap().push(i);
            m2.unlock(me).unwrap();
        }));
        // The next thread starts only once this one holds a ticket.
        while m.words.load(NEXT) == drawn {
            std::thread::yield_now();
        }
    }
    m.unlock(first).unwrap();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_waiter_that_gives_up_is_skipped_and_the_next_is_served() {
    let (m, _) = fair();
    let (a, b, c) = (js(), js(), js());
    assert_eq!(m.lock(a, None), Ok(true));
    assert_eq!(m.lock(b, Some(Duration::from_millis(5))), Ok(false));
    let m2 = m.clone();
    let waiter = std::thread::spawn(move || m2.lock(c, Some(Duration::from_secs(10))));
    while m.words.load(NEXT) != 3 {
        std::thread::yield_now();
    }
    m.unlock(a).unwrap();
    assert_eq!(waiter.join().unwrap(), Ok(true));
    assert_eq!(m.owner(), Some(c));
    assert_eq!(m.words.load(SERVING), 2, "ticket 1 was skipped");
    assert_eq!(m.words.load(MARKS + 1), EMPTY, "and its mark removed");
    m.unlock(c).unwrap();
    assert!(!m.is_locked());
}

#[test]
fn a_turn_that_comes_while_giving_up_goes_to_exactly_one_side() {
    let (m, _) = fair();
    let a = js();
    // Ticket 0 holds; ticket 1 has set its bit but not yet looked at SERVING.
    m.words.store(NEXT, 2);
    m.words.store(OWNER, a.id());
    m.mark(1);
    // The holder moves SERVING to 1 and clears the bit first: it skips ticket 1.
    m.unlock(a).unwrap();
    assert_eq!(m.words.load(SERVING), 2);
    assert!(!m.leave_marked(1), "the waiter finds it was skipped");
    assert!(!m.is_locked());
    // The waiter sees its turn and clears its bit first: it holds the lock.
    m.words.store(NEXT, 4);
    m.words.store(SERVING, 3);
    assert!(m.give_up(3), "its own turn");
    // The waiter sees its turn, but the unlocker had cleared the bit: skipped, not held.
    m.mark(3);
    m.words.fetch_and(MARKS + 3, 0);
    assert!(!m.leave_marked(3));
    for s in 0..SLOTS {
        assert_eq!(m.words.load(MARKS + s), EMPTY);
    }
}

#[test]
fn earlier_marks_in_its_slot_do_not_hold_a_ticket_back_from_leaving() {
    let (m, _) = fair();
    let a = js();
    assert_eq!(m.lock(a, None), Ok(true));
    // Tickets 1, 1 + SLOTS, 1 + 2 · SLOTS, … share a slot, each with a bit of its own.
    let k = SLOTS as i32;
    m.words.store(NEXT, 4 * k);
    for t in [1, 1 + k, 1 + 2 * k, 2, 3 * k] {
        assert!(!m.give_up(t), "ticket {t} leaves at once");
    }
    assert_eq!(m.words.load(MARKS + 1), 0b111);
    assert_eq!(m.words.load(MARKS), 0b1000);
    m.words.store(NEXT, 3 * k + 1);
    m.unlock(a).unwrap();
    assert_eq!(m.words.load(SERVING), 3, "1 and 2 skipped, 3 served");
    assert_eq!(m.words.load(MARKS + 1), 0b110);
}

#[test]
fn any_span_of_consecutive_tickets_has_distinct_slots_and_bits_across_the_wrap() {
    assert_eq!(slot_and_bit(0), (0, 1));
    assert_eq!(slot_and_bit(-1), (SLOTS - 1, i32::MIN));
    assert_eq!(slot_and_bit(i32::MIN + 5), (5, 1));
    assert_eq!(slot_and_bit(i32::MAX), (SLOTS - 1, i32::MIN));
    for start in [0, i32::MAX - 100, -100] {
        let mut seen = std::collections::HashSet::new();
        for i in 0..SPAN as i32 {
            assert!(
                seen.insert(slot_and_bit(start.wrapping_add(i))),
                "{start} + {i}"
            );
        }
        assert_eq!(
            slot_and_bit(start.wrapping_add(SPAN as i32)),
            slot_and_bit(start)
        );
    }
}

#[test]
fn with_a_span_of_tickets_out_a_waiter_that_may_give_up_draws_none_and_leaves_when_told() {
    let (m, _) = fair();
    let a = js();
    assert_eq!(m.lock(a, None), Ok(true));
    // Tickets 1 .. SPAN are out, and have given up.
    let span = SPAN as i32;
    m.words.store(NEXT, span);
    for t in 1..span {
        m.mark(t);
    }
    // A timed waiter gives up while `a` holds the lock (it never would, waiting for `a`);
    // one whose wait says stop after k waits asks exactly k + 1 times.
    let m2 = m.clone();
    let timed = within(HANG, "a timed waiter", move || {
        m2.lock(js(), Some(Duration::from_millis(2)))
    });
    assert_eq!(timed, Ok(false));
    for k in 0..4 {
        let (took, waits) = lock_counting_waits(&m, js(), k);
        assert_eq!((took, waits), (Ok(false), k + 1), "k = {k}");
    }
    assert_eq!(m.words.load(NEXT), span, "no ticket drawn");
    // One that never gives up draws ticket SPAN, which has ticket 0's slot and bit.
    let m2 = m.clone();
    let stayer = std::thread::spawn(move || {
        let me = js();
        let took = m2.lock(me, None);
        m2.unlock(me).unwrap();
        took
    });
    while m.words.load(NEXT) != span + 1 {
        std::thread::yield_now();
    }
    m.unlock(a).unwrap();
    assert_eq!(stayer.join().unwrap(), Ok(true));
    assert_eq!(
        m.words.load(SERVING),
        span + 1,
        "1 .. SPAN skipped, SPAN served"
    );
    assert!(!m.is_locked());
    for s in 0..SLOTS {
        assert_eq!(m.words.load(MARKS + s), EMPTY, "slot {s}");
    }
}

#[test]
fn threads_giving_up_at_random_never_overlap_nor_stall_the_queue() {
    let (m, _) = fair();
    let inside = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let counter = leaked_view(8, ElementKind::BigUint64);
    let (threads, rounds) = (8, 1_500);
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (m, inside, counter, done) =
                (m.clone(), inside.clone(), counter.clone(), done.clone());
            std::thread::spawn(move || {
                let me = Agent::native();
                let mut r = 0;
                let mut x = i as u32 + 1;
                while r < rounds {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let took = match x % 4 {
                        0 => m.try_lock(me).unwrap(),
                        1 => m.lock(me, Some(Duration::from_micros(50))).unwrap(),
                        _ => m.lock(me, None).unwrap(),
                    };
                    if !took {
                        continue;
                    }
                    assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
                    let c = counter.load_u64(0, Ordering::Relaxed);
                    std::hint::spin_loop();
                    counter.store_u64(0, c + 1, Ordering::Relaxed);
                    inside.fetch_sub(1, Ordering::Relaxed);
                    m.unlock(me).unwrap();
                    r += 1;
                }
                done.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(done.load(Ordering::Relaxed), threads);
    assert_eq!(
        counter.load_u64(0, Ordering::Relaxed),
        (threads * rounds) as u64
    );
    assert!(!m.is_locked(), "every ticket was served or skipped");
    for s in 0..SLOTS {
        assert_eq!(m.words.load(MARKS + s), EMPTY, "mark left in slot {s}");
    }
}

/// Runs `f` on a thread of its own and returns what it returns; panics if that takes
/// longer than `limit` (the thread is left behind: a test that fails here fails anyway).
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what} still waiting after {limit:?}"))
}

/// How long a test waits for a call that should return before calling it hung: no
/// timing is asserted, only that it returns at all (while the lock is held by another).
const HANG: Duration = Duration::from_secs(60);

/// `lock_with` whose wait says "go on" `k` times, then "give up": the outcome and how many
/// times it was asked. A waiter that honours its wait asks at most `k + 1` times; one that
/// waited on regardless would ask more, or never return.
fn lock_counting_waits(m: &FairMutex, me: Agent, k: usize) -> (Result<bool, LockError>, usize) {
    let mut waits = 0;
    let took = m.lock_with(me, || {
        waits += 1;
        waits <= k
    });
    (took, waits)
}

#[test]
fn a_waiter_gives_up_at_its_timeout_however_many_gave_up_before_it() {
    // Each waiter gives up while the holder keeps the lock: three times as many as there
    // are slots, so later ones share a slot with earlier marks; at 0, across 2^31 (where
    // the Int32 turns negative) and across 2^32 (back to 0).
    for start in [0, i32::MAX - 20, -20] {
        let (m, _) = fair();
        m.words.store(NEXT, start);
        m.words.store(SERVING, start);
        let holder = js();
        assert_eq!(m.lock(holder, None), Ok(true));
        // Every other waiter has a timeout, the rest a wait that says stop after 0-2
        // waits: each gives up while the holder holds the lock, asking its wait exactly
        // as often as it said go on, plus once.
        let waiters = 3 * SLOTS + 1;
        let m2 = m.clone();
        let waits = within(HANG, "a waiter", move || {
            (0..waiters)
                .map(|i| {
                    if i % 2 == 0 {
                        (m2.lock(js(), Some(Duration::from_millis(2))), None)
                    } else {
                        let k = i % 3;
                        let (took, waits) = lock_counting_waits(&m2, js(), k);
                        (took, Some((k, waits)))
                    }
                })
                .collect::<Vec<_>>()
        });
        for (i, (took, counted)) in waits.iter().enumerate() {
            assert_eq!(*took, Ok(false), "start {start}, waiter {i}");
            if let Some((k, waits)) = counted {
                assert_eq!(*waits, k + 1, "start {start}, waiter {i}");
            }
        }
        // A waiter that stays is served next: every ticket that gave up is skipped.
        let m2 = m.clone();
        let stayer = std::thread::spawn(move || {
            let me = js();
            let took = m2.lock(me, Some(Duration::from_secs(10)));
            m2.unlock(me).unwrap();
            took
        });
        let drawn = start.wrapping_add(waiters as i32 + 2);
        while m.words.load(NEXT) != drawn {
            std::thread::yield_now();
        }
        m.unlock(holder).unwrap();
        assert_eq!(stayer.join().unwrap(), Ok(true), "start {start}");
        assert!(!m.is_locked());
        assert_eq!(m.words.load(SERVING), drawn);
        for s in 0..SLOTS {
            assert_eq!(m.words.load(MARKS + s), EMPTY, "start {start}, slot {s}");
        }
    }
}

#[test]
fn waiters_giving_up_faster_than_holders_let_go_fill_the_span_leave_when_told_and_never_overlap() {
    let (m, _) = fair();
    let inside = Arc::new(AtomicUsize::new(0));
    let most_out = Arc::new(AtomicUsize::new(0));
    let holders_left = Arc::new(AtomicUsize::new(2));
    let counter = leaked_view(8, ElementKind::BigUint64);
    let enter = {
        let (m, inside, counter, most_out) =
            (m.clone(), inside.clone(), counter.clone(), most_out.clone());
        move |me: Agent, hold: Duration| {
            assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "overlap");
            let c = counter.load_u64(0, Ordering::Relaxed);
            std::thread::sleep(hold);
            let out = m.words.load(NEXT).wrapping_sub(m.words.load(SERVING)) as u32;
            most_out.fetch_max(out as usize, Ordering::Relaxed);
            counter.store_u64(0, c + 1, Ordering::Relaxed);
            inside.fetch_sub(1, Ordering::Relaxed);
            m.unlock(me).unwrap();
        }
    };
    // Two holders that never give up keep the lock 2 ms at a time; four leavers draw and
    // give up (after 0 to 3 waits of their backoff) as fast as they can meanwhile. The holders go on
    // (15 rounds at least) until the span has been full once: on a loaded machine the
    // leavers may need longer than 15 rounds to draw SPAN tickets.
    let holders: Vec<_> = (0..2)
        .map(|_| {
            let (m, enter, left, most_out) = (
                m.clone(),
                enter.clone(),
                holders_left.clone(),
                most_out.clone(),
            );
            std::thread::spawn(move || {
                let me = Agent::native();
                let give_up_at = std::time::Instant::now() + Duration::from_secs(20);
                let mut rounds = 0;
                while rounds < 15
                    || (most_out.load(Ordering::Relaxed) < SPAN
                        && std::time::Instant::now() < give_up_at)
                {
                    assert_eq!(m.lock(me, None), Ok(true));
                    enter(me, Duration::from_millis(2));
                    rounds += 1;
                }
                left.fetch_sub(1, Ordering::Relaxed);
                (rounds, 0)
            })
        })
        .collect();
    let leavers: Vec<_> = (0..4u32)
        .map(|i| {
            let (m, enter, left) = (m.clone(), enter.clone(), holders_left.clone());
            std::thread::spawn(move || {
                let me = Agent::native();
                let (mut entries, mut most_waits) = (0, 0);
                let mut x = i + 1;
                while left.load(Ordering::Relaxed) > 0 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let k = (x % 4) as usize;
                    let mut waits = 0;
                    let mut backoff = Backoff::new();
                    let took = m
                        .lock_with(me, || {
                            waits += 1;
                            waits <= k && backoff.snooze(None)
                        })
                        .unwrap();
                    // Asked past its "give up": how many times more than it should have.
                    most_waits = most_waits.max(waits.saturating_sub(k + 1));
                    if took {
                        enter(me, Duration::ZERO);
                        entries += 1;
                    }
                }
                (entries, most_waits)
            })
        })
        .collect();
    let (mut entries, mut overran) = (0, 0);
    for h in holders.into_iter().chain(leavers) {
        let (n, w) = h.join().unwrap();
        entries += n;
        overran = overran.max(w);
    }
    assert_eq!(counter.load_u64(0, Ordering::Relaxed), entries);
    assert_eq!(overran, 0, "a leaver waited on after its wait said give up");
    assert!(
        most_out.load(Ordering::Relaxed) >= SPAN,
        "the span was never full: at most {} tickets out",
        most_out.load(Ordering::Relaxed)
    );
    assert!(!m.is_locked(), "every ticket was served or skipped");
    for s in 0..SLOTS {
        assert_eq!(m.words.load(MARKS + s), EMPTY, "bits left in slot {s}");
    }
}

#[test]
fn acquisitions_follow_ticket_order_under_contention() {
    let (m, _) = fair();
    let log = Arc::new(StdMutex::new(Vec::new()));
    let (threads, rounds) = (8, 500);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (m, log) = (m.clone(), log.clone());
            std::thread::spawn(move || {
                let me = Agent::native();
                for _ in 0..rounds {
                    assert_eq!(m.lock(me, None), Ok(true));
                    // Inside, SERVING is the holder's ticket.
                    log.lock().unwrap().push(m.words.load(SERVING));
                    m.unlock(me).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let log = log.lock().unwrap();
    let expected: Vec<i32> = (0..threads * rounds).collect();
    assert_eq!(
        *log, expected,
        "served in exactly the order tickets were drawn"
    );
}
