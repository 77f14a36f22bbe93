//! Where a parse error is (issue #32): the template's name, line, column and the offending
//! line with a caret, added to mustache.js's message and given as the error's `data`.
//!
//! - Lines are split at `\n` only (as mustache.js splits them); a `\r` ending a line (CRLF) is
//!   not shown, and a lone `\r` does not end a line.
//! - Lines and columns are 1-based; a column counts Unicode code points (characters: `é` and
//!   `😀` are one column each, a tab is one). `offset` is in UTF-16 code units from the start
//!   of the text, as mustache.js's positions are.
//! - The caret line copies the tabs before the column and puts a space for every other
//!   character, so it lines up under the place wherever the tabs stop. A line longer than
//!   [`EXCERPT_MAX`] characters is cut around the column, with `…` for what is left out.
//! - A partial indented by its tag (see `parse.rs`) is parsed indented, but its error's place
//!   is in its own text, as its file holds it ([`unindent`]); mustache.js's message keeps
//!   mustache.js's position, in the indented text.

use super::parse::{Indent, ParseError};
use crate::rpc::{Map, RpcError, Value};

/// The most characters of the offending line an error shows.
const EXCERPT_MAX: usize = 120;

/// A place in a template's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Place {
    /// 1-based.
    pub line: usize,
    /// 1-based, in code points.
    pub column: usize,
    /// From the start of the text, in UTF-16 code units.
    pub offset: usize,
    /// The line, then a line with the caret, each after a gutter with the line number.
    pub excerpt: String,
}

/// The place of byte `at` of `source` (at most `source.len()`, and on a character boundary).
pub fn locate(source: &str, at: usize) -> Place {
    let before = &source[..at];
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let end = source[at..].find('\n').map_or(source.len(), |i| at + i);
    let line = before.matches('\n').count() + 1;
    let text = source[start..end]
        .strip_suffix('\r')
        .unwrap_or(&source[start..end]);
    let lead = &source[start..at];
    let column = lead.chars().count() + 1;
    // The part of the line shown: all of it, or EXCERPT_MAX characters around the column.
    let chars: Vec<char> = text.chars().collect();
    let (from, to) = if chars.len() <= EXCERPT_MAX {
        (0, chars.len())
    } else {
        let from = (column - 1).saturating_sub(EXCERPT_MAX / 2);
        let from = from.min(chars.len() - EXCERPT_MAX);
        (from, from + EXCERPT_MAX)
    };
    let mut shown: String = chars[from..to].iter().collect();
    let mut caret: String = lead
        .chars()
        .skip(from)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    if from > 0 {
        shown.insert(0, '…');
        caret.insert(0, ' ');
    }
    if to < chars.len() {
        shown.push('…');
    }
    caret.push('^');
    let number = line.to_string();
    let gutter = " ".repeat(number.len());
    Place {
        line,
        column,
        offset: before.encode_utf16().count(),
        excerpt: format!("  {number} | {shown}\n  {gutter} | {caret}"),
    }
}

/// Byte `at` of `indented` (`original` after `indent.apply`) as a byte of `original`: the same
/// line, less the indentation put before it (a place inside the indentation is the line's
/// start).
pub fn unindent(at: usize, indented: &str, original: &str, indent: &Indent) -> usize {
    let line = indented[..at].matches('\n').count();
    let column = at - indented[..at].rfind('\n').map_or(0, |i| i + 1);
    let start: usize = original.split('\n').take(line).map(|l| l.len() + 1).sum();
    let text = original[start..].split('\n').next().unwrap_or("");
    let indented_line = !text.is_empty() && (line > 0 || indent.first_line);
    // The indentation is spaces and tabs (one byte each): what follows it is the original line.
    let column = if indented_line {
        column.saturating_sub(indent.text.len())
    } else {
        column
    };
    start + column.min(text.len())
}

/// The CommandFailed error for `error`, met parsing `source`: mustache.js's message, then the
/// place, named by `template` (the render's `config.name`) and `partial` (the partial's name,
/// when the text is a partial's); the same as `data`:
/// `{ template, partial, line, column, offset }`.
pub fn parse_failed(
    error: &ParseError,
    source: &str,
    template: Option<&str>,
    partial: Option<&str>,
) -> RpcError {
    let place = locate(source, error.at);
    let name = match (partial, template) {
        (Some(partial), Some(template)) => format!("partial \"{partial}\" in {template}, "),
        (Some(partial), None) => format!("partial \"{partial}\", "),
        (None, Some(template)) => format!("{template}, "),
        (None, None) => String::new(),
    };
    let message = format!(
        "{} ({name}line {}, column {})\n{}",
        error.message, place.line, place.column, place.excerpt
    );
    let name_value = |name: Option<&str>| name.map_or(Value::Null, Value::from);
    let mut data = Map::new();
    data.insert("template", name_value(template));
    data.insert("partial", name_value(partial));
    data.insert("line", Value::Number(place.line as f64));
    data.insert("column", Value::Number(place.column as f64));
    data.insert("offset", Value::Number(place.offset as f64));
    RpcError::failed(message).with_data(Value::Object(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::parse::Indent;

    fn at(source: &str, needle: &str) -> Place {
        locate(source, source.find(needle).unwrap())
    }

    #[test]
    fn first_line_first_column() {
        let p = locate("{{#a}}", 0);
        assert_eq!((p.line, p.column, p.offset), (1, 1, 0));
        assert_eq!(p.excerpt, "  1 | {{#a}}\n    | ^");
    }

    #[test]
    fn lines_and_columns_are_one_based() {
        let p = at("<ul>\n  <li>\n    {{#items}}\n", "{{#items}}");
        assert_eq!((p.line, p.column, p.offset), (3, 5, 16));
        assert_eq!(p.excerpt, "  3 |     {{#items}}\n    |     ^");
    }

    #[test]
    fn crlf_lines_do_not_show_the_cr() {
        let source = "a\r\nb {{x\r\nc";
        let p = at(source, "{{x");
        assert_eq!((p.line, p.column, p.offset), (2, 3, 5));
        assert_eq!(p.excerpt, "  2 | b {{x\n    |   ^");
        // A lone \r ends no line (mustache.js splits at \n only).
        let p = at("a\rb{{x", "{{x");
        assert_eq!((p.line, p.column), (1, 4));
    }

    #[test]
    fn tabs_are_one_column_and_kept_under_the_caret() {
        let p = at("\t\t{{#a}}", "{{");
        assert_eq!((p.line, p.column), (1, 3));
        assert_eq!(p.excerpt, "  1 | \t\t{{#a}}\n    | \t\t^");
    }

    #[test]
    fn columns_count_code_points_and_offsets_utf16_units() {
        // é is 2 bytes, 1 UTF-16 unit; 😀 is 4 bytes, 2 units; each is one column.
        let p = at("é😀{{a", "{{");
        assert_eq!((p.line, p.column, p.offset), (1, 3, 3));
        assert_eq!(p.excerpt, "  1 | é😀{{a\n    |   ^");
        let p = at("😀\n日本{{a", "{{");
        assert_eq!((p.line, p.column, p.offset), (2, 3, 5));
    }

    #[test]
    fn the_end_of_the_text_is_a_place() {
        let p = locate("ab", 2);
        assert_eq!((p.line, p.column, p.offset), (1, 3, 2));
        assert_eq!(p.excerpt, "  1 | ab\n    |   ^");
        // After a final newline: an empty last line.
        let p = locate("ab\n", 3);
        assert_eq!((p.line, p.column, p.offset), (2, 1, 3));
        assert_eq!(p.excerpt, "  2 | \n    | ^");
        let p = locate("", 0);
        assert_eq!((p.line, p.column, p.offset), (1, 1, 0));
    }

    #[test]
    fn the_gutter_is_as_wide_as_the_line_number() {
        let source = "\n".repeat(11) + "{{#a}}";
        let p = at(&source, "{{");
        assert_eq!(p.line, 12);
        assert_eq!(p.excerpt, "  12 | {{#a}}\n     | ^");
    }

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let source = "x".repeat(300) + "{{#a}}" + &"y".repeat(300);
        let p = at(&source, "{{");
        assert_eq!(p.column, 301);
        let (line, caret) = p.excerpt.split_once('\n').unwrap();
        assert!(line.starts_with("  1 | …x"), "{line}");
        assert!(line.ends_with("y…"), "{line}");
        // The caret is under the tag's first brace.
        let shown = line.chars().position(|c| c == '{').unwrap();
        assert_eq!(caret.chars().count() - 1, shown);
    }

    #[test]
    fn an_indented_partials_place_is_in_its_own_text() {
        let original = "a\n\t{{/x}}\n";
        let indent = Indent::new("  ");
        let indented = indent.apply(original);
        assert_eq!(indented, "  a\n  \t{{/x}}\n");
        let at = unindent(indented.find("{{").unwrap(), &indented, original, &indent);
        assert_eq!(at, original.find("{{").unwrap());
        let p = locate(original, at);
        assert_eq!((p.line, p.column), (2, 2));
        // Inside the indentation: the line's start.
        assert_eq!(
            unindent(
                indented.find('a').unwrap() - 1,
                &indented,
                original,
                &indent
            ),
            0
        );
        // A first line after text is not indented (see parse.rs): nothing to take off there.
        let after_text = Indent::new("x ");
        let indented = after_text.apply("{{/x}}");
        assert_eq!(unindent(0, &indented, "{{/x}}", &after_text), 0);
        // The end of the text.
        let indented = indent.apply(original);
        assert_eq!(
            unindent(indented.len(), &indented, original, &indent),
            original.len()
        );
    }

    #[test]
    fn errors_carry_the_place_in_message_and_data() {
        let error = ParseError {
            message: String::from("Unclosed section \"items\" at 22"),
            at: 5,
        };
        let source = "<ul>\n{{#items}}\n<li>";
        let e = parse_failed(&error, source, Some("list.mustache"), None);
        assert_eq!(
            e.message,
            "Unclosed section \"items\" at 22 (list.mustache, line 2, column 1)\n  2 | {{#items}}\n    | ^"
        );
        let data = crate::rpc::json::to_string(e.data.as_ref().unwrap());
        assert_eq!(
            data,
            r#"{"template":"list.mustache","partial":null,"line":2,"column":1,"offset":5}"#
        );
        let e = parse_failed(&error, source, None, Some("row"));
        assert!(
            e.message.contains("(partial \"row\", line 2"),
            "{}",
            e.message
        );
        let e = parse_failed(&error, source, Some("page"), Some("row"));
        assert!(e.message.contains("(partial \"row\" in page, line 2"));
        let e = parse_failed(&error, source, None, None);
        assert!(e.message.contains("at 22 (line 2, column 1)\n"));
    }
}
