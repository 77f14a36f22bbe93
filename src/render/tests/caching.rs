//! The template cache: a template is parsed once and shared, the cache stays within its bounds
//! and keeps hot entries, partials are cached by their indented text, and threads agree.

use super::*;

#[test]
fn a_template_is_parsed_once_and_shared() {
    let cache = TemplateCache::new(8, 1 << 20);
    let a = cache.get_or_parse("{{a}}", None).unwrap();
    let b = cache.get_or_parse(&String::from("{{a}}"), None).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 1);
    // Failures are not cached.
    assert!(cache.get_or_parse("{{", None).is_err());
    assert_eq!(cache.len(), 1);
}

#[test]
fn the_cache_stays_within_its_bounds_and_keeps_hot_entries() {
    let cache = TemplateCache::new(4, 1 << 20);
    let hot = cache.get_or_parse("hot {{x}}", None).unwrap();
    for i in 0..100 {
        cache
            .get_or_parse(&format!("t{i} {{{{x}}}}"), None)
            .unwrap();
        assert!(Arc::ptr_eq(
            &hot,
            &cache.get_or_parse("hot {{x}}", None).unwrap()
        ));
        assert!(cache.len() <= 4);
    }
    // A byte budget: entries of about 60 KiB in 256 KiB, so at most four fit.
    let cache = TemplateCache::new(100, 256 << 10);
    for i in 0..10 {
        cache
            .get_or_parse(&format!("{i}{}", "x".repeat(60 << 10)), None)
            .unwrap();
    }
    assert!(cache.len() <= 4);
    // Too big for the budget: parsed, not cached.
    cache.get_or_parse(&"y".repeat(100 << 10), None).unwrap();
    assert!(cache.len() <= 4);
}

#[test]
fn partials_are_cached_by_their_indented_text() {
    let cache = TemplateCache::new(16, 1 << 20);
    let mut partials = crate::rpc::Map::new();
    partials.insert("p", "a\nb".into());
    let ctx = context(&NOT_CANCELLED);
    for _ in 0..3 {
        let out = render_with(
            &cache,
            "  {{>p}}\n{{>p}}",
            None,
            Some(&partials),
            &Config::default(),
            &ctx,
        )
        .unwrap();
        assert_eq!(out, "  a\n  ba\nb");
    }
    // The template, the indented partial and the plain one.
    assert_eq!(cache.len(), 3);
}

#[test]
fn threads_share_one_parse_and_agree_on_the_output() {
    let cache = Arc::new(TemplateCache::new(16, 1 << 20));
    let template = "<em>{{me}} loves {{you}}</em> ".repeat(80);
    let data = json::parse(r#"{"me":"Thomas","you":"Katelyn"}"#).unwrap();
    let expected = "<em>Thomas loves Katelyn</em> ".repeat(80);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (cache, template, data, expected) = (
                cache.clone(),
                template.clone(),
                data.clone(),
                expected.clone(),
            );
            std::thread::spawn(move || {
                let ctx = context(&NOT_CANCELLED);
                for _ in 0..500 {
                    let out = render_with(
                        &cache,
                        &template,
                        Some(&data),
                        None,
                        &Config::default(),
                        &ctx,
                    )
                    .unwrap();
                    assert_eq!(out, expected);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(cache.len(), 1);
}

// ---- throughput (not a test: run it with --ignored) ----
