//! JSON text ⇄ `Value`, with JavaScript's rules: numbers are `f64`, a repeated key keeps its
//! first position and last value (`JSON.parse`), and output matches `JSON.stringify`
//! (non-finite numbers become `null`; views become `null`; BigInts become decimal strings,
//! since `JSON.stringify` would throw on them and a JSON-RPC answer must still be sent).

use super::value::{format_number, Map, Value};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Parses JSON text. The error message is serde_json's (line and column included).
pub fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Appends the JSON text of `value` to `out`.
pub fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::View(_) => out.push_str("null"),
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
        Value::Bytes(bytes) => {
            // JSON.stringify(Uint8Array) gives {"0":1,"1":2,...}; an array is what callers mean.
            out.push('[');
            for (i, b) in bytes.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&b.to_string());
            }
            out.push(']');
        }
        Value::BigInt(b) => {
            out.push('"');
            out.push_str(&super::bigint::to_decimal(b));
            out.push('"');
        }
    }
}

/// JSON string quoting as `JSON.stringify` does it.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
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
        let mut map = Map::new();
        while let Some((k, v)) = access.next_entry::<String, Value>()? {
            map.insert(k, v);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn repeated_key_keeps_last_value() {
        let v = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn bad_text_is_an_error() {
        assert!(parse("{").is_err());
        assert!(parse("").is_err());
        assert!(parse("[1,]").is_err());
    }
}
