//! JavaScript's BigInt: the type values carry, and its decimal text (for JSON output, where
//! BigInts travel as strings).

/// An arbitrary-precision integer, as JavaScript's BigInt: sign and little-endian 64-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigInt {
    pub negative: bool,
    pub words: Vec<u64>,
}

/// Decimal digits of `b`, with a leading `-` when negative and non-zero.
pub fn to_decimal(b: &BigInt) -> String {
    const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19, the largest power of 10 in a u64
    let mut words: Vec<u64> = b.words.clone();
    while words.last() == Some(&0) {
        words.pop();
    }
    if words.is_empty() {
        return "0".to_owned();
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
    let mut out = String::new();
    if b.negative {
        out.push('-');
    }
    out.push_str(&chunks.pop().unwrap_or(0).to_string());
    for c in chunks.iter().rev() {
        out.push_str(&format!("{c:019}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
