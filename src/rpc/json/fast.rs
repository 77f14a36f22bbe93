//! A direct JSON text → `Value` parser for the common case, with serde_json behind it.
//!
//! It takes what `JSON.parse` takes, up to [`MAX_NESTING`] levels, and gives up (`None`) on
//! anything else: an error of any kind, deeper nesting. The caller then asks serde_json for the
//! error and its message. What this parser returns is what serde_json would give, and the
//! tests in `json.rs` hold it to that, where serde_json takes the text at all; it also takes
//! what `JSON.parse` takes and serde_json does not: a lone surrogate escape becomes U+FFFD
//! (what a JavaScript string's lone surrogate becomes in native code), a number out of
//! `f64`'s range is ±Infinity (`1e400`), and nesting goes past serde_json's 128 levels.
//!
//! Why not serde_json alone: through its visitor, every array grows by doubling, every key is
//! allocated as a `String` before it is looked up among the earlier ones, and the per-value
//! dispatch costs more than the scanning. Here values collect on two scratch stacks shared by
//! the whole parse, and each array or object is moved out in one allocation of its exact size
//! when it closes. A repeated key is found as `Map`'s builder finds it (`KeyIndex`).
//!
//! Numbers: JSON's grammar is checked here, then integers and decimals of up to 15 digits
//! without an exponent are converted directly (one exact integer, one correctly rounded
//! division) and the rest go to `str::parse::<f64>`. Both that and
//! serde_json's `float_roundtrip` parsing round the exact decimal value correctly (to nearest,
//! ties to even), as JavaScript's `JSON.parse` does, so the three agree on every number.

use super::ESCAPED;
use crate::rpc::value::{Key, KeyIndex, Map, Value, MAX_NESTING, SCAN_LIMIT};
use std::borrow::Cow;

/// An array or object being parsed: where its items start on the scratch stacks. An object's
/// values are on the same stack as arrays' items and its keys on a stack of their own, zipped
/// into entries when it closes; `repeat` is the earlier entry of a key read again, whose value
/// the next value replaces.
enum Open {
    Array {
        start: usize,
    },
    Object {
        start: usize,
        keys: usize,
        repeat: Option<usize>,
    },
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
}

/// The parse of `text`, or `None` for serde_json to decide.
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    let mut opens: Vec<Open> = Vec::new();
    // Every value is pushed here as soon as it is complete (built in place, not moved
    // through a temporary), then taken by the array or object it is in when that closes.
    let mut values: Vec<Value> = Vec::new();
    let mut keys: Vec<Key> = Vec::new();
    // The key indexes of the open objects too big to scan, innermost last, each with where its
    // object's keys start on `keys` (which tells the objects apart: a nested object's keys
    // start after its parent's). Apart from `opens`, so that small objects do not carry them.
    let mut indexes: Vec<(usize, KeyIndex)> = Vec::new();
    'value: loop {
        p.skip_space();
        values.reserve(1);
        match *p.bytes.get(p.at)? {
            // An array or object opened inside MAX_NESTING open ones would be one level too
            // deep, empty or not.
            b'{' | b'[' if opens.len() >= MAX_NESTING => return None,
            b'{' => {
                p.at += 1;
                p.skip_space();
                if p.eat(b'}') {
                    push_reserved(&mut values, Value::Object(Map::new()));
                } else {
                    opens.push(Open::Object {
                        start: values.len(),
                        keys: keys.len(),
                        repeat: None,
                    });
                    let key = p.key()?;
                    keys.reserve(1);
                    push_reserved(&mut keys, key.into_key(p.text));
                    continue 'value;
                }
            }
            b'[' => {
                p.at += 1;
                p.skip_space();
                if p.eat(b']') {
                    push_reserved(&mut values, Value::Array(Vec::new()));
                } else {
                    opens.push(Open::Array {
                        start: values.len(),
                    });
                    continue 'value;
                }
            }
            b'"' => {
                p.at += 1;
                let string = p.string()?.into_owned();
                push_reserved(&mut values, Value::String(string));
            }
            b't' => {
                p.literal(b"true")?;
                push_reserved(&mut values, Value::Bool(true));
            }
            b'f' => {
                p.literal(b"false")?;
                push_reserved(&mut values, Value::Bool(false));
            }
            b'n' => {
                p.literal(b"null")?;
                push_reserved(&mut values, Value::Null);
            }
            b'-' | b'0'..=b'9' => {
                let n = p.number()?;
                push_reserved(&mut values, Value::Number(n));
            }
            _ => return None,
        }
        // A value is complete, on top of `values`: close the arrays and objects that end.
        loop {
            match opens.last_mut() {
                None => {
                    p.skip_space();
                    return if p.at == p.bytes.len() {
                        values.pop()
                    } else {
                        None
                    };
                }
                Some(Open::Array { start }) => {
                    p.skip_space();
                    match *p.bytes.get(p.at)? {
                        b',' => {
                            p.at += 1;
                            continue 'value;
                        }
                        b']' => {
                            p.at += 1;
                            let items = values.drain(*start..).collect();
                            opens.pop();
                            push_reserved(&mut values, Value::Array(items));
                        }
                        _ => return None,
                    }
                }
                Some(Open::Object {
                    start,
                    keys: first_key,
                    repeat,
                }) => {
                    if let Some(earlier) = repeat.take() {
                        // JSON.parse's rule for a repeated key: first position, last value.
                        let value = values.pop()?;
                        values[*start + earlier] = value;
                    }
                    p.skip_space();
                    match *p.bytes.get(p.at)? {
                        b',' => {
                            p.at += 1;
                            p.skip_space();
                            let key = p.key()?;
                            // `KeyIndex::find`, written out: with only the hashed look-up
                            // out of line, the scan of small objects keeps its registers
                            // (through `find`, 2-3% more instructions for 12-key objects).
                            let object_keys = &keys[*first_key..];
                            let found = if object_keys.len() <= SCAN_LIMIT {
                                object_keys.iter().position(|k| k.is(key.as_str()))
                            } else {
                                find_in_big(&mut indexes, *first_key, object_keys, key.as_str())
                            };
                            match found {
                                Some(earlier) => *repeat = Some(earlier),
                                None => {
                                    keys.reserve(1);
                                    push_reserved(&mut keys, key.into_key(p.text));
                                }
                            }
                            continue 'value;
                        }
                        b'}' => {
                            p.at += 1;
                            // Keys taken by `replace`, not drained alongside: a drained
                            // `Option<Key>` goes through the stack in pieces that stall.
                            let entries = values
                                .drain(*start..)
                                .zip(&mut keys[*first_key..])
                                .map(|(value, key)| (std::mem::replace(key, Key::EMPTY), value))
                                .collect();
                            if indexes.last().is_some_and(|(of, _)| of == first_key) {
                                indexes.pop();
                            }
                            keys.truncate(*first_key);
                            opens.pop();
                            push_reserved(&mut values, Value::Object(Map::from_unique(entries)));
                        }
                        _ => return None,
                    }
                }
            }
        }
    }
}

/// Where `key` is among `object_keys`, those of the innermost open object (which start at
/// `first_key` on the keys stack), through its index, made on first use.
#[inline(never)]
fn find_in_big(
    indexes: &mut Vec<(usize, KeyIndex)>,
    first_key: usize,
    object_keys: &[Key],
    key: &str,
) -> Option<usize> {
    if indexes.last().is_none_or(|(of, _)| *of != first_key) {
        indexes.push((first_key, KeyIndex::default()));
    }
    let innermost = indexes.len() - 1;
    indexes[innermost].1.find(object_keys, |k| k, key)
}

/// `stack.push(item)` where room for `item` was reserved before it was built. Through
/// `Vec::push`, whose growing is a call, a just-built item goes through the stack in pieces and
/// is read back in wider ones, which stalls on store forwarding (a tenth of the parse); here no
/// call comes between building it and storing it in place. (`rpc::packed` stores so too.)
#[inline(always)]
pub(crate) fn push_reserved<T>(stack: &mut Vec<T>, item: T) {
    stack.spare_capacity_mut()[0].write(item);
    // SAFETY: the slot at `len` was initialized just above (indexing panics if there is none).
    unsafe { stack.set_len(stack.len() + 1) };
}

/// An object key as it is in the text: a span of it, or unescaped.
enum KeyText<'t> {
    Span { at: usize, key: &'t str },
    Unescaped(String),
}

impl KeyText<'_> {
    fn as_str(&self) -> &str {
        match self {
            KeyText::Span { key, .. } => key,
            KeyText::Unescaped(key) => key,
        }
    }

    // Inlined, so the key is stored from registers.
    #[inline(always)]
    fn into_key(self, text: &str) -> Key {
        match self {
            KeyText::Span { at, key } => Key::in_text(text, at, key.len()),
            KeyText::Unescaped(key) => Key::from_string(key),
        }
    }
}

/// 10^0 to 10^15, all exact as `f64`s.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

impl<'t> Parser<'t> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.bytes.get(self.at) == Some(&byte);
        if hit {
            self.at += 1;
        }
        hit
    }

    /// `true`, `false` or `null`: a fixed-size compare, which needs no call to `memcmp`.
    fn literal<const N: usize>(&mut self, word: &[u8; N]) -> Option<()> {
        let end = self.at + N;
        let found: &[u8; N] = self.bytes.get(self.at..end)?.try_into().ok()?;
        (found == word).then(|| self.at = end)
    }

    /// An object key and the colon after it, at the key's opening quote.
    fn key(&mut self) -> Option<KeyText<'t>> {
        if !self.eat(b'"') {
            return None;
        }
        let at = self.at;
        let key = match self.string()? {
            Cow::Borrowed(key) => KeyText::Span { at, key },
            Cow::Owned(key) => KeyText::Unescaped(key),
        };
        self.skip_space();
        self.eat(b':').then_some(key)
    }

    /// Where the plain run of a string starting at `at` ends, eight bytes at a time (near the
    /// end of the text, where the byte loops after this take over, it may fall short).
    fn skip_plain(&self, mut at: usize) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        // A nonzero result for any byte of `word` below `n` (the lowest such byte exactly).
        let below = |word: u64, n: u8| word.wrapping_sub(ONES * n as u64) & !word & HIGHS;
        while let Some(chunk) = self.bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            let stops = below(word, 0x20)
                | below(word ^ (ONES * b'"' as u64), 1)
                | below(word ^ (ONES * b'\\' as u64), 1);
            if stops != 0 {
                // The lowest flagged byte is the first that stops the run.
                return at + (stops.trailing_zeros() / 8) as usize;
            }
            at += 8;
        }
        at
    }

    /// The rest of a string whose opening quote is consumed.
    fn string(&mut self) -> Option<Cow<'t, str>> {
        let start = self.at;
        let mut at = self.skip_plain(start);
        while !ESCAPED[*self.bytes.get(at)? as usize] {
            at += 1;
        }
        if self.bytes[at] == b'"' {
            // A run between two ASCII bytes of a `str`: whole characters.
            self.at = at + 1;
            return Some(Cow::Borrowed(&self.text[start..at]));
        }
        let mut out = String::with_capacity(at - start + 16);
        let mut run = start;
        loop {
            at = self.skip_plain(at);
            while !ESCAPED[*self.bytes.get(at)? as usize] {
                at += 1;
            }
            out.push_str(&self.text[run..at]);
            match self.bytes[at] {
                b'"' => {
                    self.at = at + 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let (c, len) = self.escape(at + 1)?;
                    out.push(c);
                    at += 1 + len;
                    run = at;
                }
                // A raw control character: serde_json reports it.
                _ => return None,
            }
        }
    }

    /// The character an escape stands for (`at` is just after its backslash), and how many
    /// bytes follow the backslash. A lone surrogate (`\ud800` with no low half after it, or a
    /// low half alone) stands for U+FFFD, as a JavaScript string's lone surrogate does once it
    /// crosses into native code; `JSON.stringify` writes lone surrogates as such escapes.
    fn escape(&self, at: usize) -> Option<(char, usize)> {
        let c = match *self.bytes.get(at)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4(at + 1)?;
                return match unit {
                    0xD800..=0xDBFF => {
                        let low = match self.bytes.get(at + 5..at + 7) {
                            Some(b"\\u") => self.hex4(at + 7),
                            _ => None,
                        };
                        match low {
                            Some(low @ 0xDC00..=0xDFFF) => {
                                let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                                Some((char::from_u32(c)?, 11))
                            }
                            _ => Some((char::REPLACEMENT_CHARACTER, 5)),
                        }
                    }
                    0xDC00..=0xDFFF => Some((char::REPLACEMENT_CHARACTER, 5)),
                    _ => Some((char::from_u32(unit)?, 5)),
                };
            }
            _ => return None,
        };
        Some((c, 1))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + (d as char).to_digit(16)?;
        }
        Some(n)
    }

    /// A number, checked against JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<f64> {
        let start = self.at;
        let negative = self.eat(b'-');
        let digits_start = self.at;
        let mut integer: u64 = 0;
        match *self.bytes.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while let Some(&d @ b'0'..=b'9') = self.bytes.get(self.at) {
                    // Wraps only past 19 digits, where the value is not used (see below).
                    integer = integer.wrapping_mul(10).wrapping_add((d - b'0') as u64);
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let mut digits = self.at - digits_start;
        // The digits after the point, while the number may still be short (see below).
        let mut scale = 0;
        let mut plain = true;
        if self.eat(b'.') {
            let fraction_start = self.at;
            while let Some(&d @ b'0'..=b'9') = self.bytes.get(self.at) {
                integer = integer.wrapping_mul(10).wrapping_add((d - b'0') as u64);
                self.at += 1;
            }
            scale = self.at - fraction_start;
            if scale == 0 {
                return None;
            }
            digits += scale;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            plain = false;
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.digits()?;
        }
        if plain && digits <= 15 {
            // All the digits, as an integer below 10^15 < 2^53, are exact as an f64, and so is
            // 10^scale (scale < 15 < 23): their quotient, a single correctly rounded division,
            // is the correctly rounded value of the decimal (Clinger's fast path), as
            // `str::parse` gives it. "-0" and "-0.0" are -0, as in serde_json and JS.
            let n = integer as f64 / POWERS_OF_TEN[scale];
            return Some(if negative { -n } else { n });
        }
        // Out of range is ±Infinity, as in JSON.parse.
        self.text[start..self.at].parse().ok()
    }

    /// One or more decimal digits.
    fn digits(&mut self) -> Option<()> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }
}
