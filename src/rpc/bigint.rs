//! JavaScript's BigInt: the type values carry, and its decimal text (for JSON output, where
//! BigInts travel as strings).

use std::fmt::Write;

/// An arbitrary-precision integer, as JavaScript's BigInt: sign and little-endian 64-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigInt {
    pub negative: bool,
    pub words: Vec<u64>,
}

/// Appends the decimal digits of `b`, with a leading `-` when negative and non-zero.
pub fn write_decimal(b: &BigInt, out: &mut String) {
    const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19, the largest power of 10 in a u64
    let mut words: Vec<u64> = b.words.clone();
    while words.last() == Some(&0) {
        words.pop();
    }
    if words.is_empty() {
        out.push('0');
        return;
    }
    let mut chunks = Vec::new(); // base-10^19 digits, least significant first
    while !words.is_empty() {
        let mut rem: u128 = 0;
        for w in words.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*w);
            *w = (cur / u128::from(CHUNK)) as u64;
            rem = cur % u128::from(CHUNK);
        }
        chunks.push(rem as u64);
        while words.last() == Some(&0) {
            words.pop();
        }
    }
    if b.negative {
        out.push('-');
    }
    // Writing into a String cannot fail.
    let _ = write!(out, "{}", chunks.pop().unwrap_or(0));
    for c in chunks.iter().rev() {
        let _ = write!(out, "{c:019}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_decimal(b: &BigInt) -> String {
        let mut out = String::from("x");
        write_decimal(b, &mut out);
        out.split_off(1)
    }

    #[test]
    fn prints_multi_word_values() {
        let b = BigInt {
            negative: false,
            words: vec![0, 1],
        }; // 2^64
        assert_eq!(to_decimal(&b), "18446744073709551616");
        let b = BigInt {
            negative: true,
            words: vec![42],
        };
        assert_eq!(to_decimal(&b), "-42");
        let b = BigInt {
            negative: true,
            words: vec![],
        };
        assert_eq!(to_decimal(&b), "0");
        // Middle base-10^19 chunks keep their leading zeros.
        let b = BigInt {
            negative: true,
            words: vec![0x098a_2240_0000_0007, 0x4b3b_4ca8_5a86_c47a, 0],
        }; // -(10^38 + 7)
        assert_eq!(to_decimal(&b), format!("-1{}7", "0".repeat(37)));
        let b = BigInt {
            negative: false,
            words: vec![0, 0, 1],
        }; // 2^128
        assert_eq!(to_decimal(&b), "340282366920938463463374607431768211456");
    }
}
