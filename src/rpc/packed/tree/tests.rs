//! The tree reads what the values hold: for tapes written as lib/params.js writes them (by
//! [`pack`], its format in Rust), random ones included, `Tree::read` gives the values
//! `Packed::into_unpacked` gives, and the same error for every tape that breaks the rules.

use super::*;
use crate::rpc::packed::tests::{by_hand, one_key_twice, A, EVERY_KIND, MALFORMED, N, NUM, O};
use crate::rpc::packed::tests::{F, OS, S, SH};
use crate::rpc::packed::MAX_NESTING;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// Params packed as lib/params.js packs them: numbers on the tape, strings and keys joined in
/// the text (Latin-1 when every unit fits a byte, else UTF-16), an object with an earlier
/// object's keys written with that object's shape.
pub(crate) fn pack(params: &[Value], first: Option<&str>) -> Packed {
    struct Packer {
        tape: Vec<f64>,
        text: Vec<u16>,
        shapes: Vec<Vec<String>>,
    }
    impl Packer {
        fn units(&mut self, s: &str) {
            let before = self.text.len();
            self.text.extend(s.encode_utf16());
            self.tape.push((self.text.len() - before) as f64);
        }
        fn value(&mut self, v: &Value) {
            match v {
                Value::Null => self.tape.push(N),
                Value::Bool(b) => self.tape.push(f64::from(if *b { TRUE } else { FALSE })),
                Value::Number(n) => self.tape.extend([NUM, *n]),
                Value::String(s) => {
                    self.tape.push(S);
                    self.units(s);
                }
                Value::Array(items) => {
                    self.tape.extend([A, items.len() as f64]);
                    for item in items {
                        self.value(item);
                    }
                }
                Value::Object(map) => {
                    let head = self.tape.len();
                    self.tape.extend([O, map.len() as f64]);
                    for (_, v) in map.iter() {
                        self.value(v);
                    }
                    let keys: Vec<String> = map.iter().map(|(k, _)| k.to_string()).collect();
                    if let Some(id) = self.shapes.iter().position(|s| *s == keys) {
                        self.tape[head] = SH;
                        self.tape.push(id as f64);
                    } else {
                        if !keys.is_empty() {
                            self.tape[head] = OS;
                            self.shapes.push(keys.clone());
                        }
                        for k in &keys {
                            self.units(k);
                        }
                    }
                }
                Value::Function(id) => self.tape.extend([F, f64::from(id.0)]),
                other => panic!("not plain data: {other:?}"),
            }
        }
    }
    let mut p = Packer {
        tape: vec![0.0, 0.0],
        text: Vec::new(),
        shapes: Vec::new(),
    };
    p.value(&Value::Array(params.to_vec()));
    p.tape[0] = p.tape.len() as f64;
    let text = if p.text.iter().all(|&u| u <= 0xFF) {
        JsText::Latin1(p.text.iter().map(|&u| u as u8).collect())
    } else {
        JsText::Utf16(p.text)
    };
    Packed {
        first: first.map(str::to_string),
        tape: p.tape,
        text,
    }
}

/// The tree's reading and the values' reading agree, value for value or error for error.
/// (Compared as printed: a NaN a changed tape may hold is not equal to itself.)
fn agree(p: &Packed) -> Result<Vec<Value>, String> {
    let values = p.unpack();
    let tree = Tree::read(p.clone()).map(Tree::into_values);
    assert_eq!(
        format!("{tree:?}"),
        format!("{values:?}"),
        "tape {:?}",
        p.tape
    );
    values
}

#[test]
fn functions_read_as_the_values_hold_them_and_are_told() {
    let p = by_hand(&[A, 2.0, O, 1.0, F, 3.0, 1.0, NUM, 1.0], "f");
    let values = agree(&p).unwrap();
    assert_eq!(values[1], Value::Number(1.0));
    let tree = Tree::read(p).unwrap();
    assert!(tree.has_functions());
    let Some(Item::Object(o)) = tree.param(0) else {
        panic!("param 0 is an object")
    };
    assert!(matches!(o.get("f"), Some(Item::Function(FunctionId(3)))));
    assert_eq!(
        tree.into_values()[0],
        Value::Object(Map::from_unique(vec![(
            crate::rpc::value::Key::new("f"),
            Value::Function(FunctionId(3))
        )]))
    );
    let plain = Tree::read(by_hand(EVERY_KIND.0, EVERY_KIND.1)).unwrap();
    assert!(!plain.has_functions());
}

#[test]
fn every_kind_and_shape_reads_as_the_values_hold_it() {
    let p = by_hand(EVERY_KIND.0, EVERY_KIND.1);
    let values = agree(&p).unwrap();
    assert_eq!(values.len(), 7);
    let tree = Tree::read(p).unwrap();
    assert_eq!(tree.len(), 7);
    let Some(Item::Object(first)) = tree.param(4) else {
        panic!("param 4 is an object")
    };
    let Some(Item::Object(second)) = tree.param(5) else {
        panic!("param 5 is an object")
    };
    assert_eq!(first.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(second.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert!(matches!(first.get("x"), Some(Item::String("c"))));
    assert!(matches!(second.get("x"), Some(Item::Number(n)) if n == 2.0));
    assert!(second.get("z").is_none());
    assert!(!first.same(second) && first.same(first));
    // An object whose shape its own value defines.
    let Some(Item::Object(z)) = tree.param(6) else {
        panic!("param 6 is an object")
    };
    let Some(Item::Object(inner)) = z.get("z") else {
        panic!("z.z is an object")
    };
    assert!(matches!(inner.get("z"), Some(Item::Number(n)) if n == 1.0));
    assert!(tree.param(7).is_none());
}

#[test]
fn latin1_and_utf16_texts_read_alike_and_a_lone_surrogate_is_u_fffd() {
    agree(&by_hand(&[A, 1.0, O, 1.0, S, 1.0, 1.0], "\u{e9}\u{fc}")).unwrap();
    let p = Packed {
        first: None,
        tape: vec![6.0, 1.0, A, 1.0, S, 2.0],
        text: JsText::Utf16(vec![0xD800, 0x41]),
    };
    assert_eq!(agree(&p).unwrap(), vec![Value::from("\u{FFFD}A")]);
    // Two lone halves in two strings stay two U+FFFD: they are not joined into a pair.
    let p = Packed {
        first: None,
        tape: vec![8.0, 2.0, A, 2.0, S, 1.0, S, 1.0],
        text: JsText::Utf16(vec![0xD83D, 0xDE00]),
    };
    assert_eq!(
        agree(&p).unwrap(),
        vec![Value::from("\u{FFFD}"), Value::from("\u{FFFD}")]
    );
}

#[test]
fn a_first_param_apart_comes_first() {
    let p = pack(&[Value::from(1.0)], Some("{{x}}"));
    assert_eq!(
        agree(&p).unwrap(),
        vec![Value::from("{{x}}"), Value::from(1.0)]
    );
    let tree = Tree::read(p).unwrap();
    assert_eq!(tree.len(), 2);
    assert!(matches!(tree.param(0), Some(Item::String("{{x}}"))));
    assert_eq!(tree.param_value(1), Some(Value::from(1.0)));
}

#[test]
fn tapes_that_break_the_rules_are_the_errors_the_values_give() {
    for (tape, text) in MALFORMED {
        assert!(agree(&by_hand(tape, text)).is_err(), "{tape:?} {text:?}");
    }
    let p = Packed {
        first: None,
        tape: vec![9.0, 0.0, A, 0.0],
        text: JsText::Latin1(vec![]),
    };
    assert!(agree(&p).is_err());
}

#[test]
fn nesting_is_bounded_as_for_values() {
    let mut tape = vec![];
    for _ in 0..=MAX_NESTING {
        tape.extend_from_slice(&[A, 1.0]);
    }
    tape.push(N);
    let e = agree(&by_hand(&tape, "")).unwrap_err();
    assert!(e.contains("nested"), "{e}");
    tape.drain(..2);
    agree(&by_hand(&tape, "")).unwrap();
}

/// Strings from every plane, lone surrogates aside (a Rust string cannot hold one), often
/// short, often repeated as keys.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "", "a", "id", "name", "x", "é", "Zoë", "日本", "😀", "<&\"'>"
        ])
        .prop_map(str::to_string),
        "\\PC{0,12}",
    ]
}

/// Plain data (what crosses packed): objects with few keys, so that many share them.
pub(crate) fn plain() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_filter("JSON numbers", |n| n.is_finite())
            .prop_map(Value::Number),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            // Objects with few keys, so that many share their keys (and so a shape).
            vec((select(vec!["a", "b", "id", "é", "😀", ""]), inner), 0..4).prop_map(|entries| {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k, v);
                }
                Value::Object(map)
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_params_read_as_the_values_hold_them(
        params in vec(plain(), 0..5),
        first in proptest::option::of(string()),
    ) {
        let p = pack(&params, first.as_deref());
        let mut expected = params.clone();
        if let Some(first) = &first {
            expected.insert(0, Value::from(first.as_str()));
        }
        prop_assert_eq!(agree(&p).unwrap(), expected);
    }

    #[test]
    fn every_tape_cut_short_or_changed_is_the_same_error_either_way(
        params in vec(plain(), 1..3),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        entry in select(vec![-1.0, 0.0, 0.5, 3.0, 7.0, 8.0, 1e9, f64::NAN]),
    ) {
        let p = pack(&params, None);
        let mut short = p.clone();
        short.tape.truncate(cut.index(p.tape.len()).max(1));
        short.tape[0] = short.tape.len() as f64;
        let _ = agree(&short);
        let mut changed = p.clone();
        let i = 2 + at.index(p.tape.len() - 2);
        changed.tape[i] = entry;
        let _ = agree(&changed);
    }
}

#[test]
fn keys_that_decode_to_one_keep_the_first_place_and_the_last_value() {
    // What the values hold is checked in `packed::tests`; `agree` holds the tree to it.
    let p = one_key_twice();
    agree(&p).unwrap();
    let tree = Tree::read(p).unwrap();
    for (i, repeated, x) in [(0, 3.0, 2.0), (1, 6.0, 5.0)] {
        let Some(Item::Object(o)) = tree.param(i) else {
            panic!("param {i} is an object")
        };
        assert_eq!(o.keys().collect::<Vec<_>>(), ["\u{FFFD}", "x"]);
        assert!(matches!(o.get("\u{FFFD}"), Some(Item::Number(n)) if n == repeated));
        assert!(matches!(o.get("x"), Some(Item::Number(n)) if n == x));
    }
}

#[test]
fn the_objects_of_a_shape_whose_keys_repeat_are_written_by_one_plan() {
    // [rows], 100 rows of {"\ud800": i, "x": [i], "\udc00": {"y": i}}: one shape for the
    // rows (shape 1; {"y"} ends first and is shape 0), one plan; each row keeps U+FFFD's last
    // value, a container, in the first place.
    let mut tape = vec![0.0, 0.0, A, 1.0, A, 100.0];
    tape.extend([
        OS, 3.0, NUM, 0.0, A, 1.0, NUM, 0.0, OS, 1.0, NUM, 0.0, 1.0, 1.0, 1.0, 1.0,
    ]);
    for i in 1..100 {
        let i = f64::from(i);
        tape.extend([SH, 3.0, NUM, i, A, 1.0, NUM, i, SH, 1.0, NUM, i, 0.0, 1.0]);
    }
    tape[0] = tape.len() as f64;
    let p = Packed {
        first: None,
        tape,
        text: JsText::Utf16(vec![u16::from(b'y'), 0xD800, u16::from(b'x'), 0xDC00]),
    };
    agree(&p).unwrap();
    let tree = Tree::read(p.clone()).unwrap();
    let Some(Item::Array(rows)) = tree.param(0) else {
        panic!("param 0 is an array")
    };
    for (i, row) in rows.iter().enumerate() {
        let Item::Object(row) = row else {
            panic!("row {i} is an object")
        };
        assert_eq!(row.keys().collect::<Vec<_>>(), ["\u{FFFD}", "x"]);
        let Some(Item::Object(last)) = row.get("\u{FFFD}") else {
            panic!("row {i}'s U+FFFD is its last value")
        };
        assert!(matches!(last.get("y"), Some(Item::Number(n)) if n == i as f64));
    }
    // One plan for the shape, worked out once: the walk's own count.
    let mut walk = Walk {
        nodes: Vec::new(),
        keys: Vec::new(),
        shapes: Vec::new(),
        plans: Vec::new(),
        text: String::new(),
        taken: 0,
        functions: false,
    };
    let JsText::Utf16(units) = &p.text else {
        unreachable!()
    };
    walk.read(Cursor::new(super::used_tape(&p.tape).unwrap(), units))
        .unwrap();
    assert_eq!(walk.plans.len(), 1);
}

#[test]
fn counts_nested_past_the_tape_are_refused_before_room_is_made_for_them() {
    // Each of 500 nested arrays says it holds as many items as there are entries left: room
    // for ~500 times the tape's entries. Both readers stop at the count that claims more
    // children in all than the tape has entries.
    let depth = 500;
    let mut tape = Vec::new();
    for level in 0..depth {
        tape.extend([A, (2 * (depth - level)) as f64]);
    }
    tape.push(N);
    let e = agree(&by_hand(&tape, "")).unwrap_err();
    assert!(e.contains("(a count)"), "{e}");
}

#[test]
fn empty_arrays_are_never_the_same_array_and_others_are_themselves() {
    // [[], [], [null]]
    let tree = Tree::read(by_hand(&[A, 3.0, A, 0.0, A, 0.0, A, 1.0, N], "")).unwrap();
    let list = |i| match tree.param(i) {
        Some(Item::Array(list)) => list,
        other => panic!("param {i} is {other:?}"),
    };
    assert!(!list(0).same(list(1)));
    assert!(!list(0).same(list(0)));
    assert!(list(2).same(list(2)) && !list(2).same(list(1)));
}
