//! What an index value of a function is known to be a multiple of: the
//! divisibility facts of its `constraints` attribute (`K % 64 == 0`),
//! carried through constants, products, sums and loop counters. The TMA
//! choice uses it to prove a global row stride 16-byte aligned, codegen to
//! prove that a copy's chunks never straddle the end of a row.
//!
//! A multiple is a non-negative `k` such that the value is `k · n` for some
//! integer `n`; 1 says nothing, 0 says the value is 0 (a multiple of
//! everything, as `gcd(0, k) = k`).

use std::collections::HashMap;

use tessera_base::gcd;
use tessera_ir::{Attr, DimExpr, Module, OpId, ShapeConstraint, Type, ValueDef, ValueId};

/// Whether every row stride of a row-major buffer of type `ty` is a
/// multiple of `bytes`, `multiple(d)` being what dim `d` is known to be a
/// multiple of: each stride is a multiple of the innermost one, the row's
/// length (the rule of a TMA tensor map's strides, which `fuse` also asks
/// before it gives a matmul a persistent grid).
pub fn strides_aligned(ty: &Type, bytes: i64, multiple: impl Fn(&DimExpr) -> i64) -> bool {
    let (Some(dims), Some(elem)) = (ty.dims(), ty.elem()) else {
        return false;
    };
    match dims.split_last() {
        Some((row, outer)) if !outer.is_empty() => {
            let bits = i64::from(elem.bits());
            let row_bits = multiple(row).checked_mul(bits).unwrap_or(bits);
            row_bits % (8 * bytes) == 0
        }
        _ => true,
    }
}

/// How deep a value's definition is followed (chains of index arithmetic
/// are short; a bound keeps a malformed module from recursing far).
const DEPTH: u32 = 64;

/// The known multiples of one function's values and dims.
pub struct Multiples<'m> {
    m: &'m Module,
    /// Each dim symbol's modulus, from `sym % k == 0` constraints.
    moduli: HashMap<String, i64>,
    /// The function's dim parameters (its trailing entry arguments named
    /// by `dims`), with their symbols.
    params: HashMap<ValueId, String>,
}

impl<'m> Multiples<'m> {
    /// The facts of `func`: its `constraints` (`sym % k == 0` entries; the
    /// largest `k` of each symbol's, combined by lcm) and its `dims`.
    pub fn of_function(m: &'m Module, func: OpId) -> Multiples<'m> {
        let mut moduli: HashMap<String, i64> = HashMap::new();
        let constraints = m.attr(func, "constraints").and_then(Attr::as_array).unwrap_or_default();
        for text in constraints.iter().filter_map(Attr::as_str) {
            if let Some(ShapeConstraint::Divisible { dim, by }) = ShapeConstraint::parse(text) {
                if let Some(sym) = dim.as_sym() {
                    let k = moduli.entry(sym.to_string()).or_insert(1);
                    *k = lcm(*k, by);
                }
            }
        }
        let names: Vec<String> = m
            .attr(func, "dims")
            .and_then(Attr::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|d| d.as_str().map(str::to_string))
            .collect();
        let args = m.entry_block(func).map(|b| m.block_args(b)).unwrap_or_default();
        let first = args.len().saturating_sub(names.len());
        let params = args[first..].iter().copied().zip(names).collect();
        Multiples { m, moduli, params }
    }

    /// What `dim` (a polynomial over the dim symbols) is a multiple of.
    pub fn dim(&self, dim: &DimExpr) -> i64 {
        dim.terms().into_iter().fold(0, |acc, (monomial, coeff)| {
            let term = monomial.iter().fold(magnitude(coeff), |t, sym| {
                times(t, self.moduli.get(sym).copied().unwrap_or(1))
            });
            gcd(acc, term)
        })
    }

    /// Whether every row stride of a row-major buffer of type `ty` is known
    /// to be a multiple of `bytes` ([`strides_aligned`] with these facts).
    pub fn strides_aligned(&self, ty: &Type, bytes: i64) -> bool {
        strides_aligned(ty, bytes, |d| self.dim(d))
    }

    /// What the `index` value `v` is a multiple of.
    pub fn value(&self, v: ValueId) -> i64 {
        self.at_depth(v, DEPTH)
    }

    /// Whether `v` is known to be a multiple of `k`.
    pub fn divides(&self, k: i64, v: ValueId) -> bool {
        k != 0 && self.value(v) % k == 0
    }

    fn at_depth(&self, v: ValueId, depth: u32) -> i64 {
        if depth == 0 {
            return 1;
        }
        let m = self.m;
        let of = |v: ValueId| self.at_depth(v, depth - 1);
        match m.value_def(v) {
            ValueDef::BlockArg { block, index } => {
                if let Some(sym) = self.params.get(&v) {
                    return self.moduli.get(sym).copied().unwrap_or(1);
                }
                // A loop counter runs over lb, lb + step, …
                let Some(op) = m.block_parent_op(block) else { return 1 };
                let counted = matches!(m.op(op).name.as_str(), "tile.for" | "tile.pipeline");
                match m.operands(op) {
                    [lb, _, step, ..] if counted && index == 0 => gcd(of(*lb), of(*step)),
                    _ => 1,
                }
            }
            ValueDef::Result { op, .. } => {
                let operands = m.operands(op);
                match (m.op(op).name.as_str(), operands) {
                    ("tile.const", _) => self.constant(v).map_or(1, magnitude),
                    ("tile.binary", [a, b]) => {
                        let f = m.attr(op, "fn").and_then(Attr::as_str).unwrap_or("");
                        match f {
                            "mul" => times(of(*a), of(*b)),
                            "add" | "sub" | "min" | "max" => gcd(of(*a), of(*b)),
                            "shl" => match self.constant(*b) {
                                Some(s @ 0..=62) => times(of(*a), 1 << s),
                                _ => 1,
                            },
                            _ => 1,
                        }
                    }
                    _ => 1,
                }
            }
        }
    }

    fn constant(&self, v: ValueId) -> Option<i64> {
        let op = self.m.defining_op(v)?;
        match (self.m.op(op).name.as_str(), self.m.attr(op, "value")) {
            ("tile.const", Some(Attr::Int(c))) => Some(*c),
            _ => None,
        }
    }
}

/// `|c|`, saturating at `i64::MAX` (a multiple of `|c|` is one of `c`).
fn magnitude(c: i64) -> i64 {
    i64::try_from(c.unsigned_abs()).unwrap_or(i64::MAX)
}

/// `a · b` as a multiple: when the product overflows, the larger factor
/// (which divides it) stands for it.
fn times(a: i64, b: i64) -> i64 {
    a.checked_mul(b).unwrap_or(a.max(b))
}

fn lcm(a: i64, b: i64) -> i64 {
    match gcd(a, b) {
        0 => 0,
        g => times(a / g, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_ir::parse;

    const KERNEL: &str = r#"module @m attributes {layer = "tile", target = "sm_80"} {
  func.func @k(%0: memref<MxKxbf16, global>, %1: index, %2: index) -> () attributes {block = [128, 1, 1], constraints = ["K % 64 == 0", "M <= 4096"], dims = ["K", "M"], kind = "kernel"} {
    %3 = tile.block_id() {dim = 0} : () -> index
    %4 = tile.const() {value = 128} : () -> index
    %5 = tile.binary(%3, %4) {fn = "mul"} : (index, index) -> index
    %6 = tile.const() {value = 0} : () -> index
    %7 = tile.const() {value = 32} : () -> index
    tile.for(%6, %1, %7) ({
    ^(%8: index):
      %9 = tile.binary(%8, %5) {fn = "add"} : (index, index) -> index
      %10 = tile.binary(%8, %1) {fn = "add"} : (index, index) -> index
      %11 = tile.binary(%1, %4) {fn = "rem"} : (index, index) -> index
      tile.yield() : () -> ()
    }) : (index, index, index) -> ()
    func.return() : () -> ()
  }
}
"#;

    #[test]
    fn facts_flow_through_arithmetic_and_loop_counters() {
        let m = parse(KERNEL).expect("the module parses");
        let func = m.function("k").expect("a kernel");
        let x = Multiples::of_function(&m, func);
        // The values in the order the text numbers them.
        let mut numbered = m.block_args(m.entry_block(func).unwrap()).to_vec();
        for op in m.walk_op(func) {
            numbered.extend(m.results(op));
            numbered.extend(m.regions(op).iter().flat_map(|&r| m.region_args(r)));
        }
        let v = |n: usize| numbered[n];
        assert_eq!(x.value(v(1)), 64, "K % 64 == 0");
        assert_eq!(x.value(v(2)), 1, "nothing is known of M");
        assert_eq!(x.value(v(3)), 1, "a block id");
        assert_eq!(x.value(v(5)), 128, "a block id times 128");
        assert_eq!(x.value(v(6)), 0, "zero");
        assert_eq!(x.value(v(8)), 32, "the counter of 0.. by 32");
        assert_eq!(x.value(v(9)), 32, "gcd(32, 128)");
        assert_eq!(x.value(v(10)), 32, "gcd(32, 64)");
        assert_eq!(x.value(v(11)), 1, "a remainder");
        assert!(x.divides(16, v(9)) && !x.divides(64, v(9)));
        assert_eq!(x.dim(&DimExpr::parse("2*K + 8").unwrap()), 8);
        assert_eq!(x.dim(&DimExpr::parse("K*M").unwrap()), 64);
        assert_eq!(x.dim(&DimExpr::parse("M").unwrap()), 1);
        assert_eq!(x.dim(&DimExpr::constant(48)), 48);
    }

    #[test]
    fn arithmetic_saturates_without_overflow() {
        assert_eq!(times(i64::MAX, 4), i64::MAX);
        assert_eq!(gcd(0, 12), 12);
        assert_eq!(lcm(8, 12), 24);
        assert_eq!(lcm(0, 12), 0);
    }
}
