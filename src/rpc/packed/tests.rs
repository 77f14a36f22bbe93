//! Tests of packed params (`packed.rs`): every kind of value and shape is read back, Latin-1
//! and UTF-16 texts decode, tapes that do not fit are refused, JSON text keeps what
//! `JSON.stringify` keeps, and nesting is bounded. The hand-made tapes here are shared with
//! `tree/tests.rs`.

use super::*;

/// A packed params array written by hand (entries 0 and 1 added), with a Latin-1 text.
pub(crate) fn by_hand(tape: &[f64], text: &str) -> Packed {
    let mut t = vec![tape.len() as f64 + 2.0, 0.0];
    t.extend_from_slice(tape);
    Packed {
        first: None,
        tape: t,
        text: JsText::Latin1(text.chars().map(|c| c as u8).collect()),
    }
}

fn latin1(tape: &[f64], text: &str) -> Result<Vec<Value>, String> {
    by_hand(tape, text).unpack()
}

pub(crate) const N: f64 = NULL as f64;
pub(crate) const T: f64 = TRUE as f64;
pub(crate) const NUM: f64 = NUMBER as f64;
pub(crate) const S: f64 = STRING as f64;
pub(crate) const A: f64 = ARRAY as f64;
pub(crate) const O: f64 = OBJECT as f64;
pub(crate) const OS: f64 = OBJECT_SHAPE as f64;
pub(crate) const SH: f64 = SHAPED as f64;
pub(crate) const F: f64 = FUNCTION as f64;

/// [null, true, 1.5, "ab", {x: "c", y: []}, {x: 2, y: null}, {z: {z: 1}}]: the last object
/// has the shape its own value defines.
pub(crate) const EVERY_KIND: (&[f64], &str) = (
    &[
        A, 7.0, N, T, NUM, 1.5, S, 2.0, OS, 2.0, S, 1.0, A, 0.0, 1.0, 1.0, SH, 2.0, NUM, 2.0, N,
        0.0, SH, 1.0, OS, 1.0, NUM, 1.0, 1.0, 1.0,
    ],
    "abcxyz",
);

/// Tapes that do not fit the rules, each for its own reason.
pub(crate) const MALFORMED: &[(&[f64], &str)] = &[
    (&[], ""),                                             // no params array
    (&[N], ""),                                            // not an array
    (&[A, 2.0, N], ""),                                    // cut short
    (&[A, 1e9, N], ""),               // a count past the end: no allocation of 1e9
    (&[A, 1.5, N], ""),               // not a whole number
    (&[A, -1.0], ""),                 // negative
    (&[A, f64::NAN], ""),             // NaN
    (&[A, 1.0, S, 3.0], "ab"),        // a string past the text
    (&[A, 1.0, 10.0], ""),            // not a tag
    (&[A, 1.0, F], ""),               // a function without its number
    (&[A, 1.0, F, 0.5], ""),          // a function's number not whole
    (&[A, 1.0, F, -1.0], ""),         // negative
    (&[A, 1.0, F, 4294967296.0], ""), // past what a function's number can be
    (&[A, 1.0, SH, 0.0, 0.0], ""),    // no such shape
    (&[A, 2.0, OS, 1.0, N, 1.0, SH, 2.0, N, N, 0.0], "a"), // a shape of another count
    (&[A, 1.0, N, N], ""),            // entries left over
    (&[A, 1.0, S, 1.0], "ab"),        // text left over
    (&[A, 1.0, O, 1e300, N], ""),     // an object count past the end
    (&[A, 1.0, O, 1.0, N], ""),       // an object's key cut short
    (&[A, 1.0, SH, 1.0, N, 7.0], ""), // a shape past those defined
];

/// [{"\ud800": 1, "x": 2, "\udc00": 3}, the same keys again]: both lone halves become
/// U+FFFD, in the object that carries its keys and in the one of its shape.
pub(crate) fn one_key_twice() -> Packed {
    let mut tape = vec![
        0.0, 0.0, A, 2.0, OS, 3.0, NUM, 1.0, NUM, 2.0, NUM, 3.0, 1.0, 1.0, 1.0, SH, 3.0, NUM, 4.0,
        NUM, 5.0, NUM, 6.0, 0.0,
    ];
    tape[0] = tape.len() as f64;
    Packed {
        first: None,
        tape,
        text: JsText::Utf16(vec![0xD800, u16::from(b'x'), 0xDC00]),
    }
}

#[test]
fn reads_every_kind_and_shapes() {
    let (tape, text) = EVERY_KIND;
    let v = latin1(tape, text).unwrap();
    let json = {
        let mut s = String::new();
        crate::rpc::json::write(&Value::Array(v), &mut s);
        s
    };
    assert_eq!(
        json,
        r#"[null,true,1.5,"ab",{"x":"c","y":[]},{"x":2,"y":null},{"z":{"z":1}}]"#
    );
}

#[test]
fn functions_are_numbered_slots_for_values_and_refused_as_json() {
    // [{f: <function 0>, n: 1}, [<function 1>, <function 0>]]
    let tape = [
        A, 2.0, O, 2.0, F, 0.0, NUM, 1.0, 1.0, 1.0, A, 2.0, F, 1.0, F, 0.0,
    ];
    let packed = by_hand(&tape, "fn");
    let values = packed.unpack().unwrap();
    let Value::Object(map) = &values[0] else {
        panic!("not an object: {values:?}")
    };
    assert_eq!(map.get("f"), Some(&Value::Function(FunctionId(0))));
    assert_eq!(
        values[1],
        Value::Array(vec![
            Value::Function(FunctionId(1)),
            Value::Function(FunctionId(0))
        ])
    );
    // A served method gets JSON text: no function can be in it.
    let err = packed.to_json().unwrap_err();
    assert!(err.contains("function"), "{err}");
    // The largest number a function may have.
    let last = latin1(&[A, 1.0, F, f64::from(u32::MAX)], "").unwrap();
    assert_eq!(last, vec![Value::Function(FunctionId(u32::MAX))]);
}

#[test]
fn latin1_and_utf16_texts_decode() {
    let v = latin1(&[A, 1.0, O, 1.0, S, 1.0, 1.0], "\u{e9}\u{fc}").unwrap();
    assert_eq!(
        v[0].as_object().unwrap().get("\u{fc}").unwrap().as_str(),
        Some("\u{e9}")
    );
    let units: Vec<u16> = vec![0xD800, 0x41];
    let p = Packed {
        first: None,
        tape: vec![6.0, 1.0, A, 1.0, S, 2.0],
        text: JsText::Utf16(units),
    };
    assert_eq!(p.unpack().unwrap()[0].as_str(), Some("\u{FFFD}A"));
}

#[test]
fn refuses_tapes_that_do_not_fit() {
    for (tape, text) in MALFORMED {
        assert!(latin1(tape, text).is_err(), "{tape:?} {text:?}");
    }
    // Entry 0 out of range.
    let p = Packed {
        first: None,
        tape: vec![9.0, 0.0, A, 0.0],
        text: JsText::Latin1(vec![]),
    };
    assert!(p.unpack().is_err());
}

#[test]
fn json_text_keeps_lone_surrogates_and_escapes_as_json_stringify_does() {
    // [{"k\"": "a\ud800b"}, {"k\"": ["\u0001é😀"]}]
    let text: Vec<u16> = "a\u{0}b"
        .encode_utf16()
        .chain("k\"".encode_utf16())
        .collect();
    let mut units = text.clone();
    units[1] = 0xD800; // a lone high surrogate in place of the NUL
    units.extend("\u{1}é😀".encode_utf16());
    let tape = vec![
        0.0, 0.0, A, 2.0, OS, 1.0, S, 3.0, 2.0, SH, 1.0, A, 1.0, S, 4.0, 0.0,
    ];
    let mut tape = tape;
    tape[0] = tape.len() as f64;
    let mut p = Packed {
        first: None,
        tape,
        text: JsText::Utf16(units),
    };
    assert_eq!(
        p.to_json().unwrap(),
        r#"[{"k\"":"a\ud800b"},{"k\"":["\u0001é😀"]}]"#
    );
    // The same params as values: the lone surrogate is U+FFFD.
    let values = p.unpack().unwrap();
    let o = values[0].as_object().unwrap();
    assert_eq!(o.get("k\"").unwrap().as_str(), Some("a\u{FFFD}b"));
    // A first param apart goes first, in both.
    p.first = Some("t\"".into());
    assert_eq!(
        p.to_json().unwrap(),
        r#"["t\"",{"k\"":"a\ud800b"},{"k\"":["\u0001é😀"]}]"#
    );
    assert_eq!(p.unpack().unwrap()[0].as_str(), Some("t\""));
    assert_eq!(p.clone().into_unpacked(), p.unpack());
    p.tape = vec![4.0, 1.0, A, 0.0];
    p.text = JsText::Latin1(vec![]);
    assert_eq!(p.to_json().unwrap(), r#"["t\""]"#);
    assert_eq!(p.unpack().unwrap(), vec![Value::from("t\"")]);
}

#[test]
fn keys_that_are_one_key_once_decoded_keep_the_first_place_and_the_last_value() {
    let written: Vec<String> = one_key_twice()
        .unpack()
        .unwrap()
        .iter()
        .map(|v| {
            let mut s = String::new();
            crate::rpc::json::write(v, &mut s);
            s
        })
        .collect();
    assert_eq!(
        written,
        ["{\"\u{FFFD}\":3,\"x\":2}", "{\"\u{FFFD}\":6,\"x\":5}"]
    );
    // A tape that repeats a key itself (lib/params.js never writes one) reads the same way.
    let v = latin1(&[A, 1.0, O, 2.0, NUM, 1.0, NUM, 2.0, 1.0, 1.0], "aa").unwrap();
    assert_eq!(v[0].as_object().unwrap().iter().count(), 1);
    assert_eq!(v[0].as_object().unwrap().get("a"), Some(&Value::from(2.0)));
}

#[test]
fn nesting_is_bounded() {
    let mut tape = vec![];
    for _ in 0..=MAX_NESTING {
        tape.extend_from_slice(&[A, 1.0]);
    }
    tape.push(N);
    let e = latin1(&tape, "").unwrap_err();
    assert!(e.contains("nested"), "{e}");
    tape.drain(..2);
    assert!(latin1(&tape, "").is_ok());
}
