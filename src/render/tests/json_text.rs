//! Data as JSON text (`config.data: 'json'`): it renders as its parsed view does, and text that
//! is not JSON is refused with the parser's position.

use super::*;

/// `render(template, text, partials, { data: 'json', ... })`: the data as a string of JSON.
fn render_json_text(
    template: &str,
    text: &str,
    partials: &str,
    config: &str,
) -> Result<Value, RpcError> {
    render_four(template, Value::from(text), partials, config)
}

#[test]
fn json_text_renders_as_its_parsed_view_does() {
    let template = "{{a}}|{{{a}}}|{{#s}}[{{b}}{{>p}}]{{/s}}|{{n}}|{{big}}|{{d}}|{{^e}}empty{{/e}}";
    let partials = r#"{"p":"<{{b}}>"}"#;
    for text in [
        r#"{"a":"<&>","s":[{"b":1},{"b":"x"}],"n":-0,"big":1e400,"d":2,"d":3,"e":[]}"#,
        r#"  {"a" : "\u00e9\ud83d\ude00\ud800", "s" : {"b" : false} }  "#,
        "[1,2]",
        r#""text""#,
        "null",
        "{}",
    ] {
        let parsed = json::parse(text).unwrap();
        let expected = crate::render::run(
            vec![template.into(), parsed, json::parse(partials).unwrap()],
            &context(&NOT_CANCELLED),
        )
        .map_err(|e| (e.code, e.message));
        for config in [
            r#"{"data":"json"}"#,
            r#"{"data":"json","escape":"html","output":"string"}"#,
        ] {
            assert_eq!(
                render_json_text(template, text, partials, config).map_err(|e| (e.code, e.message)),
                expected,
                "{text} with {config}"
            );
        }
    }
    // 1e400 is Infinity, -0 writes 0, a repeated key keeps its last value, a lone surrogate
    // escape is U+FFFD: what JSON.parse then a crossing into native code give.
    assert_eq!(
        render_json_text(
            "{{n}} {{big}} {{d}} {{s}}",
            r#"{"n":-0,"big":-1e400,"d":2,"d":3,"s":"\ud800!"}"#,
            "{}",
            r#"{"data":"json"}"#
        )
        .unwrap(),
        Value::from("0 -Infinity 3 \u{FFFD}!")
    );
    // With other tags and Buffer output.
    assert_eq!(
        render_json_text(
            "<%a%>",
            r#"{"a":"é<"}"#,
            "null",
            r#"{"tags":["<%","%>"],"data":"json","output":"buffer"}"#
        )
        .unwrap(),
        Value::Buffer("é&lt;".as_bytes().to_vec())
    );
    // `data: 'view'` is the default: a string is then the view itself.
    assert_eq!(
        render_json_text("{{.}}", r#"{"a":1}"#, "{}", r#"{"data":"view"}"#).unwrap(),
        Value::from("{&quot;a&quot;:1}")
    );
}

#[test]
fn json_text_that_is_not_json_is_refused_with_the_parsers_position() {
    let cases = [
        ("{\"a\":1,}", "render: data is not JSON text (config.data is 'json'): trailing comma at line 1 column 8"),
        ("{\"a\":\n  tru}", "render: data is not JSON text (config.data is 'json'): expected ident at line 2 column 6"),
        ("", "render: data is not JSON text (config.data is 'json'): EOF while parsing a value at line 1 column 0"),
        ("{} x", "render: data is not JSON text (config.data is 'json'): trailing characters at line 1 column 4"),
        ("NaN", "render: data is not JSON text (config.data is 'json'): expected value at line 1 column 1"),
    ];
    for (text, message) in cases {
        let e = render_json_text("{{a}}", text, "{}", r#"{"data":"json"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidParams, message),
            "{text:?}"
        );
    }
    let deep = format!("{}{}", "[".repeat(600), "]".repeat(600));
    let e = render_json_text("{{a}}", &deep, "{}", r#"{"data":"json"}"#).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::InvalidParams, "render: data, JSON text (config.data is 'json'): it is nested more than 512 levels deep")
    );
    // Data that is not a string, or no data at all.
    for (params, got) in [
        (
            vec![
                "{{a}}".into(),
                json::parse(r#"{"a":1}"#).unwrap(),
                Value::Null,
                json::parse(r#"{"data":"json"}"#).unwrap(),
            ],
            "object",
        ),
        (
            vec![
                "{{a}}".into(),
                Value::Null,
                Value::Null,
                json::parse(r#"{"data":"json"}"#).unwrap(),
            ],
            "null",
        ),
    ] {
        let e = crate::render::run(params, &context(&NOT_CANCELLED)).unwrap_err();
        assert_eq!(
            (e.code, e.message),
            (ErrorCode::InvalidParams, format!("render: config.data is 'json', so data must be a string of JSON text, got {got}"))
        );
    }
}

// ---- size, depth, cancellation ----
