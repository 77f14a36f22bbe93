//! mustache.js's HTML escaping: eight ASCII characters become entities, everything else is
//! copied. All eight are ASCII, so a byte scan over UTF-8 never splits a character.

/// The entity for each byte that needs one.
const fn entity(byte: u8) -> Option<&'static str> {
    match byte {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'>' => Some("&gt;"),
        b'"' => Some("&quot;"),
        b'\'' => Some("&#39;"),
        b'/' => Some("&#x2F;"),
        b'`' => Some("&#x60;"),
        b'=' => Some("&#x3D;"),
        _ => None,
    }
}

/// Bytes that need an entity, as a lookup table for the scan.
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = entity(b as u8).is_some();
        b += 1;
    }
    table
};

/// What each byte becomes, padded to 8 bytes, and how many of those count: copying a byte and
/// writing an entity are then both one 8-byte store, with no branch.
const WIDE: [([u8; 8], u8); 256] = {
    let mut table = [([0; 8], 0); 256];
    let mut b = 0;
    while b < 256 {
        let mut wide = [0; 8];
        let len = match entity(b as u8) {
            Some(e) => {
                let e = e.as_bytes();
                let mut i = 0;
                while i < e.len() {
                    wide[i] = e[i];
                    i += 1;
                }
                e.len()
            }
            None => {
                wide[0] = b as u8;
                1
            }
        };
        table[b] = (wide, len as u8);
        b += 1;
    }
    table
};

/// The longest entity.
const MAX_ENTITY: usize = 6;

/// Input bytes escaped per `reserve` (then extended to a character boundary).
const CHUNK: usize = 256;

/// Bytes tested per branch of the scan for the first byte that needs an entity.
const STRIDE: usize = 8;

/// Appends `text` to `out`, escaped as mustache.js's `escapeHtml` does.
pub fn escape_html(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    // Most values have nothing to escape: one copy.
    let Some(first) = find_special(bytes) else {
        out.push_str(text);
        return;
    };
    out.push_str(&text[..first]);
    // Then byte by byte through `WIDE`: the runs between entities are short (a URL has one
    // every few bytes), too short for a call to copy each.
    let mut at = first;
    while at < text.len() {
        let mut end = (at + CHUNK).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        // SAFETY: `chunk` starts and ends at character boundaries, and the loop appends its
        // bytes in order, each ASCII one that needs it replaced by an ASCII entity: whole
        // characters, so `out` is UTF-8 again when `set_len` below ends the chunk.
        let v = unsafe { out.as_mut_vec() };
        let chunk = &bytes[at..end];
        v.reserve(chunk.len() * MAX_ENTITY + 8);
        let spare = v.spare_capacity_mut();
        let room = spare.len();
        let to = spare.as_mut_ptr().cast::<[u8; 8]>();
        let mut written = 0;
        for &b in chunk {
            let (wide, len) = &WIDE[b as usize];
            debug_assert!(written + 8 <= room);
            // SAFETY: `written` grows by at most `MAX_ENTITY` per input byte, so the 8 bytes
            // at `written` lie within the `chunk.len() * MAX_ENTITY + 8` bytes of spare
            // capacity reserved above; an unaligned write needs no alignment. (Checked
            // indexing here cost 14 instructions per byte instead of 9.)
            unsafe { to.byte_add(written).write_unaligned(*wide) };
            written += *len as usize;
        }
        // SAFETY: the stores above initialized `spare[..written]`, in order.
        unsafe { v.set_len(v.len() + written) };
        at = end;
    }
}

/// The first byte of `bytes` that needs an entity.
#[inline]
fn find_special(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    // A branch per `STRIDE` bytes instead of per byte: the table's answers OR-ed together.
    while let Some(chunk) = bytes.get(at..at + STRIDE) {
        if chunk
            .iter()
            .fold(false, |any, &b| any | SPECIAL[b as usize])
        {
            break;
        }
        at += STRIDE;
    }
    bytes[at..]
        .iter()
        .position(|&b| SPECIAL[b as usize])
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_mustache_js_eight_characters_and_nothing_else() {
        let mut out = String::new();
        escape_html("a&b<c>d\"e'f/g`h=i é😀 \\ %", &mut out);
        assert_eq!(
            out,
            "a&amp;b&lt;c&gt;d&quot;e&#39;f&#x2F;g&#x60;h&#x3D;i é😀 \\ %"
        );
    }

    /// Escaping byte by byte, straight from `entity`.
    fn reference(text: &str) -> String {
        text.chars()
            .map(|c| match c.is_ascii().then(|| entity(c as u8)).flatten() {
                Some(e) => e.to_string(),
                None => c.to_string(),
            })
            .collect()
    }

    #[test]
    fn every_byte_at_every_stride_offset_escapes_as_the_table_says() {
        let all: String = (0..128u8).map(char::from).collect();
        let mut cases = vec![all.clone(), format!("é{all}😀")];
        // Entities and multi-byte characters at every offset within and across strides.
        for len in (0..3 * STRIDE).chain([CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]) {
            cases.push(format!("&{}", "é&😀/".repeat(len / 3)));
            cases.push(format!("{}={}", "x".repeat(len), "ü".repeat(len)));
            cases.push(format!("{}\"", "y".repeat(len)));
        }
        for text in cases {
            let mut out = String::from("before:");
            escape_html(&text, &mut out);
            assert_eq!(out, format!("before:{}", reference(&text)));
        }
    }
}
