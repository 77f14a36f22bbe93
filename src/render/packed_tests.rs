//! A render of params that crossed packed reads them in place (`render::run_packed`); it must
//! answer exactly what the render of their values answers (`render::run`): the same output, or
//! the same error. Random templates over the names random data holds (sections over arrays
//! and objects, inverted sections, dotted names, `.`, indexes and `length`, built-ins,
//! partials), and hand-picked cases.

use crate::rpc::command::TestFlags;
use crate::rpc::packed::tree::tests::{pack, plain};
use crate::rpc::{Map, Value};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// Both renders of `params` (a leading template travelling apart, as lib/params.js sends it).
fn both(params: &[Value]) -> (String, String) {
    let flags = TestFlags::new();
    let outcome = |r: Result<Value, crate::rpc::RpcError>| match r {
        Ok(Value::String(s)) => format!("ok {s}"),
        Ok(other) => format!("ok {other:?}"),
        Err(e) => format!("error {:?} {}", e.code, e.message),
    };
    let values = outcome(super::run(
        params.to_vec(),
        &flags.ctx().with_plain_params(),
    ));
    let packed = match params.first() {
        Some(Value::String(template)) if params.len() > 1 => pack(&params[1..], Some(template)),
        _ => pack(params, None),
    };
    let tree = outcome(super::run_packed(packed, &flags.ctx().with_plain_params()));
    (values, tree)
}

fn object(entries: &[(&str, Value)]) -> Value {
    let mut map = Map::new();
    for (k, v) in entries {
        map.insert(*k, v.clone());
    }
    Value::Object(map)
}

#[test]
fn hand_picked_renders_read_in_place_as_from_values() {
    let rows = Value::Array(
        (0..3)
            .map(|i| {
                object(&[
                    ("id", Value::from(i as f64)),
                    ("name", Value::from(format!("<n{i}> & é"))),
                    ("tags", Value::Array(vec![Value::from("x"), Value::Null])),
                ])
            })
            .collect(),
    );
    let data = object(&[
        ("rows", rows),
        (
            "meta",
            object(&[("title", Value::from("T&T")), ("n", Value::from(3.5))]),
        ),
        ("empty", Value::Array(vec![])),
        ("s", Value::from("abc")),
        ("o", object(&[("toString", Value::from(1.0))])),
    ]);
    let partials = object(&[("p", Value::from("[{{id}}:{{name}}]"))]);
    let cases = [
        "{{#rows}}<{{id}}|{{name}}|{{{name}}}|{{tags}}|{{meta.title}}>{{/rows}}",
        "{{#rows}}{{>p}}{{/rows}}{{^empty}}none{{/empty}}{{#empty}}x{{/empty}}",
        "{{rows.length}} {{rows.1.name}} {{s.length}} {{s.1}} {{meta}} {{rows}}",
        "{{#meta}}{{title}}-{{n}}{{/meta}}{{#s}}[{{.}}]{{/s}}{{^s}}no{{/s}}",
        "{{o}}",
        "{{rows.toString}}",
        "{{#rows}}{{#tags}}({{.}}){{/tags}}{{/rows}}",
        "{{missing.deep}}{{#missing}}x{{/missing}}{{^missing}}y{{/missing}}",
    ];
    for template in cases {
        let (values, tree) = both(&[Value::from(template), data.clone(), partials.clone()]);
        assert_eq!(tree, values, "{template}");
    }
    // Partials that are not an object of strings, a template that is not a string, the wrong
    // count: the same refusals.
    for params in [
        vec![Value::from("{{>p}}"), data.clone(), Value::from(1.0)],
        vec![
            Value::from("{{>p}}"),
            data.clone(),
            object(&[("p", Value::from(1.0))]),
        ],
        vec![Value::from(1.0), data.clone()],
        vec![Value::from("{{#a}}"), data.clone()],
        vec![
            Value::from("x"),
            data.clone(),
            Value::Null,
            Value::Null,
            Value::Null,
        ],
        vec![
            Value::from("{{a}}"),
            data.clone(),
            Value::Null,
            Value::from("yes"),
        ],
        vec![
            Value::from("<%a%>"),
            object(&[("a", Value::from("<"))]),
            Value::Null,
            Value::Array(vec![Value::from("<%"), Value::from("%>")]),
        ],
        vec![
            Value::from("{{a}}"),
            Value::from("{\"a\": 1}"),
            Value::Null,
            object(&[("data", Value::from("json"))]),
        ],
    ] {
        let (values, tree) = both(&params);
        assert_eq!(tree, values, "{params:?}");
    }
}

/// A random template over the names [`plain`] data holds.
fn template() -> impl Strategy<Value = String> {
    let name = select(vec![
        "a",
        "b",
        "id",
        "é",
        "😀",
        ".",
        "a.b",
        "b.a",
        "a.0",
        "id.length",
        "length",
        "0",
        "a.length",
        "toString",
        "a.b.id",
    ]);
    let leaf = prop_oneof![
        select(vec!["x", " ", "<&>", "\n"]).prop_map(str::to_string),
        name.clone().prop_map(|n| format!("{{{{{n}}}}}")),
        name.clone().prop_map(|n| format!("{{{{{{{n}}}}}}}")),
        name.clone().prop_map(|n| format!("{{{{&{n}}}}}")),
        Just("{{>p}}".to_string()),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        (select(vec!["#", "^"]), name.clone(), vec(inner, 0..4))
            .prop_map(|(kind, n, body)| format!("{{{{{kind}{n}}}}}{}{{{{/{n}}}}}", body.concat()))
    })
    .prop_map(|t| t)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_renders_read_in_place_as_from_values(
        templates in vec(template(), 1..4),
        data in plain(),
        partial in template(),
    ) {
        let template = templates.concat();
        let partials = object(&[("p", Value::from(partial.as_str()))]);
        let (values, tree) = both(&[Value::from(template.as_str()), data, partials]);
        prop_assert_eq!(tree, values, "{}", template);
    }
}

#[test]
fn params_holding_functions_render_from_values_as_the_values_do() {
    use crate::rpc::FunctionId;
    // A function per row, and an `escape` function in the config: the render pauses for the
    // calling thread (a pending render) exactly as the values' render does, and only then.
    let rows = Value::Array(
        (0..3)
            .map(|i| {
                object(&[
                    ("n", Value::from(i as f64)),
                    ("f", Value::Function(FunctionId(i))),
                ])
            })
            .collect(),
    );
    let data = object(&[("rows", rows)]);
    let flags = TestFlags::new();
    let template = Value::from("{{#rows}}{{n}}{{f}}{{/rows}}");
    for params in [
        vec![template.clone(), data.clone()],
        vec![
            Value::from("{{a}}"),
            object(&[("a", Value::from("x"))]),
            Value::Null,
            object(&[("escape", Value::Function(FunctionId(0)))]),
        ],
    ] {
        let Some(Value::String(first)) = params.first() else {
            unreachable!()
        };
        let packed = pack(&params[1..], Some(first));
        let from_tree = super::run_packed(packed, &flags.ctx().with_plain_params()).unwrap();
        let from_values = super::run(params.clone(), &flags.ctx()).unwrap();
        assert!(matches!(from_tree, Value::Pending(_)), "{from_tree:?}");
        assert!(matches!(from_values, Value::Pending(_)), "{from_values:?}");
    }
    // A section over rows that are never reached: no slot, the output at once.
    let none = vec![
        Value::from("{{#no}}{{f}}{{/no}}done"),
        object(&[("f", Value::Function(FunctionId(0)))]),
    ];
    let (values, tree) = both(&none);
    assert_eq!(values, tree);
    assert_eq!(tree, "ok done");
}
