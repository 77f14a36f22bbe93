//! Property tests of both JSON parsers: on random texts with random keys (often repeated,
//! sometimes many, spelled with and without escapes), the fast path and serde_json's path each
//! give exactly what `JSON.parse` gives, where a repeated key keeps its first position and
//! takes its last value; serde_json's own `Value` of the text agrees on every value. And of the
//! writer: strings come out byte for byte as serde_json, and so `JSON.stringify`, writes them.
//!
//! The properties run [`CASES`] cases each (the one of big objects [`WIDE_CASES`]), a few
//! seconds in all; `PROPTEST_CASES=100000 cargo test --lib rpc::json::property_tests` runs
//! them longer. A failure prints the smallest input
//! found, and proptest saves its seed under `proptest-regressions/`, to be replayed first by
//! every later run.

use super::{fast, write_string};
use crate::rpc::number::format_number;
use crate::rpc::value::{Map, Value};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// Cases per property, unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 256;
/// Cases of the property of big objects, each of which takes as long as dozens of others.
const WIDE_CASES: u32 = 32;

fn config(cases: u32) -> ProptestConfig {
    // The default reads PROPTEST_CASES (and proptest's other variables).
    let config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_some() {
        config
    } else {
        ProptestConfig { cases, ..config }
    }
}

/// A JSON text as generated, before `JSON.parse`'s rule is applied: an object keeps every
/// entry written, repeated keys included.
#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<Entry>),
}

#[derive(Clone, Debug)]
struct Entry {
    key: String,
    /// Whether the key is written with every character escaped (`\u0061`), so that the same
    /// key is read once from a span of the text and once unescaped.
    escaped: bool,
    value: Json,
}

/// Appends the text of `json`, with `space` around every token.
fn write(json: &Json, space: &str, out: &mut String) {
    match json {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => format_number(*n, out),
        Json::String(s) => write_string(s, out),
        Json::Array(items) => {
            out.push('[');
            out.push_str(space);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(space);
                }
                write(item, space, out);
                out.push_str(space);
            }
            out.push(']');
        }
        Json::Object(entries) => {
            out.push('{');
            out.push_str(space);
            for (i, entry) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(space);
                }
                if entry.escaped {
                    out.push('"');
                    for unit in entry.key.encode_utf16() {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                    out.push('"');
                } else {
                    write_string(&entry.key, out);
                }
                out.push_str(space);
                out.push(':');
                out.push_str(space);
                write(&entry.value, space, out);
                out.push_str(space);
            }
            out.push('}');
        }
    }
}

/// What `JSON.parse` makes of `json`, by the rule itself: each key is looked for among the
/// kept ones, and replaces the value where it was first kept.
fn parsed(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Number(*n),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(parsed).collect()),
        Json::Object(entries) => Value::Object(first_position_last_value(
            entries.iter().map(|e| (e.key.clone(), parsed(&e.value))),
        )),
    }
}

fn first_position_last_value(entries: impl IntoIterator<Item = (String, Value)>) -> Map {
    let mut kept: Vec<(String, Value)> = Vec::new();
    for (key, value) in entries {
        match kept.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => kept.push((key, value)),
        }
    }
    let mut map = Map::with_capacity(kept.len());
    for (key, value) in kept {
        map.push_unique(key, value);
    }
    map
}

/// Whether serde_json's own `Value` of a text holds `ours`, the order of keys aside (its map
/// sorts them; a repeated key takes the last value there too).
fn agrees(ours: &Value, theirs: &serde_json::Value) -> bool {
    use serde_json::Value as Their;
    match (ours, theirs) {
        (Value::Null, Their::Null) => true,
        (Value::Bool(a), Their::Bool(b)) => a == b,
        (Value::Number(a), Their::Number(b)) => b.as_f64() == Some(*a),
        (Value::String(a), Their::String(b)) => a == b,
        (Value::Array(a), Their::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| agrees(a, b))
        }
        (Value::Object(a), Their::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, a)| b.get(k).is_some_and(|b| agrees(a, b)))
        }
        _ => false,
    }
}

/// Both parsers, and serde_json's `Value`, on the text of `json`.
fn check(json: &Json, space: &str) -> Result<(), TestCaseError> {
    let mut text = String::new();
    write(json, space, &mut text);
    let expected = parsed(json);
    let theirs: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| TestCaseError::fail(format!("serde_json refused {text:?}: {e}")))?;
    prop_assert!(
        agrees(&expected, &theirs),
        "{text:?}: JSON.parse's rule gives {expected:?}, serde_json's Value {theirs:?}"
    );
    let fast = fast::parse(&text);
    prop_assert_eq!(fast.as_ref(), Some(&expected), "fast path, {:?}", text);
    let serde: Value = serde_json::from_str(&text)
        .map_err(|e| TestCaseError::fail(format!("serde_json path refused {text:?}: {e}")))?;
    prop_assert_eq!(&serde, &expected, "serde_json path, {:?}", text);
    Ok(())
}

/// Keys from a few that repeat often (inline and heap ones, ones that need escapes), from
/// more that repeat in bigger objects, and any string.
fn key() -> impl Strategy<Value = String> {
    const FEW: &[&str] = &[
        "",
        "a",
        "b",
        "c",
        "__proto__",
        "é",
        "😀",
        "a\"b",
        "\\",
        "\n",
        "\u{0}",
        "kkkkkkkkkkkkkkkkkkkkkk",
        "kkkkkkkkkkkkkkkkkkkkkkk",
    ];
    prop_oneof![
        4 => select(FEW).prop_map(str::to_owned),
        2 => (0..40u32).prop_map(|i| format!("k{i}")),
        1 => (0..4u32).prop_map(|i| format!("a-key-longer-than-inline-{i}")),
        1 => string(),
    ]
}

/// Any characters, with quotes, backslashes, control characters and non-ASCII often.
fn string() -> impl Strategy<Value = String> {
    const SPECIAL: &[char] = &[
        '"', '\\', '/', '\n', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '😀', '\u{2028}',
    ];
    let char = prop_oneof![3 => any::<char>(), 1 => select(SPECIAL)];
    vec(char, 0..30).prop_map(|chars| chars.into_iter().collect())
}

/// ASCII only, so that control characters, quotes and backslashes come often, side by side.
fn ascii() -> impl Strategy<Value = String> {
    vec((0..0x80u8).prop_map(char::from), 0..40).prop_map(|chars| chars.into_iter().collect())
}

/// Finite numbers: integers, short decimals (the fast path converts those itself) and any
/// double. Each is written as JavaScript prints it, which reads back as the same double.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<i32>().prop_map(f64::from),
        (-10_000_000_000_000i64..10_000_000_000_000, 0..6i32)
            .prop_map(|(m, k)| m as f64 / 10f64.powi(k)),
        any::<f64>().prop_map(|n| if n.is_finite() { n } else { 0.0 }),
    ]
}

fn leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        number().prop_map(Json::Number),
        string().prop_map(Json::String),
    ]
}

fn entry(value: impl Strategy<Value = Json>) -> impl Strategy<Value = Entry> {
    (key(), any::<bool>(), value).prop_map(|(key, escaped, value)| Entry {
        key,
        escaped,
        value,
    })
}

/// Nested arrays and objects, mostly small, sometimes past the size where a hash index takes
/// over from the scan.
fn json() -> impl Strategy<Value = Json> {
    leaf().prop_recursive(4, 256, 12, |inner| {
        prop_oneof![
            2 => vec(inner.clone(), 0..8).prop_map(Json::Array),
            4 => vec(entry(inner.clone()), 0..12).prop_map(Json::Object),
            1 => vec(entry(inner), 12..60).prop_map(Json::Object),
        ]
    })
}

/// Objects of up to 200 entries whose keys are drawn from `distinct` of them, so that a key
/// repeats from every few entries to almost never, alone or side by side in an array; their
/// values are leaves or objects of up to 30 entries, which may be big too (and be the values
/// of one key repeated, so that two of them follow each other).
fn wide_objects() -> impl Strategy<Value = Json> {
    let nested = vec(entry(leaf()), 0..30).prop_map(Json::Object);
    let value = prop_oneof![4 => leaf(), 1 => nested];
    let object = (1..300u32)
        .prop_flat_map(move |distinct| vec((0..distinct, any::<bool>(), value.clone()), 0..200))
        .prop_map(|entries| {
            Json::Object(
                entries
                    .into_iter()
                    .map(|(i, escaped, value)| Entry {
                        key: match i % 5 {
                            0 => format!("a-key-longer-than-inline-{i}"),
                            _ => format!("k{i}"),
                        },
                        escaped,
                        value,
                    })
                    .collect(),
            )
        });
    prop_oneof![
        2 => object.clone(),
        1 => vec(object, 2..4).prop_map(Json::Array),
    ]
}

fn space() -> impl Strategy<Value = &'static str> {
    select(&["", " ", "\n  ", "\t\r\n "][..])
}

proptest! {
    #![proptest_config(config(WIDE_CASES))]

    #[test]
    fn big_objects_keep_each_key_where_it_first_came_with_its_last_value(
        json in wide_objects(),
        space in space(),
    ) {
        check(&json, space)?;
    }
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn both_parsers_give_what_json_parse_gives(json in json(), space in space()) {
        check(&json, space)?;
    }

    #[test]
    fn collecting_a_map_keeps_each_key_where_it_first_came_with_its_last_value(
        pairs in vec((0..300u32, any::<i32>()), 0..800),
    ) {
        let pairs: Vec<(String, Value)> = pairs
            .into_iter()
            .map(|(k, v)| (format!("k{k}"), Value::Number(v.into())))
            .collect();
        let collected: Map = pairs.iter().cloned().collect();
        prop_assert_eq!(collected, first_position_last_value(pairs));
    }

    /// The writer quotes strings as serde_json does, which escapes what JSON.stringify escapes,
    /// the same way (lone surrogates aside, which JSON.stringify escapes and a `str` cannot
    /// hold).
    #[test]
    fn strings_are_written_as_json_stringify_writes_them(
        s in prop_oneof![string(), ascii()],
    ) {
        let mut ours = String::from("x");
        write_string(&s, &mut ours);
        let theirs = serde_json::to_string(&s).expect("a string always serializes");
        prop_assert_eq!(&ours[1..], theirs.as_str());
    }
}
