//! The book's Happycoin miner.
//!
//! Algorithm (BENCHMARKS.md §1, unchanged order of checks): draw a uniformly random u64; test
//! whether it is happy (repeat "sum of the squares of the decimal digits" until 1 or 4); a
//! Happycoin is a happy number divisible by 10000. The happiness test is done first on purpose,
//! as in the book, to make the work heavy.
//!
//! Speed comes from a table, not from skipping work: the digit-square sum of a u64 is taken
//! three digits at a time from a 1000-entry table, and every sum is at most 20·81 = 1620, whose
//! fate (1 or 4) is precomputed.

use crate::rpc::{params, Command, Context, Map, RpcError, Value};
use crate::shm::ElementKind;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

pub struct Happycoin;

/// More than 2^40 draws (hours of work) is a mistake, not a job.
const MAX_ATTEMPTS: f64 = 1_099_511_627_776.0;
const CHECK_EVERY: u64 = 1 << 16;

impl Command for Happycoin {
    fn name(&self) -> &'static str {
        "happycoin"
    }
    fn params(&self) -> &'static str {
        "{ attempts: integer 0..2^40, seed?: integer, into?: BigUint64Array over a SharedArrayBuffer }"
    }
    fn summary(&self) -> &'static str {
        "mines Happycoins: happy random u64s divisible by 10000"
    }
    fn run(&self, params: Vec<Value>, ctx: &Context) -> Result<Value, RpcError> {
        params::expect_count("happycoin", &params, 1..=1)?;
        let opts = params::object("happycoin: options", &params[0])?;
        for (key, _) in opts.iter() {
            if !matches!(key, "attempts" | "seed" | "into") {
                return Err(RpcError::invalid_params(format!(
                    "happycoin: unknown option {key:?} (expected attempts, seed, into)"
                )));
            }
        }
        let attempts = match opts.get("attempts") {
            Some(v) => params::integer("happycoin: attempts", v, 0.0..=MAX_ATTEMPTS)? as u64,
            None => return Err(RpcError::invalid_params("happycoin: attempts is required")),
        };
        let mut rng = match opts.get("seed") {
            Some(v) => {
                Rng::new(
                    params::integer("happycoin: seed", v, 0.0..=9_007_199_254_740_991.0)? as u64,
                )
            }
            None => Rng::from_entropy(ctx.worker()),
        };
        let into = match opts.get("into") {
            None => None,
            Some(Value::View(v)) if v.kind() == ElementKind::BigUint64 => Some(v),
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "happycoin: into must be a BigUint64Array over a SharedArrayBuffer, got {}",
                    other.kind()
                )))
            }
        };

        let mut coins = Vec::new();
        let mut done = 0;
        while done < attempts {
            let n = (attempts - done).min(CHECK_EVERY);
            for _ in 0..n {
                let x = rng.next_u64();
                if is_happycoin(x) {
                    coins.push(x);
                }
            }
            done += n;
            ctx.check()?;
            ctx.progress(|| {
                let mut report = Map::with_capacity(3);
                report.push_unique("done".into(), Value::Number(done as f64));
                report.push_unique("attempts".into(), Value::Number(attempts as f64));
                report.push_unique("coins".into(), Value::Number(coins.len() as f64));
                Value::Object(report)
            });
        }

        let mut result = Map::with_capacity(2);
        result.push_unique("count".into(), Value::Number(coins.len() as f64));
        match into {
            Some(view) => {
                if coins.len() > view.len() {
                    return Err(RpcError::invalid_params(format!(
                        "happycoin: into holds {} coins but {} were found; pass a larger BigUint64Array",
                        view.len(),
                        coins.len()
                    )));
                }
                for (i, c) in coins.iter().enumerate() {
                    view.store_u64(i, *c, Ordering::Relaxed);
                }
            }
            None => {
                let list = coins.iter().map(|c| Value::String(c.to_string())).collect();
                result.push_unique("coins".into(), Value::Array(list));
            }
        }
        Ok(Value::Object(result))
    }
}

/// A Happycoin: happy (checked first) and divisible by 10000.
#[inline]
pub fn is_happycoin(n: u64) -> bool {
    is_happy(n) && n.is_multiple_of(10_000)
}

/// Whether repeating "sum of the squares of the decimal digits" from `n` reaches 1 (not 4).
/// 0 is a fixed point of that map and never reaches 1: not happy.
#[inline]
pub fn is_happy(n: u64) -> bool {
    let t = tables();
    if n < t.fate.len() as u64 {
        return t.fate[n as usize];
    }
    let mut n = n;
    let mut sum = 0usize;
    while n > 0 {
        sum += t.square_sum3[(n % 1000) as usize] as usize;
        n /= 1000;
    }
    t.fate[sum]
}

struct Tables {
    /// Sum of the squares of the digits of 0..1000.
    square_sum3: [u16; 1000],
    /// For 0..=1620 (the largest digit-square sum of a u64): happy or not.
    fate: Vec<bool>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let digit_sum = |mut n: u64| {
            let mut s = 0;
            while n > 0 {
                s += (n % 10) * (n % 10);
                n /= 10;
            }
            s
        };
        let mut square_sum3 = [0u16; 1000];
        for (i, slot) in square_sum3.iter_mut().enumerate() {
            *slot = digit_sum(i as u64) as u16;
        }
        let fate = (0..=1620u64)
            .map(|start| {
                let mut n = start;
                // Every orbit reaches 1 or the cycle through 4 within a few dozen steps; 0 stays 0.
                for _ in 0..64 {
                    if n == 1 || n == 4 || n == 0 {
                        break;
                    }
                    n = digit_sum(n);
                }
                n == 1
            })
            .collect();
        Tables { square_sum3, fate }
    })
}

/// SplitMix64: fast, passes BigCrush, and seedable so that `seed` makes a run reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn from_entropy(salt: usize) -> Rng {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(salt);
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        Rng(h.finish())
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_is_happy(mut n: u64) -> bool {
        if n == 0 {
            return false;
        }
        while n != 1 && n != 4 {
            let mut s = 0;
            while n > 0 {
                s += (n % 10) * (n % 10);
                n /= 10;
            }
            n = s;
        }
        n == 1
    }

    #[test]
    fn table_version_agrees_with_the_books_loop() {
        for n in 0..20_000u64 {
            assert_eq!(is_happy(n), slow_is_happy(n), "n = {n}");
        }
        let mut rng = Rng::new(1);
        for _ in 0..200_000 {
            let n = rng.next_u64();
            assert_eq!(is_happy(n), slow_is_happy(n), "n = {n}");
        }
        assert!(is_happy(7) && is_happy(10) && !is_happy(4) && !is_happy(2));
        assert!(is_happy(u64::MAX) == slow_is_happy(u64::MAX));
    }

    #[test]
    fn happycoins_are_happy_and_divisible() {
        assert!(is_happycoin(10_000)); // 1 followed by zeros is happy
        assert!(!is_happycoin(20_000)); // 4 is not
        assert!(!is_happycoin(7)); // happy, not divisible
    }
}
