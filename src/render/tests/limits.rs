//! Limits: deep sections cost no stack, nesting past the cap fails cleanly, megabyte templates
//! and data render, and a cancelled render stops with its reason.

use super::*;

#[test]
fn deep_sections_that_are_skipped_cost_no_stack() {
    let n = 200_000;
    let template = "{{#f}}".repeat(n) + "x" + &"{{/f}}".repeat(n);
    assert_eq!(ok(&template, r#"{"f":false}"#), "");
}

#[test]
fn nesting_deeper_than_the_cap_fails_cleanly() {
    let n = crate::render::writer::MAX_DEPTH + 1;
    let template = "{{#t}}".repeat(n) + "x" + &"{{/t}}".repeat(n);
    let e = failure(&template, r#"{"t":true}"#);
    assert!(e.message.contains("nest more than"), "{}", e.message);
    let n = crate::render::writer::MAX_DEPTH - 1;
    let template = "{{#t}}".repeat(n) + "x" + &"{{/t}}".repeat(n);
    assert_eq!(ok(&template, r#"{"t":[1]}"#), "x");
    // A partial that includes itself forever.
    let e = render_partials("{{>p}}", "{}", r#"{"p":"a{{>p}}"}"#).unwrap_err();
    assert!(e.message.contains("nest more than"), "{}", e.message);
}

#[test]
fn megabyte_templates_and_data_render() {
    let rows: Vec<String> = (0..20_000)
        .map(|i| format!(r#"{{"id":{i},"name":"row <{i}>"}}"#))
        .collect();
    let data = format!(r#"{{"rows":[{}]}}"#, rows.join(","));
    let template =
        "<table>\n{{#rows}}\n  <tr><td>{{id}}</td><td>{{name}}</td></tr>\n{{/rows}}\n</table>\n"
            .repeat(20);
    let out = ok(&template, &data);
    assert_eq!(out.matches("<tr>").count(), 20 * 20_000);
    assert!(out.contains("<td>19999</td><td>row &lt;19999&gt;</td>"));
    let big = "a".repeat(3 << 20) + "{{x}}";
    assert_eq!(ok(&big, r#"{"x":"!"}"#).len(), (3 << 20) + 1);
}

#[test]
fn a_cancelled_render_stops_with_the_reason() {
    let template = "{{#l}}{{.}}{{/l}}";
    let data = format!("{{\"l\":[{}]}}", vec!["1"; 10_000].join(","));
    let cache = TemplateCache::new(8, 1 << 20);
    let data = json::parse(&data).unwrap();
    let e = render_with(
        &cache,
        template,
        Some(&data),
        None,
        &Config::default(),
        &context(&ABORTED),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::Aborted);
}

// ---- the cache ----
