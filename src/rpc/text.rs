//! Big strings on their way into or out of JavaScript, kept in the encoding the JS engine uses.
//!
//! V8 stores a string as one byte per UTF-16 code unit when every unit is ≤ 0xFF (Latin-1),
//! else as UTF-16. Rust strings are UTF-8. Creating a JS string from UTF-8 costs the JS thread
//! a validating decode (two passes over the bytes, slow past ASCII); creating it from Latin-1
//! or UTF-16 is a copy. So a big result is transcoded on the thread that produced it, and the
//! JS thread only copies; JSON text read from JS is taken as UTF-16 (a copy on the JS thread)
//! and decoded by the worker that parses it.

/// A string in one of the encodings JavaScript strings can be made from or read as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsText {
    Utf8(String),
    /// Every char ≤ U+00FF, one byte each.
    Latin1(Vec<u8>),
    /// UTF-16 code units, possibly with lone surrogates (JavaScript allows them).
    Utf16(Vec<u16>),
}

/// JavaScript's longest string in UTF-16 code units (V8's `String::kMaxLength` on 64-bit
/// platforms, `buffer.constants.MAX_STRING_LENGTH` in Node 20). What is longer cannot be handed
/// to JavaScript as one string.
pub const MAX_JS_STRING: usize = (1 << 29) - 24;

/// True when `s` has more UTF-16 code units than a JavaScript string can hold (counted only
/// when its UTF-8 length says it might: a string has no more units than bytes).
pub fn too_long_for_js(s: &str) -> bool {
    s.len() > MAX_JS_STRING && s.encode_utf16().count() > MAX_JS_STRING
}

/// Strings shorter than this (in UTF-8 bytes) stay UTF-8: transcoding would not pay.
pub const TRANSCODE_MIN_BYTES: usize = 256;

impl JsText {
    /// The cheapest form for a JS thread to make a string of: `s` itself when short, else
    /// Latin-1 when every char fits a byte (then pure ASCII costs no copy), else UTF-16.
    pub fn for_js(s: String) -> JsText {
        if s.len() < TRANSCODE_MIN_BYTES {
            return JsText::Utf8(s);
        }
        // Latin-1 in the string's own buffer: no allocation, and pure ASCII is only read.
        match latin1_in_place(s.into_bytes()) {
            Ok(bytes) => JsText::Latin1(bytes),
            Err((bytes, written, read)) => {
                // The Latin-1 prefix is its own UTF-16, one unit per byte; the rest is UTF-8.
                let rest = std::str::from_utf8(&bytes[read..]).unwrap_or_default();
                let mut units = Vec::with_capacity(written + rest.len());
                units.extend(bytes[..written].iter().map(|&b| u16::from(b)));
                units.extend(rest.encode_utf16());
                JsText::Utf16(units)
            }
        }
    }

    /// The text as UTF-8; `None` when it holds a lone surrogate (not valid Unicode).
    pub fn to_utf8(&self) -> Option<std::borrow::Cow<'_, str>> {
        use std::borrow::Cow;
        match self {
            JsText::Utf8(s) => Some(Cow::Borrowed(s)),
            JsText::Latin1(bytes) => Some(Cow::Owned(latin1_to_utf8(bytes))),
            JsText::Utf16(units) => utf16_to_utf8(units).map(Cow::Owned),
        }
    }
}

/// Latin-1 to UTF-8: each ASCII run (found 8 bytes at a time) is copied at once; a byte above
/// 0x7F becomes two.
pub(crate) fn latin1_to_utf8(bytes: &[u8]) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + bytes.len() / 8);
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        while let Some(word) = bytes.get(at..at + 8) {
            let w = u64::from_ne_bytes(word.try_into().unwrap_or([0x80; 8]));
            if w & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            at += 8;
        }
        while at < bytes.len() && bytes[at] < 0x80 {
            at += 1;
        }
        out.extend_from_slice(&bytes[start..at]);
        while at < bytes.len() && bytes[at] >= 0x80 {
            let b = bytes[at];
            out.extend_from_slice(&[0xC0 | (b >> 6), 0x80 | (b & 0x3F)]);
            at += 1;
        }
    }
    // SAFETY: every byte pushed is ASCII or part of a whole two-byte char written above, so
    // `out` is UTF-8 (checking it again cost a tenth of unpacking a table's params).
    unsafe { String::from_utf8_unchecked(out) }
}

/// Bytes tested and moved at a time on the ASCII path of [`latin1_in_place`].
const LATIN1_RUN: usize = 32;

/// Rewrites the UTF-8 `bytes` as Latin-1 in their own buffer (never longer, so writing stays
/// behind reading). A char above U+00FF stops it: then `Err((bytes, written, read))`, where
/// `bytes[..written]` is the Latin-1 of `bytes[..read]`'s chars and `bytes[read..]` is still
/// the untouched UTF-8 rest, starting at a char boundary.
fn latin1_in_place(mut bytes: Vec<u8>) -> Result<Vec<u8>, (Vec<u8>, usize, usize)> {
    let len = bytes.len();
    let (mut read, mut write) = (0, 0);
    while read < len {
        // ASCII, LATIN1_RUN bytes at a time; while nothing was shortened, there is nothing to
        // move.
        while let Some(chunk) = bytes.get(read..read + LATIN1_RUN) {
            let any_high = chunk
                .chunks_exact(8)
                .map(|word| u64::from_ne_bytes(word.try_into().unwrap_or([0x80; 8])))
                .fold(0, |acc, word| acc | word);
            if any_high & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            if write != read {
                bytes.copy_within(read..read + LATIN1_RUN, write);
            }
            read += LATIN1_RUN;
            write += LATIN1_RUN;
        }
        // The run that stopped it (or the tail), a char at a time; then whole runs again. (Back
        // to the run test after every char instead tested the same bytes again and again.)
        let end = (read + LATIN1_RUN).min(len);
        while read < end {
            let b = bytes[read];
            if b < 0x80 {
                bytes[write] = b;
                read += 1;
            } else if b == 0xC2 || b == 0xC3 {
                // U+0080..=U+00FF: two bytes, 110000xx 10xxxxxx.
                bytes[write] = ((b & 0x03) << 6) | (bytes[read + 1] & 0x3F);
                read += 2;
            } else {
                return Err((bytes, write, read));
            }
            write += 1;
        }
    }
    bytes.truncate(write);
    Ok(bytes)
}

/// UTF-16 units tested and narrowed at a time on the ASCII path.
const ASCII_RUN: usize = 16;

/// UTF-16 to UTF-8 with a fast path for ASCII runs; `None` on a lone surrogate.
fn utf16_to_utf8(units: &[u16]) -> Option<String> {
    let mut out = Vec::with_capacity(units.len() + units.len() / 8);
    let mut i = 0;
    while i < units.len() {
        // ASCII, a run of units at a time (fixed-size loops the compiler turns into vector
        // code).
        while let Some(chunk) = units.get(i..i + ASCII_RUN) {
            let chunk: &[u16; ASCII_RUN] = chunk.try_into().unwrap_or(&[0xFFFF; ASCII_RUN]);
            if chunk.iter().fold(0u16, |acc, &u| acc | u) >= 0x80 {
                break;
            }
            let mut ascii = [0u8; ASCII_RUN];
            for (byte, &unit) in ascii.iter_mut().zip(chunk) {
                *byte = unit as u8;
            }
            out.extend_from_slice(&ascii);
            i += ASCII_RUN;
        }
        // The run that stopped it (or the tail), unit by unit: its ASCII units as bytes, the
        // rest a char at a time, decoded by the standard library (pairs and lone surrogates
        // alike). Back to whole runs after it, so that a name like "Zoë" sends only its run
        // this way, not every unit up to the next run boundary one char at a time.
        let end = (i + ASCII_RUN).min(units.len());
        while i < end {
            let unit = units[i];
            if unit < 0x80 {
                out.push(unit as u8);
                i += 1;
                continue;
            }
            let Some(c) = char::decode_utf16(units[i..].iter().copied()).next() else {
                break;
            };
            let c = c.ok()?;
            i += c.len_utf16();
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    // SAFETY: every push above wrote an ASCII byte or the whole UTF-8 encoding of a `char`,
    // so `out` is valid UTF-8 (checking it again would cost a full pass).
    Some(unsafe { String::from_utf8_unchecked(out) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(s: &str) -> String {
        s.repeat(TRANSCODE_MIN_BYTES / s.len() + 1)
    }

    #[test]
    fn short_strings_stay_utf8() {
        assert_eq!(JsText::for_js("Zoë".into()), JsText::Utf8("Zoë".into()));
    }

    #[test]
    fn ascii_is_latin1_without_a_copy() {
        let s = long("<td>42</td>");
        let owned = s.clone();
        let ptr = owned.as_ptr();
        match JsText::for_js(owned) {
            JsText::Latin1(bytes) => {
                assert_eq!(bytes, s.as_bytes());
                assert_eq!(bytes.as_ptr(), ptr);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn latin1_chars_take_one_byte() {
        let s = long("Zoë Müller ÿ\u{80} ");
        match JsText::for_js(s.clone()) {
            JsText::Latin1(bytes) => {
                let expected: Vec<u8> = s.chars().map(|c| c as u32 as u8).collect();
                assert_eq!(bytes, expected);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn latin1_and_wider_chars_at_every_offset_of_an_ascii_run() {
        let pad = "p".repeat(TRANSCODE_MIN_BYTES);
        for before in 0..2 * LATIN1_RUN + 2 {
            for after in [0, 1, LATIN1_RUN - 1, LATIN1_RUN + 3] {
                let (a, b) = ("a".repeat(before), "b".repeat(after));
                let s = format!("{pad}{a}ü{b}ÿ{b}");
                let latin1: Vec<u8> = s.chars().map(|c| c as u32 as u8).collect();
                assert_eq!(JsText::for_js(s.clone()), JsText::Latin1(latin1), "{s:?}");
                for wide in ["€", "😀"] {
                    let s = format!("{pad}{a}ü{b}{wide}{b}é");
                    let units = s.encode_utf16().collect();
                    assert_eq!(JsText::for_js(s.clone()), JsText::Utf16(units), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn latin1_decodes_at_every_offset_of_an_ascii_run() {
        for before in 0..3 * LATIN1_RUN + 2 {
            for high in [&[0x80u8][..], &[0xFF, 0xE9], &[0xC3, 0xA9, 0x00]] {
                let mut bytes = vec![b'a'; before];
                bytes.extend_from_slice(high);
                bytes.extend(std::iter::repeat_n(b'z', before % (LATIN1_RUN + 5)));
                let expected: String = bytes.iter().map(|&b| char::from(b)).collect();
                let text = JsText::Latin1(bytes);
                assert_eq!(text.to_utf8().as_deref(), Some(expected.as_str()));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn latin1_decodes_as_its_chars(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let expected: String = bytes.iter().map(|&b| char::from(b)).collect();
            let text = JsText::Latin1(bytes);
            let decoded = text.to_utf8().map(|s| s.into_owned());
            proptest::prop_assert_eq!(decoded, Some(expected));
        }
    }

    #[test]
    fn wider_chars_go_utf16() {
        // Also after a Latin-1 prefix was already narrowed in place.
        let mut cases: Vec<String> = ["Ā", "€", "😀", "中文"]
            .iter()
            .map(|tail| long(&format!("ü{tail}")))
            .collect();
        cases.push(format!("ü{}€", "a".repeat(300)));
        cases.push(format!("{}ÿé€x😀", "ab".repeat(200)));
        for s in cases {
            match JsText::for_js(s.clone()) {
                JsText::Utf16(units) => assert_eq!(units, s.encode_utf16().collect::<Vec<_>>()),
                other => panic!("{s:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn round_trips_to_utf8() {
        for s in [
            "plain ascii text",
            "Zoë & Seán",
            "€ 😀 中文 \u{FFFF}",
            "a\u{10FFFF}b",
        ] {
            let s = long(s);
            let text = JsText::for_js(s.clone());
            assert_eq!(text.to_utf8().as_deref(), Some(s.as_str()));
            let units = JsText::Utf16(s.encode_utf16().collect());
            assert_eq!(units.to_utf8().as_deref(), Some(s.as_str()));
        }
    }

    #[test]
    fn non_ascii_at_every_offset_of_an_ascii_run_decodes_as_std_does() {
        // One or two non-ASCII chars (Latin-1, BMP, a surrogate pair) at every position within
        // and around a run, then ASCII past the next run boundary; and a lone surrogate there.
        for wide in ["é", "€", "😀", "é😀"] {
            for before in 0..2 * ASCII_RUN + 2 {
                for after in [0, 1, ASCII_RUN - 1, ASCII_RUN + 3] {
                    let s = format!("{}{wide}{}{wide}", "a".repeat(before), "b".repeat(after));
                    let units = JsText::Utf16(s.encode_utf16().collect());
                    assert_eq!(units.to_utf8().as_deref(), Some(s.as_str()), "{s:?}");
                    let mut lone: Vec<u16> = s.encode_utf16().collect();
                    lone.insert(before, 0xDC00);
                    assert_eq!(JsText::Utf16(lone).to_utf8(), None, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn lone_surrogates_are_not_utf8() {
        for units in [
            vec![0x61, 0xD800],
            vec![0xD800, 0x61],
            vec![0xDC00],
            vec![0x61; 20],
        ] {
            let lone = units.iter().any(|u| (0xD800..0xE000).contains(u));
            let text = JsText::Utf16(units.clone());
            assert_eq!(text.to_utf8().is_none(), lone, "{units:?}");
        }
    }
}
