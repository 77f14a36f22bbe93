//! The values that travel between JavaScript and commands.
//!
//! `Value` is JSON (with JavaScript's number model: every number is an `f64`) plus the few
//! things JSON cannot say but a thread pool must carry: views over shared memory (passed by
//! reference, see `crate::shm::SharedView`), byte arrays and BigInts (passed by value).
//! Objects keep their keys in insertion order, as JavaScript does, so a value that goes through
//! the pool comes back looking the same.

use super::bigint::BigInt;
use crate::shm::SharedView;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};

/// An object's entries, in insertion order. Keys are unique.
///
/// Building one from many entries that may repeat keys (a parse, `collect()`) goes through
/// [`KeyIndex`], in time linear in the entries; [`Map::insert`] alone scans.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Map {
    entries: Vec<(Key, Value)>,
}

/// Longest key kept inline: a `Key` is then as big as a `String`.
const INLINE: usize = 22;

/// Row `n`: `n` bytes of 0xFF, then zeros (the mask that keeps the first `n` bytes of a window).
const KEEP_FIRST: [[u8; INLINE]; INLINE + 1] = {
    let mut rows = [[0; INLINE]; INLINE + 1];
    let mut n = 0;
    while n <= INLINE {
        let mut i = 0;
        while i < n {
            rows[n][i] = 0xFF;
            i += 1;
        }
        n += 1;
    }
    rows
};

/// An object key. Nearly all keys are short, and those live inline, so that building, cloning
/// and dropping an object costs no allocation per key and comparing keys needs no pointer
/// chasing; longer keys go on the heap.
#[derive(Clone)]
pub(crate) enum Key {
    /// The key's bytes, then zeros (so equal keys are equal arrays).
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(Box<str>),
}

impl Key {
    pub(crate) const EMPTY: Key = Key::Inline {
        len: 0,
        bytes: [0; INLINE],
    };

    pub(crate) fn new(s: &str) -> Key {
        if s.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Key::Inline {
                len: s.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(s.into())
        }
    }

    /// The key `text[at..at + len]`. When it is short and `text` has [`INLINE`] bytes from its
    /// start, those are read in one fixed-size load and the bytes past the key zeroed, so the
    /// key is built in registers and stored whole: `new` copies into a stack array with a call
    /// and reads it back in wider pieces, which stalls on store forwarding.
    #[inline(always)]
    pub(crate) fn in_text(text: &str, at: usize, len: usize) -> Key {
        let key = &text[at..at + len];
        match text.as_bytes().get(at..at + INLINE) {
            Some(window) if len <= INLINE => {
                // Masked by a table row, so that it compiles to a vector AND (a mask computed
                // per byte compiled to 22 scalar compares gathered into a vector).
                let mut bytes = [0; INLINE];
                for ((to, from), keep) in bytes.iter_mut().zip(window).zip(&KEEP_FIRST[len]) {
                    *to = *from & *keep;
                }
                Key::Inline {
                    len: len as u8,
                    bytes,
                }
            }
            _ => Key::new(key),
        }
    }

    /// Whether this key is `key`.
    pub(crate) fn is(&self, key: &str) -> bool {
        count_comparison();
        let wanted = key.as_bytes();
        match self {
            // Length and first byte rule out nearly every other key without a call. (No probe
            // `Key` built from `key`: copying a str of any length into one and reading it back
            // whole stalls on store forwarding, which costs more than this.)
            Key::Inline { len, bytes } => {
                *len as usize == wanted.len()
                    && wanted.first().is_none_or(|b| *b == bytes[0])
                    && bytes.get(..wanted.len()) == Some(wanted)
            }
            Key::Heap(k) => k.as_bytes() == wanted,
        }
    }

    pub(crate) fn from_string(s: String) -> Key {
        if s.len() <= INLINE {
            Key::new(&s)
        } else {
            Key::Heap(s.into_boxed_str())
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            // SAFETY: `EMPTY`, `Key::new` and `Key::in_text` are the only places an `Inline` is
            // made, and each puts the whole of a `str` into `bytes[..len]`: valid UTF-8.
            Key::Inline { len, bytes } => unsafe {
                std::str::from_utf8_unchecked(bytes.get_unchecked(..*len as usize))
            },
            Key::Heap(s) => s,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        count_comparison();
        match (self, other) {
            // Fixed-size compares, no call: the padding is zeros in both.
            (Key::Inline { len: a, bytes: x }, Key::Inline { len: b, bytes: y }) => {
                a == b && x == y
            }
            // A key is inline exactly when it is short, so lengths differ here unless both
            // are on the heap.
            _ => self.as_str() == other.as_str(),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Key comparisons made on this thread, so that tests can bound the work of building an
    /// object (a count, not a time: counts do not depend on the machine or its load). A probe
    /// of a `KeyIndex` compares `str`s, uncounted: one per look-up, in expectation.
    static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many keys this thread has compared so far.
#[cfg(test)]
pub(crate) fn key_comparisons() -> u64 {
    COMPARISONS.get()
}

#[inline(always)]
fn count_comparison() {
    #[cfg(test)]
    COMPARISONS.set(COMPARISONS.get() + 1);
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
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

    /// A map of `entries`, whose keys the caller knows are unique.
    pub(crate) fn from_unique(entries: Vec<(Key, Value)>) -> Self {
        // Hashed: comparing each key with the earlier ones made debug builds quadratic.
        debug_assert!({
            let mut seen = HashSet::with_capacity(entries.len());
            entries.iter().all(|(k, _)| seen.insert(k.as_str()))
        });
        Self { entries }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k.is(key))
    }

    /// Looks a key up. Linear: objects sent to commands are small, and the order must be kept.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).map(|at| &self.entries[at].1)
    }

    /// Sets a key, replacing an earlier value in place (JavaScript's and JSON.parse's rule).
    /// Linear in the map's size: to build a big map, `collect()` the entries.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = Key::from_string(key.into());
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// The map with each repeated key in its first place, holding its last value (as if each
    /// entry had been set in order with `insert`), in time linear in the map's size.
    pub(crate) fn into_unique(self) -> Map {
        Map::from_repeating(self.entries)
    }

    /// A map of `entries`, some of whose keys may repeat: as [`Map::into_unique`] makes it.
    pub(crate) fn from_repeating(entries: Vec<(Key, Value)>) -> Map {
        entries
            .into_iter()
            .map(|(k, v)| (k.as_str().to_string(), v))
            .collect()
    }

    /// Appends without the duplicate check, for callers that know the key is new.
    pub fn push_unique(&mut self, key: String, value: Value) {
        self.entries.push((Key::from_string(key), value));
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
        let at = self.position(key)?;
        Some(self.entries.remove(at).1)
    }
}

/// A repeated key keeps its first position and takes the last value, as with `insert`.
impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut map = MapBuilder::with_capacity(iter.size_hint().0);
        for (k, v) in iter {
            map.insert(k, v);
        }
        map.finish()
    }
}

/// A map built from entries read in order, where a repeated key keeps its first position and
/// takes the last value (JSON.parse's rule), in expected constant time per entry.
pub(crate) struct MapBuilder {
    entries: Vec<(Key, Value)>,
    index: KeyIndex,
}

impl MapBuilder {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
            index: KeyIndex::default(),
        }
    }

    pub(crate) fn insert(&mut self, key: String, value: Value) {
        match self.index.find(&self.entries, |(k, _)| k, &key) {
            Some(earlier) => self.entries[earlier].1 = value,
            None => self.entries.push((Key::from_string(key), value)),
        }
    }

    pub(crate) fn finish(self) -> Map {
        Map::from_unique(self.entries)
    }
}

/// Objects of up to this many keys find a repeated key by comparing it with each earlier one,
/// which costs less than hashing it for the small and middling objects nearly all JSON is made
/// of. Measured in instructions per parse against the scan alone: objects of up to 32 keys
/// cost what they did (+1%); objects of 33 to about 60 short keys of varied lengths, which
/// compare cheaply, up to 19% more; bigger objects, and objects whose keys share their length
/// and first byte (`field_1`, `field_2`, …), less.
pub(crate) const SCAN_LIMIT: usize = 32;

/// Values nest at most this deep: deeper params, results and JSON texts are refused (far deeper
/// than data is, and deep enough that every walk over a value stays well within a thread's
/// stack).
pub const MAX_NESTING: usize = 512;

/// Finds whether an object being built already has a key, and where: by a scan while the
/// object has at most [`SCAN_LIMIT`] keys, then through a hash table made then, so that a big
/// object costs expected constant time per key instead of a scan of all the earlier ones
/// (80,000 keys took seconds).
#[derive(Default)]
pub(crate) struct KeyIndex {
    table: Option<KeyTable>,
}

/// The positions of an object's keys, by hash: open addressing with linear probing, at most
/// half full, so each key is hashed once and no key is copied. Hashed with std's `RandomState`
/// (SipHash with a random key per table), not Fx: the keys come from whoever sends the
/// request, and a hash whose collisions can be computed offline would let them make every key
/// of a big object collide and bring the quadratic time back.
struct KeyTable {
    /// A power of two of slots, each [`VACANT`] or a key's position and the low 32 bits of its
    /// hash, which choose its slot (the table never has 2^32 slots) also when it grows.
    slots: Vec<Slot>,
    /// How many keys the table has: all the object's, between two look-ups.
    len: usize,
    hasher: RandomState,
}

/// A position is a `u32`: an object has fewer than `u32::MAX` keys, as its JSON text, at 6
/// bytes or more a key, would be far longer than a JavaScript string can be.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    at: u32,
}

const VACANT: Slot = Slot {
    hash: 0,
    at: u32::MAX,
};

impl KeyIndex {
    /// Where `key` is among the object's keys so far, `items` (distinct keys, read through
    /// `key_of`). A key not found must be appended to the items before the next look-up.
    #[inline(always)]
    pub(crate) fn find<T>(
        &mut self,
        items: &[T],
        key_of: impl Fn(&T) -> &Key,
        key: &str,
    ) -> Option<usize> {
        if items.len() <= SCAN_LIMIT {
            items.iter().position(|item| key_of(item).is(key))
        } else {
            self.find_hashed(items, key_of, key)
        }
    }

    #[inline(never)]
    fn find_hashed<T>(
        &mut self,
        items: &[T],
        key_of: impl Fn(&T) -> &Key,
        key: &str,
    ) -> Option<usize> {
        let table = self
            .table
            .get_or_insert_with(|| KeyTable::new(items.iter().map(&key_of)));
        debug_assert_eq!(table.len, items.len(), "a key not found was not appended");
        debug_assert!(items.len() < u32::MAX as usize);
        let hash = table.hash(key);
        let mask = table.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = table.slots[i];
            if slot.at == VACANT.at {
                break;
            }
            if slot.hash == hash && key_of(&items[slot.at as usize]).is(key) {
                return Some(slot.at as usize);
            }
            i = (i + 1) & mask;
        }
        // The key comes next, at the end of the items.
        table.slots[i] = Slot {
            hash,
            at: items.len() as u32,
        };
        table.len += 1;
        if 2 * table.len > table.slots.len() {
            table.grow();
        }
        None
    }
}

impl KeyTable {
    fn new<'k>(keys: impl ExactSizeIterator<Item = &'k Key>) -> Self {
        let mut table = KeyTable {
            slots: vec![VACANT; (2 * keys.len() + 2).next_power_of_two()],
            len: keys.len(),
            hasher: RandomState::new(),
        };
        for (at, key) in keys.enumerate() {
            let hash = table.hash(key.as_str());
            table.place(Slot {
                hash,
                at: at as u32,
            });
        }
        table
    }

    /// The low bits of `key`'s SipHash, of its bytes alone: the terminator `str`'s `Hash`
    /// adds keeps strings apart when several are hashed together, never the case here.
    fn hash(&self, key: &str) -> u32 {
        let mut hasher = self.hasher.build_hasher();
        hasher.write(key.as_bytes());
        hasher.finish() as u32
    }

    /// Puts `slot` in the first vacant slot from the one its hash chooses.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = slot.hash as usize & mask;
        while self.slots[i].at != VACANT.at {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    fn grow(&mut self) {
        let grown = vec![VACANT; 2 * self.slots.len()];
        for slot in std::mem::replace(&mut self.slots, grown) {
            if slot.at != VACANT.at {
                self.place(slot);
            }
        }
    }
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
    /// Bytes handed to JavaScript as a Node Buffer (a result only: render's `output: 'buffer'`,
    /// ready for a socket). Params never hold one: a Buffer passed in arrives as [`Value::Bytes`].
    Buffer(Vec<u8>),
    BigInt(BigInt),
    /// A JavaScript function, which only the thread that made the call can run. Only a call
    /// that asks for functions gets them (`pool.render`, for Mustache lambdas); every other
    /// call refuses them when its params are read.
    Function(FunctionId),
    /// A result that only the calling thread can finish (a render that met JavaScript
    /// functions, see `render::functions`): handed to JavaScript as an opaque
    /// handle, which gives it back to the addon to finish.
    Pending(Pending),
    /// A value only JavaScript can read: a structured-clone message (V8's serialization format
    /// and the ArrayBuffers it moves, framed by `bindings::convert::cloned`) that one
    /// JavaScript thread made with lib/clone.js for another, carried as it is. The
    /// params of a call to a method served by JavaScript (`Params::Cloned`) or a JavaScript
    /// handler's result; only a JavaScript caller's call (`exec`, `call`, `run`) takes one as
    /// its result, and native commands never see one.
    Cloned(Cloned),
}

/// A structured-clone message ([`Value::Cloned`], `Params::Cloned`): its frame (V8's bytes and
/// the moved buffers copied into it, laid out by `bindings::convert::cloned`) and the moved
/// buffers it hands on where they already are, uncopied.
#[derive(Clone, Debug, Default)]
pub struct Cloned {
    pub frame: Vec<u8>,
    /// Moved buffers that stay in the memory of an earlier message (their places in `frame`
    /// are empty): only `bindings::convert::cloned` makes and reads them, and hands them over
    /// once.
    pub kept: Option<Kept>,
}

impl Cloned {
    /// The result of a served call that the serving JavaScript thread `by` (its thread id)
    /// posted on its caller's message port instead: a frame of that id's 4 bytes, shorter than
    /// the head every written message starts with (`bindings::convert::cloned`).
    pub fn posted(by: u32) -> Cloned {
        Cloned {
            frame: by.to_le_bytes().to_vec(),
            kept: None,
        }
    }

    /// The thread that posted this result, if it is a [`Cloned::posted`].
    pub fn posted_by(&self) -> Option<u32> {
        match (self.frame.as_slice(), &self.kept) {
            (&[a, b, c, d], None) => Some(u32::from_le_bytes([a, b, c, d])),
            _ => None,
        }
    }
}

impl From<Vec<u8>> for Cloned {
    fn from(frame: Vec<u8>) -> Self {
        Cloned { frame, kept: None }
    }
}

impl PartialEq for Cloned {
    fn eq(&self, other: &Self) -> bool {
        self.frame == other.frame
            && match (&self.kept, &other.kept) {
                (None, None) => true,
                (Some(a), Some(b)) => std::sync::Arc::ptr_eq(&a.0, &b.0),
                _ => false,
            }
    }
}

/// What [`Cloned::kept`] holds, opaque here (`bindings::convert::cloned` downcasts it). Boxed
/// behind the Arc so that its pointer is thin: a [`Value`] stays as small as before.
#[derive(Clone)]
#[allow(clippy::redundant_allocation)]
pub struct Kept(pub std::sync::Arc<Box<dyn std::any::Any + Send + Sync>>);

impl fmt::Debug for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Kept")
    }
}

/// What a [`Value::Pending`] holds: the command's own state, which the binding that finishes it
/// downcasts.
#[derive(Clone)]
pub struct Pending(pub std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pending")
    }
}

/// A function in a call's params: its index in the list of functions the calling thread keeps
/// for the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionId(pub u32);

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
            (Bytes(a), Bytes(b)) | (Buffer(a), Buffer(b)) => a == b,
            (Cloned(a), Cloned(b)) => a == b,
            (BigInt(a), BigInt(b)) => a == b,
            (Function(a), Function(b)) => a == b,
            (Pending(a), Pending(b)) => std::sync::Arc::ptr_eq(&a.0, &b.0),
            _ => false,
        }
    }
}

impl Value {
    /// True when the value holds a view into shared memory anywhere inside: such a value is
    /// lent to a call, and never handed back as a result.
    pub fn has_view(&self) -> bool {
        match self {
            Value::View(_) => true,
            Value::Array(items) => items.iter().any(Value::has_view),
            Value::Object(m) => m.iter().any(|(_, v)| v.has_view()),
            _ => false,
        }
    }

    /// True when the value holds a function (a slot of a render's view) anywhere inside.
    pub fn holds_function(&self) -> bool {
        match self {
            Value::Function(_) => true,
            Value::Array(items) => items.iter().any(Value::holds_function),
            Value::Object(m) => m.iter().any(|(_, v)| v.holds_function()),
            _ => false,
        }
    }

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
            Value::Buffer(_) => "Buffer",
            Value::BigInt(_) => "bigint",
            Value::Function(_) => "function",
            Value::Pending(_) => "pending result",
            Value::Cloned(_) => "structured-clone value",
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

    /// True for values that JSON can carry (no views, bytes, BigInts or functions anywhere
    /// inside).
    pub fn is_json(&self) -> bool {
        match self {
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
            Value::Array(a) => a.iter().all(Value::is_json),
            Value::Object(m) => m.iter().all(|(_, v)| v.is_json()),
            Value::View(_)
            | Value::Bytes(_)
            | Value::Buffer(_)
            | Value::BigInt(_)
            | Value::Function(_)
            | Value::Pending(_)
            | Value::Cloned(_) => false,
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

#[cfg(test)]
mod tests;
