//! Shape constraints and the solver that checks them at call sites.
//!
//! A constraint is decided when its dims are known; otherwise the solver
//! tries to prove it from the caller's own constraints (`D % 16 == 0`
//! proves `D % 8 == 0`, `S <= 4096` proves `S <= 8192`), and what it can
//! neither prove nor refute becomes a runtime guard, checked once at entry.

use std::collections::BTreeMap;
use std::fmt;

pub use tessera_base::CmpOp;
use tessera_base::Span;

use crate::poly::Poly;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConstraintKind {
    /// `dim % by == 0`
    Divisible { dim: Poly, by: i64 },
    /// `lhs op rhs`
    Compare { lhs: Poly, op: CmpOp, rhs: Poly },
    /// `dim in lo..hi` or `dim in lo..=hi`
    InRange {
        dim: Poly,
        lo: Poly,
        hi: Poly,
        inclusive: bool,
    },
}

/// A constraint from a `where` clause, with its source text and span
/// (relative to its function).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Constraint {
    pub kind: ConstraintKind,
    pub text: String,
    pub span: Span,
}

impl fmt::Display for ConstraintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstraintKind::Divisible { dim, by } => write!(f, "{dim} % {by} == 0"),
            ConstraintKind::Compare { lhs, op, rhs } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            ConstraintKind::InRange { dim, lo, hi, inclusive } => {
                write!(f, "{dim} in {lo}..{}{hi}", if *inclusive { "=" } else { "" })
            }
        }
    }
}

impl ConstraintKind {
    pub fn substitute(&self, map: &dyn Fn(&str) -> Option<Poly>) -> ConstraintKind {
        match self {
            ConstraintKind::Divisible { dim, by } => ConstraintKind::Divisible {
                dim: dim.substitute(map),
                by: *by,
            },
            ConstraintKind::Compare { lhs, op, rhs } => ConstraintKind::Compare {
                lhs: lhs.substitute(map),
                op: *op,
                rhs: rhs.substitute(map),
            },
            ConstraintKind::InRange { dim, lo, hi, inclusive } => ConstraintKind::InRange {
                dim: dim.substitute(map),
                lo: lo.substitute(map),
                hi: hi.substitute(map),
                inclusive: *inclusive,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    /// Refuted; the text shows the arithmetic (`100 % 8 == 4`).
    Violated(String),
    /// Neither provable nor refutable here: a runtime guard.
    Unknown,
}

/// Decides `constraint` given the caller's constraints as facts.
pub fn decide(constraint: &ConstraintKind, facts: &[ConstraintKind]) -> Verdict {
    match constraint {
        ConstraintKind::Divisible { dim, by } => {
            if let Some(v) = dim.as_const() {
                return if v.rem_euclid(*by) == 0 {
                    Verdict::Holds
                } else {
                    Verdict::Violated(format!("{v} % {by} == {}", v.rem_euclid(*by)))
                };
            }
            if dim.divisible_by(*by) || proves_divisible(dim, *by, facts) {
                Verdict::Holds
            } else {
                Verdict::Unknown
            }
        }
        ConstraintKind::Compare { lhs, op, rhs } => {
            let diff = lhs.sub(rhs);
            if let Some(d) = diff.as_const() {
                return if op.holds(d, 0) {
                    Verdict::Holds
                } else {
                    Verdict::Violated(match (lhs.as_const(), rhs.as_const()) {
                        (Some(a), Some(b)) => format!("{a} {} {b} is false", op.symbol()),
                        _ => format!("{lhs} {} {rhs} is false", op.symbol()),
                    })
                };
            }
            if *op == CmpOp::Eq {
                if let Some(why) = no_integer_solution(&diff) {
                    return Verdict::Violated(why);
                }
                // A fact that says the same (`N == M` for `M == N`).
                let stated = facts.iter().any(|f| match f {
                    ConstraintKind::Compare {
                        lhs: l,
                        op: CmpOp::Eq,
                        rhs: r,
                    } => {
                        let d = l.sub(r);
                        d == diff || d.neg() == diff
                    }
                    _ => false,
                });
                if stated {
                    return Verdict::Holds;
                }
            }
            match (lhs.as_sym(), rhs.as_const()) {
                (Some(sym), Some(bound)) if proves_bound(sym, *op, bound, facts) => Verdict::Holds,
                (Some(sym), Some(bound)) if proves_bound(sym, negate(*op), bound, facts) => Verdict::Violated(format!(
                    "{sym} {} {bound} contradicts the caller's own constraints",
                    op.symbol()
                )),
                _ => Verdict::Unknown,
            }
        }
        ConstraintKind::InRange { dim, lo, hi, inclusive } => {
            let upper = if *inclusive { CmpOp::Le } else { CmpOp::Lt };
            let low = decide(
                &ConstraintKind::Compare {
                    lhs: dim.clone(),
                    op: CmpOp::Ge,
                    rhs: lo.clone(),
                },
                facts,
            );
            let high = decide(
                &ConstraintKind::Compare {
                    lhs: dim.clone(),
                    op: upper,
                    rhs: hi.clone(),
                },
                facts,
            );
            match (low, high) {
                (Verdict::Holds, Verdict::Holds) => Verdict::Holds,
                (Verdict::Violated(_), _) | (_, Verdict::Violated(_)) => Verdict::Violated(match dim.as_const() {
                    Some(v) => format!("{v} is outside {lo}..{}{hi}", if *inclusive { "=" } else { "" }),
                    None => format!("{dim} is outside the range"),
                }),
                _ => Verdict::Unknown,
            }
        }
    }
}

fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// `c * X + r == 0` has no integer solution when `c` does not divide `r`
/// (a derived dim that does not divide: `100 == 8 * Dh`).
fn no_integer_solution(diff: &Poly) -> Option<String> {
    let symbols: Vec<&str> = diff.symbols().collect();
    let [sym] = symbols.as_slice() else { return None };
    let rest = diff.substitute(&|s| (s == *sym).then(|| Poly::constant(0)));
    let coeff = diff.substitute(&|s| (s == *sym).then(|| Poly::constant(1))).sub(&rest);
    let (c, r) = (coeff.as_const()?, rest.as_const()?);
    (c != 0 && r % c != 0).then(|| format!("{} is not a multiple of {}", r.abs(), c.abs()))
}

/// Whether the facts make every term of `dim` a multiple of `by`.
fn proves_divisible(dim: &Poly, by: i64, facts: &[ConstraintKind]) -> bool {
    let Some(sym) = dim.as_sym() else { return false };
    facts.iter().any(|f| match f {
        ConstraintKind::Divisible { dim, by: m } => dim.as_sym() == Some(sym) && m % by == 0,
        ConstraintKind::Compare {
            lhs,
            op: CmpOp::Eq,
            rhs,
        } => lhs.as_sym() == Some(sym) && rhs.as_const().is_some_and(|v| v % by == 0),
        _ => false,
    })
}

/// Whether the facts bound `sym` tightly enough for `sym op bound`.
fn proves_bound(sym: &str, op: CmpOp, bound: i64, facts: &[ConstraintKind]) -> bool {
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    for fact in facts {
        match fact {
            ConstraintKind::Compare { lhs, op: fop, rhs } if lhs.as_sym() == Some(sym) => {
                let Some(v) = rhs.as_const() else { continue };
                match fop {
                    CmpOp::Lt => hi = hi.min(v.saturating_sub(1)),
                    CmpOp::Le => hi = hi.min(v),
                    CmpOp::Gt => lo = lo.max(v.saturating_add(1)),
                    CmpOp::Ge => lo = lo.max(v),
                    CmpOp::Eq => {
                        lo = lo.max(v);
                        hi = hi.min(v);
                    }
                    CmpOp::Ne => {}
                }
            }
            ConstraintKind::InRange {
                dim,
                lo: l,
                hi: h,
                inclusive,
            } if dim.as_sym() == Some(sym) => {
                if let (Some(l), Some(h)) = (l.as_const(), h.as_const()) {
                    lo = lo.max(l);
                    hi = hi.min(if *inclusive { h } else { h.saturating_sub(1) });
                }
            }
            _ => {}
        }
    }
    match op {
        CmpOp::Le => hi <= bound,
        CmpOp::Lt => hi < bound,
        CmpOp::Ge => lo >= bound,
        CmpOp::Gt => lo > bound,
        CmpOp::Eq => lo == bound && hi == bound,
        CmpOp::Ne => hi < bound || lo > bound,
    }
}

/// Solves equalities for symbols not yet bound: `D == H * Dh` with `D` and
/// `H` known gives `Dh = D / H` (when it divides). Returns what it learned.
pub fn derive(constraints: &[ConstraintKind], bound: &mut BTreeMap<String, Poly>) {
    for _ in 0..constraints.len() {
        let mut learned = false;
        for c in constraints {
            let ConstraintKind::Compare {
                lhs,
                op: CmpOp::Eq,
                rhs,
            } = c
            else {
                continue;
            };
            let subst = |p: &Poly| p.substitute(&|s| bound.get(s).cloned());
            let (l, r) = (subst(lhs), subst(rhs));
            for (known, unknown) in [(&l, &r), (&r, &l)] {
                let Some(value) = known.as_const() else { continue };
                let unknowns: Vec<&str> = unknown.symbols().collect();
                let [sym] = unknowns.as_slice() else { continue };
                // unknown = coeff * sym + rest, with coeff and rest constant
                let rest = unknown.substitute(&|s| (s == *sym).then(|| Poly::constant(0)));
                let coeff = unknown
                    .substitute(&|s| (s == *sym).then(|| Poly::constant(1)))
                    .sub(&rest);
                if let (Some(c), Some(r)) = (coeff.as_const(), rest.as_const()) {
                    if c != 0 && (value - r) % c == 0 {
                        bound.insert(sym.to_string(), Poly::constant((value - r) / c));
                        learned = true;
                    }
                }
            }
        }
        if !learned {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn div(sym: &str, by: i64) -> ConstraintKind {
        ConstraintKind::Divisible {
            dim: Poly::sym(sym),
            by,
        }
    }

    #[test]
    fn concrete_constraints_are_decided() {
        let c = ConstraintKind::Divisible {
            dim: Poly::constant(100),
            by: 8,
        };
        assert_eq!(decide(&c, &[]), Verdict::Violated("100 % 8 == 4".into()));
        let c = ConstraintKind::Compare {
            lhs: Poly::constant(4096),
            op: CmpOp::Le,
            rhs: Poly::constant(8192),
        };
        assert_eq!(decide(&c, &[]), Verdict::Holds);
        let c = ConstraintKind::InRange {
            dim: Poly::constant(0),
            lo: Poly::constant(1),
            hi: Poly::constant(4096),
            inclusive: true,
        };
        assert!(matches!(decide(&c, &[]), Verdict::Violated(_)));
    }

    #[test]
    fn symbolic_constraints_follow_from_facts() {
        assert_eq!(decide(&div("D", 8), &[div("D", 16)]), Verdict::Holds);
        assert_eq!(decide(&div("D", 16), &[div("D", 8)]), Verdict::Unknown);
        let le = |v| ConstraintKind::Compare {
            lhs: Poly::sym("S"),
            op: CmpOp::Le,
            rhs: Poly::constant(v),
        };
        assert_eq!(decide(&le(8192), &[le(4096)]), Verdict::Holds);
        assert_eq!(decide(&le(4096), &[le(8192)]), Verdict::Unknown);
        let eight_n = ConstraintKind::Divisible {
            dim: Poly::constant(8).mul(&Poly::sym("N")),
            by: 8,
        };
        assert_eq!(decide(&eight_n, &[]), Verdict::Holds);
    }

    #[test]
    fn an_equality_follows_from_the_same_fact_either_way_round() {
        let eq = |a: &str, b: &str| ConstraintKind::Compare {
            lhs: Poly::sym(a),
            op: CmpOp::Eq,
            rhs: Poly::sym(b),
        };
        assert_eq!(decide(&eq("M", "N"), &[eq("N", "M")]), Verdict::Holds);
        assert_eq!(decide(&eq("M", "N"), &[eq("M", "N")]), Verdict::Holds);
        assert_eq!(decide(&eq("M", "N"), &[eq("M", "K")]), Verdict::Unknown);
        assert_eq!(decide(&eq("M", "N"), &[]), Verdict::Unknown);
    }

    #[test]
    fn contradictions_and_indivisible_derivations_are_refuted() {
        let gt = ConstraintKind::Compare {
            lhs: Poly::sym("S"),
            op: CmpOp::Gt,
            rhs: Poly::constant(9000),
        };
        let le = ConstraintKind::Compare {
            lhs: Poly::sym("S"),
            op: CmpOp::Le,
            rhs: Poly::constant(8192),
        };
        assert!(matches!(decide(&le, &[gt]), Verdict::Violated(_)));
        let eq = ConstraintKind::Compare {
            lhs: Poly::constant(100),
            op: CmpOp::Eq,
            rhs: Poly::constant(8).mul(&Poly::sym("Dh")),
        };
        assert_eq!(decide(&eq, &[]), Verdict::Violated("100 is not a multiple of 8".into()));
    }

    #[test]
    fn derived_dims_are_solved() {
        let eq = ConstraintKind::Compare {
            lhs: Poly::sym("D"),
            op: CmpOp::Eq,
            rhs: Poly::sym("H").mul(&Poly::sym("Dh")),
        };
        let mut bound = BTreeMap::from([
            ("D".to_string(), Poly::constant(512)),
            ("H".to_string(), Poly::constant(8)),
        ]);
        derive(&[eq], &mut bound);
        assert_eq!(bound.get("Dh").and_then(Poly::as_const), Some(64));
    }
}
