//! The values that travel between JavaScript and commands.
//!
//! `Value` is JSON (with JavaScript's number model: every number is an `f64`) plus the few
//! things JSON cannot say but a thread pool must carry: views over shared memory (passed by
//! reference, see `crate::shm::SharedView`), byte arrays and BigInts (passed by value).
//! Objects keep their keys in insertion order, as JavaScript does, so a value that goes through
//! the pool comes back looking the same.

use crate::shm::SharedView;
use std::fmt;

/// An object's entries, in insertion order. Keys are unique.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Map {
    entries: Vec<(String, Value)>,
}

impl Map {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
        }
    }

    /// Looks a key up. Linear: objects sent to commands are small, and the order must be kept.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets a key, replacing an earlier value in place (JavaScript's and JSON.parse's rule).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Appends without the duplicate check, for callers that know the key is new.
    pub fn push_unique(&mut self, key: String, value: Value) {
        self.entries.push((key, value));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        let mut map = Map::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

/// An arbitrary-precision integer, as JavaScript's BigInt: sign and little-endian 64-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigInt {
    pub negative: bool,
    pub words: Vec<u64>,
}

#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(Map),
    /// A typed-array view over a SharedArrayBuffer, passed by reference.
    View(SharedView),
    /// A Uint8Array (or Buffer) not over shared memory, passed by value.
    Bytes(Vec<u8>),
    BigInt(BigInt),
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Number(a), Number(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Array(a), Array(b)) => a == b,
            (Object(a), Object(b)) => a == b,
            (View(a), View(b)) => a.same_memory(b),
            (Bytes(a), Bytes(b)) => a == b,
            (BigInt(a), BigInt(b)) => a == b,
            _ => false,
        }
    }
}

impl Value {
    /// The JavaScript `typeof`-like name used in error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
            Value::View(v) => v.kind().js_name(),
            Value::Bytes(_) => "Uint8Array",
            Value::BigInt(_) => "bigint",
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// True for values that JSON can carry (no views, bytes or BigInts anywhere inside).
    pub fn is_json(&self) -> bool {
        match self {
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
            Value::Array(a) => a.iter().all(Value::is_json),
            Value::Object(m) => m.iter().all(|(_, v)| v.is_json()),
            Value::View(_) | Value::Bytes(_) | Value::BigInt(_) => false,
        }
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Self {
        Value::Array(a)
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}

/// Formats a number exactly as JavaScript's `String(n)` does (`1e+21`, `-0` → `0`, `NaN`).
pub fn format_number(n: f64, out: &mut String) {
    if n.is_nan() {
        out.push_str("NaN");
    } else if n.is_infinite() {
        out.push_str(if n > 0.0 { "Infinity" } else { "-Infinity" });
    } else if n == 0.0 {
        out.push('0');
    } else {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(n));
    }
}

impl fmt::Display for Value {
    /// JSON text, as `JSON.stringify` writes it (views print as `null`, BigInts as strings).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        super::json::write(self, &mut s);
        f.write_str(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_like_javascript() {
        let cases = [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-0.0, "0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5, "1.5"),
            (-2.0, "-2"),
            (1e-7, "1e-7"),
            (123456789.0, "123456789"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (n, want) in cases {
            let mut s = String::new();
            format_number(n, &mut s);
            assert_eq!(s, want, "String({n})");
        }
    }

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
}
