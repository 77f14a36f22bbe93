//! The params a render takes: data JSON cannot carry is refused with its path, params are
//! checked, and the config (tags, escape, output) does what it says or is refused naming the
//! option.

use super::*;

#[test]
fn non_json_data_is_refused_with_its_path() {
    let bigint = Value::BigInt(crate::rpc::bigint::BigInt {
        negative: false,
        words: vec![1],
    });
    let mut inner = crate::rpc::Map::new();
    inner.insert("id", bigint);
    let mut data = crate::rpc::Map::new();
    data.insert(
        "rows",
        Value::Array(vec![Value::Null, Value::Object(inner)]),
    );
    data.insert("raw", Value::Bytes(vec![1, 2]));
    let e = run(vec!["{{raw}}".into(), Value::Object(data)]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);
    assert!(
        e.message.starts_with("render: data.rows[1].id is a bigint"),
        "{}",
        e.message
    );
    assert!(e.message.contains("mustache.js"), "{}", e.message);
}

#[test]
fn params_are_checked() {
    let e = run(vec![]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);
    let e = run(vec![Value::Number(1.0)]).unwrap_err();
    assert_eq!(e.message, "render: template must be a string, got number");
    let e = run(vec!["x".into(), Value::Null, "p".into()]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);
    let e = render_partials("x", "{}", r#"{"p":1}"#).unwrap_err();
    assert_eq!(
        e.message,
        "render: partials.p must be a template string, got number"
    );
    // No partials, or null ones, render nothing.
    assert_eq!(run(vec!["a{{>p}}b".into(), Value::Null]).unwrap(), "ab");
    assert_eq!(
        render_partials("a{{>p}}b", "{}", r#"{"p":null}"#).unwrap(),
        "ab"
    );
}

// ---- config: tags, escape, output ----

#[test]
fn config_tags_start_the_template_and_every_partial() {
    let template = "<%a%>{{a}}<%#s%>[<%b%>|<%>p%>]<%/s%><%={{ }}=%>{{a}}";
    let data = r#"{"a":"<&>","s":[{"b":1},{"b":2}]}"#;
    let partials = r#"{"p":"<%b%>{{b}}"}"#;
    // mustache.js 4.2.0, with the tags as an array and as `{ tags }`.
    let expected = Value::from("&lt;&amp;&gt;{{a}}[1|1{{b}}][2|2{{b}}]&lt;&amp;&gt;");
    for config in [r#"["<%","%>"]"#, r#"{"tags":["<%","%>"]}"#] {
        assert_eq!(
            render_config(template, data, partials, config).unwrap(),
            expected
        );
    }
    assert_eq!(
        render_config(
            "[[#a]][[.]][[/a]]",
            r#"{"a":[1,2]}"#,
            "{}",
            r#"{"tags":["[[","]]"]}"#
        )
        .unwrap(),
        Value::from("12")
    );
    // Ignored, as mustache.js ignores them: a config of another type, unset tags, unknown keys.
    for config in [
        r#""<% %>""#,
        "7",
        "true",
        r#"{"tags":null,"x":1}"#,
        "{}",
        "null",
    ] {
        assert_eq!(
            render_config("<%a%>{{a}}", r#"{"a":1}"#, "{}", config).unwrap(),
            Value::from("<%a%>1"),
            "{config}"
        );
    }
}

#[test]
fn a_closing_tag_that_starts_with_whitespace_closes_as_in_mustache_js() {
    // mustache.js closes a tag with /\s*close/, whose \s* gives back the whitespace `close`
    // starts with. Its outputs, 4.2.0.
    let data = r#"{"a":"<","s":[1,2]}"#;
    for (template, expected) in [
        ("<%a %> <%#s %><%. %><%/s %>", "&lt; 12"),
        ("<%a\t %>", "&lt;"),
        ("<%a\t\u{a0} %>|", "&lt;|"),
    ] {
        assert_eq!(
            render_config(template, data, "{}", r#"["<%"," %>"]"#).unwrap(),
            Value::from(expected),
            "{template:?}"
        );
    }
}

#[test]
fn one_text_parsed_with_other_tags_is_another_cached_template() {
    let cache = TemplateCache::new(16, 1 << 20);
    let tags = crate::render::parse::Tags {
        open: "<%".into(),
        close: "%>".into(),
    };
    let plain = cache.get_or_parse("<%a%>{{a}}", None).unwrap();
    let custom = cache.get_or_parse("<%a%>{{a}}", Some(&tags)).unwrap();
    assert!(!Arc::ptr_eq(&plain, &custom));
    assert!(Arc::ptr_eq(
        &custom,
        &cache.get_or_parse("<%a%>{{a}}", Some(&tags)).unwrap()
    ));
    assert!(Arc::ptr_eq(
        &plain,
        &cache.get_or_parse("<%a%>{{a}}", None).unwrap()
    ));
    // Keys spell the tags unambiguously: "<" + "%%>" is not "<%" + "%>".
    let other = crate::render::parse::Tags {
        open: "<".into(),
        close: "%%>".into(),
    };
    let a = cache.get_or_parse("text", Some(&tags)).unwrap();
    let b = cache.get_or_parse("text", Some(&other)).unwrap();
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 4);
}

#[test]
fn escape_none_writes_values_as_triple_mustaches_do() {
    for config in [r#"{"escape":false}"#, r#"{"escape":"none"}"#] {
        assert_eq!(
            render_config("{{a}}{{{a}}}{{n}}", r#"{"a":"<&>","n":1.5}"#, "{}", config).unwrap(),
            Value::from("<&><&>1.5")
        );
    }
    for config in [r#"{"escape":"html"}"#, r#"{"escape":null}"#] {
        assert_eq!(
            render_config("{{a}}", r#"{"a":"<&>"}"#, "{}", config).unwrap(),
            Value::from("&lt;&amp;&gt;")
        );
    }
}

#[test]
fn output_buffer_is_the_utf8_bytes_of_the_string() {
    let out = render_config("é{{a}}😀", r#"{"a":"<"}"#, "null", r#"{"output":"buffer"}"#).unwrap();
    assert_eq!(out, Value::Buffer("é&lt;😀".as_bytes().to_vec()));
}

#[test]
fn bad_configs_are_refused_naming_the_option() {
    let cases = [
        (r#"["<%"]"#, r#"render: config must be two non-empty delimiter strings, such as ["<%", "%>"], got ["<%"]"#),
        (r#"["<%","%>","x"]"#, r#"render: config must be two non-empty delimiter strings, such as ["<%", "%>"], got ["<%","%>","x"]"#),
        (r#"{"tags":["","%>"]}"#, r#"render: config.tags must be two non-empty delimiter strings, such as ["<%", "%>"], got ["","%>"]"#),
        (r#"{"tags":[1,2]}"#, r#"render: config.tags must be two non-empty delimiter strings, such as ["<%", "%>"], got [1,2]"#),
        (r#"{"tags":"<% %>"}"#, r#"render: config.tags must be two non-empty delimiter strings, such as ["<%", "%>"], got "<% %>""#),
        (r#"{"escape":0}"#, "render: config.escape must be a function, 'html', 'none' or false (no escaping), got 0"),
        (r#"{"escape":true}"#, "render: config.escape must be a function, 'html', 'none' or false (no escaping), got true"),
        (r#"{"output":"stream"}"#, r#"render: config.output must be 'string' or 'buffer', got "stream""#),
        (r#"{"data":"JSON"}"#, r#"render: config.data must be 'view' (data is the view) or 'json' (data is the view's JSON text), got "JSON""#),
        (r#"{"data":true}"#, "render: config.data must be 'view' (data is the view) or 'json' (data is the view's JSON text), got true"),
    ];
    for (config, message) in cases {
        let e = render_config("{{a}}", "{}", "{}", config).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidParams, message)
        );
    }
}

// ---- config.data: 'json' ----
