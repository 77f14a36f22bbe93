//! JSON text ⇄ `Value`, with JavaScript's rules: numbers are `f64`, a repeated key keeps its
//! first position and last value (`JSON.parse`), and output matches `JSON.stringify`
//! (non-finite numbers become `null`; views become `null`; BigInts become decimal strings,
//! since `JSON.stringify` would throw on them and a JSON-RPC answer must still be sent).

use super::bigint;
use super::number::format_number;
use super::value::{MapBuilder, Value, MAX_NESTING};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

mod fast;
pub(crate) use fast::push_reserved;
#[cfg(test)]
mod property_tests;
mod syntax;

/// Parses JSON text as `JSON.parse` does, up to [`MAX_NESTING`] levels (JSON nested deeper is
/// [`Unparsed::TooDeep`]; text that is not JSON is [`Unparsed::NotJson`] at any depth): a lone surrogate escape
/// (as `JSON.stringify` writes a lone surrogate) becomes U+FFFD, a number out of range is
/// ±Infinity. For text that is not JSON, the message is serde_json's (line and column).
pub fn parse(text: &str) -> Result<Value, Unparsed> {
    match fast::parse(text) {
        Some(value) => Ok(value),
        // Too deep for a value: JSON nested that deep is refused as such, anything else is not
        // JSON, as `JSON.parse` says of it however deep (serde_json would stop at its own
        // recursion limit before finding where the text goes wrong).
        None if nested_deeper_than(text, MAX_NESTING) => match syntax::check(text) {
            Ok(()) => Err(Unparsed::TooDeep),
            Err(why) => Err(Unparsed::NotJson(why)),
        },
        None => serde_json::from_str(text).map_err(|e| Unparsed::NotJson(e.to_string())),
    }
}

/// Why a text gave no value.
#[derive(Debug, PartialEq)]
pub enum Unparsed {
    /// It is not JSON (serde_json's message).
    NotJson(String),
    /// It is JSON nested deeper than values may be ([`MAX_NESTING`]).
    TooDeep,
}

impl std::fmt::Display for Unparsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unparsed::NotJson(why) => f.write_str(why),
            Unparsed::TooDeep => write!(f, "it is nested more than {MAX_NESTING} levels deep"),
        }
    }
}

/// True when brackets outside strings open more than `limit` deep somewhere in `text` (only
/// asked of a text the parser gave up on, to say why).
fn nested_deeper_than(text: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Appends the JSON text of `value` to `out`. A function, which only a call's params hold
/// (never a result), is `null`, as in a JSON array; so is a pending result, which only the
/// calling thread can finish, and structured-clone bytes, which no JSON answer carries
/// (`Reply::finish` turns such a result into an error first).
pub fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null
        | Value::View(_)
        | Value::Function(_)
        | Value::Pending(_)
        | Value::Cloned(_) => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_finite() => format_number(*n, out),
        Value::Number(_) => out.push_str("null"),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
        Value::Bytes(bytes) | Value::Buffer(bytes) => {
            // JSON.stringify(Uint8Array) gives {"0":1,"1":2,...}; an array is what callers mean.
            out.push('[');
            for (i, b) in bytes.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                format_number(f64::from(*b), out);
            }
            out.push(']');
        }
        Value::BigInt(b) => {
            out.push('"');
            bigint::write_decimal(b, out);
            out.push('"');
        }
    }
}

/// The bytes a JSON string cannot hold as themselves: the quote, the backslash and the control
/// characters. All are ASCII, so each is a whole character, and so is every run between them.
/// The writer escapes them; the parser (`fast.rs`) stops its plain runs at them.
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// How `JSON.stringify` writes each control character: the five with a short escape, the
/// others as `\u00xx`, in lowercase hex.
#[rustfmt::skip]
const CONTROL_ESCAPES: [&str; 0x20] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
    "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
    "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
    "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

/// JSON string quoting as `JSON.stringify` does it: each run of bytes that need no escape is
/// copied whole, so that text with few escapes costs a scan and a copy.
fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_string_body(s, out);
    out.push('"');
}

/// The inside of `s`'s JSON string (no quotes), escaped as `JSON.stringify` escapes it.
pub(crate) fn write_string_body(s: &str, out: &mut String) {
    let mut run = 0;
    for (at, &b) in s.as_bytes().iter().enumerate() {
        if !ESCAPED[b as usize] {
            continue;
        }
        // `run` is 0 or just past an escaped byte, `at` is at one: character boundaries both.
        out.push_str(&s[run..at]);
        out.push_str(match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            _ => CONTROL_ESCAPES[b as usize],
        });
        run = at + 1;
    }
    out.push_str(&s[run..]);
}

pub fn to_string(value: &Value) -> String {
    let mut s = String::new();
    write(value, &mut s);
    s
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Number(n))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = MapBuilder::with_capacity(access.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = access.next_entry::<String, Value>()? {
            map.insert(k, v);
        }
        Ok(Value::Object(map.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::value::{key_comparisons, Key, Map};

    #[test]
    fn round_trips_like_json_stringify() {
        let text = r#"{"b":[1,2.5,-0,1e21,true,null,"x\n\"y\u0001"],"a":{"c":{}}}"#;
        let v = parse(text).unwrap();
        assert_eq!(
            to_string(&v),
            r#"{"b":[1,2.5,0,1e+21,true,null,"x\n\"y\u0001"],"a":{"c":{}}}"#
        );
    }

    #[test]
    fn every_escaped_character_is_written_as_json_stringify_writes_it() {
        // What JSON.stringify (ECMAScript's QuoteJSONString; printed by Node 20) makes of the 32
        // control characters, the quote and the backslash, in that order: the writer's table is
        // held to this text, not to itself.
        let stringified = r#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f\"\\""#;
        let escaped: Vec<char> = (0..0x20u8).map(char::from).chain(['"', '\\']).collect();
        let all: String = escaped.iter().collect();
        assert_eq!(to_string(&Value::from(all)), stringified);
        // That text cut into one escape per character.
        let mut escapes = Vec::new();
        let mut rest = &stringified[1..stringified.len() - 1];
        while !rest.is_empty() {
            let len = if rest[1..].starts_with('u') { 6 } else { 2 };
            escapes.push(&rest[..len]);
            rest = &rest[len..];
        }
        assert_eq!(escapes.len(), escaped.len());
        // Each one at both ends, twice in a row, and between runs of plain ASCII and of
        // characters JSON.stringify leaves alone (DEL, U+2028, non-ASCII).
        let plain = "plain text, long enough to span a few words";
        let alone = "\u{7f}\u{2028}é😀";
        for (c, e) in escaped.into_iter().zip(escapes) {
            let s = format!("{c}{plain}{c}{c}{alone}{c}x{c}");
            let want = format!("\"{e}{plain}{e}{e}{alone}{e}x{e}\"");
            assert_eq!(to_string(&Value::from(s)), want, "{c:?}");
        }
    }

    #[test]
    fn bytes_write_as_arrays_and_bigints_as_decimal_strings() {
        let bytes = Value::Bytes(vec![0, 7, 10, 99, 100, 255]);
        assert_eq!(to_string(&bytes), "[0,7,10,99,100,255]");
        assert_eq!(to_string(&Value::Bytes(Vec::new())), "[]");
        let big = |negative, words| Value::BigInt(bigint::BigInt { negative, words });
        let value = Value::Array(vec![
            big(true, vec![0, 1]),
            big(false, vec![]),
            big(true, vec![5]),
        ]);
        assert_eq!(to_string(&value), r#"["-18446744073709551616","0","-5"]"#);
    }

    #[test]
    fn repeated_key_keeps_last_value() {
        let v = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":3,"b":2}"#);
    }

    /// An object of `n` distinct keys, a third of them too long to be inline, then every
    /// hundredth key again with the value `"again"`; and the object JSON.parse makes of it.
    fn wide_object(n: usize) -> (String, Map) {
        let key = |i: usize| match i % 3 {
            0 => format!("a-key-longer-than-inline-{i}"),
            _ => format!("k{i}"),
        };
        let mut text = String::from("{");
        let mut expected = Vec::new();
        for i in 0..n {
            text.push_str(&format!("\"{}\":{i},", key(i)));
            let last = if i % 100 == 0 {
                Value::from("again")
            } else {
                Value::Number(i as f64)
            };
            expected.push((Key::new(&key(i)), last));
        }
        for i in (0..n).step_by(100) {
            text.push_str(&format!("\"{}\":\"again\",", key(i)));
        }
        text.pop();
        text.push('}');
        (text, Map::from_unique(expected))
    }

    #[test]
    fn both_parsers_compare_each_key_of_a_big_object_a_bounded_number_of_times() {
        // Counted, not timed. Both used to look for a repeated key among all the earlier ones:
        // n²/2 comparisons, seconds for 80,000 keys.
        let n = 50_000;
        let (text, expected) = wide_object(n);
        let count = |parse: fn(&str) -> Option<Value>| {
            let before = key_comparisons();
            let value = parse(&text).unwrap();
            let compared = key_comparisons() - before;
            (value == Value::Object(expected.clone()), compared)
        };
        let counts = [
            ("fast path", count(fast::parse)),
            ("serde_json", count(|text| serde_json::from_str(text).ok())),
        ];
        assert!(
            counts
                .iter()
                .all(|(_, (right, compared))| *right && *compared < 8 * n as u64),
            "(parse right, key comparisons) for {n} keys: {counts:?}"
        );
    }

    #[test]
    fn bad_text_is_an_error() {
        assert!(parse("{").is_err());
        assert!(parse("").is_err());
        assert!(parse("[1,]").is_err());
    }

    /// serde_json's parse, the reference for the fast path.
    fn serde(text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// Equal values, with numbers compared bit for bit (so -0 and 0 differ, as for Object.is).
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.to_bits() == y.to_bits(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|((k, a), (l, b))| k == l && same(a, b))
            }
            _ => a == b,
        }
    }

    fn agrees_with_serde(text: &str) {
        match (parse(text), serde(text)) {
            (Ok(a), Ok(b)) => assert!(same(&a, &b), "{text:?}: {a:?} vs {b:?}"),
            (Err(a), Err(b)) => assert_eq!(a, Unparsed::NotJson(b), "{text:?}"),
            // serde_json refuses what JSON.parse reads as ±Infinity: a lone number out of range.
            (Ok(Value::Array(a)), Err(b)) if b.starts_with("number out of range") => {
                let sign = if text.trim_start_matches('[').starts_with('-') {
                    -1.0
                } else {
                    1.0
                };
                assert_eq!(a, vec![Value::Number(sign * f64::INFINITY)], "{text:?}");
            }
            (a, b) => panic!("{text:?}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn strings_end_at_every_offset_of_the_word_scan() {
        // Quotes, escapes, raw control characters and non-ASCII at each position of the
        // eight-byte scan, with and without a key before them.
        for stop in ["\"", "\\n", "\\\"", "\u{1}", "\u{1f}", "é", "\u{7f}", " "] {
            for before in 0..20 {
                for after in [0, 1, 9] {
                    let s = format!("{}{stop}{}", "a".repeat(before), "b".repeat(after));
                    agrees_with_serde(&format!("[\"{s}\"]"));
                    agrees_with_serde(&format!("{{\"{s}\": 1}}"));
                }
            }
        }
    }

    #[test]
    fn keys_of_every_length_agree_with_serde_json_near_the_end_of_the_text() {
        // Short keys are read through a fixed-size window of the text: keys around the inline
        // limit, with non-ASCII, escaped, and close enough to the end that the window is cut.
        for len in 0..30 {
            for stem in ["k", "é", "\\u00e9", "\\n"] {
                let key: String = stem.repeat(len);
                for tail in ["", "}", "} ", "}\n          "] {
                    agrees_with_serde(&format!("{{\"{key}\":1{tail}"));
                    agrees_with_serde(&format!(
                        "{{\"a\":{{\"{key}\":[],\"{key}\":{{}}}},\"{key}\":0}}{tail}"
                    ));
                }
            }
        }
    }

    #[test]
    fn repeated_keys_with_nested_values_keep_first_position_and_last_value() {
        for text in [
            r#"{"a":{"x":1},"b":[1,2],"a":[3,{"a":1,"a":2}],"c":null,"b":{}}"#,
            r#"[{"a":1,"a":{"b":[{"c":1,"c":[2]}]}},{"a":2},{"b":1,"a":3,"b":[]}]"#,
            r#"{"a":1,"a":2,"a":3,"a":{"a":4,"a":5}}"#,
        ] {
            agrees_with_serde(text);
        }
        assert_eq!(
            to_string(&parse(r#"{"a":{"x":1},"b":2,"a":[3,{"a":1,"a":2}]}"#).unwrap()),
            r#"{"a":[3,{"a":2}],"b":2}"#
        );
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        // As a JavaScript string's lone surrogates do when Node-API reads it as UTF-8;
        // JSON.stringify writes them as escapes. serde_json would refuse the text.
        for (text, expected) in [
            (r#"["\uD83D"]"#, "\u{FFFD}"),
            (r#"["\uDE00"]"#, "\u{FFFD}"),
            (r#"["\uD83D\u0041"]"#, "\u{FFFD}A"),
            (r#"["\uD83Dx"]"#, "\u{FFFD}x"),
            (r#"["x\uDE00\uD83D"]"#, "x\u{FFFD}\u{FFFD}"),
            (r#"["\uD83D\uD83D\uDE00"]"#, "\u{FFFD}\u{1F600}"),
        ] {
            let got = parse(text).unwrap();
            assert_eq!(got, Value::Array(vec![Value::from(expected)]), "{text}");
        }
    }

    #[test]
    fn fast_path_agrees_with_serde_json() {
        let texts = [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            " \t\n\r[ 1 , 2 ]\n ",
            r#"{"a":1,"b":2,"a":3,"b":{"a":[]},"a":4}"#,
            r#"{"__proto__":1,"constructor":{},"toString":"x"}"#,
            r#"["\"\\\/\b\f\n\r\t","\u0000\u001f\u00e9\u20ac\uD83D\uDE00 é😀"]"#,
            r#"{"k\u00e9y":1,"k\u00e9y":2,"a-key-that-is-longer-than-inline":3}"#,
            r#"{"a-key-that-is-longer-than-inline":1,"a-key-that-is-longer-than-inline":2}"#,
            r#"["\x"]"#,
            r#"["\u12"]"#,
            "[\"raw\u{1}control\"]",
            "[\"tab\tinside\"]",
            "",
            " ",
            "{",
            "[1,]",
            "[1 2]",
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{1:2}"#,
            "[1]x",
            "[01]",
            "[-]",
            "[1.]",
            "[.5]",
            "[1e]",
            "[1e+]",
            "[+1]",
            "[NaN]",
            "[Infinity]",
            "[tru]",
            "[nul]",
            "\u{feff}[1]",
            "[1e400]",
            "[-1e400]",
            "[1e-400]",
            "[-0]",
            "[-0.0]",
            "[0e99999999999999999999]",
            "[1e-99999999999999999999]",
            "[9007199254740993]",
            "[123456789012345678901234567890]",
            "[-9223372036854775809]",
            "[18446744073709551616]",
            "[0.1,0.2,0.30000000000000004,1.7976931348623157e308,5e-324,2.2250738585072014E-308]",
            "[989.875,1e21,1E+21,-1.5e-7,123456789012345.6]",
        ];
        for text in texts {
            agrees_with_serde(text);
        }
        // serde_json stops at 128 levels; JSON.parse does not, and neither does this below
        // MAX_NESTING.
        for depth in [1, 99, 100, 101, 127] {
            agrees_with_serde(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
            agrees_with_serde(&format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
            agrees_with_serde(&format!(
                "{}{}",
                r#"{"a":"#.repeat(depth),
                "}".repeat(depth)
            ));
        }
    }

    #[test]
    fn nesting_is_taken_up_to_max_nesting_and_refused_as_too_deep_past_it() {
        let depth_of = |mut v: &Value| {
            let mut d = 0;
            while let Value::Array(items) = v {
                d += 1;
                match items.first() {
                    Some(inner) => v = inner,
                    None => break,
                }
            }
            d
        };
        for depth in [128, 129, 300, MAX_NESTING] {
            let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(depth_of(&parse(&text).unwrap()), depth);
            let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
            assert!(parse(&objects).is_ok(), "{depth}");
        }
        for depth in [MAX_NESTING + 1, 10_000] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(parse(&text), Err(Unparsed::TooDeep));
            // Brackets inside strings do not count.
            let quoted = format!("[\"{}\"]", "[".repeat(depth));
            assert!(parse(&quoted).is_ok());
        }
        // Text that is not JSON, however deep, is not JSON (JSONTestSuite's
        // n_structure_100000_opening_arrays and n_structure_open_array_object among them).
        for broken in [
            format!("{}x{}", "[".repeat(600), "]".repeat(600)),
            "[".repeat(100_000),
            r#"[{"":"#.repeat(50_000),
            format!("{}{}", "[".repeat(600), "]".repeat(599)),
        ] {
            assert!(
                matches!(parse(&broken), Err(Unparsed::NotJson(_))),
                "{}",
                &broken[..40]
            );
        }
        assert!(matches!(parse("[1,]"), Err(Unparsed::NotJson(_))));
    }

    #[test]
    fn short_decimals_agree_with_serde_json() {
        // The direct conversion of decimals of up to 15 digits, and the first ones past it.
        let mut next = crate::rpc::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let mut text = String::from("[-0.0,0.0,-0.000,0.1,0.2,0.3,989.875,999999999999999.9");
        for _ in 0..50_000 {
            let r = next();
            let digits = 1 + (r % 17) as usize;
            let point = (next() % digits as u64) as usize;
            text.push(',');
            if r & (1 << 20) != 0 {
                text.push('-');
            }
            let number: String = (0..digits)
                .map(|_| (b'0' + (next() % 10) as u8) as char)
                .collect();
            let whole = number[..point].trim_start_matches('0');
            text.push_str(if whole.is_empty() { "0" } else { whole });
            text.push('.');
            text.push_str(&number[point..]);
        }
        text.push(']');
        assert!(same(&fast::parse(&text).unwrap(), &serde(&text).unwrap()));
    }

    #[test]
    fn fast_path_numbers_agree_with_serde_json() {
        // Random digits, signs, fractions and exponents of every size.
        let mut next = crate::rpc::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let mut text = String::from("[");
        for i in 0..20_000 {
            if i > 0 {
                text.push(',');
            }
            let r = next();
            match r % 4 {
                // Exact doubles, printed shortest as JS would.
                0 => format_number(f64::from_bits(next()), &mut text),
                _ => {
                    if r & 16 != 0 {
                        text.push('-');
                    }
                    let digits = 1 + (next() % 25) as usize;
                    for d in 0..digits {
                        let c = (next() % 10) as u8;
                        text.push((b'0' + if d == 0 && digits > 1 { c.max(1) } else { c }) as char);
                    }
                    if r & 32 != 0 {
                        text.push('.');
                        for _ in 0..1 + next() % 20 {
                            text.push((b'0' + (next() % 10) as u8) as char);
                        }
                    }
                    if r & 64 != 0 {
                        text.push(if r & 128 != 0 { 'e' } else { 'E' });
                        text.push_str(["", "+", "-"][(next() % 3) as usize]);
                        text.push_str(&(next() % 330).to_string());
                    }
                }
            }
        }
        text.push(']');
        // Non-finite doubles print as NaN/Infinity, not JSON: drop those.
        let text = text
            .replace("-Infinity", "0")
            .replace("Infinity", "0")
            .replace("NaN", "0");
        let fast = fast::parse(&text).expect("JSON numbers parse");
        match serde(&text) {
            Ok(theirs) => assert!(same(&fast, &theirs)),
            // Some exponent pushed a number out of range: check them one by one.
            Err(_) => {
                for n in text[1..text.len() - 1].split(',') {
                    agrees_with_serde(&format!("[{n}]"));
                }
            }
        }
    }
}
