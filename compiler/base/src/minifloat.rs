//! The 8-bit float formats, bit exact: OCP's E4M3 (NVIDIA's `e4m3fn`: no
//! infinities, NaN is `S.1111.111`, largest 448) and E5M2 (IEEE-style, with
//! infinities, largest 57344), and the 4-bit E2M1 (no infinities or NaN,
//! largest 6, one element per byte). Decoding is exact; encoding rounds to
//! nearest, ties to even, from `f64` directly (no double rounding through
//! `f32`). A value beyond the largest finite one becomes NaN (E4M3),
//! infinity (E5M2) or the largest value (E2M1, which has neither), or the
//! largest value of its sign when saturating; NaN stays NaN (E2M1: the
//! largest value of its sign).
//!
//! The code generator's conversions (`compiler/codegen/src/minifloat.rs`)
//! implement the same functions in LLVM IR; the CPU tests compare the two
//! over every code and a sweep of values.

/// An 8-bit (or 4-bit) float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    /// The magnitude bits of the NaN written for a NaN, if the format has one.
    pub nan: Option<u8>,
    /// The magnitude bits of infinity, if the format has one.
    pub inf: Option<u8>,
    /// The magnitude bits of the largest finite value.
    pub max: u8,
}

pub const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    bias: 7,
    nan: Some(0x7f),
    inf: None,
    max: 0x7e,
};

pub const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    bias: 15,
    nan: Some(0x7e),
    inf: Some(0x7c),
    max: 0x7b,
};

pub const E2M1: Format = Format {
    exp_bits: 2,
    man_bits: 1,
    bias: 1,
    nan: None,
    inf: None,
    max: 0x7,
};

impl Format {
    /// The bit of the sign.
    pub fn sign_bit(self) -> u8 {
        1 << (self.exp_bits + self.man_bits)
    }

    /// Whether the magnitude bits `mag` are a NaN.
    pub fn is_nan(self, mag: u8) -> bool {
        match (self.nan, self.inf) {
            (Some(_), Some(inf)) => mag > inf,
            (Some(nan), None) => mag == nan,
            _ => false,
        }
    }

    /// The value of `code` (its sign bit at [`Format::sign_bit`]).
    pub fn decode(self, code: u8) -> f64 {
        let sign = if code & self.sign_bit() != 0 { -1.0 } else { 1.0 };
        let mag = code & (self.sign_bit() - 1);
        if self.is_nan(mag) {
            return f64::NAN;
        }
        if Some(mag) == self.inf {
            return sign * f64::INFINITY;
        }
        let e = i32::from(mag >> self.man_bits);
        let m = f64::from(mag & ((1 << self.man_bits) - 1));
        let unit = 2f64.powi(-(self.man_bits as i32));
        sign * if e == 0 {
            m * unit * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + m * unit) * 2f64.powi(e - self.bias)
        }
    }

    /// The code nearest to `x` (ties to even).
    pub fn encode(self, x: f64, saturate: bool) -> u8 {
        let sign = if x.is_sign_negative() { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return self.nan.map_or(sign | self.max, |nan| nan);
        }
        let a = x.abs();
        let overflow = || {
            if saturate {
                sign | self.max
            } else {
                sign | self.inf.or(self.nan).unwrap_or(self.max)
            }
        };
        if a.is_infinite() {
            return overflow();
        }
        let m = self.man_bits;
        let min_normal = 2f64.powi(1 - self.bias);
        let mag = if a < min_normal {
            // Subnormal: a whole number of units of 2^(1 - bias - m); the
            // scaling is exact. q = 2^m is the smallest normal's code.
            (a * 2f64.powi(self.bias - 1 + m as i32)).round_ties_even() as u64
        } else {
            // Keep m bits of f64's 52-bit mantissa, rounding half to even;
            // a carry moves into the exponent, as it should.
            let bits = a.to_bits();
            let shift = 52 - m;
            let half = (1u64 << (shift - 1)) - 1 + ((bits >> shift) & 1);
            ((bits + half) >> shift) - (((1023 - self.bias) as u64) << m)
        };
        if mag > u64::from(self.max) {
            overflow()
        } else {
            sign | mag as u8
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finite codes with their values, by brute force.
    fn finite(f: Format) -> Vec<(u8, f64)> {
        (0..=u8::MAX >> (7 - f.exp_bits - f.man_bits))
            .map(|c| (c, f.decode(c)))
            .filter(|(_, v)| v.is_finite())
            .collect()
    }

    /// The nearest finite code to `x` by search, ties to the even code; a
    /// value past the largest by half a unit or more (ties to even there
    /// too, with the next power of two as the code after) overflows.
    fn nearest(f: Format, x: f64) -> Option<u8> {
        let codes = finite(f);
        let mut best: Option<(u8, f64)> = None;
        for (c, v) in codes {
            if v.is_sign_negative() != x.is_sign_negative() {
                continue;
            }
            let d = (v - x).abs();
            best = match best {
                Some((bc, bd)) if bd < d || bd == d && bc & 1 == 0 => Some((bc, bd)),
                _ => Some((c, d)),
            };
        }
        let (c, d) = best?;
        let max = f.decode(f.max);
        let next = max + 2f64.powi((max.log2().floor() as i32) - f.man_bits as i32);
        let beyond = (next - x.abs()).abs();
        if x.abs() >= next || x.abs() > max && (beyond < d || beyond == d && f.max & 1 == 1) {
            return None;
        }
        Some(c)
    }

    #[test]
    fn known_values() {
        assert_eq!(E4M3.decode(0x7e), 448.0);
        assert_eq!(E4M3.decode(0x01), 2f64.powi(-9));
        assert_eq!(E4M3.decode(0x38), 1.0);
        assert_eq!(E4M3.decode(0xc4), -3.0);
        assert!(E4M3.decode(0x7f).is_nan() && E4M3.decode(0xff).is_nan());
        assert_eq!(E5M2.decode(0x7b), 57344.0);
        assert_eq!(E5M2.decode(0x7c), f64::INFINITY);
        assert_eq!(E5M2.decode(0x01), 2f64.powi(-16));
        assert!(E5M2.decode(0x7d).is_nan());
        assert_eq!(E2M1.decode(0x7), 6.0);
        assert_eq!(E2M1.decode(0x1), 0.5);
        assert_eq!(E2M1.decode(0xd), -3.0);
    }

    #[test]
    fn every_code_survives_a_round_trip() {
        for f in [E4M3, E5M2, E2M1] {
            for (c, v) in finite(f) {
                let back = f.encode(v, false);
                // -0 and 0 are both finite codes; each gives itself back.
                assert_eq!(back, c, "{f:?} code {c:#x} value {v}");
            }
        }
    }

    #[test]
    fn encoding_rounds_to_the_nearest_code_ties_to_even() {
        for f in [E4M3, E5M2, E2M1] {
            let codes = finite(f);
            // Every value, every midpoint between neighbours and points
            // just around them, with both signs.
            let mut xs = Vec::new();
            for w in codes.windows(2) {
                let (a, b) = (w[0].1, w[1].1);
                let mid = (a + b) / 2.0;
                xs.extend([a, mid, mid * (1.0 + 1e-9), mid * (1.0 - 1e-9), (a + mid) / 2.0]);
            }
            let max = f.decode(f.max);
            xs.extend([max * 1.03, max * 1.0625, max * 1.07, max * 1.2, 1e30, 1e-30, 0.0]);
            for x in xs.into_iter().flat_map(|x| [x, -x]) {
                let want = nearest(f, x);
                for saturate in [false, true] {
                    let got = f.encode(x, saturate);
                    match want {
                        Some(c) => assert_eq!(got, c, "{f:?} {x}"),
                        None if saturate => assert_eq!(f.decode(got), max.copysign(x), "{f:?} {x}"),
                        None => {
                            let v = f.decode(got);
                            assert!(v.is_nan() || v.is_infinite() || f.nan.is_none(), "{f:?} {x} gave {v}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn overflow_nan_and_infinity() {
        assert_eq!(
            E4M3.encode(464.0, false),
            0x7e,
            "a tie with 480 goes to 448's even code"
        );
        assert_eq!(E4M3.encode(464.1, false), 0x7f);
        assert_eq!(E4M3.encode(-1e6, true), 0xfe);
        assert_eq!(E4M3.encode(f64::INFINITY, false), 0x7f);
        assert_eq!(E4M3.encode(f64::NAN, true), 0x7f);
        assert_eq!(
            E5M2.encode(61440.0, false),
            0x7c,
            "a tie with 65536 goes up, to infinity"
        );
        assert_eq!(E5M2.encode(61439.0, false), 0x7b);
        assert_eq!(E5M2.encode(-f64::INFINITY, false), 0xfc);
        assert_eq!(E5M2.encode(f64::INFINITY, true), 0x7b);
        assert!(E5M2.decode(E5M2.encode(f64::NAN, false)).is_nan());
        assert_eq!(E2M1.encode(100.0, false), 0x7);
        assert_eq!(E2M1.encode(-0.2, false), 0x8);
    }
}
