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

/// Appends `text` to `out`, escaped as mustache.js's `escapeHtml` does.
pub fn escape_html(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut copied = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if SPECIAL[b as usize] {
            out.push_str(&text[copied..i]);
            out.push_str(entity(b).unwrap_or_default());
            copied = i + 1;
        }
    }
    out.push_str(&text[copied..]);
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
}
