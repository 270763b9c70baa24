//! Shape constraints over dims, as `where` clauses write them and runtime
//! guards carry them: `D % 8 == 0`, `S <= 8192`, `B in 1..=4096`. The text
//! form is the checker's (`spec/shapes.md`) with dims in [`DimExpr`]'s
//! canonical spelling; [`ShapeConstraint::parse`] reads both.

use std::fmt;

use tessera_base::CmpOp;

use crate::dim::DimExpr;

/// One shape constraint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShapeConstraint {
    /// `dim % by == 0`, `by` positive.
    Divisible { dim: DimExpr, by: i64 },
    /// `dim % by != 0`, `by` positive (the rows a kernel for rows of whole
    /// 8-column runs does not take).
    Indivisible { dim: DimExpr, by: i64 },
    /// `lhs op rhs`.
    Compare { lhs: DimExpr, op: CmpOp, rhs: DimExpr },
    /// `dim in lo..hi` or `dim in lo..=hi`.
    InRange {
        dim: DimExpr,
        lo: DimExpr,
        hi: DimExpr,
        inclusive: bool,
    },
}

impl ShapeConstraint {
    /// Reads a constraint in the checker's spelling (`H * Dh % 8 == 0`) or
    /// the canonical one (`Dh*H % 8 == 0`); None when it is not one.
    pub fn parse(text: &str) -> Option<ShapeConstraint> {
        if let Some((dim, range)) = text.split_once(" in ") {
            let (lo, hi, inclusive) = match range.split_once("..=") {
                Some((lo, hi)) => (lo, hi, true),
                None => {
                    let (lo, hi) = range.split_once("..")?;
                    (lo, hi, false)
                }
            };
            return Some(ShapeConstraint::InRange {
                dim: DimExpr::parse(dim)?,
                lo: DimExpr::parse(lo)?,
                hi: DimExpr::parse(hi)?,
                inclusive,
            });
        }
        let (op, at, len) = CmpOp::ALL
            .iter()
            .find_map(|&(op, s)| text.find(s).map(|at| (op, at, s.len())))?;
        let (lhs, rhs) = (&text[..at], &text[at + len..]);
        if let (CmpOp::Eq | CmpOp::Ne, Some((dim, by))) = (op, lhs.split_once('%')) {
            let by: i64 = by.trim().parse().ok()?;
            if rhs.trim() != "0" || by <= 0 {
                return None;
            }
            let dim = DimExpr::parse(dim)?;
            return Some(if op == CmpOp::Eq {
                ShapeConstraint::Divisible { dim, by }
            } else {
                ShapeConstraint::Indivisible { dim, by }
            });
        }
        Some(ShapeConstraint::Compare {
            lhs: DimExpr::parse(lhs)?,
            op,
            rhs: DimExpr::parse(rhs)?,
        })
    }

    /// The constraints of a conjunction, `a and b and …` (a launch's
    /// `when`); None when one of them is not a constraint.
    pub fn parse_all(text: &str) -> Option<Vec<ShapeConstraint>> {
        text.split(" and ").map(ShapeConstraint::parse).collect()
    }

    /// The text of a conjunction, which [`ShapeConstraint::parse_all`]
    /// reads back.
    pub fn join(all: &[ShapeConstraint]) -> String {
        all.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
    }

    /// The dims the constraint relates.
    fn dims(&self) -> Vec<&DimExpr> {
        match self {
            ShapeConstraint::Divisible { dim, .. } | ShapeConstraint::Indivisible { dim, .. } => vec![dim],
            ShapeConstraint::Compare { lhs, rhs, .. } => vec![lhs, rhs],
            ShapeConstraint::InRange { dim, lo, hi, .. } => vec![dim, lo, hi],
        }
    }

    /// The symbols the constraint mentions, sorted, each once.
    pub fn symbols(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.dims().into_iter().flat_map(DimExpr::symbols).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The constraint with symbols replaced by dims (those `map` does not
    /// know stay).
    pub fn substitute(&self, map: impl Fn(&str) -> Option<DimExpr>) -> ShapeConstraint {
        let s = |d: &DimExpr| d.substitute(&map);
        match self {
            ShapeConstraint::Divisible { dim, by } => ShapeConstraint::Divisible { dim: s(dim), by: *by },
            ShapeConstraint::Indivisible { dim, by } => ShapeConstraint::Indivisible { dim: s(dim), by: *by },
            ShapeConstraint::Compare { lhs, op, rhs } => ShapeConstraint::Compare {
                lhs: s(lhs),
                op: *op,
                rhs: s(rhs),
            },
            ShapeConstraint::InRange { dim, lo, hi, inclusive } => ShapeConstraint::InRange {
                dim: s(dim),
                lo: s(lo),
                hi: s(hi),
                inclusive: *inclusive,
            },
        }
    }

    /// Decides the constraint under an assignment of its symbols: `Ok` when
    /// it holds, else the arithmetic that shows it false (`100 % 8 == 4`,
    /// `9000 <= 8192 is false`, `0 is outside 1..=4096`). None when a
    /// symbol is unbound or the arithmetic overflows.
    pub fn check(&self, env: impl Fn(&str) -> Option<i64>) -> Option<Result<(), String>> {
        let eval = |d: &DimExpr| d.eval(&env);
        Some(match self {
            ShapeConstraint::Divisible { dim, by } => {
                let v = eval(dim)?;
                let rem = v.rem_euclid(*by);
                if rem == 0 {
                    Ok(())
                } else {
                    Err(format!("{v} % {by} == {rem}"))
                }
            }
            ShapeConstraint::Indivisible { dim, by } => {
                let v = eval(dim)?;
                if v.rem_euclid(*by) != 0 {
                    Ok(())
                } else {
                    Err(format!("{v} % {by} == 0"))
                }
            }
            ShapeConstraint::Compare { lhs, op, rhs } => {
                let (a, b) = (eval(lhs)?, eval(rhs)?);
                if op.holds(a, b) {
                    Ok(())
                } else {
                    Err(format!("{a} {} {b} is false", op.symbol()))
                }
            }
            ShapeConstraint::InRange { dim, lo, hi, inclusive } => {
                let (v, lo, hi) = (eval(dim)?, eval(lo)?, eval(hi)?);
                if v >= lo && if *inclusive { v <= hi } else { v < hi } {
                    Ok(())
                } else {
                    Err(format!(
                        "{v} is outside {lo}..{}{hi}",
                        if *inclusive { "=" } else { "" }
                    ))
                }
            }
        })
    }
    /// Whether some value of `dim` in `lo..=hi` can satisfy the constraint:
    /// false only when it relates `dim` alone (comparisons with constants,
    /// ranges of constants) and no value of the range meets it; true
    /// whenever it cannot tell (other dims, divisibility).
    pub fn admits(&self, dim: &DimExpr, lo: i64, hi: i64) -> bool {
        let relates_dim_alone = self.dims().into_iter().all(|d| d == dim || d.as_const().is_some());
        let divisibility = matches!(
            self,
            ShapeConstraint::Divisible { .. } | ShapeConstraint::Indivisible { .. }
        );
        if lo > hi || divisibility || !relates_dim_alone {
            return lo <= hi;
        }
        let Some(sym) = dim.as_sym() else { return true };
        // A comparison or a range of constants holds on an interval (or
        // off one point): the ends of `lo..=hi` and the values next to
        // each constant decide.
        let consts = self.dims().into_iter().filter_map(DimExpr::as_const);
        let near = consts.flat_map(|c| [c.saturating_sub(1), c, c.saturating_add(1)]);
        [lo, hi]
            .into_iter()
            .chain(near.map(|v| v.clamp(lo, hi)))
            .any(|v| self.check(|s| (s == sym).then_some(v)) == Some(Ok(())))
    }
}

impl fmt::Display for ShapeConstraint {
    /// The canonical text, which [`ShapeConstraint::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeConstraint::Divisible { dim, by } => write!(f, "{dim} % {by} == 0"),
            ShapeConstraint::Indivisible { dim, by } => write!(f, "{dim} % {by} != 0"),
            ShapeConstraint::Compare { lhs, op, rhs } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            ShapeConstraint::InRange { dim, lo, hi, inclusive } => {
                write!(f, "{dim} in {lo}..{}{hi}", if *inclusive { "=" } else { "" })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(s: &str) -> Option<i64> {
        match s {
            "D" => Some(100),
            "S" => Some(9000),
            "B" => Some(0),
            "H" => Some(8),
            _ => None,
        }
    }

    #[test]
    fn both_spellings_parse_to_one_canonical_text() {
        for (written, canonical) in [
            ("H * Dh % 8 == 0", "Dh*H % 8 == 0"),
            ("S <= 8192", "S <= 8192"),
            ("S<8192", "S < 8192"),
            ("B in 1..=4096", "B in 1..=4096"),
            ("B in 0..N + 1", "B in 0..N+1"),
            ("E == 2 * D", "E == 2*D"),
            ("D != 3", "D != 3"),
            ("D >= H", "D >= H"),
            ("C % 8 != 0", "C % 8 != 0"),
        ] {
            let c = ShapeConstraint::parse(written).unwrap_or_else(|| panic!("{written}"));
            assert_eq!(c.to_string(), canonical);
            assert_eq!(ShapeConstraint::parse(canonical), Some(c));
        }
    }

    #[test]
    fn rejects_what_is_not_a_constraint() {
        for bad in [
            "",
            "D",
            "D % 8",
            "D % 0 == 0",
            "D % 8 == 1",
            "D % 8 != 2",
            "D % 0 != 0",
            "D % k == 0",
            "f(D) < 3",
            "B in 1",
            "D == ",
        ] {
            assert_eq!(ShapeConstraint::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn checks_show_the_arithmetic() {
        let check = |t: &str| ShapeConstraint::parse(t).unwrap().check(env);
        assert_eq!(check("D % 4 == 0"), Some(Ok(())));
        assert_eq!(check("D % 8 == 0"), Some(Err("100 % 8 == 4".into())));
        assert_eq!(check("S <= 8192"), Some(Err("9000 <= 8192 is false".into())));
        assert_eq!(check("B in 1..=4096"), Some(Err("0 is outside 1..=4096".into())));
        assert_eq!(check("H in 1..8"), Some(Err("8 is outside 1..8".into())));
        assert_eq!(check("H * D % 8 == 0"), Some(Ok(())));
        assert_eq!(check("Q < 3"), None);
        assert_eq!(check("D % 8 != 0"), Some(Ok(())));
        assert_eq!(check("D % 4 != 0"), Some(Err("100 % 4 == 0".into())));
    }

    #[test]
    fn conjunctions_read_back_and_fail_on_any_part() {
        let all = ShapeConstraint::parse_all("C in 2049..=4096 and C % 8 == 0").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(ShapeConstraint::join(&all), "C in 2049..=4096 and C % 8 == 0");
        assert_eq!(ShapeConstraint::parse_all("C <= 1024 and C % 8"), None);
        assert_eq!(ShapeConstraint::parse_all("C <= 1024").map(|c| c.len()), Some(1));
    }

    #[test]
    fn substitution_and_symbols() {
        let c = ShapeConstraint::parse("D % 8 == 0").unwrap();
        let s = c.substitute(|x| (x == "D").then(|| DimExpr::parse("2 * E").unwrap()));
        assert_eq!(s.to_string(), "2*E % 8 == 0");
        let r = ShapeConstraint::parse("B in H..=S * D").unwrap();
        assert_eq!(r.symbols(), ["B", "D", "H", "S"]);
    }

    #[test]
    fn admits_a_range_when_one_of_its_values_meets_the_constraint() {
        let c = DimExpr::sym("C");
        let admits = |text: &str, lo, hi| ShapeConstraint::parse(text).unwrap().admits(&c, lo, hi);
        assert!(admits("C <= 1024", 0, 1024));
        assert!(admits("C <= 1024", 1024, 2048));
        assert!(!admits("C <= 1024", 1025, 2048));
        assert!(!admits("C < 1025", 1025, i64::MAX));
        assert!(admits("C > 2000", 1025, 2048));
        assert!(!admits("C >= 2049", 1025, 2048));
        assert!(admits("C in 1500..1600", 1025, 2048));
        assert!(!admits("C in 1..=1024", 1025, 2048));
        assert!(!admits("C == 4096", 1025, 2048));
        assert!(admits("C != 1025", 1025, 1026));
        assert!(!admits("C != 1025", 1025, 1025));
        assert!(!admits("1024 >= C", 1025, 2048));
        // Divisibility, or other dims: it cannot tell.
        assert!(admits("C % 4096 == 0", 1025, 2048));
        assert!(admits("C % 8 != 0", 1025, 2048));
        assert!(admits("C <= D", 1025, 2048));
        assert!(!admits("C <= D", 2048, 1025));
    }
}
