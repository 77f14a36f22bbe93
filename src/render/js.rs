//! How JavaScript sees a JSON value, for the few operations mustache.js applies to data:
//! property access (`v[key]`, `key in v`), truthiness (`!v`) and `String(v)`.
//!
//! Data is JSON (checked before rendering) plus functions, so every value is a primitive, an
//! array, a plain object or a function, and these operations have fixed answers, with one
//! exception: the properties values inherit from `Object.prototype`, `Array.prototype`,
//! `String.prototype`… (`toString`, `constructor`, `map`…), and a function's own built-ins
//! (`name`, `length`). mustache.js would use those built-ins (usually calling them); corepool
//! reports [`Property::Inherited`] and the caller turns it into an error instead of an output that
//! might differ. The lists are Node 20's. (A function with properties of its own besides those
//! is refused when the call's params are read, so a function has no other property.)
//!
//! Printing a function, or a value whose printing calls one (an object with its own `toString`
//! or `valueOf` function, an array holding such values), is JavaScript's business: see
//! [`Js::needs_javascript`] and `functions.rs`.

use super::escape::escape_html;
use crate::rpc::number::format_number;
use crate::rpc::packed::tree::{Item, List, Record};
use crate::rpc::{FunctionId, Map, RpcError, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A JSON value as JavaScript sees it; also the values property access creates (a string's
/// `length`, one of its characters) and `undefined`.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub enum Js<'a> {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    String(&'a str),
    /// An array. (The `Vec`, not its slice: its address tells apart even empty arrays, which
    /// a function's `this` needs.)
    Array(&'a Vec<Value>),
    Object(&'a Map),
    /// An array of params that crossed packed, read in place (`rpc::packed::tree`). Such
    /// params are plain data: nothing in them is a function, or needs one to print.
    List(List<'a>),
    /// An object of params that crossed packed, read in place.
    Record(Record<'a>),
    /// A function of the call's (see `functions.rs`).
    Function(FunctionId),
    /// A string of one lone surrogate, as indexing a string can make: JavaScript has it, a
    /// Rust string cannot hold it. Lookups go on through it; only printing it fails.
    LoneSurrogate,
}

impl Js<'_> {
    /// Whether `self` and `other` are the same value: the same array, object or string (not an
    /// equal one), an equal primitive otherwise.
    pub fn same(&self, other: &Js<'_>) -> bool {
        match (self, other) {
            (Js::Undefined, Js::Undefined)
            | (Js::Null, Js::Null)
            | (Js::LoneSurrogate, Js::LoneSurrogate) => true,
            (Js::Bool(a), Js::Bool(b)) => a == b,
            (Js::Number(a), Js::Number(b)) => a.to_bits() == b.to_bits(),
            // The same text where it lies, not equal text: comparing is then never slow.
            (Js::String(a), Js::String(b)) => {
                std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
            }
            (Js::Array(a), Js::Array(b)) => std::ptr::eq(*a, *b),
            (Js::Object(a), Js::Object(b)) => std::ptr::eq(*a, *b),
            (Js::List(a), Js::List(b)) => a.same(*b),
            (Js::Record(a), Js::Record(b)) => a.same(*b),
            (Js::Function(a), Js::Function(b)) => a.0 == b.0,
            _ => false,
        }
    }
}

/// The outcome of `value[key]`.
pub enum Property<'a> {
    /// An own property: an object's key, an array's or string's index or `length`.
    Own(Js<'a>),
    /// A built-in the value inherits from its prototype.
    Inherited,
    /// `undefined`, and `key in value` is false.
    Absent,
}

const OBJECT_PROTOTYPE: &[&str] = &[
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "__proto__",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
];

const ARRAY_PROTOTYPE: &[&str] = &[
    "at",
    "concat",
    "copyWithin",
    "entries",
    "every",
    "fill",
    "filter",
    "find",
    "findIndex",
    "findLast",
    "findLastIndex",
    "flat",
    "flatMap",
    "forEach",
    "includes",
    "indexOf",
    "join",
    "keys",
    "lastIndexOf",
    "map",
    "pop",
    "push",
    "reduce",
    "reduceRight",
    "reverse",
    "shift",
    "slice",
    "some",
    "sort",
    "splice",
    "toReversed",
    "toSorted",
    "toSpliced",
    "unshift",
    "values",
    "with",
];

const STRING_PROTOTYPE: &[&str] = &[
    "anchor",
    "at",
    "big",
    "blink",
    "bold",
    "charAt",
    "charCodeAt",
    "codePointAt",
    "concat",
    "endsWith",
    "fixed",
    "fontcolor",
    "fontsize",
    "includes",
    "indexOf",
    "isWellFormed",
    "italics",
    "lastIndexOf",
    "link",
    "localeCompare",
    "match",
    "matchAll",
    "normalize",
    "padEnd",
    "padStart",
    "repeat",
    "replace",
    "replaceAll",
    "search",
    "slice",
    "small",
    "split",
    "startsWith",
    "strike",
    "sub",
    "substr",
    "substring",
    "sup",
    "toLocaleLowerCase",
    "toLocaleUpperCase",
    "toLowerCase",
    "toUpperCase",
    "toWellFormed",
    "trim",
    "trimEnd",
    "trimLeft",
    "trimRight",
    "trimStart",
];

const NUMBER_PROTOTYPE: &[&str] = &["toExponential", "toFixed", "toPrecision"];

/// A function's own built-ins (`prototype`, `arguments` and `caller` on some kinds of
/// function) and those of `Function.prototype`.
const FUNCTION_PROTOTYPE: &[&str] = &[
    "apply",
    "arguments",
    "bind",
    "call",
    "caller",
    "constructor",
    "length",
    "name",
    "prototype",
    "toString",
];

/// What `String(object)` does when the object has its own `toString` key: JSON cannot make it
/// a function, so JavaScript finds no callable conversion.
const NOT_CONVERTIBLE: &str = "Cannot convert object to primitive value";

/// Printing a function is JavaScript's business (the renderer hands it over, see
/// `functions.rs`); reaching the native printer with one is a bug of corepool's.
const FUNCTION_PRINTED: &str = "render: internal error: a function reached the native printer";

const LONE_SURROGATE: &str = "render: a name indexes into a string at half of a surrogate pair \
     (a character outside the BMP, such as an emoji); mustache.js would output that lone \
     surrogate, which a Rust string cannot hold (render this template with mustache.js on the \
     main thread)";

/// Whether every object inherits a built-in named `key`.
pub fn object_builtin(key: &str) -> bool {
    OBJECT_PROTOTYPE.contains(&key)
}

/// A property key as a template names it, with what JavaScript makes of it on each kind of
/// value worked out once, when the template is parsed: a lookup then never searches the
/// prototype lists or parses an index.
#[derive(Debug)]
pub struct Key {
    pub text: Box<str>,
    /// The key as an array (or string) index.
    index: Option<usize>,
    /// The kinds of value that inherit a built-in of this name (the `ON_*` bits).
    inherited: u8,
    /// Where in its object's entries the key was last found: the objects of a list usually
    /// share their layout, so the next one most likely has the key there too. Only a hint,
    /// checked before use, and shared by the threads rendering the template: relaxed loads,
    /// and a store only when it changes.
    slot: AtomicUsize,
}

const ON_OBJECT: u8 = 1;
const ON_ARRAY: u8 = 2;
const ON_STRING: u8 = 4;
const ON_NUMBER: u8 = 8;
const ON_FUNCTION: u8 = 16;

impl Key {
    pub fn new(text: &str) -> Key {
        let mut inherited = 0;
        if object_builtin(text) {
            // Every prototype chain ends at `Object.prototype`.
            inherited = ON_OBJECT | ON_ARRAY | ON_STRING | ON_NUMBER | ON_FUNCTION;
        }
        for (list, bit) in [
            (ARRAY_PROTOTYPE, ON_ARRAY),
            (STRING_PROTOTYPE, ON_STRING),
            (NUMBER_PROTOTYPE, ON_NUMBER),
            (FUNCTION_PROTOTYPE, ON_FUNCTION),
        ] {
            if list.contains(&text) {
                inherited |= bit;
            }
        }
        Key {
            text: text.into(),
            index: index(text),
            inherited,
            slot: AtomicUsize::new(0),
        }
    }

    /// `map[key]` when the map has the key as its own. Inlined: the slot check is a few
    /// instructions, the search out of line.
    #[inline(always)]
    pub fn get<'m>(&self, map: &'m Map) -> Option<&'m Value> {
        let slot = self.slot.load(Ordering::Relaxed);
        match map.iter().nth(slot) {
            Some((k, v)) if self.is(k) => Some(v),
            _ => self.search(map),
        }
    }

    #[inline(never)]
    fn search<'m>(&self, map: &'m Map) -> Option<&'m Value> {
        let (found, v) = map
            .iter()
            .enumerate()
            .find_map(|(i, (k, v))| self.is(k).then_some((i, v)))?;
        self.slot.store(found, Ordering::Relaxed);
        Some(v)
    }

    /// [`Key::get`] for an object of packed params.
    #[inline(always)]
    pub fn get_in<'t>(&self, record: Record<'t>) -> Option<Item<'t>> {
        let slot = self.slot.load(Ordering::Relaxed);
        match record.entry(slot) {
            Some((k, v)) if self.is(k) => Some(v),
            _ => self.search_in(record),
        }
    }

    #[inline(never)]
    fn search_in<'t>(&self, record: Record<'t>) -> Option<Item<'t>> {
        let found = record.keys().position(|k| self.is(k))?;
        self.slot.store(found, Ordering::Relaxed);
        record.value(found)
    }

    /// Whether `other` is this key's text. The keys templates name are short: compared as at
    /// most two overlapping words, without the call a slice comparison makes.
    #[inline]
    fn is(&self, other: &str) -> bool {
        let (a, b) = (self.text.as_bytes(), other.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let n = a.len();
        match n {
            0 => true,
            // The first, middle and last bytes are all of them.
            1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
            4..=8 => {
                word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4)
            }
            9..=16 => {
                word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8)
            }
            _ => a == b,
        }
    }

    fn on(&self, kind: u8) -> bool {
        self.inherited & kind != 0
    }

    fn is_length(&self) -> bool {
        &*self.text == "length"
    }
}

/// The `N` bytes of `bytes` at `at`, as one value to compare.
#[inline]
fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut word = [0; N];
    word.copy_from_slice(&bytes[at..at + N]);
    word
}

/// `key` as an array index (`"0"`, `"17"`; not `"01"`, `"-1"` or `"1.0"`).
fn index(key: &str) -> Option<usize> {
    let digits = key.as_bytes();
    let canonical = !digits.is_empty()
        && digits.len() <= 10
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    if !canonical {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    // 2^32 - 1 is the largest array length, so indices stop one below it.
    (n < u32::MAX as u64).then_some(n as usize)
}

impl<'a> Js<'a> {
    pub fn of(value: &'a Value) -> Js<'a> {
        match value {
            Value::Null => Js::Null,
            Value::Bool(b) => Js::Bool(*b),
            Value::Number(n) => Js::Number(*n),
            Value::String(s) => Js::String(s),
            Value::Array(items) => Js::Array(items),
            Value::Object(map) => Js::Object(map),
            // The render command refuses data holding these before rendering starts.
            Value::Function(f) => Js::Function(*f),
            // The render command refuses data holding these before rendering starts.
            Value::View(_)
            | Value::Bytes(_)
            | Value::Buffer(_)
            | Value::BigInt(_)
            | Value::Pending(_)
            | Value::Cloned(_) => Js::Undefined,
        }
    }

    /// An item of packed params.
    #[inline]
    pub fn of_item(item: Item<'a>) -> Js<'a> {
        match item {
            Item::Null => Js::Null,
            Item::Bool(b) => Js::Bool(b),
            Item::Number(n) => Js::Number(n),
            Item::String(s) => Js::String(s),
            Item::Function(f) => Js::Function(f),
            Item::Array(list) => Js::List(list),
            Item::Object(record) => Js::Record(record),
        }
    }

    /// `value == null`.
    pub fn is_nullish(self) -> bool {
        matches!(self, Js::Undefined | Js::Null)
    }

    /// `!!value`. (An empty array is truthy, as in JavaScript.)
    pub fn truthy(self) -> bool {
        match self {
            Js::Undefined | Js::Null => false,
            Js::Bool(b) => b,
            Js::Number(n) => n != 0.0 && !n.is_nan(),
            Js::String(s) => !s.is_empty(),
            Js::Array(_)
            | Js::Object(_)
            | Js::List(_)
            | Js::Record(_)
            | Js::LoneSurrogate
            | Js::Function(_) => true,
        }
    }

    /// Whether `typeof value === 'object'` (and not null): only those answer `key in value`.
    pub fn is_object(self) -> bool {
        matches!(
            self,
            Js::Array(_) | Js::Object(_) | Js::List(_) | Js::Record(_)
        )
    }

    /// `value[key]` for a value that is not null or undefined.
    pub fn property(self, key: &Key) -> Property<'a> {
        match self {
            Js::Object(map) => match key.get(map) {
                Some(v) => Property::Own(Js::of(v)),
                None if key.on(ON_OBJECT) => Property::Inherited,
                None => Property::Absent,
            },
            Js::Record(record) => match key.get_in(record) {
                Some(v) => Property::Own(Js::of_item(v)),
                None if key.on(ON_OBJECT) => Property::Inherited,
                None => Property::Absent,
            },
            Js::Array(items) => {
                if let Some(item) = key.index.and_then(|i| items.get(i)) {
                    Property::Own(Js::of(item))
                } else {
                    array_property(key, items.len())
                }
            }
            Js::List(list) => match key.index.and_then(|i| list.get(i)) {
                Some(item) => Property::Own(Js::of_item(item)),
                None => array_property(key, list.len()),
            },
            Js::String(s) => {
                if let Some(i) = key.index {
                    code_unit(s, i)
                } else if key.is_length() {
                    Property::Own(Js::Number(s.encode_utf16().count() as f64))
                } else if key.on(ON_STRING) {
                    Property::Inherited
                } else {
                    Property::Absent
                }
            }
            Js::LoneSurrogate => match key.index {
                Some(0) => Property::Own(Js::LoneSurrogate),
                _ if key.is_length() => Property::Own(Js::Number(1.0)),
                _ if key.on(ON_STRING) => Property::Inherited,
                _ => Property::Absent,
            },
            Js::Number(_) if key.on(ON_NUMBER) => Property::Inherited,
            Js::Bool(_) if key.on(ON_OBJECT) => Property::Inherited,
            Js::Function(_) if key.on(ON_FUNCTION) => Property::Inherited,
            Js::Number(_) | Js::Bool(_) | Js::Function(_) | Js::Undefined | Js::Null => {
                Property::Absent
            }
        }
    }

    /// Whether printing the value runs JavaScript: a function; an object with its own
    /// `toString` or `valueOf` function (`String()` and `+` call them); an array holding such a
    /// value anywhere (`String(array)` prints every element). Iterative.
    pub fn needs_javascript(self) -> bool {
        let mut stack: Vec<&Value> = Vec::new();
        let mut current = self;
        loop {
            match current {
                Js::Function(_) => return true,
                Js::Object(map) => {
                    let calls = |key| matches!(map.get(key), Some(Value::Function(_)));
                    if calls("toString") || calls("valueOf") {
                        return true;
                    }
                }
                Js::Array(items) => stack.extend(items.iter()),
                _ => {}
            }
            match stack.pop() {
                Some(next) => current = Js::of(next),
                None => return false,
            }
        }
    }

    /// Appends `String(value)`, HTML-escaped if `escape`; nothing for null and undefined. The
    /// value must not need JavaScript to print (see [`Js::needs_javascript`]).
    pub fn write(self, escape: bool, out: &mut String) -> Result<(), RpcError> {
        match self {
            Js::Undefined | Js::Null => {}
            Js::Array(items) => return write_joined(Items::Values(items), escape, out),
            Js::List(list) => return write_joined(Items::List(list), escape, out),
            other => write_scalar(other, escape, out)?,
        }
        Ok(())
    }
}

/// An array's property that is not one of its items: `length`, a built-in, or nothing.
fn array_property<'a>(key: &Key, len: usize) -> Property<'a> {
    if key.is_length() {
        Property::Own(Js::Number(len as f64))
    } else if key.on(ON_ARRAY) {
        Property::Inherited
    } else {
        Property::Absent
    }
}

/// `s[i]`: the UTF-16 code unit at `i`, as a one-character string.
fn code_unit(s: &str, i: usize) -> Property<'_> {
    let mut units = 0;
    for (at, c) in s.char_indices() {
        let n = c.len_utf16();
        if i < units + n {
            return match n {
                1 => Property::Own(Js::String(&s[at..at + c.len_utf8()])),
                _ => Property::Own(Js::LoneSurrogate),
            };
        }
        units += n;
    }
    Property::Absent
}

/// `String(v)` for a value that is neither an array nor null/undefined.
fn write_scalar(value: Js, escape: bool, out: &mut String) -> Result<(), RpcError> {
    match value {
        Js::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        // Never contains a character that needs escaping.
        Js::Number(n) => format_number(n, out),
        Js::String(s) if escape => escape_html(s, out),
        Js::String(s) => out.push_str(s),
        Js::Object(map) if map.get("toString").is_some() => {
            return Err(RpcError::failed(NOT_CONVERTIBLE))
        }
        Js::Record(record) if record.get("toString").is_some() => {
            return Err(RpcError::failed(NOT_CONVERTIBLE))
        }
        Js::Object(_) | Js::Record(_) => out.push_str("[object Object]"),
        Js::LoneSurrogate => return Err(RpcError::failed(LONE_SURROGATE)),
        Js::Function(_) => return Err(RpcError::failed(FUNCTION_PRINTED)),
        Js::Array(_) | Js::List(_) | Js::Undefined | Js::Null => {}
    }
    Ok(())
}

/// `String(array)`: `array.join(",")`, with null elements empty and nested arrays joined in
/// place. Iterative: nesting depth costs heap, not stack.
fn write_joined(items: Items, escape: bool, out: &mut String) -> Result<(), RpcError> {
    // Each level: the items left, and whether none was written yet.
    let mut stack = vec![(items, true)];
    while let Some((level, first)) = stack.last_mut() {
        let Some((item, rest)) = level.split_first() else {
            stack.pop();
            continue;
        };
        *level = rest;
        if !std::mem::replace(first, false) {
            out.push(',');
        }
        match Items::of(item) {
            Some(inner) => stack.push((inner, true)),
            None => write_scalar(item, escape, out)?,
        }
    }
    Ok(())
}

/// An array's items, whichever way its params crossed: what a section over it renders with,
/// and what printing it joins.
#[derive(Clone, Copy)]
pub enum Items<'a> {
    Values(&'a [Value]),
    /// An array of packed params (see `rpc::packed::tree`).
    List(List<'a>),
}

impl<'a> Items<'a> {
    pub const NONE: Items<'static> = Items::Values(&[]);

    /// The items of `value`, if it is an array.
    #[inline(always)]
    pub fn of(value: Js<'a>) -> Option<Items<'a>> {
        match value {
            Js::Array(items) => Some(Items::Values(items)),
            Js::List(list) => Some(Items::List(list)),
            _ => None,
        }
    }

    pub fn is_empty(self) -> bool {
        match self {
            Items::Values(items) => items.is_empty(),
            Items::List(list) => list.is_empty(),
        }
    }

    /// The first item, and those after it. (Inlined: a section over a list takes one step
    /// per item.)
    #[inline(always)]
    pub fn split_first(self) -> Option<(Js<'a>, Items<'a>)> {
        match self {
            Items::Values(items) => items
                .split_first()
                .map(|(first, rest)| (Js::of(first), Items::Values(rest))),
            Items::List(list) => list
                .split_first()
                .map(|(first, rest)| (Js::of_item(first), Items::List(rest))),
        }
    }
}

#[cfg(test)]
mod tests;
