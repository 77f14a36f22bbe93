//! JSON's grammar checked at any depth, building nothing: the judge of a text the value parsers
//! gave up on because it nests deeper than values may. Such a text is a Parse error when it is
//! not JSON at all (as `JSON.parse` says of it, however deep), and "too deep" only when it is.
//!
//! It walks the text once, in a loop with a stack of the open arrays and objects, so no depth
//! can overflow the native stack; what it allocates is bounded by the text it reads.

/// Where a text stops being JSON, in serde_json's words: "`what` at line L column C".
pub fn check(text: &str) -> Result<(), String> {
    Checker {
        bytes: text.as_bytes(),
        at: 0,
    }
    .value_text()
}

struct Checker<'t> {
    bytes: &'t [u8],
    at: usize,
}

/// What the checker expects next, after a value ends inside an open array or object.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    Array,
    Object,
}

impl Checker<'_> {
    fn value_text(mut self) -> Result<(), String> {
        // The open arrays and objects, innermost last: one byte a level, each opened by at
        // least one byte of the text.
        let mut opens: Vec<Open> = Vec::new();
        'value: loop {
            // A value starts here: a scalar, or a container whose first item (or end) follows.
            self.space();
            match self.peek() {
                Some(b'[') => {
                    self.at += 1;
                    self.space();
                    if self.peek() == Some(b']') {
                        self.at += 1;
                    } else {
                        opens.push(Open::Array);
                        continue 'value;
                    }
                }
                Some(b'{') => {
                    self.at += 1;
                    self.space();
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                    } else {
                        self.key()?;
                        opens.push(Open::Object);
                        continue 'value;
                    }
                }
                Some(b'"') => self.string()?,
                Some(b't') => self.word(b"true")?,
                Some(b'f') => self.word(b"false")?,
                Some(b'n') => self.word(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(_) => return Err(self.error("expected value")),
                None => return Err(self.error("EOF while parsing a value")),
            }
            // A value has ended: close what ends with it, until one goes on with a comma.
            loop {
                self.space();
                let Some(&open) = opens.last() else {
                    return match self.peek() {
                        None => Ok(()),
                        Some(_) => Err(self.error("trailing characters")),
                    };
                };
                let (close, what) = match open {
                    Open::Array => (b']', "a list"),
                    Open::Object => (b'}', "an object"),
                };
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if open == Open::Object {
                            self.space();
                            self.key()?;
                        }
                        continue 'value;
                    }
                    Some(b) if b == close => {
                        self.at += 1;
                        opens.pop();
                    }
                    Some(_) if open == Open::Array => return Err(self.error("expected `,` or `]`")),
                    Some(_) => return Err(self.error("expected `,` or `}`")),
                    None => return Err(self.error(&format!("EOF while parsing {what}"))),
                }
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A key and its colon; the value follows.
    fn key(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'"') => self.string()?,
            Some(_) => return Err(self.error("key must be a string")),
            None => return Err(self.error("EOF while parsing an object")),
        }
        self.space();
        match self.peek() {
            Some(b':') => {
                self.at += 1;
                Ok(())
            }
            Some(_) => Err(self.error("expected `:`")),
            None => Err(self.error("EOF while parsing an object")),
        }
    }

    fn string(&mut self) -> Result<(), String> {
        self.at += 1; // the opening quote
        loop {
            match self.peek() {
                None => return Err(self.error("EOF while parsing a string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.at += 1
                        }
                        Some(b'u') => {
                            self.at += 1;
                            for _ in 0..4 {
                                match self.peek() {
                                    Some(h) if h.is_ascii_hexdigit() => self.at += 1,
                                    Some(_) => return Err(self.error("invalid escape")),
                                    None => return Err(self.error("EOF while parsing a string")),
                                }
                            }
                        }
                        Some(_) => return Err(self.error("invalid escape")),
                        None => return Err(self.error("EOF while parsing a string")),
                    }
                }
                Some(0..=0x1f) => {
                    return Err(self
                        .error("control character (\\u0000-\\u001F) found while parsing a string"))
                }
                Some(_) => self.at += 1,
            }
        }
    }

    fn word(&mut self, word: &[u8]) -> Result<(), String> {
        for &expected in word {
            match self.peek() {
                Some(b) if b == expected => self.at += 1,
                Some(_) => return Err(self.error("expected ident")),
                None => return Err(self.error("EOF while parsing a value")),
            }
        }
        Ok(())
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return Err(self.error("invalid number")),
            None => return Err(self.error("EOF while parsing a value")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                self.digits();
                Ok(())
            }
            Some(_) => Err(self.error("invalid number")),
            None => Err(self.error("EOF while parsing a value")),
        }
    }

    /// `what` at the line and column (in characters, from 1) of the byte being read; at the end
    /// of the text, the column of its last character, as serde_json counts.
    fn error(&self, what: &str) -> String {
        let read = &self.bytes[..self.at.min(self.bytes.len())];
        let line = 1 + read.iter().filter(|&&b| b == b'\n').count();
        let start = read.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let on_line = &read[start..];
        // Characters, not bytes: count the bytes that start one.
        let before = on_line.iter().filter(|&&b| b & 0xC0 != 0x80).count();
        let column = if self.at >= self.bytes.len() {
            before
        } else {
            before + 1
        };
        format!("{what} at line {line} column {column}")
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn takes_json_at_any_depth() {
        for text in [
            "1",
            " [ ] ",
            "{}",
            r#"{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n"],"b":{}}"#,
            "[[[[[[[[[[[[[[]]]]]]]]]]]]]]",
        ] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
        for depth in [63, 64, 65, 128, 129, 100_000] {
            let arrays = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(check(&arrays), Ok(()), "{depth}");
            let objects = format!("{}1{}", r#"{"":"#.repeat(depth), "}".repeat(depth));
            assert_eq!(check(&objects), Ok(()), "{depth}");
            let mixed = format!("{}[]{}", r#"[{"a":"#.repeat(depth), "}]".repeat(depth));
            assert_eq!(check(&mixed), Ok(()), "{depth}");
        }
    }

    #[test]
    fn refuses_what_json_parse_refuses_at_any_depth() {
        let deep = 100_000;
        for text in [
            // JSONTestSuite n_structure_100000_opening_arrays, n_structure_open_array_object.
            "[".repeat(deep),
            r#"[{"":"#.repeat(deep / 2),
            format!("{}{}", "[".repeat(deep), "]".repeat(deep - 1)),
            format!("{}{}", "[".repeat(deep), "]".repeat(deep + 1)),
            format!("{}x{}", "[".repeat(600), "]".repeat(600)),
            format!("{}1,{}", "[".repeat(600), "]".repeat(600)),
            format!("{}{}", r#"{"a":"#.repeat(600), "]".repeat(600)),
            format!("{}1{}", "{".repeat(600), "}".repeat(600)),
            format!("{}\"\t\"{}", "[".repeat(600), "]".repeat(600)),
            format!("{}\"\\x\"{}", "[".repeat(600), "]".repeat(600)),
            format!("{}01{}", "[".repeat(600), "]".repeat(600)),
            format!("{}1.{}", "[".repeat(600), "]".repeat(600)),
            format!("{}tru{}", "[".repeat(600), "]".repeat(600)),
            format!("{}[]{} 1", "[".repeat(600), "]".repeat(600)),
            String::new(),
            "[1,]".into(),
            r#"{"a" 1}"#.into(),
            r#"{"a":1,}"#.into(),
        ] {
            assert!(check(&text).is_err(), "{}", &text[..text.len().min(40)]);
        }
    }

    #[test]
    fn says_where_the_text_stops_being_json() {
        assert_eq!(
            check("[\n  1,\n  x]"),
            Err("expected value at line 3 column 3".into())
        );
        assert_eq!(
            check(&"[".repeat(5)),
            Err("EOF while parsing a value at line 1 column 5".into())
        );
        assert_eq!(
            check("[1"),
            Err("EOF while parsing a list at line 1 column 2".into())
        );
        assert_eq!(
            check("\"é\" x"),
            Err("trailing characters at line 1 column 5".into())
        );
    }
}
