//! Template text → [`Template`], by mustache.js 4.2.0's parsing rules.
//!
//! mustache.js's parser is a scanner driven by regular expressions; this one finds the same
//! boundaries with plain string searches, and every rule below is one of its rules:
//!
//! - A tag is `open`, JS whitespace (`\s`), an optional type character (`# ^ / > { & = !`),
//!   whitespace, the name, and whitespace plus `close`, where the name ends at the *first*
//!   `close` (for `{`: at the first `}` + `close`; for `=`: at the first `=`, which may lie past
//!   `close`). A tag type it does not know (`<`, `$`, `*`…) is part of a variable's name.
//! - A line is *standalone* when it holds at least one tag, no variable tag, and only whitespace
//!   text; all of that whitespace goes, its newline included (a `\r\n` line too). Lines are split
//!   by newlines in text only: a newline inside a tag does not end a line.
//! - A partial remembers the text before it on its line (only when it is the line's first tag):
//!   it later indents the partial's lines with that text, spaces and tabs kept, other whitespace
//!   dropped, and every other UTF-16 code unit turned into a space; the partial's first line is
//!   indented only when that text is all whitespace.
//! - A dotted name (`a.b`, a dot anywhere but first) is a path; `.` is the current context;
//!   `.a` is a plain key.
//! - Errors carry mustache.js's messages, with its positions: UTF-16 code units from the start
//!   of the template.
//!
//! - A render may start with delimiters other than `{{ }}` ([`Tags`], mustache.js's `tags`);
//!   they apply to the template and to every partial it renders, each starting afresh.
//!
//! The result is flat: a section's children are the nodes up to its `end`, so neither building,
//! walking nor dropping a template recurses, however deep its sections nest.

use super::js::Key;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// A byte range of a template's source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn of(self, source: &str) -> &str {
        &source[self.start..self.end]
    }
}

/// The delimiters a template starts with (mustache.js's `tags`), when they are not `{{ }}`.
/// Set-delimiter tags inside the template change them from there on, as usual.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tags {
    pub open: Box<str>,
    pub close: Box<str>,
}

/// A name in a tag, ready for lookup: split at its dots and its keys worked out (see
/// [`Key`]) once, when the template is parsed.
#[derive(Debug)]
pub enum Name {
    /// `.`: the current context itself.
    Dot,
    /// A key looked up as a whole (`a`, `.a`, or anything without an inner dot).
    Key(Key),
    /// A dotted name, one key per segment (`a.b.c`; `a.` has an empty last segment).
    Path(Box<[Key]>),
}

impl Name {
    fn new(source: &str, span: Span) -> Name {
        let text = span.of(source);
        if text == "." {
            return Name::Dot;
        }
        match text.find('.') {
            Some(i) if i > 0 => Name::Path(text.split('.').map(Key::new).collect()),
            _ => Name::Key(Key::new(text)),
        }
    }

    /// The name as written in the template (for error messages).
    pub fn text(&self) -> String {
        match self {
            Name::Dot => String::from("."),
            Name::Key(key) => key.text.to_string(),
            Name::Path(keys) => keys
                .iter()
                .map(|key| &*key.text)
                .collect::<Vec<_>>()
                .join("."),
        }
    }
}

/// The text a partial's lines are indented with.
#[derive(Debug, PartialEq)]
pub struct Indent {
    /// Spaces and tabs, one per UTF-16 code unit before the tag (see the module doc).
    pub text: Box<str>,
    /// Whether the partial's first line is indented too (the text before the tag is blank).
    pub first_line: bool,
}

impl Indent {
    pub(super) fn new(before_tag: &str) -> Indent {
        let mut text = String::with_capacity(before_tag.len());
        let mut first_line = true;
        for c in before_tag.chars() {
            if c == ' ' || c == '\t' {
                text.push(c);
            } else if !is_js_space(c) {
                first_line = false;
                for _ in 0..c.len_utf16() {
                    text.push(' ');
                }
            }
        }
        Indent {
            text: text.into_boxed_str(),
            first_line,
        }
    }

    /// `partial` with this indentation put before each non-empty line (mustache.js indents the
    /// partial's text before parsing it, so tags inside the partial see the indentation too).
    pub fn apply(&self, partial: &str) -> String {
        let lines = partial.split('\n');
        let mut out = String::with_capacity(partial.len() + self.text.len() * 4);
        for (i, line) in lines.enumerate() {
            if i > 0 {
                out.push('\n');
            }
            if !line.is_empty() && (i > 0 || self.first_line) {
                out.push_str(&self.text);
            }
            out.push_str(line);
        }
        out
    }
}

#[derive(Debug)]
pub enum Node {
    /// Text copied as is (a copy of the source's: taking a slice of the source would check
    /// its bounds and character boundaries at every render).
    Text(Box<str>),
    /// `{{name}}` (escaped) or `{{{name}}}` / `{{&name}}` (not escaped).
    Value { name: Name, escape: bool },
    /// `{{#name}}` or `{{^name}}`; its children are the nodes after it, up to `end`. `raw` is
    /// the source between its two tags, which a lambda gets as its text.
    Section {
        name: Name,
        inverted: bool,
        end: usize,
        raw: Span,
    },
    /// `{{>name}}`; `indent` is set when the partial's text must be indented first.
    Partial { name: Span, indent: Option<Indent> },
}

/// A parsed template. Immutable but for hints (the output's size, where each key was last
/// found, see [`Key`]), so one `Arc<Template>` serves every thread.
#[derive(Debug)]
pub struct Template {
    pub source: Arc<str>,
    pub nodes: Vec<Node>,
    /// The length of the last output rendered from this template, to size the next one's
    /// buffer (renders of one template with similar data have similar lengths). Only a hint:
    /// relaxed loads and stores.
    pub last_output: AtomicUsize,
}

/// JavaScript's `\s`: what mustache.js's regular expressions treat as whitespace.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// A position as mustache.js reports it: in UTF-16 code units.
fn js_position(source: &str, at: usize) -> usize {
    source[..at].encode_utf16().count()
}

fn skip_space(source: &str, at: usize) -> usize {
    source[at..]
        .find(|c| !is_js_space(c))
        .map_or(source.len(), |i| at + i)
}

/// Where the text before `/\s*pattern/` ends, searching from `at` (mustache.js's `scanUntil`):
/// before the whitespace that precedes the first `pattern`, or at the end of the source.
fn until(source: &str, at: usize, pattern: &str) -> usize {
    match source[at..].find(pattern) {
        Some(i) => at + source[at..at + i].trim_end_matches(is_js_space).len(),
        None => source.len(),
    }
}

/// Consumes `/\s*pattern/` at `at` (mustache.js's `scan`): the position after it, if it is there.
/// Like the regular expression, `\s*` gives back whitespace when `pattern` itself starts with
/// some (a delimiter such as `" "` or `"\n"`): the longest run of it that `pattern` follows.
fn scan(source: &str, at: usize, pattern: &str) -> Option<usize> {
    let run = &source[at..skip_space(source, at)];
    std::iter::once(run.len())
        .chain(run.char_indices().rev().map(|(i, _)| i))
        .map(|skipped| at + skipped)
        .find(|&from| source[from..].starts_with(pattern))
        .map(|from| from + pattern.len())
}

/// A token before sections are nested (mustache.js's token list).
enum Token {
    Text(Span),
    /// A whitespace text token of a standalone line.
    Removed,
    Value {
        name: Span,
        escape: bool,
    },
    Open {
        name: Span,
        inverted: bool,
        /// Where the section's body starts: right after the tag.
        body: usize,
    },
    /// Closes the innermost section; `at` is where the closing tag starts.
    Close {
        at: usize,
    },
    Partial {
        name: Span,
        indent: Option<Indent>,
    },
    /// A comment or a delimiter change: renders nothing.
    Silent,
}

/// The current line's standalone bookkeeping (mustache.js's `stripSpace` state).
#[derive(Default)]
struct Line {
    /// Where the line starts (after the last newline in text).
    start: usize,
    /// Tags seen on the line.
    tags: usize,
    /// Some non-whitespace text or a variable tag is on the line.
    non_space: bool,
    /// Indices of the line's whitespace-only text tokens.
    spaces: Vec<usize>,
}

impl Line {
    /// At a newline or the end: a line with tags and nothing else but whitespace loses the
    /// whitespace.
    fn finish(&mut self, tokens: &mut [Token]) {
        if self.tags > 0 && !self.non_space {
            for &i in &self.spaces {
                tokens[i] = Token::Removed;
            }
        }
        self.spaces.clear();
        self.tags = 0;
        self.non_space = false;
    }
}

/// A template mustache.js would not parse: its message, and the place to show (`place.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// mustache.js's message (`Unclosed tag at 12`), positions in UTF-16 code units.
    pub message: String,
    /// The byte offset in the source of what is wrong: where mustache.js's position is, but
    /// for a tag or section left open, where the tag or the section's opening tag starts
    /// (mustache.js's position, often the end of the text, says nothing of which it is); for
    /// invalid tags, where the `=` tag's text starts.
    pub at: usize,
}

impl ParseError {
    fn new(message: String, at: usize) -> ParseError {
        ParseError { message, at }
    }
}

/// Parses `source`, starting with `tags` (`None`: `{{ }}`). `Err` is mustache.js's message.
pub fn parse(source: Arc<str>, tags: Option<&Tags>) -> Result<Template, ParseError> {
    let tokens = tokenize(&source, tags)?;
    let nodes = nest(&source, tokens);
    Ok(Template {
        source,
        nodes,
        last_output: AtomicUsize::new(0),
    })
}

fn tokenize<'a>(src: &'a str, tags: Option<&'a Tags>) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    let mut line = Line::default();
    // The open sections' names, and where their tags start.
    let mut sections: Vec<(Span, usize)> = Vec::new();
    let (mut open, mut close) = tags.map_or(("{{", "}}"), |t| (&*t.open, &*t.close));
    let mut close_curly = format!("}}{close}");
    let mut pos = 0;

    while pos < src.len() {
        let tag_start = src[pos..].find(open).map_or(src.len(), |i| pos + i);
        while pos < tag_start {
            let end = src[pos..tag_start]
                .find('\n')
                .map_or(tag_start, |i| pos + i + 1);
            if src[pos..end].chars().all(is_js_space) {
                line.spaces.push(tokens.len());
            } else {
                line.non_space = true;
            }
            tokens.push(Token::Text(Span { start: pos, end }));
            if src.as_bytes()[end - 1] == b'\n' {
                line.finish(&mut tokens);
                line.start = end;
            }
            pos = end;
        }
        if pos == src.len() {
            break;
        }

        pos = skip_space(src, pos + open.len());
        let kind = match src.as_bytes().get(pos) {
            Some(&b) if b"#^/>{&=!".contains(&b) => {
                pos += 1;
                b
            }
            _ => b'n',
        };
        pos = skip_space(src, pos);
        let value_start = pos;
        let value_end = match kind {
            b'=' => until(src, pos, "="),
            b'{' => until(src, pos, &close_curly),
            _ => until(src, pos, close),
        };
        pos = value_end;
        let tail = match kind {
            b'=' => Some("="),
            b'{' => Some("}"),
            _ => None,
        };
        if let Some(tail) = tail {
            pos = scan(src, pos, tail).unwrap_or(pos);
            pos = until(src, pos, close);
        }
        pos = scan(src, pos, close).ok_or_else(|| {
            ParseError::new(
                format!("Unclosed tag at {}", js_position(src, pos)),
                tag_start,
            )
        })?;

        let value = Span {
            start: value_start,
            end: value_end,
        };
        let token = match kind {
            b'#' | b'^' => {
                sections.push((value, tag_start));
                Token::Open {
                    name: value,
                    inverted: kind == b'^',
                    body: pos,
                }
            }
            b'/' => match sections.pop() {
                None => {
                    return Err(ParseError::new(
                        format!(
                            "Unopened section \"{}\" at {}",
                            value.of(src),
                            js_position(src, tag_start)
                        ),
                        tag_start,
                    ))
                }
                Some((opened, _)) if opened.of(src) != value.of(src) => {
                    return Err(ParseError::new(
                        format!(
                            "Unclosed section \"{}\" at {}",
                            opened.of(src),
                            js_position(src, tag_start)
                        ),
                        tag_start,
                    ))
                }
                Some(_) => Token::Close { at: tag_start },
            },
            b'>' => Token::Partial {
                name: value,
                indent: (line.tags == 0 && tag_start > line.start)
                    .then(|| Indent::new(&src[line.start..tag_start])),
            },
            b'=' => {
                let tags = value.of(src);
                let (new_open, rest) = tags
                    .split_once(is_js_space)
                    .ok_or_else(|| ParseError::new(format!("Invalid tags: {tags}"), value_start))?;
                let rest = rest.trim_start_matches(is_js_space);
                open = new_open;
                close = rest.find(is_js_space).map_or(rest, |i| &rest[..i]);
                close_curly = format!("}}{close}");
                Token::Silent
            }
            b'!' => Token::Silent,
            _ => {
                line.non_space = true;
                Token::Value {
                    name: value,
                    escape: kind == b'n',
                }
            }
        };
        line.tags += 1;
        tokens.push(token);
    }
    line.finish(&mut tokens);

    match sections.pop() {
        Some((opened, tag_start)) => Err(ParseError::new(
            format!(
                "Unclosed section \"{}\" at {}",
                opened.of(src),
                js_position(src, src.len())
            ),
            tag_start,
        )),
        None => Ok(tokens),
    }
}

/// Turns the token list into nodes: adjacent texts merged, sections given their `end`.
fn nest(src: &str, tokens: Vec<Token>) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::with_capacity(tokens.len());
    let mut open: Vec<usize> = Vec::new();
    // The text since the last node, pushed when a node or the end comes.
    let mut text: Option<Span> = None;
    let flush = |nodes: &mut Vec<Node>, text: &mut Option<Span>| {
        if let Some(span) = text.take() {
            nodes.push(Node::Text(span.of(src).into()));
        }
    };
    for token in tokens {
        match token {
            Token::Text(span) => match &mut text {
                Some(last) if last.end == span.start => last.end = span.end,
                _ => {
                    flush(&mut nodes, &mut text);
                    text = Some(span);
                }
            },
            Token::Removed | Token::Silent => {}
            Token::Value { name, escape } => {
                flush(&mut nodes, &mut text);
                nodes.push(Node::Value {
                    name: Name::new(src, name),
                    escape,
                });
            }
            Token::Open {
                name,
                inverted,
                body,
            } => {
                flush(&mut nodes, &mut text);
                open.push(nodes.len());
                nodes.push(Node::Section {
                    name: Name::new(src, name),
                    inverted,
                    end: 0,
                    raw: Span {
                        start: body,
                        end: body,
                    },
                });
            }
            Token::Close { at } => {
                flush(&mut nodes, &mut text);
                let after = nodes.len();
                // `tokenize` pairs every Close with an Open, so there is always one to pop.
                if let Some(Node::Section { end, raw, .. }) = open.pop().map(|i| &mut nodes[i]) {
                    *end = after;
                    raw.end = at;
                }
            }
            Token::Partial { name, indent } => {
                flush(&mut nodes, &mut text);
                nodes.push(Node::Partial { name, indent });
            }
        }
    }
    flush(&mut nodes, &mut text);
    nodes
}
