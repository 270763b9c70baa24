//! `f16` and `bf16` conversions, bit exact: to `f32` exactly, from `f32`
//! or `f64` with round to nearest, ties to even, once (NaN stays NaN,
//! quieted; overflow gives infinity). The runtime's host tensors and the
//! code generator's constants share them.

/// The `f32` value of an IEEE binary16 number.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = man * 2^-24, exact in f32.
            let value = man as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -value } else { value };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// The binary16 number nearest to `x` (ties to even).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return if man == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | (man >> 13) as u16
        };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal in f16 (or zero): the unit is 2^-24.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        return sign | round_shift(m, shift) as u16;
    }
    let h = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    let round_up = rest > 0x1000 || (rest == 0x1000 && h & 1 == 1);
    sign | (h + round_up as u32) as u16
}

/// `m >> shift`, rounded to nearest even.
fn round_shift(m: u32, shift: u32) -> u32 {
    let q = m >> shift;
    let half = 1u32 << (shift - 1);
    let rest = m & ((1u32 << shift) - 1);
    if rest > half || (rest == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// The `f32` value of a bfloat16 number.
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// The bfloat16 number nearest to `x` (ties to even).
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// `x` in `f32` rounded to odd: exact when `x` is an `f32`, otherwise
/// the `f32` next to it toward zero with its lowest bit set. Rounding that
/// to a format with at least two fewer bits of precision is rounding `x`
/// once (where `x as f32` first and then to `f16` rounds twice: 1 + 2^-11
/// + 2^-40 became 1, not 1 + 2^-10).
fn f64_to_f32_odd(x: f64) -> f32 {
    let t = x as f32;
    if x.is_nan() || f64::from(t) == x || t.is_infinite() {
        return t;
    }
    let toward_zero = if f64::from(t).abs() > x.abs() {
        f32::from_bits(t.to_bits() - 1)
    } else {
        t
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// The binary16 number nearest to `x` (ties to even), rounded once.
pub fn f64_to_f16(x: f64) -> u16 {
    f32_to_f16(f64_to_f32_odd(x))
}

/// The bfloat16 number nearest to `x` (ties to even), rounded once.
pub fn f64_to_bf16(x: f64) -> u16 {
    f32_to_bf16(f64_to_f32_odd(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_f64(h: u16) -> f64 {
        // An independent reference: sign * 2^(e - 15) * (1 + m / 1024).
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let e = ((h >> 10) & 0x1f) as i32;
        let m = (h & 0x3ff) as f64;
        match e {
            0 => sign * m * 2f64.powi(-24),
            0x1f if m == 0.0 => sign * f64::INFINITY,
            0x1f => f64::NAN,
            _ => sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
        }
    }

    #[test]
    fn every_f16_converts_exactly_and_back() {
        for h in 0..=u16::MAX {
            let reference = f16_f64(h);
            let x = f16_to_f32(h);
            if reference.is_nan() {
                assert!(x.is_nan(), "{h:#06x}");
                assert!(f32_to_f16(x) & 0x7c00 == 0x7c00 && f32_to_f16(x) & 0x3ff != 0);
                continue;
            }
            assert_eq!(x as f64, reference, "{h:#06x}");
            assert_eq!(f32_to_f16(x), h, "{h:#06x} does not round-trip");
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        // Between each pair of adjacent positive finite halves: the midpoint
        // goes to the even one, a hair above it to the upper one.
        for h in 0..0x7bffu16 {
            let (lo, hi) = (f16_f64(h), f16_f64(h + 1));
            let mid = (lo + hi) / 2.0;
            let even = if h & 1 == 0 { h } else { h + 1 };
            assert_eq!(f32_to_f16(mid as f32), even, "midpoint above {h:#06x}");
            let above = f32::from_bits((mid as f32).to_bits() + 1);
            assert_eq!(f32_to_f16(above), h + 1, "above the midpoint of {h:#06x}");
            let below = f32::from_bits((mid as f32).to_bits() - 1);
            assert_eq!(f32_to_f16(below), h, "below the midpoint of {h:#06x}");
        }
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "halfway to the next binade overflows");
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0, "a tie with zero goes to zero");
        assert_eq!(f32_to_f16(2f32.powi(-25) * 1.5), 1);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        for b in 0..0x7f7fu16 {
            let (lo, hi) = (bf16_to_f32(b) as f64, bf16_to_f32(b + 1) as f64);
            let mid = ((lo + hi) / 2.0) as f32;
            assert_eq!(mid as f64, (lo + hi) / 2.0, "midpoints are exact in f32");
            let even = if b & 1 == 0 { b } else { b + 1 };
            assert_eq!(f32_to_bf16(mid), even);
            assert_eq!(f32_to_bf16(bf16_to_f32(b)), b);
            assert_eq!(f32_to_bf16(f32::from_bits(mid.to_bits() + 1)), b + 1);
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80, "rounds up to infinity");
    }

    #[test]
    fn f64_rounds_once() {
        // Just above a midpoint of f16 / bf16 but within half an f32 ulp
        // of it: through f32 these were ties, rounded to even (down).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 0x3C01);
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-30)), 0x3F81);
        assert_eq!(f64_to_f16(-(1.0 + 2f64.powi(-11) + 2f64.powi(-40))), 0xBC01);
        // Exact ties and values f32 holds round as from f32.
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3C00);
        assert_eq!(f64_to_bf16(1.0 + 3.0 * 2f64.powi(-8)), 0x3F82);
        assert_eq!(f64_to_f16(65520.0), 0x7C00);
        assert_eq!(f64_to_f16(1e-300), 0);
        assert_eq!(f64_to_bf16(-1e-300), 0x8000);
        assert_eq!(f64_to_bf16(1e300), 0x7F80);
        assert!(f16_to_f32(f64_to_f16(f64::NAN)).is_nan());
        // Below the smallest f16 subnormal's half: 0; just above it: the
        // subnormal (f32 holds 2^-25 + 2^-60 only as 2^-25, a tie).
        assert_eq!(f64_to_f16(2f64.powi(-25) + 2f64.powi(-60)), 1);
        assert_eq!(f64_to_f16(2f64.powi(-25)), 0);
    }
}
