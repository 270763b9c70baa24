//! Conversions between the 8- and 4-bit floats (`f8e4m3`, `f8e5m2`,
//! `f4e2m1`, one element per `i8`) and `float`/`double`, in plain integer
//! and float IR that every target compiles the same way: no intrinsics, no
//! target instructions, no dependence on denormal flushing. They compute
//! [`tessera_base::minifloat`]'s functions bit for bit (decoding exactly,
//! encoding to nearest, ties to even, straight from the source type).

use tessera_base::minifloat::{Format, E2M1, E4M3, E5M2};
use tessera_ir::ScalarType;

use crate::emit::FnEmitter;

/// The format of a narrow float type.
pub(crate) fn format(s: ScalarType) -> Option<Format> {
    match s {
        ScalarType::F8E4M3 => Some(E4M3),
        ScalarType::F8E5M2 => Some(E5M2),
        ScalarType::F4E2M1 => Some(E2M1),
        _ => None,
    }
}

/// The code of `x` in the type `s` as an `i8` literal.
pub(crate) fn literal(s: ScalarType, x: f64) -> Option<String> {
    format(s).map(|f| (f.encode(x, false) as i8).to_string())
}

/// `float` or `double` as a source of [`FnEmitter::encode_minifloat`].
pub(crate) struct Wide {
    pub ty: &'static str,
    pub int: &'static str,
    pub bits: u32,
    pub man: u32,
    pub bias: i32,
}

pub(crate) const FLOAT: Wide = Wide {
    ty: "float",
    int: "i32",
    bits: 32,
    man: 23,
    bias: 127,
};

pub(crate) const DOUBLE: Wide = Wide {
    ty: "double",
    int: "i64",
    bits: 64,
    man: 52,
    bias: 1023,
};

/// `2^e` as an LLVM float literal of `w` (exact: hex double form).
fn pow2(e: i32) -> String {
    format!("0x{:016X}", 2f64.powi(e).to_bits())
}

impl FnEmitter<'_, '_> {
    /// The `float` value of the code `v` (an `i8`) of format `f`.
    pub(crate) fn decode_minifloat(&mut self, v: &str, f: Format) -> String {
        let m = f.man_bits;
        let width = f.exp_bits + m;
        let c = self.val(format!("zext i8 {v} to i32"));
        let mag = self.val(format!("and i32 {c}, {}", (1u32 << width) - 1));
        let sign = self.val(format!("and i32 {c}, {}", 1u32 << width));
        let sign = self.val(format!("shl i32 {sign}, {}", 31 - width));
        // A normal value: the exponent rebiased, the mantissa moved up.
        let normal = self.val(format!("shl i32 {mag}, {}", 23 - m));
        let normal = self.val(format!("add i32 {normal}, {}", (127 - f.bias) << 23));
        // A subnormal value: mag units of 2^(1 - bias - m), exactly.
        let units = self.val(format!("uitofp i32 {mag} to float"));
        let small = self.val(format!("fmul float {units}, {}", pow2(1 - f.bias - m as i32)));
        let small = self.val(format!("bitcast float {small} to i32"));
        let is_small = self.val(format!("icmp ult i32 {mag}, {}", 1u32 << m));
        let mut bits = self.val(format!("select i1 {is_small}, i32 {small}, i32 {normal}"));
        if let Some(inf) = f.inf {
            let is_inf = self.val(format!("icmp eq i32 {mag}, {inf}"));
            bits = self.val(format!("select i1 {is_inf}, i32 2139095040, i32 {bits}"));
        }
        if let Some(nan) = f.nan {
            let pred = if f.inf.is_some() { "ugt" } else { "eq" };
            let bound = f.inf.unwrap_or(nan);
            let is_nan = self.val(format!("icmp {pred} i32 {mag}, {bound}"));
            bits = self.val(format!("select i1 {is_nan}, i32 2143289344, i32 {bits}"));
        }
        let bits = self.val(format!("or i32 {bits}, {sign}"));
        self.val(format!("bitcast i32 {bits} to float"))
    }

    /// The code (an `i8`) of format `f` nearest to `x`, a value of `w`;
    /// `saturate` turns overflow into the largest value of the sign.
    pub(crate) fn encode_minifloat(&mut self, x: &str, w: &Wide, f: Format, saturate: bool) -> String {
        let (t, it) = (w.ty, w.int);
        let m = f.man_bits;
        let xb = self.val(format!("bitcast {t} {x} to {it}"));
        let abs_bits = self.val(format!("and {it} {xb}, {}", (1u64 << (w.bits - 1)) - 1));
        let a = self.val(format!("bitcast {it} {abs_bits} to {t}"));
        // Below the smallest normal value: adding K, whose unit in the last
        // place is the format's subnormal unit 2^(1 - bias - m), rounds to
        // that unit (ties to even), and the units are K's bits counted up.
        let k = pow2(1 - f.bias - m as i32 + w.man as i32);
        let k_bits = format!(
            "{}",
            (w.bias + 1 - f.bias - m as i32 + w.man as i32) as u64 * (1u64 << w.man)
        );
        let sum = self.val(format!("fadd {t} {a}, {k}"));
        let sum = self.val(format!("bitcast {t} {sum} to {it}"));
        let small = self.val(format!("sub {it} {sum}, {k_bits}"));
        // At or above it: keep m mantissa bits, rounding half to even; a
        // carry moves into the exponent.
        let shift = w.man - m;
        let odd = self.val(format!("lshr {it} {abs_bits}, {shift}"));
        let odd = self.val(format!("and {it} {odd}, 1"));
        let half = self.val(format!("add {it} {odd}, {}", (1u64 << (shift - 1)) - 1));
        let up = self.val(format!("add {it} {abs_bits}, {half}"));
        let up = self.val(format!("lshr {it} {up}, {shift}"));
        let normal = self.val(format!("sub {it} {up}, {}", ((w.bias - f.bias) as u64) << m));
        let is_small = self.val(format!("fcmp olt {t} {a}, {}", pow2(1 - f.bias)));
        let mag = self.val(format!("select i1 {is_small}, {it} {small}, {it} {normal}"));
        let over = self.val(format!("icmp ugt {it} {mag}, {}", f.max));
        let overflow = if saturate {
            f.max
        } else {
            f.inf.or(f.nan).unwrap_or(f.max)
        };
        let mag = self.val(format!("select i1 {over}, {it} {overflow}, {it} {mag}"));
        let mag = self.val(format!("trunc {it} {mag} to i8"));
        let sign = self.val(format!("lshr {it} {xb}, {}", w.bits - 1));
        let sign = self.val(format!("trunc {it} {sign} to i8"));
        let sign = self.val(format!("shl i8 {sign}, {}", f.exp_bits + m));
        let code = self.val(format!("or i8 {mag}, {sign}"));
        let is_nan = self.val(format!("fcmp uno {t} {x}, 0.0"));
        let nan = match f.nan {
            Some(nan) => format!("{}", nan as i8),
            None => self.val(format!("or i8 {sign}, {}", f.max)),
        };
        self.val(format!("select i1 {is_nan}, i8 {nan}, i8 {code}"))
    }
}
