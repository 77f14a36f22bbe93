//! Tests of the engine's view of JavaScript values (`js.rs`): keys compare equal to exactly
//! their own text, a key is found wherever each kind of object keeps it, and keys worked out
//! at parse time find the built-ins each kind of value inherits.

use super::*;

#[test]
fn keys_compare_equal_to_exactly_their_own_text() {
    for len in 0..40 {
        let text: String = (0..len).map(|i| char::from(b'a' + i as u8 % 26)).collect();
        let key = Key::new(&text);
        assert!(key.is(&text));
        assert!(!key.is(&format!("{text}x")));
        if len > 0 {
            assert!(!key.is(&text[..len - 1]));
        }
        for at in 0..len {
            let mut other = text.clone().into_bytes();
            other[at] = b'_';
            assert!(!key.is(std::str::from_utf8(&other).unwrap()), "{text} {at}");
        }
    }
}

#[test]
fn a_key_is_found_wherever_each_object_keeps_it() {
    let key = Key::new("k");
    let objects: Vec<Map> = [0, 2, 2, 1, 0, 3]
        .iter()
        .map(|&at| {
            let mut map = Map::new();
            for i in 0..4 {
                let name = if i == at {
                    "k".to_string()
                } else {
                    format!("k{i}")
                };
                map.insert(name, Value::from(i as f64));
            }
            map
        })
        .collect();
    for (map, at) in objects.iter().zip([0, 2, 2, 1, 0, 3]) {
        assert_eq!(key.get(map), Some(&Value::from(at as f64)));
    }
    assert_eq!(key.get(&Map::new()), None);
    let mut only_others = Map::new();
    only_others.insert("kk", Value::Null);
    assert_eq!(key.get(&only_others), None);
}

#[test]
fn keys_worked_out_at_parse_time_find_the_built_ins_each_kind_of_value_inherits() {
    let map = Map::new();
    let items = vec![Value::Null, Value::Null];
    let values = [
        Js::Object(&map),
        Js::Array(&items),
        Js::Function(FunctionId(0)),
        Js::String("ab"),
        Js::LoneSurrogate,
        Js::Number(1.0),
        Js::Bool(true),
    ];
    let lists = [
        OBJECT_PROTOTYPE,
        ARRAY_PROTOTYPE,
        STRING_PROTOTYPE,
        NUMBER_PROTOTYPE,
        FUNCTION_PROTOTYPE,
    ];
    let others = ["0", "1", "01", "-1", "length", "x", "", "4294967295"];
    let names = lists.iter().flat_map(|l| l.iter()).chain(&others);
    for &name in names {
        let key = Key::new(name);
        for value in values {
            let own_prototype: &[&str] = match value {
                Js::Array(_) => ARRAY_PROTOTYPE,
                Js::Function(_) => FUNCTION_PROTOTYPE,
                Js::String(_) | Js::LoneSurrogate => STRING_PROTOTYPE,
                Js::Number(_) => NUMBER_PROTOTYPE,
                _ => &[],
            };
            let expected = own_prototype.contains(&name) || OBJECT_PROTOTYPE.contains(&name);
            let inherited = matches!(value.property(&key), Property::Inherited);
            assert_eq!(inherited, expected, "{value:?}[{name:?}]");
        }
    }
    // Own properties: indexes and `length`.
    let own = |value: Js, name| match value.property(&Key::new(name)) {
        Property::Own(Js::Number(n)) => Some(n.to_string()),
        Property::Own(Js::String(s)) => Some(s.to_string()),
        Property::Own(Js::Null) => Some("null".to_string()),
        Property::Own(Js::LoneSurrogate) => Some("lone".to_string()),
        _ => None,
    };
    assert_eq!(own(Js::Array(&items), "1").as_deref(), Some("null"));
    assert_eq!(own(Js::Array(&items), "2"), None);
    assert_eq!(own(Js::Array(&items), "01"), None);
    assert_eq!(own(Js::Array(&items), "length").as_deref(), Some("2"));
    assert_eq!(own(Js::String("ab"), "1").as_deref(), Some("b"));
    assert_eq!(own(Js::String("ab"), "length").as_deref(), Some("2"));
    assert_eq!(own(Js::LoneSurrogate, "0").as_deref(), Some("lone"));
    assert_eq!(own(Js::LoneSurrogate, "1"), None);
    assert_eq!(own(Js::LoneSurrogate, "length").as_deref(), Some("1"));
}
