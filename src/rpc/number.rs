//! JavaScript's Number → String: the text `String(n)` gives for every double (`1e+21`, `-0` →
//! `0`, `NaN`), which JSON output, rendered templates and error messages all print numbers as.
//!
//! Integers and short decimals, nearly all the numbers data holds, are written directly; the
//! rest go to `ryu_js`, which implements the specification's algorithm (shortest round-trip
//! digits, JavaScript's exponent rules). The tests hold the direct paths to `ryu_js`'s answer.

/// Formats a number exactly as JavaScript's `String(n)` does (`1e+21`, `-0` → `0`, `NaN`).
pub fn format_number(n: f64, out: &mut String) {
    if n.is_nan() {
        out.push_str("NaN");
    } else if n.is_infinite() {
        out.push_str(if n > 0.0 { "Infinity" } else { "-Infinity" });
    } else if n == 0.0 {
        out.push('0');
    } else if (n as i64) as f64 == n && (n as i64).unsigned_abs() < 1 << 53 {
        // An exact integer (the cast round-trips only for those; no call to `trunc`): String(n)
        // prints its digits, ryu's answer too, only slower.
        write_integer(n as i64, out);
    } else if let Some((m, k)) = short_decimal(n) {
        write_decimal(m, k, out);
    } else {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(n));
    }
}

/// `n` as `m / 10^k` with `k` in 1..=4 and `|m| < 10^15`, when that quotient rounds to `n`
/// exactly (prices, scores: `989.875`, `0.1`). Then the decimal `m·10^-k` is what `String(n)`
/// prints, trailing zeros aside: it reads back as `n`, so the shortest decimal that does has at
/// most 15 significant digits, and no two decimals of at most 15 significant digits read back as
/// the same double (15 is f64's `DIGITS`), so the shortest is this one.
fn short_decimal(n: f64) -> Option<(i64, u32)> {
    const SCALES: [f64; 4] = [1e1, 1e2, 1e3, 1e4];
    // Keeps |m| below 10^15.
    if n.abs() >= 1e10 {
        return None;
    }
    for (k, scale) in (1..).zip(SCALES) {
        let scaled = n * scale;
        let m = scaled as i64;
        // `m` is `scaled` exactly, and `m / 10^k` (both exact, the division correctly
        // rounded) is `n`.
        if m as f64 == scaled && m as f64 / scale == n {
            return Some((m, k));
        }
    }
    None
}

/// The decimal `m·10^-k`, without trailing zeros, as JavaScript prints a number from 10^-7
/// up to 10^21: `-0.125`, `12.5`.
fn write_decimal(mut m: i64, mut k: u32, out: &mut String) {
    while k > 0 && m % 10 == 0 {
        m /= 10;
        k -= 1;
    }
    let scale = 10u64.pow(k);
    let digits = m.unsigned_abs();
    if m < 0 {
        out.push('-');
    }
    write_integer((digits / scale) as i64, out);
    if k > 0 {
        out.push('.');
        let fraction = digits % scale;
        // Leading zeros of the fraction, then its digits.
        let width = fraction.checked_ilog10().map_or(1, |d| d + 1);
        for _ in width..k {
            out.push('0');
        }
        write_integer(fraction as i64, out);
    }
}

/// The decimal digits of `n`, two at a time, pushed straight into `out`.
fn write_integer(n: i64, out: &mut String) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    while rest >= 10 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if rest > 0 || at == digits.len() {
        at -= 1;
        digits[at] = b'0' + rest as u8;
    }
    if n < 0 {
        out.push('-');
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_like_javascript() {
        let cases = [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-0.0, "0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5, "1.5"),
            (-2.0, "-2"),
            (1e-7, "1e-7"),
            (123456789.0, "123456789"),
            (-7.0, "-7"),
            (9007199254740991.0, "9007199254740991"),
            (-9007199254740991.0, "-9007199254740991"),
            (9007199254740992.0, "9007199254740992"),
            (1e20 + 65536.0, "100000000000000070000"),
            (4503599627370495.5, "4503599627370495.5"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (n, want) in cases {
            let mut s = String::new();
            format_number(n, &mut s);
            assert_eq!(s, want, "String({n})");
        }
    }

    #[test]
    fn integers_and_their_neighbours_format_like_ryu() {
        let two53 = (1u64 << 53) as f64;
        let mut cases = vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            two53 - 1.0,
            -(two53 - 1.0),
            two53,
            -two53,
            two53 + 2.0,
            9.223372036854776e18,
            -9.223372036854776e18,
            1e21,
            1e300,
            0.5,
            -0.1,
            989.875,
            1e-7,
            5e-324,
        ];
        let mut power = 1.0;
        for _ in 0..17 {
            for n in [
                power - 1.0,
                power,
                power + 1.0,
                2.0 * power,
                3.0 * power + 7.0,
            ] {
                cases.push(n);
                cases.push(-n);
            }
            power *= 10.0;
        }
        for n in cases {
            let mut ours = String::from("x");
            format_number(n, &mut ours);
            let mut buf = ryu_js::Buffer::new();
            assert_eq!(ours, format!("x{}", buf.format(n)), "{n:e}");
        }
    }

    #[test]
    fn short_decimals_format_like_ryu() {
        let mut next = crate::rpc::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let scales = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5];
        let check = |n: f64| {
            let mut s = String::new();
            format_number(n, &mut s);
            let mut buf = ryu_js::Buffer::new();
            assert_eq!(s, buf.format(n), "{n:e} ({:#x})", n.to_bits());
        };
        for _ in 0..300_000 {
            let r = next();
            let digits = [
                10,
                1_000,
                1_000_000,
                1_000_000_000_000,
                1_000_000_000_000_000,
            ];
            let m = (r >> 8) % digits[(r % 5) as usize];
            let scale = scales[((r >> 3) % 6) as usize];
            let sign = if r & 4 != 0 { -1.0 } else { 1.0 };
            let n = sign * m as f64 / scale;
            check(n);
            check(n * 3.0);
            check(f64::from_bits(next()));
            check(f64::from_bits(n.to_bits() + 1));
        }
        for n in [
            0.1,
            0.5,
            -0.5,
            0.0001,
            0.00015,
            1.0005,
            9999999999.9999,
            1e10 - 0.5,
            0.3,
        ] {
            check(n);
        }
    }
}
