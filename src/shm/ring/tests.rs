//! Tests of the ring buffer (`ring.rs`): it behaves as a bounded FIFO at every wrap position,
//! reads the book's header as the book writes it, wakes the other side only when it leaves
//! empty or full, reports a corrupt header without touching it, and with many producers and
//! consumers on threads loses or duplicates no byte.

use super::*;
use crate::commands::Rng;
use crate::shm::backoff::Backoff;
use crate::shm::view::leaked_view;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

/// A ring of `capacity` data bytes and a byte view of its whole memory (header included).
fn ring(capacity: usize) -> (RingBuffer, SharedView) {
    let region = leaked_view(HEADER_BYTES + capacity, ElementKind::Uint8);
    (RingBuffer::new(&region).unwrap(), region)
}

fn header_u32(region: &SharedView, index: usize) -> u32 {
    let mut b = [0u8; 4];
    region.load_bytes(index * 4, &mut b);
    u32::from_ne_bytes(b)
}

fn set_header_u32(region: &SharedView, index: usize, value: u32) {
    region.store_bytes(index * 4, &value.to_ne_bytes());
}

#[test]
fn behaves_like_a_bounded_fifo_at_every_wrap_position() {
    for cap in [1usize, 2, 7, 13, 100] {
        let (r, region) = ring(cap);
        let mut model = VecDeque::new();
        let mut rng = Rng::new(cap as u64);
        for step in 0..4_000 {
            if rng.next_u64().is_multiple_of(2) {
                let len = (rng.next_u64() % (2 * cap as u64 + 1)) as usize;
                let src: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let n = r.try_write(&src).unwrap().bytes;
                assert_eq!(n, len.min(cap - model.len()), "cap {cap}, step {step}");
                model.extend(&src[..n]);
            } else {
                let want = (rng.next_u64() % (2 * cap as u64 + 1)) as usize;
                let mut out = vec![0; want];
                let n = r.try_read_into(&mut out).unwrap().bytes;
                let expected: Vec<u8> = model.drain(..want.min(model.len())).collect();
                assert_eq!(&out[..n], &expected[..], "cap {cap}, step {step}");
            }
            assert_eq!(r.len(), model.len());
            assert_eq!(header_u32(&region, LENGTH) as usize, model.len());
            assert!(header_u32(&region, HEAD) < cap as u32);
            assert!(header_u32(&region, TAIL) < cap as u32);
            assert_eq!(
                header_u32(&region, LOCK),
                0,
                "the lock is released after each call"
            );
        }
    }
}

#[test]
fn reads_the_books_pointers_at_the_end_of_the_data() {
    // The book's code leaves head or tail equal to the capacity after a write or read that
    // ends exactly at the end of the data.
    let (r, region) = ring(10);
    region.store_bytes(HEADER_BYTES, b"0123456789");
    set_header_u32(&region, HEAD, 10);
    set_header_u32(&region, TAIL, 4);
    set_header_u32(&region, LENGTH, 6);
    let mut out = [0u8; 8];
    assert_eq!(r.try_read_into(&mut out).unwrap().bytes, 6);
    assert_eq!(&out[..6], b"456789");
    assert_eq!(r.try_write(b"abc").unwrap().bytes, 3);
    assert_eq!(r.try_read_into(&mut out).unwrap().bytes, 3);
    assert_eq!(&out[..3], b"abc", "head at the end means head at 0");
    set_header_u32(&region, TAIL, 10);
    set_header_u32(&region, HEAD, 10);
    assert_eq!(r.try_write(b"xy").unwrap().bytes, 2);
    assert_eq!(r.try_read_into(&mut out).unwrap().bytes, 2);
    assert_eq!(&out[..2], b"xy");
}

#[test]
fn the_contiguous_read_takes_tail_to_tail_plus_n() {
    // The book's bug: slice(tail, bytes) returns nothing once tail > bytes.
    let (r, _) = ring(16);
    r.try_write(&[1; 10]).unwrap();
    let mut out = [0u8; 10];
    r.try_read_into(&mut out).unwrap();
    r.try_write(b"abcd").unwrap();
    let mut out = [0u8; 3];
    assert_eq!(r.try_read_into(&mut out).unwrap().bytes, 3);
    assert_eq!(&out, b"abc");
}

#[test]
fn only_leaving_empty_or_full_wakes_the_other_side() {
    let (r, _) = ring(4);
    let w = |src: &[u8]| r.try_write(src).unwrap();
    let moved = |bytes, wakes| Moved { bytes, wakes };
    assert_eq!(w(b"ab"), moved(2, true), "empty before: readers may sleep");
    assert_eq!(w(b"c"), moved(1, false));
    assert_eq!(w(b"def"), moved(1, false));
    assert_eq!(w(b"g"), moved(0, false));
    let mut out = [0u8; 1];
    let mut read = || r.try_read_into(&mut out).unwrap();
    assert_eq!(read(), moved(1, true), "full before: writers may sleep");
    for _ in 0..3 {
        assert_eq!(read(), moved(1, false));
    }
    assert_eq!(read(), moved(0, false));
}

#[test]
fn a_corrupt_header_is_reported_and_left_alone() {
    let (r, region) = ring(8);
    set_header_u32(&region, LENGTH, 9);
    assert!(matches!(r.try_write(b"a"), Err(RingError::Corrupt(_))));
    assert_eq!(
        header_u32(&region, LOCK),
        0,
        "the lock is released after the error"
    );
    set_header_u32(&region, LENGTH, 3);
    set_header_u32(&region, HEAD, 2);
    set_header_u32(&region, TAIL, 0);
    let mut out = [0u8; 4];
    assert!(matches!(
        r.try_read_into(&mut out),
        Err(RingError::Corrupt(_))
    ));
    assert_eq!(header_u32(&region, TAIL), 0, "nothing was changed");
    set_header_u32(&region, HEAD, 0x8000_0000);
    assert!(matches!(r.try_write(b"a"), Err(RingError::Corrupt(_))));
}

#[test]
fn a_held_lock_makes_try_calls_busy_and_waits_time_out() {
    let (r, region) = ring(8);
    set_header_u32(&region, LOCK, 1);
    assert_eq!(r.try_write(b"a"), Err(RingError::Busy));
    assert_eq!(r.try_read_into(&mut [0; 1]), Err(RingError::Busy));
    let short = Some(Duration::from_millis(15));
    assert_eq!(r.write(b"a", short), Err(RingError::TimedOut));
    assert_eq!(r.read_into(&mut [0; 1], short), Err(RingError::TimedOut));
    assert_eq!(header_u32(&region, LENGTH), 0);
}

#[test]
fn too_small_or_misaligned_memory_is_refused() {
    let region = leaked_view(HEADER_BYTES, ElementKind::Uint8);
    assert!(RingBuffer::new(&region).is_err());
    let region = leaked_view(64, ElementKind::Uint8);
    let shifted = region.sub_view(2, 40, ElementKind::Uint8).unwrap();
    let e = RingBuffer::new(&shifted).unwrap_err();
    assert!(e.message.contains("4-aligned"), "{}", e.message);
}

#[test]
fn one_producer_and_one_consumer_move_an_exact_stream() {
    let (r, _) = ring(37);
    let total = 200_000usize;
    let stream = move |seed| {
        let mut rng = Rng::new(seed);
        (0..total).map(move |_| rng.next_u64() as u8)
    };
    let producer = {
        let r = r.clone();
        std::thread::spawn(move || {
            let data: Vec<u8> = stream(9).collect();
            let mut sizes = Rng::new(1);
            let mut at = 0;
            let mut backoff = Backoff::new();
            while at < total {
                let len = (1 + sizes.next_u64() % 90) as usize;
                let end = (at + len).min(total);
                let n = r.write(&data[at..end], None).unwrap().bytes;
                if n == 0 {
                    backoff.snooze(None);
                } else {
                    backoff = Backoff::new();
                }
                at += n;
            }
        })
    };
    let mut got = Vec::with_capacity(total);
    let mut sizes = Rng::new(2);
    let mut backoff = Backoff::new();
    while got.len() < total {
        let mut buf = vec![0; (1 + sizes.next_u64() % 60) as usize];
        let n = r.read_into(&mut buf, None).unwrap().bytes;
        if n == 0 {
            backoff.snooze(None);
        } else {
            backoff = Backoff::new();
        }
        got.extend_from_slice(&buf[..n]);
    }
    producer.join().unwrap();
    assert!(
        got.iter().copied().eq(stream(9)),
        "the stream arrived changed"
    );
    assert!(r.is_empty());
}

/// 4 producers and 4 consumers through a 100-byte ring. Every unit is 4 bytes (producer id,
/// 24-bit sequence number) and every write and read moves a multiple of 4 bytes, so with a
/// capacity that is a multiple of 4 no unit is ever split between threads.
#[test]
fn many_producers_and_consumers_deliver_every_unit_exactly_once_in_order() {
    const PRODUCERS: usize = 4;
    const CONSUMERS: usize = 4;
    const UNITS: usize = 40_000; // per producer: 640 kB in all
    let (r, _) = ring(100);
    let seen: Arc<Vec<AtomicBool>> = Arc::new(
        (0..PRODUCERS * UNITS)
            .map(|_| AtomicBool::new(false))
            .collect(),
    );
    let received = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for p in 0..PRODUCERS {
        let r = r.clone();
        handles.push(std::thread::spawn(move || {
            let units: Vec<u8> = (0..UNITS)
                .flat_map(|seq| ((p << 24 | seq) as u32).to_le_bytes())
                .collect();
            let mut sizes = Rng::new(p as u64);
            let mut at = 0;
            let mut backoff = Backoff::new();
            while at < units.len() {
                let len = 4 * (1 + sizes.next_u64() % 50) as usize;
                let end = (at + len).min(units.len());
                let n = r.write(&units[at..end], None).unwrap().bytes;
                assert_eq!(n % 4, 0);
                at += n;
                if n == 0 {
                    backoff.snooze(None);
                } else {
                    backoff = Backoff::new();
                }
            }
        }));
    }
    for c in 0..CONSUMERS {
        let (r, seen, received) = (r.clone(), seen.clone(), received.clone());
        handles.push(std::thread::spawn(move || {
            let mut last = [None::<usize>; PRODUCERS];
            let mut sizes = Rng::new(100 + c as u64);
            let mut backoff = Backoff::new();
            while received.load(Ordering::Acquire) < PRODUCERS * UNITS {
                let mut buf = vec![0; 4 * (1 + sizes.next_u64() % 32) as usize];
                let n = r.read_into(&mut buf, None).unwrap().bytes;
                assert_eq!(n % 4, 0, "a unit was split");
                if n == 0 {
                    backoff.snooze(Some(std::time::Instant::now() + Duration::from_millis(1)));
                    continue;
                }
                backoff = Backoff::new();
                for unit in buf[..n].chunks_exact(4) {
                    let u = u32::from_le_bytes(unit.try_into().unwrap()) as usize;
                    let (p, seq) = (u >> 24, u & 0xff_ffff);
                    assert!(p < PRODUCERS && seq < UNITS, "garbage unit {u:#x}");
                    assert!(last[p].is_none_or(|l| l < seq), "producer {p} out of order");
                    last[p] = Some(seq);
                    let dup = seen[p * UNITS + seq].swap(true, Ordering::Relaxed);
                    assert!(!dup, "unit {seq} of producer {p} arrived twice");
                }
                received.fetch_add(n / 4, Ordering::AcqRel);
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(
        seen.iter().all(|s| s.load(Ordering::Relaxed)),
        "a unit was lost"
    );
    assert_eq!(received.load(Ordering::Relaxed), PRODUCERS * UNITS);
    assert!(r.is_empty());
}
