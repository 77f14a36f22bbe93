//! One Game of Life step for a band of rows, in place on shared memory.
//!
//! The grid is `size × size` cells, one byte each, row-major, in a `Uint8Array` over a
//! SharedArrayBuffer; it wraps like a torus (row `-1` is row `size - 1`, and so are columns).
//! A cell is alive when its byte is non-zero. The book's rule: a cell is alive in the next
//! generation iff it has 3 live neighbours, or it is alive and has 2. Neighbours are the 8
//! positions around a cell taken modulo `size`, so on a 1- or 2-wide grid a cell counts the
//! same neighbour more than once, exactly as the book's `get(x, y)` with wrapping does.
//!
//! `life` reads `cells` and writes rows `rowStart..rowEnd` of `next` (0 or 1 per cell). Calls
//! for disjoint bands of the same generation may run at once on different workers: they only
//! read `cells` and write disjoint rows of `next`, which must not overlap `cells`.
//!
//! Speed: each row is copied out of shared memory once (8 bytes per atomic load), the rule runs
//! on private memory where the compiler can vectorise it, and the new row goes back with 8-byte
//! atomic stores. Ordering comes from the pool: the JS caller's writes to `cells` happen-before
//! the job runs (submission), and the job's writes to `next` happen-before the call settles.

use crate::rpc::{params, Command, Context, Map, RpcError, Value};
use crate::shm::{ElementKind, SharedView};

pub struct Life;

/// 65536² bytes is 4 GiB: the most a SharedArrayBuffer holds here.
const MAX_SIZE: f64 = 65_536.0;
/// Cells between two cancellation checks.
const CHECK_EVERY_CELLS: usize = 1 << 16;

impl Command for Life {
    fn name(&self) -> &'static str {
        "life"
    }
    fn params(&self) -> &'static str {
        "{ cells: Uint8Array, next: Uint8Array (both over a SharedArrayBuffer, size² long), size: integer, rowStart: integer, rowEnd: integer }"
    }
    fn summary(&self) -> &'static str {
        "one Game of Life step (torus) for rows rowStart..rowEnd of a shared grid; returns rows done"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        let band = Band::parse(&params)?;
        band.step(ctx)?;
        Ok(Value::Number((band.row_end - band.row_start) as f64))
    }
}

/// Validated params of one call.
struct Band<'p> {
    cells: &'p SharedView,
    next: &'p SharedView,
    size: usize,
    row_start: usize,
    row_end: usize,
}

impl<'p> Band<'p> {
    fn parse(params: &'p [Value]) -> Result<Band<'p>, RpcError> {
        params::expect_count("life", params, 1..=1)?;
        let opts = params::object("life: params", &params[0])?;
        for (key, _) in opts.iter() {
            if !matches!(key, "cells" | "next" | "size" | "rowStart" | "rowEnd") {
                return Err(RpcError::invalid_params(format!(
                    "life: unknown param {key:?} (expected cells, next, size, rowStart, rowEnd)"
                )));
            }
        }
        let size = params::integer("life: size", required(opts, "size")?, 1.0..=MAX_SIZE)? as usize;
        let cells = grid("cells", required(opts, "cells")?, size)?;
        let next = grid("next", required(opts, "next")?, size)?;
        if cells.overlaps(next) {
            return Err(RpcError::invalid_params(
                "life: cells and next must be distinct, non-overlapping views",
            ));
        }
        let row_start = params::integer(
            "life: rowStart",
            required(opts, "rowStart")?,
            0.0..=size as f64,
        )? as usize;
        let row_end = params::integer(
            "life: rowEnd",
            required(opts, "rowEnd")?,
            row_start as f64..=size as f64,
        )? as usize;
        Ok(Band {
            cells,
            next,
            size,
            row_start,
            row_end,
        })
    }

    fn step(&self, ctx: &Context) -> Result<(), RpcError> {
        let n = self.size;
        if self.row_start == self.row_end {
            return Ok(());
        }
        let load = |y: usize, row: &mut Vec<u8>| {
            self.cells.load_bytes(y * n, row);
            for c in row.iter_mut() {
                *c = (*c != 0) as u8;
            }
        };
        let (mut up, mut mid, mut down) = (vec![0u8; n], vec![0u8; n], vec![0u8; n]);
        let mut column = vec![0u8; n];
        let mut out = vec![0u8; n];
        load((self.row_start + n - 1) % n, &mut up);
        load(self.row_start, &mut mid);
        let rows_per_check = (CHECK_EVERY_CELLS / n).max(1);
        for y in self.row_start..self.row_end {
            load((y + 1) % n, &mut down);
            next_row(&up, &mid, &down, &mut column, &mut out);
            self.next.store_bytes(y * n, &out);
            if (y - self.row_start + 1).is_multiple_of(rows_per_check) {
                ctx.check()?;
            }
            // Slide the three-row window down by one.
            std::mem::swap(&mut up, &mut mid);
            std::mem::swap(&mut mid, &mut down);
        }
        Ok(())
    }
}

fn required<'v>(opts: &'v Map, key: &str) -> Result<&'v Value, RpcError> {
    opts.get(key)
        .ok_or_else(|| RpcError::invalid_params(format!("life: {key} is required")))
}

/// `cells` or `next`: a Uint8Array over a SharedArrayBuffer holding exactly size² cells.
fn grid<'v>(what: &str, value: &'v Value, size: usize) -> Result<&'v SharedView, RpcError> {
    let view = match value {
        Value::View(v) if v.kind() == ElementKind::Uint8 => v,
        Value::Bytes(_) => {
            return Err(RpcError::invalid_params(format!(
                "life: {what} must be a view over a SharedArrayBuffer, got a Uint8Array over an ArrayBuffer"
            )))
        }
        other => {
            return Err(RpcError::invalid_params(format!(
                "life: {what} must be a Uint8Array over a SharedArrayBuffer, got {}",
                other.kind()
            )))
        }
    };
    if view.len() != size * size {
        return Err(RpcError::invalid_params(format!(
            "life: {what} has {} cells, expected size² = {}",
            view.len(),
            size * size
        )));
    }
    Ok(view)
}

/// The next state of row `mid` (cells 0 or 1), given the rows above and below.
fn next_row(up: &[u8], mid: &[u8], down: &[u8], column: &mut [u8], out: &mut [u8]) {
    let n = mid.len();
    for x in 0..n {
        column[x] = up[x] + mid[x] + down[x];
    }
    let rule = |left: u8, here: u8, right: u8, alive: u8| {
        let neighbours = left + here + right - alive;
        (neighbours == 3 || (neighbours == 2 && alive == 1)) as u8
    };
    // Edge columns wrap; the interior is a straight loop the compiler vectorises.
    let edge = |x: usize| {
        rule(
            column[(x + n - 1) % n],
            column[x],
            column[(x + 1) % n],
            mid[x],
        )
    };
    out[0] = edge(0);
    if n > 1 {
        out[n - 1] = edge(n - 1);
    }
    for x in 1..n.saturating_sub(1) {
        out[x] = rule(column[x - 1], column[x], column[x + 1], mid[x]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::Rng;
    use crate::rpc::command::TestFlags;
    use crate::rpc::ErrorCode;
    use crate::shm::view::leaked_view;
    use std::sync::atomic::Ordering;

    /// The book's rule with its wrapping `get(x, y)`, cell by cell.
    fn reference(grid: &[u8], n: usize) -> Vec<u8> {
        let get = |x: isize, y: isize| {
            let (x, y) = (x.rem_euclid(n as isize), y.rem_euclid(n as isize));
            (grid[y as usize * n + x as usize] != 0) as u8
        };
        let mut next = vec![0; n * n];
        for y in 0..n as isize {
            for x in 0..n as isize {
                let mut count = 0;
                for (dx, dy) in [
                    (-1, -1),
                    (0, -1),
                    (1, -1),
                    (-1, 0),
                    (1, 0),
                    (-1, 1),
                    (0, 1),
                    (1, 1),
                ] {
                    count += get(x + dx, y + dy);
                }
                let alive = get(x, y) == 1;
                next[y as usize * n + x as usize] = (count == 3 || (count == 2 && alive)) as u8;
            }
        }
        next
    }

    fn params(
        cells: &SharedView,
        next: &SharedView,
        size: usize,
        rows: (usize, usize),
    ) -> Vec<Value> {
        let mut m = Map::new();
        m.insert("cells", Value::View(cells.clone()));
        m.insert("next", Value::View(next.clone()));
        m.insert("size", Value::Number(size as f64));
        m.insert("rowStart", Value::Number(rows.0 as f64));
        m.insert("rowEnd", Value::Number(rows.1 as f64));
        vec![Value::Object(m)]
    }

    fn grid_of(bytes: &[u8]) -> SharedView {
        let v = leaked_view(bytes.len().max(1), ElementKind::Uint8)
            .sub_view(0, bytes.len(), ElementKind::Uint8)
            .unwrap();
        v.store_bytes(0, bytes);
        v
    }

    fn contents(v: &SharedView) -> Vec<u8> {
        let mut out = vec![0; v.len()];
        v.load_bytes(0, &mut out);
        out
    }

    #[test]
    fn bands_in_any_split_match_the_books_rule() {
        let flags = TestFlags::new();
        for n in [1usize, 2, 3, 5, 8, 17, 64, 100] {
            let mut rng = Rng::new(n as u64);
            let start: Vec<u8> = (0..n * n)
                .map(|_| rng.next_u64().is_multiple_of(3) as u8)
                .collect();
            let (mut a, mut b) = (grid_of(&start), grid_of(&vec![0; n * n]));
            let mut expected = start;
            for generation in 0..6 {
                expected = reference(&expected, n);
                // A different random split of the rows every generation.
                let mut cuts: Vec<usize> = (0..3)
                    .map(|_| (rng.next_u64() % (n as u64 + 1)) as usize)
                    .collect();
                cuts.extend([0, n]);
                cuts.sort();
                for w in cuts.windows(2) {
                    let done = Life
                        .run(params(&a, &b, n, (w[0], w[1])), &flags.ctx())
                        .unwrap();
                    assert_eq!(done, Value::Number((w[1] - w[0]) as f64));
                }
                assert_eq!(contents(&b), expected, "size {n}, generation {generation}");
                std::mem::swap(&mut a, &mut b);
            }
        }
    }

    #[test]
    fn a_glider_crosses_the_wrap_and_comes_home() {
        let flags = TestFlags::new();
        let n = 12;
        let mut start = vec![0u8; n * n];
        for (x, y) in [(1, 0), (2, 1), (0, 2), (1, 2), (2, 2)] {
            start[y * n + x] = 1;
        }
        let (mut a, mut b) = (grid_of(&start), grid_of(&vec![0; n * n]));
        // A glider moves one cell diagonally every 4 generations: home after 4n.
        for _ in 0..4 * n {
            Life.run(params(&a, &b, n, (0, n)), &flags.ctx()).unwrap();
            std::mem::swap(&mut a, &mut b);
        }
        assert_eq!(contents(&a), start);
    }

    #[test]
    fn any_nonzero_byte_is_alive() {
        let flags = TestFlags::new();
        // A blinker drawn with 7s becomes the other phase in 1s.
        let n = 5;
        let mut start = vec![0u8; n * n];
        for x in 1..4 {
            start[2 * n + x] = 7;
        }
        let (a, b) = (grid_of(&start), grid_of(&vec![9; n * n]));
        Life.run(params(&a, &b, n, (0, n)), &flags.ctx()).unwrap();
        let mut expected = vec![0u8; n * n];
        for y in 1..4 {
            expected[y * n + 2] = 1;
        }
        assert_eq!(contents(&b), expected);
    }

    #[test]
    fn bad_params_are_invalid_params_with_a_reason() {
        let flags = TestFlags::new();
        let a = grid_of(&[0; 16]);
        let b = grid_of(&[0; 16]);
        let short = grid_of(&[0; 15]);
        let ints = leaked_view(64, ElementKind::Int32);
        let with = |key: &str, v: Value| {
            let mut p = params(&a, &b, 4, (0, 4));
            if let Value::Object(m) = &mut p[0] {
                m.insert(key, v);
            }
            p
        };
        let cases: Vec<(Vec<Value>, &str)> = vec![
            (vec![], "takes 1 param"),
            (vec![Value::Number(1.0)], "must be an object"),
            (
                with("cells", Value::Bytes(vec![0; 16])),
                "must be a view over a SharedArrayBuffer",
            ),
            (with("next", Value::View(ints.clone())), "got Int32Array"),
            (
                with("cells", Value::View(short.clone())),
                "has 15 cells, expected size² = 16",
            ),
            (
                with("next", Value::View(a.clone())),
                "distinct, non-overlapping",
            ),
            (with("size", Value::Number(4.5)), "whole number"),
            (with("size", Value::Number(0.0)), "between 1 and 65536"),
            (with("rowStart", Value::Number(5.0)), "between 0 and 4"),
            (with("rowEnd", Value::Number(-1.0)), "between 0 and 4"),
            (with("rowEnd", Value::from("2")), "must be a number"),
            (with("rows", Value::Number(1.0)), "unknown param \"rows\""),
        ];
        for (p, why) in cases {
            let e = Life.run(p, &flags.ctx()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams, "{why}");
            assert!(
                e.message.contains(why),
                "{:?} does not say {why:?}",
                e.message
            );
        }
        let mut p = params(&a, &b, 4, (3, 4));
        if let Value::Object(m) = &mut p[0] {
            m.insert("rowEnd", Value::Number(2.0));
        }
        let e = Life.run(p, &flags.ctx()).unwrap_err();
        assert!(e.message.contains("between 3 and 4"), "{}", e.message);
        let mut p = params(&a, &b, 4, (0, 4));
        if let Value::Object(m) = &mut p[0] {
            m.remove("size");
        }
        let e = Life.run(p, &flags.ctx()).unwrap_err();
        assert_eq!(e.message, "life: size is required");
        // Overlapping but not identical views.
        let both = grid_of(&[0; 32]);
        let lo = both.sub_view(0, 16, ElementKind::Uint8).unwrap();
        let hi = both.sub_view(8, 16, ElementKind::Uint8).unwrap();
        let e = Life
            .run(params(&lo, &hi, 4, (0, 4)), &flags.ctx())
            .unwrap_err();
        assert!(e.message.contains("non-overlapping"), "{}", e.message);
    }

    #[test]
    fn a_cancelled_step_stops() {
        let flags = TestFlags::new();
        flags
            .0
            .store(crate::rpc::CancelReason::Aborted as u8, Ordering::Release);
        let n = 1024;
        let (a, b) = (grid_of(&vec![1; n * n]), grid_of(&vec![0; n * n]));
        let e = Life
            .run(params(&a, &b, n, (0, n)), &flags.ctx())
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Aborted);
        let written = contents(&b).iter().filter(|&&c| c != 0).count();
        assert!(
            written < n * n,
            "the step ran to the end despite the cancel"
        );
    }
}
