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

/// The longest entity.
const MAX_ENTITY: usize = 6;

/// Input bytes escaped per `reserve` (then extended to a character boundary).
const CHUNK: usize = 256;

/// Appends `text` to `out`, escaped as mustache.js's `escapeHtml` does.
pub fn escape_html(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    // Most values have nothing to escape: one copy.
    let Some(first) = bytes.iter().position(|&b| SPECIAL[b as usize]) else {
        out.push_str(text);
        return;
    };
    out.push_str(&text[..first]);
    // Then byte by byte, with room reserved for the worst case: values are short and their
    // runs between entities shorter, so a call to copy each run would cost more.
    let mut at = first;
    while at < text.len() {
        let mut end = (at + CHUNK).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let chunk = &bytes[at..end];
        out.reserve(chunk.len() * MAX_ENTITY);
        // SAFETY: `chunk` starts and ends at character boundaries, and the loop appends its
        // bytes in order, each ASCII one that needs it replaced by an ASCII entity: whole
        // characters, so `out` is UTF-8 again when the loop ends. Nothing in between can
        // panic: every push fits in the capacity reserved above.
        let v = unsafe { out.as_mut_vec() };
        for &b in chunk {
            match b {
                b'&' => v.extend_from_slice(b"&amp;"),
                b'<' => v.extend_from_slice(b"&lt;"),
                b'>' => v.extend_from_slice(b"&gt;"),
                b'"' => v.extend_from_slice(b"&quot;"),
                b'\'' => v.extend_from_slice(b"&#39;"),
                b'/' => v.extend_from_slice(b"&#x2F;"),
                b'`' => v.extend_from_slice(b"&#x60;"),
                b'=' => v.extend_from_slice(b"&#x3D;"),
                _ => v.push(b),
            }
        }
        at = end;
    }
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
    fn every_byte_and_chunk_boundary_escapes_as_the_table_says() {
        let all: String = (0..128u8).map(char::from).collect();
        let mut cases = vec![all.clone(), format!("é{all}😀")];
        // Entities and multi-byte characters across the chunk boundaries.
        for len in [CHUNK - 2, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5] {
            cases.push(format!("&{}", "é&😀/".repeat(len / 3)));
            cases.push(format!("{}={}", "x".repeat(len), "ü".repeat(len)));
        }
        for text in cases {
            let mut out = String::from("before:");
            escape_html(&text, &mut out);
            assert_eq!(out, format!("before:{}", reference(&text)));
        }
    }
}
