//! mustache.js's behaviour where the spec and JavaScript decide: partial indentation,
//! standalone lines, dotted names, how values print and which are truthy, lookups through the
//! views, what JavaScript rejects (with its message), malformed templates, set delimiters.

use super::*;

#[test]
fn partial_indentation_follows_mustache_js() {
    let p = r#"{"p":"x\ny"}"#;
    // Text before the tag: first line as is, later lines indented by one space per character.
    assert_eq!(render_partials("ab{{>p}}", "{}", p).unwrap(), "abx\n  y");
    // Not standalone and blank before: the indentation is kept *and* applied.
    assert_eq!(
        render_partials("  {{>p}} z\n", "{}", p).unwrap(),
        "    x\n  y z\n"
    );
    // An astral character is two UTF-16 code units, so two spaces.
    assert_eq!(
        render_partials("😀{{>p}}\n", "{}", r#"{"p":"a\nb\n"}"#).unwrap(),
        "😀a\n  b\n\n"
    );
    // Whitespace other than spaces and tabs is dropped from the indentation.
    assert_eq!(
        render_partials("\u{a0}\t{{>p}}\n", "{}", r#"{"p":"a\nb\n"}"#).unwrap(),
        "\ta\n\tb\n"
    );
    // Only the line's first tag indents.
    assert_eq!(
        render_partials("  {{!c}}{{>p}}\n", "{}", p).unwrap(),
        "x\ny"
    );
}

#[test]
fn standalone_lines_follow_mustache_js() {
    // Several non-variable tags on one line: still standalone.
    assert_eq!(ok("  {{#a}} {{/a}}  \r\nx", r#"{"a":true}"#), "x");
    // A variable tag makes the line not standalone.
    assert_eq!(ok(" {{#a}}{{b}}{{/a}} \nx", r#"{"a":true}"#), "  \nx");
    // A newline inside a tag does not end the line.
    assert_eq!(ok("{{!a\nb}}  \nx", "{}"), "x");
    // A lone \r is not a line break.
    assert_eq!(ok("a\r{{#t}}\r{{/t}}\rb", r#"{"t":true}"#), "a\r\r\rb");
}

#[test]
fn dotted_names_follow_mustache_js() {
    let data = r#"{"a":"héllo😀","n":5,"list":[10,20],"o":{"b":null},"b":{"c":1}}"#;
    assert_eq!(ok("{{a.length}} {{a.1}} [{{a.toString}}]", data), "7 é []");
    assert_eq!(ok("{{#a.length}}[{{.}}]{{/a.length}}", data), "[7]");
    assert_eq!(ok("{{list.length}} {{list.1}} {{list.01}}", data), "2 20 ");
    assert_eq!(ok("{{n.toFixed}}|{{n.x}}", data), "|");
    // A null on the way stops the walk in this view; the outer views are still tried.
    assert_eq!(ok("{{o.b.c}}", data), "");
    assert_eq!(ok("{{#o}}{{b.c}}{{/o}}", data), "1");
    // The spec's "Context Precedence": mustache.js finds the path from an outer view.
    assert_eq!(
        ok("{{#a}}{{b.c}}{{/a}}", r#"{"a":{"b":{}},"b":{"c":"ERROR"}}"#),
        "ERROR"
    );
    // A leading dot is part of a plain key; a trailing or double dot is an empty segment.
    assert_eq!(
        ok("{{.a}}|{{a.}}|{{a..b}}", r#"{".a":1,"a":{"":2}}"#),
        "1|2|"
    );
    // A plain key on a primitive view falls through to the outer views.
    assert_eq!(
        ok("{{#s}}{{length}}{{/s}}", r#"{"s":"abc","length":"L"}"#),
        "L"
    );
}

#[test]
fn values_print_as_javascript_string_does() {
    let data = r#"{"a":[1,null,[2,[3,null]],{},"<&>",true,-0,1e21,0.1],"o":{"valueOf":1}}"#;
    assert_eq!(
        ok("{{a}}", data),
        "1,,2,3,,[object Object],&lt;&amp;&gt;,true,0,1e+21,0.1"
    );
    assert_eq!(
        ok("{{{a}}}", data),
        "1,,2,3,,[object Object],<&>,true,0,1e+21,0.1"
    );
    assert_eq!(ok("{{o}}|{{{o}}}", data), "[object Object]|[object Object]");
    assert_eq!(
        ok("{{e}}|{{x}}", r#"{"e":"/`='\""}"#),
        "&#x2F;&#x60;&#x3D;&#39;&quot;|"
    );
    // An own `toString` key leaves JavaScript no way to convert the object.
    let e = failure("{{o}}", r#"{"o":{"toString":"x"}}"#);
    assert_eq!(e.message, "Cannot convert object to primitive value");
    assert_eq!(e.code, ErrorCode::CommandFailed);
    let e = failure("{{{a}}}", r#"{"a":[{"toString":1}]}"#);
    assert_eq!(e.message, "Cannot convert object to primitive value");
}

#[test]
fn numbers_from_json_text_print_as_javascript_prints_them() {
    // Parsed from JSON text (as big params travel), then printed: each must come back as
    // JavaScript's shortest round-trip form, so the parse must be correctly rounded.
    let numbers = [
        "1.377765818089492e-104",
        "-4.6956962579974316e+232",
        "2.1814326283228215e+279",
        "1.0003619632938907e+180",
        "-5.568156403259782e-14",
        "1.2026034373596357e-8",
        "8.07926484948155e-11",
        "2.4659021726554106e+27",
    ];
    let data = format!(r#"{{"l":[{}]}}"#, numbers.join(","));
    let expected: String = numbers.iter().map(|n| format!("{n},")).collect();
    assert_eq!(ok("{{#l}}{{.}},{{/l}}", &data), expected);
}

#[test]
fn sections_use_javascript_truthiness() {
    let data = r#"{"e":[],"o":{},"z":"0","n":0,"s":"","f":false,"x":null,"str":"abc","num":5}"#;
    assert_eq!(ok("{{#e}}E{{/e}}{{^e}}!E{{/e}}", data), "!E");
    assert_eq!(ok("{{#o}}O{{/o}}{{#z}}Z{{/z}}", data), "OZ");
    assert_eq!(
        ok(
            "{{^n}}n{{/n}}{{^s}}s{{/s}}{{^f}}f{{/f}}{{^x}}x{{/x}}{{^u}}u{{/u}}",
            data
        ),
        "nsfxu"
    );
    assert_eq!(
        ok("{{#str}}{{.}}{{/str}}|{{#num}}{{.}}{{/num}}", data),
        "abc|5"
    );
    assert_eq!(
        ok("{{#l}}{{.}};{{/l}}", r#"{"l":[1,"a",[2,3],true]}"#),
        "1;a;2,3;true;"
    );
}

#[test]
fn a_key_the_innermost_object_lacks_comes_from_outer_views_unless_it_is_a_built_in() {
    let data = r#"{"k":"outer","o":{"k":"inner"},"e":{},"toString":"outer","l":[{"k":1},{}]}"#;
    assert_eq!(
        ok(
            "{{#o}}{{k}}{{/o}} {{#e}}{{k}}{{/e}} {{#l}}{{k}};{{/l}}",
            data
        ),
        "inner outer 1;outer;"
    );
    // An object inherits `toString`, so the lookup stops at the innermost view.
    let e = failure("{{#e}}{{toString}}{{/e}}", data);
    assert!(e.message.contains("built-in"), "{}", e.message);
    // An array inherits `map`; a string view does not stop a plain key.
    let e = failure("{{#l}}{{map}}{{/l}}", r#"{"l":[[1]],"map":"x"}"#);
    assert!(e.message.contains("built-in"), "{}", e.message);
    assert_eq!(
        ok("{{#s}}{{k}}{{/s}}", r#"{"s":"str","k":"outer"}"#),
        "outer"
    );
}

#[test]
fn values_of_every_kind_in_the_innermost_object_write_as_string_does() {
    let data = r#"{"o":{"s":"<a&b>","n":-12,"f":0.5,"t":true,"z":null,"l":[1,"<"],"m":{}},
        "outer":"<o>"}"#;
    assert_eq!(
        ok(
            "{{#o}}{{s}}|{{{s}}}|{{&s}}|{{n}}|{{f}}|{{t}}|{{z}}|{{l}}|{{{l}}}|{{m}}|{{outer}}|{{{outer}}}{{/o}}",
            data
        ),
        "&lt;a&amp;b&gt;|<a&b>|<a&b>|-12|0.5|true||1,&lt;|1,<|[object Object]|&lt;o&gt;|<o>"
    );
}

#[test]
fn lookups_that_javascript_rejects_fail_with_its_message() {
    let e = failure("{{#list}}{{name}}{{/list}}", r#"{"list":[null]}"#);
    assert_eq!(e.message, "Cannot read properties of null (reading 'name')");
    let e = run(vec!["{{a}}".into()]).unwrap_err();
    assert_eq!(
        e.message,
        "Cannot read properties of undefined (reading 'a')"
    );
    // Dotted names and `.` never read from null.
    assert_eq!(
        ok("{{#list}}{{a.b}}{{.}}{{/list}}", r#"{"list":[null]}"#),
        ""
    );
}

#[test]
fn built_ins_and_lone_surrogates_are_refused_not_imitated() {
    for template in ["{{toString}}", "{{a.constructor}}", "{{#l.map}}x{{/l.map}}"] {
        let e = failure(template, r#"{"a":{},"l":[1]}"#);
        assert_eq!(e.code, ErrorCode::CommandFailed);
        assert!(e.message.contains("built-in"), "{template}: {}", e.message);
    }
    // Own keys of those names are ordinary data.
    assert_eq!(ok("{{toString}}", r#"{"toString":"mine"}"#), "mine");
    let e = failure("{{s.0}}", r#"{"s":"😀"}"#);
    assert!(e.message.contains("surrogate"), "{}", e.message);
    // Only printing a lone surrogate fails; lookups go on through it as in JavaScript.
    assert_eq!(
        ok(
            "{{s.0.z}}|{{s.1.length}}|{{#s.0}}{{n}}{{/s.0}}",
            r#"{"s":"😀","n":1}"#
        ),
        "|1|1"
    );
    let e = render_partials("{{>valueOf}}", "{}", "{}").unwrap_err();
    assert!(e.message.contains("built-in"), "{}", e.message);
}

#[test]
fn malformed_templates_fail_with_mustache_js_messages() {
    let cases = [
        ("é😀{{a", "Unclosed tag at 6"),
        ("{{#a}}", "Unclosed section \"a\" at 6"),
        ("{{/a}}", "Unopened section \"a\" at 0"),
        ("{{#a}}{{/b}}", "Unclosed section \"a\" at 6"),
        ("{{=<%=}}", "Invalid tags: <%"),
        ("{{==}}", "Invalid tags: "),
        ("{{{a}}", "Unclosed tag at 6"),
        ("x{{=<% %>=}}<%a", "Unclosed tag at 15"),
    ];
    for (template, message) in cases {
        let e = failure(template, "{}");
        assert_eq!(e.code, ErrorCode::CommandFailed, "{template}");
        // mustache.js's message, then the place (`place.rs`).
        let (words, place) = e.message.split_once(" (line ").unwrap();
        assert_eq!(words, message, "{template}");
        assert!(place.contains(", column "), "{template}: {}", e.message);
    }
}

#[test]
fn set_delimiters_follow_mustache_js() {
    // Extra parts after the two tags are ignored; `=` ends the value.
    assert_eq!(ok("{{=a b c=}}a x b", r#"{"x":1}"#), "1");
    assert_eq!(ok("{{= | | =}}|{x}|", r#"{"x":"<"}"#), "<");
    assert_eq!(
        ok("{{=<% %>=}}<%{x}%><%&x%><%={{ }}=%>{{x}}", r#"{"x":"<"}"#),
        "<<&lt;"
    );
}

// ---- params ----
