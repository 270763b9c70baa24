//! Positions in source text: [`FileId`], [`Span`] and [`LineIndex`];
//! [`fnv1a64`], the stable hash that names a text (a source in the
//! manifest and the tuning cache, a function id in the RNG's keys); and
//! [`CmpOp`], the comparison of shape constraints, which the checker and
//! the IR share; [`gcd`], which tiling and divisibility facts use;
//! [`range_len`], the length of a Python range, which the checker and the
//! host interpreter share; [`ROUNDINGS`], the rounding modes of a
//! conversion, which the checker and the graph verifier share;
//! [`minifloat`], the 8- and 4-bit float formats, and [`half`], `f16` and
//! `bf16`, which the runtime's host tensors and the code generator's
//! constants share.
//!
//! No I/O and no knowledge of the language live here; every other crate
//! speaks about source locations in these terms.

mod cmp;
pub mod half;
mod line_index;
pub mod minifloat;
mod span;

pub use cmp::CmpOp;
pub use line_index::{LineCol, LineIndex};
pub use span::{FileId, FileSpan, Span};

/// The rounding modes of a conversion (`cast(x, f16, rounding=…)`, a
/// numerics policy's `rounding=`).
pub const ROUNDINGS: [&str; 6] = [
    "nearest_even",
    "nearest_away",
    "toward_zero",
    "up",
    "down",
    "stochastic",
];

/// The greatest common divisor of `|a|` and `|b|`; `gcd(0, k) = |k|`.
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The number of values of Python's `range(start, stop, step)` (`step !=
/// 0`), exact for any `i64` bounds.
pub fn range_len(start: i64, stop: i64, step: i64) -> u64 {
    let (a, b, s) = (i128::from(start), i128::from(stop), i128::from(step));
    let n = if s > 0 {
        (b - a + s - 1) / s
    } else {
        (a - b - s - 1) / -s
    };
    u64::try_from(n.max(0)).unwrap_or(u64::MAX)
}

/// `text` split at the commas outside any brackets: `a, f(b, c), [d, e]`
/// is `a`, ` f(b, c)`, ` [d, e]` (the parts untrimmed).
pub fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The 64-bit FNV-1a hash of `bytes`: stable across runs, platforms and
/// compiler versions.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `n` and the word for that many, for messages: `1 argument`, `2
/// arguments`.
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `word` after the English article its first sound takes, for messages
/// about dtypes (whose names are read letter by letter): `an f32`, `an
/// i8`, `a u8`, `a bf16`.
pub fn with_article(word: &str) -> String {
    let an = word.starts_with(['a', 'e', 'f', 'h', 'i', 'l', 'm', 'n', 'o', 'r', 's', 'x']);
    format!("{} {word}", if an { "an" } else { "a" })
}

#[cfg(test)]
mod tests {
    use super::{counted, range_len, with_article};

    #[test]
    fn messages_count_and_take_articles() {
        assert_eq!(counted(1, "argument", "arguments"), "1 argument");
        assert_eq!(counted(0, "argument", "arguments"), "0 arguments");
        assert_eq!(with_article("f64"), "an f64");
        assert_eq!(with_article("i32"), "an i32");
        assert_eq!(with_article("u8"), "a u8");
        assert_eq!(with_article("bf16"), "a bf16");
    }

    #[test]
    fn range_lengths_are_pythons() {
        assert_eq!(range_len(0, 4, 1), 4);
        assert_eq!(range_len(2, 8, 3), 2);
        assert_eq!(range_len(5, 1, -1), 4);
        assert_eq!(range_len(5, 1, 1), 0);
        assert_eq!(range_len(1, 5, -1), 0);
        assert_eq!(range_len(i64::MIN, i64::MAX, 1), u64::MAX);
    }
}
