//! Render throughput on the benchmarks' cases, per thread count (ignored by default: a
//! measurement, not a test of behaviour).

use super::*;

/// The book's template (chapter 8) and a 200-row table with sections, as in BENCHMARKS.md §2.
fn benchmark_cases() -> Vec<(&'static str, String, Value)> {
    let book = "<em>{{me}} loves {{you}}</em> ".repeat(80);
    let book_data = json::parse(r#"{"me":"Thomas","you":"Katelyn"}"#).unwrap();
    let table = "<table>\n{{#rows}}\n  <tr class=\"{{#odd}}odd{{/odd}}{{^odd}}even{{/odd}}\">\
                 <td>{{id}}</td><td>{{name}}</td><td>{{email}}</td>{{#admin}}<td>admin</td>{{/admin}}</tr>\n\
                 {{/rows}}\n</table>\n"
        .to_string();
    let rows: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"id":{i},"name":"User <{i}>","email":"user{i}@example.com","odd":{},"admin":{}}}"#,
                i % 2 == 1,
                i % 7 == 0
            )
        })
        .collect();
    let table_data = json::parse(&format!(r#"{{"rows":[{}]}}"#, rows.join(","))).unwrap();
    vec![
        ("book ×80", book, book_data),
        ("table 200 rows", table, table_data),
    ]
}

/// Calls per second of `f` on each of `threads` threads running at once: the median of 31
/// timed batches per thread (medians resist the other processes of a shared machine).
fn calls_per_second(threads: usize, batch: u32, f: impl Fn() + Sync) -> Vec<f64> {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut rates: Vec<f64> = (0..31)
                        .map(|_| {
                            let start = std::time::Instant::now();
                            for _ in 0..batch {
                                f();
                            }
                            batch as f64 / start.elapsed().as_secs_f64()
                        })
                        .collect();
                    rates.sort_by(f64::total_cmp);
                    rates[rates.len() / 2]
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

#[test]
#[ignore = "benchmark: cargo test --release render_throughput -- --ignored --nocapture"]
fn render_throughput() {
    let cache = TemplateCache::new(64, 64 << 20);
    let ctx = context(&NOT_CANCELLED);
    for (name, template, data) in benchmark_cases() {
        let bytes = ok(&template, &json::to_string(&data)).len();
        let render = || {
            let out = render_with(
                &cache,
                &template,
                Some(&data),
                None,
                &Config::default(),
                &ctx,
            )
            .unwrap();
            std::hint::black_box(out);
        };
        let lookup = || {
            std::hint::black_box(cache.get_or_parse(&template, None).unwrap());
        };
        let one = calls_per_second(1, 200, render)[0];
        let two = calls_per_second(2, 200, render);
        let hit_one = calls_per_second(1, 2000, lookup)[0];
        let hit_two = calls_per_second(2, 2000, lookup);
        println!(
            "{name}, {bytes} bytes out: {one:.0} renders/s on 1 thread, {:.0} + {:.0} on 2; \
             cache hit alone {:.2} µs on 1 thread, {:.2} / {:.2} µs with 2 threads hitting at once \
             ({:.1}% of a render)",
            two[0],
            two[1],
            1e6 / hit_one,
            1e6 / hit_two[0],
            1e6 / hit_two[1],
            100.0 * one / hit_one
        );
    }
}
