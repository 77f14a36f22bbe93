//! Packed params: plain data that the calling thread walked once (`wireParams` in
//! lib/params.js) and handed over as two flat pieces, which a pool thread turns into values.
//!
//! Why not JSON text: on the calling thread `JSON.stringify` costs about as much again as the
//! walk that must check the data is plain first (a getter, a `toJSON`, a -0 would change it),
//! and a pool thread then scans the text for quotes and escapes and parses every number. Here
//! the walk writes as it checks: numbers go into a `Float64Array` as they are, strings are
//! joined into one text unescaped, and an object whose keys an earlier object of the call
//! already had (the rows of a table) names that earlier key list instead of repeating its
//! keys. On a 200-row table this halves the calling thread's cost of sending the view.
//!
//! The pieces:
//! - the **tape**, numbers: entry 0 is how many entries are used, itself included; entry 1
//!   how many values the params hold (counted as `contract::JSON_MIN_VALUES` counts them, a
//!   leading string apart included); then the params array, each value written as
//!   - [`NULL`], [`FALSE`], [`TRUE`]: the tag alone;
//!   - [`NUMBER`], the number;
//!   - [`STRING`], its length `n` in UTF-16 units: the string is the next `n` units of the text;
//!   - [`ARRAY`], `count`, then `count` values;
//!   - [`OBJECT`], `count`, then its `count` values, then the lengths of its `count` keys (each
//!     key's units follow in the text, after the strings of its values);
//!   - [`OBJECT_SHAPE`]: as [`OBJECT`], and its keys become the call's next shape (numbered from
//!     0 in each call);
//!   - [`SHAPED`], `count`, then its `count` values, then a shape's number: an object with
//!     that shape's keys, in order. (Shapes are numbered as objects end, so the shape may be
//!     one that an object among its values defined.)
//!   - [`FUNCTION`], its number: a JavaScript function the calling thread keeps (the `n`th of
//!     the call's functions, numbered from 0 in the order the walk met them). Only the params
//!     of `pool.render` hold them (its lambdas; `bindings/render/` calls them on the calling
//!     thread): they become [`Value::Function`]s, and JSON text has none (see [`Packed::to_json`]).
//! - the **text**: every string and key, in the order the tape meets them, as V8 stores it
//!   (one byte per unit when every unit fits, else UTF-16; see `rpc::text`).
//!
//! A first param that is a string (a template) may travel apart, as it is (`first`): copied
//! into the text it would cost the calling thread a copy and a new string per call. The tape
//! then holds the params array without it.
//!
//! What it carries is what JSON text would: lib/params.js packs only finite numbers but -0,
//! strings, booleans, null (and undefined array items, as null), plain arrays and objects; a
//! lone surrogate becomes U+FFFD, as every string from JavaScript does here. And, for
//! `pool.render` only, functions.
//!
//! The tags are the contract's (`packedTags`), so lib/params.js holds none of these numbers.
//! A tape that does not fit these rules (a count past the end, a tag that is not one, nesting
//! deeper than [`MAX_NESTING`], pieces left over) is an error, never a panic: every length is
//! checked against what is left of the tape or text before anything is allocated by it.

pub mod tree;

use super::json::{push_reserved, write_string_body};
use super::number::format_number;
use super::text::{latin1_to_utf8, JsText};
use super::value::{FunctionId, Key, Map, Value, MAX_NESTING, SCAN_LIMIT};
use super::RpcError;

pub const NULL: u8 = 0;
pub const FALSE: u8 = 1;
pub const TRUE: u8 = 2;
pub const NUMBER: u8 = 3;
pub const STRING: u8 = 4;
pub const ARRAY: u8 = 5;
pub const OBJECT: u8 = 6;
pub const OBJECT_SHAPE: u8 = 7;
pub const SHAPED: u8 = 8;
pub const FUNCTION: u8 = 9;

/// Entries before the params array: the entries used, the values held.
const HEADER: usize = 2;

/// `n` as a count if it is a whole number from 0 to `limit`: the one rule for every count and
/// length a tape holds. (`as` saturates, NaN and negatives to 0, so a whole number in range
/// casts back to itself and nothing else does; `f64::fract` would be a call to `trunc` on the
/// baseline x86-64 target.)
pub fn whole(n: f64, limit: usize) -> Option<usize> {
    match n as usize {
        c if c as f64 == n && c <= limit => Some(c),
        _ => None,
    }
}

/// A call's packed params, as read from JavaScript.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    /// The first param, when it travels apart (then the tape holds the others).
    pub first: Option<String>,
    /// The tape, entry 0 included.
    pub tape: Vec<f64>,
    pub text: JsText,
}

impl Packed {
    /// How many values the params hold, as lib/params.js counted them (0 when the tape does
    /// not say).
    pub fn values(&self) -> usize {
        self.tape
            .get(1)
            .and_then(|&n| whole(n, u32::MAX as usize))
            .unwrap_or(0)
    }

    /// The params array's values, leaving these packed params as they are (the tests read them
    /// more than once; calls use [`Packed::into_unpacked`]).
    #[cfg(test)]
    pub fn unpack(&self) -> Result<Vec<Value>, String> {
        self.values_after(self.first.clone())
    }

    /// [`Packed::unpack`], the first param moved instead of copied (a template may be long).
    pub fn into_unpacked(mut self) -> Result<Vec<Value>, String> {
        let first = self.first.take();
        self.values_after(first)
    }

    /// The tape's values, after `first` when there is one.
    fn values_after(&self, first: Option<String>) -> Result<Vec<Value>, String> {
        let mut items = match self.read(Values)? {
            Value::Array(items) => items,
            _ => return Err(wrong("a params array")), // read() checks it is one
        };
        if let Some(first) = first {
            items.insert(0, Value::String(first));
        }
        Ok(items)
    }

    /// True when the params hold a function slot (only the native render takes them); an error
    /// for a malformed tape. Walks the whole tape.
    pub fn holds_function(&self) -> Result<bool, RpcError> {
        match self.read(Values) {
            Ok(v) => Ok(v.holds_function()),
            Err(why) => Err(RpcError::invalid_params(why)),
        }
    }

    /// The params array as JSON text, its strings exactly as they were sent: a lone surrogate is
    /// written as its escape (`\ud800`), which `JSON.parse` turns back into it. For a method
    /// served by JavaScript, which gets its params through `JSON.parse`. (A first param that
    /// travelled apart was read as UTF-8: there a lone surrogate is U+FFFD.)
    pub fn to_json(&self) -> Result<String, String> {
        let rest = self.read(Json)?;
        let Some(first) = &self.first else {
            return Ok(rest);
        };
        let mut json = String::with_capacity(first.len() + rest.len() + 3);
        json.push('[');
        let units: Vec<u16> = first.encode_utf16().collect();
        json.push_str(&json_string(&units));
        if rest != "[]" {
            json.push(',');
        }
        json.push_str(&rest[1..]);
        Ok(json)
    }

    fn read<B>(&self, build: B) -> Result<<B as Build<u8>>::Out, String>
    where
        B: Build<u8> + Build<u16, Out = <B as Build<u8>>::Out>,
    {
        match &self.text {
            JsText::Latin1(bytes) => read(&self.tape, bytes, build),
            JsText::Utf16(units) => read(&self.tape, units, build),
            JsText::Utf8(s) => {
                // Not made by the binding (it reads Latin-1 or UTF-16), but whole: as UTF-16.
                let units: Vec<u16> = s.encode_utf16().collect();
                read(&self.tape, &units, build)
            }
        }
    }
}

/// What a reader makes of the values it reads, from units `U` of the text.
trait Build<U> {
    type Out;
    type Key: Clone;
    fn null(&mut self) -> Self::Out;
    fn bool(&mut self, b: bool) -> Self::Out;
    fn number(&mut self, n: f64) -> Self::Out;
    fn string(&mut self, units: &[U]) -> Self::Out;
    fn key(&mut self, units: &[U]) -> Self::Key;
    fn array(&mut self, items: Vec<Self::Out>) -> Self::Out;
    /// A key to hold an entry's place until its key is read (after the values).
    fn no_key(&self) -> Self::Key;
    /// The keys are unique: a JavaScript object's own keys, each listed once by the walk, none
    /// of them repeated by the text's decoding (see [`repeats`]).
    fn object(&mut self, entries: Vec<(Self::Key, Self::Out)>) -> Self::Out;
    /// An object some of whose keys are one key once decoded: a repeated key keeps its first
    /// position and takes the last value, as in JavaScript.
    fn object_repeating(&mut self, entries: Vec<(Self::Key, Self::Out)>) -> Self::Out;
    /// The key's text, to find repeated keys by.
    fn key_text(key: &Self::Key) -> &str;
    /// The call's function numbered `id`.
    fn function(&mut self, id: u32) -> Result<Self::Out, String>;
}

/// Builds values (a lone surrogate becomes U+FFFD, as every string from JavaScript does here).
struct Values;

/// Builds JSON text, strings exactly.
struct Json;

/// How a run of text units becomes a string or a key of a value.
trait ValueUnits: Copy {
    fn string(units: &[Self]) -> String;
    fn key(units: &[Self]) -> Key;
}

impl ValueUnits for u8 {
    fn string(units: &[u8]) -> String {
        latin1_to_utf8(units)
    }
    fn key(units: &[u8]) -> Key {
        match std::str::from_utf8(units) {
            // ASCII (a Latin-1 run that is valid UTF-8 is ASCII): no String on the way.
            Ok(ascii) if units.is_ascii() => Key::new(ascii),
            _ => Key::from_string(latin1_to_utf8(units)),
        }
    }
}

impl ValueUnits for u16 {
    fn string(units: &[u16]) -> String {
        String::from_utf16_lossy(units)
    }
    fn key(units: &[u16]) -> Key {
        Key::from_string(String::from_utf16_lossy(units))
    }
}

impl<U: ValueUnits> Build<U> for Values {
    type Out = Value;
    type Key = Key;
    fn null(&mut self) -> Value {
        Value::Null
    }
    fn bool(&mut self, b: bool) -> Value {
        Value::Bool(b)
    }
    fn number(&mut self, n: f64) -> Value {
        Value::Number(n)
    }
    fn string(&mut self, units: &[U]) -> Value {
        Value::String(U::string(units))
    }
    fn key(&mut self, units: &[U]) -> Key {
        U::key(units)
    }
    fn array(&mut self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }
    fn no_key(&self) -> Key {
        Key::EMPTY
    }
    fn object(&mut self, entries: Vec<(Key, Value)>) -> Value {
        Value::Object(Map::from_unique(entries))
    }
    fn object_repeating(&mut self, entries: Vec<(Key, Value)>) -> Value {
        Value::Object(Map::from_repeating(entries))
    }
    fn key_text(key: &Key) -> &str {
        key.as_str()
    }
    fn function(&mut self, id: u32) -> Result<Value, String> {
        Ok(Value::Function(FunctionId(id)))
    }
}

impl<U: Copy + Into<u32>> Build<U> for Json {
    type Out = String;
    type Key = String;
    fn null(&mut self) -> String {
        "null".into()
    }
    fn bool(&mut self, b: bool) -> String {
        if b { "true" } else { "false" }.into()
    }
    fn number(&mut self, n: f64) -> String {
        let mut s = String::new();
        format_number(n, &mut s);
        s
    }
    fn string(&mut self, units: &[U]) -> String {
        json_string(units)
    }
    fn key(&mut self, units: &[U]) -> String {
        json_string(units)
    }
    fn array(&mut self, items: Vec<String>) -> String {
        format!("[{}]", items.join(","))
    }
    fn no_key(&self) -> String {
        String::new()
    }
    fn object(&mut self, entries: Vec<(String, String)>) -> String {
        let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", entries.join(","))
    }
    fn object_repeating(&mut self, entries: Vec<(String, String)>) -> String {
        // JSON text keeps strings exactly, so only a malformed tape repeats a key here; the
        // text lists it twice, and JSON.parse applies JavaScript's rule.
        Build::<U>::object(self, entries)
    }
    fn key_text(key: &String) -> &str {
        key
    }
    fn function(&mut self, _: u32) -> Result<String, String> {
        Err(String::from(
            "params hold a function, which only the native render takes",
        ))
    }
}

/// The JSON string of UTF-16 units (Latin-1 bytes are their own units), as `JSON.stringify`
/// writes it: a lone surrogate as its escape.
fn json_string<U: Copy + Into<u32>>(units: &[U]) -> String {
    let units = units.iter().map(|&u| u.into() as u16);
    let mut out = String::with_capacity(units.len() + 2);
    out.push('"');
    let mut run = String::new();
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => run.push(c),
            Err(lone) => {
                write_string_body(&run, &mut out);
                run.clear();
                out.push_str(&format!("\\u{:04x}", lone.unpaired_surrogate()));
            }
        }
    }
    write_string_body(&run, &mut out);
    out.push('"');
    out
}

fn read<U: Copy, B: Build<U>>(tape: &[f64], text: &[U], build: B) -> Result<B::Out, String> {
    let tape = used_tape(tape)?;
    let mut reader = Reader {
        cursor: Cursor::new(tape, text),
        shapes: Vec::new(),
        build,
    };
    let params = reader.value(0)?;
    reader.cursor.finish()?;
    Ok(params)
}

/// The tape's entries used by the params, if entry 0 says so and the params array starts
/// where it should.
fn used_tape(tape: &[f64]) -> Result<&[f64], String> {
    let used = match tape.first().and_then(|&n| whole(n, tape.len())) {
        Some(used) if used >= 1 => used,
        _ => return Err(wrong("its length")),
    };
    if tape.get(HEADER) != Some(&f64::from(ARRAY)) {
        return Err(wrong("a params array"));
    }
    Ok(&tape[..used])
}

/// Whether a key appears twice among `keys`. The walk lists each of an object's keys once, but
/// two keys may decode to one: lone surrogates become U+FFFD (`{"\ud800": 1, "\udc00": 2}`
/// has two keys in JavaScript and one here), and a malformed tape may repeat a key. Checked
/// once per object that carries its keys, and once per shape for the objects of that shape.
fn repeats<'k>(keys: impl Iterator<Item = &'k str>) -> bool {
    let keys: Vec<&str> = keys.collect();
    if keys.len() <= SCAN_LIMIT {
        return keys.iter().enumerate().any(|(i, k)| keys[..i].contains(k));
    }
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    !keys.iter().all(|k| seen.insert(*k))
}

fn wrong(what: &str) -> String {
    format!("corepool: the packed params are not as lib/params.js writes them ({what})")
}

/// An object's entries as a builder makes them.
type Entries<B, U> = Vec<(<B as Build<U>>::Key, <B as Build<U>>::Out)>;

/// Where a reading of the tape and the text stands, and the checked steps every reading takes:
/// the next entry, a count within a limit, the next run of text.
struct Cursor<'a, U> {
    tape: &'a [f64],
    at: usize,
    text: &'a [U],
    pos: usize,
    /// Children the containers read so far said they have.
    claimed: usize,
}

impl<'a, U> Cursor<'a, U> {
    /// A reading of the used `tape` (see [`used_tape`]) from the params array's tag.
    fn new(tape: &'a [f64], text: &'a [U]) -> Self {
        Cursor {
            tape,
            at: HEADER,
            text,
            pos: 0,
            claimed: 0,
        }
    }

    fn next(&mut self) -> Result<f64, String> {
        let n = *self.tape.get(self.at).ok_or_else(|| wrong("cut short"))?;
        self.at += 1;
        Ok(n)
    }

    /// A count or length: a whole number, at most `limit` (what is left to read it from).
    fn count(&mut self, limit: usize) -> Result<usize, String> {
        let n = self.next()?;
        whole(n, limit).ok_or_else(|| wrong("a count"))
    }

    /// A container's count of children, each of which takes at least `per` of the entries
    /// left. And, over the whole tape, at most as many children as it has entries: a count
    /// that fits what is left when read is still refused once nested counts claim more in
    /// all (a tape of counts nested 512 deep would otherwise make readers reserve room for
    /// hundreds of times the children it holds).
    fn child_count(&mut self, per: usize) -> Result<usize, String> {
        let count = self.count(self.left() / per)?;
        self.claimed += count;
        if self.claimed > self.tape.len() {
            return Err(wrong("a count"));
        }
        Ok(count)
    }

    /// A function's number: a whole number that fits a [`FunctionId`] (never a size: the
    /// calling thread looks it up among the call's functions).
    fn function_id(&mut self) -> Result<u32, String> {
        let n = self.next()?;
        whole(n, u32::MAX as usize)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| wrong("a function's number"))
    }

    /// The next `n` units of the text, `n` read from the tape.
    fn units(&mut self) -> Result<&'a [U], String> {
        let n = self.count(self.text.len() - self.pos)?;
        let run = &self.text[self.pos..self.pos + n];
        self.pos += n;
        Ok(run)
    }

    /// Entries left on the tape.
    fn left(&self) -> usize {
        self.tape.len() - self.at
    }

    /// The tag of the next value: a small whole number, or `u8::MAX` for anything else (no
    /// tag). (A cast and a compare: `fract` is a call to `trunc` on the baseline x86-64
    /// target.)
    #[inline(always)]
    fn tag(&mut self) -> Result<u8, String> {
        let tag = self.next()?;
        Ok(match tag as u8 {
            t if f64::from(t) == tag => t,
            _ => u8::MAX,
        })
    }

    /// The error for a container nested past [`MAX_NESTING`], if `depth` is that deep.
    fn check_depth(depth: usize) -> Result<(), String> {
        if depth >= MAX_NESTING {
            return Err(wrong(&format!(
                "nested more than {MAX_NESTING} levels deep"
            )));
        }
        Ok(())
    }

    /// The params read, every entry and unit must have been used.
    fn finish(&self) -> Result<(), String> {
        if self.at != self.tape.len() || self.pos != self.text.len() {
            return Err(wrong("pieces left over"));
        }
        Ok(())
    }
}

struct Reader<'a, U, B: Build<U>> {
    cursor: Cursor<'a, U>,
    /// The key lists of this call's OBJECT_SHAPE objects, in order, each with whether a key
    /// of it repeats (see [`repeats`]).
    shapes: Vec<(Vec<B::Key>, bool)>,
    build: B,
}

impl<U: Copy, B: Build<U>> Reader<'_, U, B> {
    /// `count` values (each takes at least one entry of the tape: `count` was checked so).
    fn values(&mut self, count: usize, depth: usize) -> Result<Vec<B::Out>, String> {
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            let value = self.value(depth + 1)?;
            push_reserved(&mut values, value);
        }
        Ok(values)
    }

    /// An object's `count` values, each with a placeholder for its key (read after them).
    fn entries(&mut self, count: usize, depth: usize) -> Result<Entries<B, U>, String> {
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let value = self.value(depth + 1)?;
            push_reserved(&mut entries, (self.build.no_key(), value));
        }
        Ok(entries)
    }

    /// The next value. Leaves are built here, inlined into the loops that store them, so that
    /// each is written where it goes: returned through a call, a value is stored in pieces and
    /// read back in wider ones, which stalls on store forwarding (a third of the unpacking).
    #[inline(always)]
    fn value(&mut self, depth: usize) -> Result<B::Out, String> {
        let tag = self.cursor.tag()?;
        Ok(match tag {
            NULL => self.build.null(),
            FALSE => self.build.bool(false),
            TRUE => self.build.bool(true),
            NUMBER => {
                let n = self.cursor.next()?;
                self.build.number(n)
            }
            STRING => {
                let units = self.cursor.units()?;
                self.build.string(units)
            }
            FUNCTION => {
                let id = self.cursor.function_id()?;
                self.build.function(id)?
            }
            _ => return self.container(tag, depth),
        })
    }

    fn object(&mut self, entries: Entries<B, U>, repeating: bool) -> B::Out {
        if repeating {
            self.build.object_repeating(entries)
        } else {
            self.build.object(entries)
        }
    }

    /// An array or object, whose tag was read (or an error for a tag that is none).
    #[inline(never)]
    fn container(&mut self, tag: u8, depth: usize) -> Result<B::Out, String> {
        Cursor::<U>::check_depth(depth)?;
        Ok(match tag {
            ARRAY => {
                let count = self.cursor.child_count(1)?;
                let items = self.values(count, depth)?;
                self.build.array(items)
            }
            OBJECT | OBJECT_SHAPE => {
                // Each value and each key length takes at least one entry.
                let count = self.cursor.child_count(2)?;
                let mut entries = self.entries(count, depth)?;
                for entry in &mut entries {
                    let units = self.cursor.units()?;
                    entry.0 = self.build.key(units);
                }
                let repeating = repeats(entries.iter().map(|(k, _)| B::key_text(k)));
                if tag == OBJECT_SHAPE {
                    let keys = entries.iter().map(|(k, _)| k.clone()).collect();
                    self.shapes.push((keys, repeating));
                }
                self.object(entries, repeating)
            }
            SHAPED => {
                let count = self.cursor.child_count(1)?;
                let mut entries = self.entries(count, depth)?;
                let shape = self.cursor.count(self.shapes.len().saturating_sub(1))?;
                let repeating = match self.shapes.get(shape) {
                    Some((keys, repeating)) if keys.len() == count => {
                        for (entry, key) in entries.iter_mut().zip(keys) {
                            entry.0 = key.clone();
                        }
                        *repeating
                    }
                    _ => return Err(wrong("a shape")),
                };
                self.object(entries, repeating)
            }
            _ => return Err(wrong("a tag")),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod timing {
    /// `PACKED_TIMING=file cargo test --release --lib packed::timing -- --ignored --nocapture`:
    /// unpack time of a tape dumped from lib/params.js, against parsing its JSON.
    #[test]
    #[ignore]
    fn unpack_against_json_parse() {
        use super::*;
        let Some(path) = std::env::var_os("PACKED_TIMING") else {
            return;
        };
        let dump: Value = crate::rpc::json::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let o = dump.as_object().unwrap();
        let tape: Vec<f64> = o
            .get("tape")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let text: Vec<u8> = o
            .get("text")
            .unwrap()
            .as_str()
            .unwrap()
            .chars()
            .map(|c| c as u8)
            .collect();
        let json = o.get("json").unwrap().as_str().unwrap().to_string();
        let p = Packed {
            first: None,
            tape,
            text: JsText::Latin1(text),
        };
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for _ in 0..2000 {
                std::hint::black_box(p.unpack().unwrap());
            }
            let a = t.elapsed().as_secs_f64() / 2000.0 * 1e6;
            let t = std::time::Instant::now();
            for _ in 0..2000 {
                std::hint::black_box(crate::rpc::json::parse(&json).unwrap());
            }
            let b = t.elapsed().as_secs_f64() / 2000.0 * 1e6;
            let v = p.unpack().unwrap();
            let t = std::time::Instant::now();
            for _ in 0..2000 {
                std::hint::black_box(v.clone());
            }
            let c = t.elapsed().as_secs_f64() / 2000.0 * 1e6;
            println!("unpack {a:.1} µs, json parse {b:.1} µs, clone {c:.1} µs");
        }
    }
}
