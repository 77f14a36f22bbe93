//! Tests of `Map` and `Key` (`value.rs`): insertion order is kept and a repeated key replaced
//! in place, making a map unique or collecting a big one compares each key a bounded number of
//! times, and keys inline or on the heap, or read from text, behave alike.

use super::*;

#[test]
fn map_keeps_insertion_order_and_replaces_in_place() {
    let mut m = Map::new();
    m.insert("b", 1.0.into());
    m.insert("a", 2.0.into());
    m.insert("b", 3.0.into());
    let keys: Vec<_> = m.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["b", "a"]);
    assert_eq!(m.get("b"), Some(&Value::Number(3.0)));
}

#[test]
fn a_map_made_unique_compares_each_key_a_bounded_number_of_times() {
    // Keys holding U+FFFD, as lone surrogates make them: one of them twice.
    let n = 20_000;
    let mut map = Map::new();
    for i in 0..n {
        map.push_unique(format!("\u{FFFD}{i}"), Value::Number(i as f64));
    }
    map.push_unique("\u{FFFD}7".to_string(), Value::from("last"));
    let before = key_comparisons();
    let map = map.into_unique();
    let compared = key_comparisons() - before;
    assert!(
        compared < 8 * n as u64,
        "{compared} key comparisons for {n} keys"
    );
    assert_eq!(map.len(), n);
    assert_eq!(map.iter().nth(7), Some(("\u{FFFD}7", &Value::from("last"))));
}

#[test]
fn collecting_a_big_map_compares_each_key_a_bounded_number_of_times() {
    let n = 50_000;
    let key = |i: usize| match i % 3 {
        0 => format!("a-key-longer-than-inline-{i}"),
        _ => format!("k{i}"),
    };
    // Every key once, then every hundredth again: first position, last value.
    let pairs = (0..n)
        .map(|i| (key(i), Value::Number(i as f64)))
        .chain((0..n).step_by(100).map(|i| (key(i), Value::from("again"))));
    let before = key_comparisons();
    let map: Map = pairs.collect();
    let compared = key_comparisons() - before;
    assert!(
        compared < 8 * n as u64,
        "{compared} key comparisons for {n} keys"
    );
    assert_eq!(map.len(), n);
    for (i, (k, v)) in map.iter().enumerate() {
        assert_eq!(k, key(i));
        let last = if i % 100 == 0 {
            Value::from("again")
        } else {
            Value::Number(i as f64)
        };
        assert_eq!(*v, last, "{k}");
    }
}

#[test]
fn keys_inline_or_on_the_heap_behave_alike() {
    let short = "k".repeat(INLINE);
    let long = "k".repeat(INLINE + 1);
    let mut m = Map::new();
    for key in ["", "é😀", short.as_str(), long.as_str(), "kk"] {
        m.insert(key, Value::from(key));
    }
    m.push_unique("x".repeat(40), Value::Null);
    for key in ["", "é😀", short.as_str(), long.as_str(), "kk"] {
        assert_eq!(m.get(key), Some(&Value::from(key)), "{key:?}");
    }
    assert_eq!(m.get("k"), None);
    assert_eq!(m.get(&"k".repeat(INLINE + 2)), None);
    let keys: Vec<_> = m.iter().map(|(k, _)| k.to_owned()).collect();
    assert_eq!(keys, ["", "é😀", &short, &long, "kk", &"x".repeat(40)]);
    assert_eq!(m.remove(&long), Some(Value::from(long.as_str())));
    assert_eq!(m.len(), 5);
    assert_eq!(m.clone(), m);
}

#[test]
fn a_key_read_from_text_is_the_key_made_from_its_str() {
    // Every length around the inline limit, at every offset, with text after the key (which
    // the window reads and the mask must drop) and without (no whole window left).
    let text = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(2);
    for at in 0..INLINE {
        for len in 0..=INLINE + 2 {
            for text in [&text[..at + len], text.as_str()] {
                let key = &text[at..at + len];
                let read = Key::in_text(text, at, len);
                assert_eq!(read, Key::new(key), "{key:?}");
                assert_eq!(read.as_str(), key);
            }
        }
    }
}
