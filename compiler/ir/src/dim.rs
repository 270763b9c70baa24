//! Dims of tensor and memref types: integer constants or polynomials over
//! symbol names (`M`, `H*Dh`, `N+1`), kept in one canonical form so that two
//! dims are equal exactly when they are the same polynomial.

use std::collections::BTreeMap;
use std::fmt;

/// A dim: a sum of products of symbols with integer coefficients.
///
/// The canonical form is a map from monomials (sorted lists of symbol names,
/// with repetition for powers) to nonzero coefficients; the constant term is
/// the empty monomial. Arithmetic saturates instead of overflowing.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimExpr {
    terms: BTreeMap<Vec<String>, i64>,
}

/// A dim of a shaped type. Constants are the polynomials without symbols.
pub type Dim = DimExpr;

impl DimExpr {
    pub fn constant(value: i64) -> DimExpr {
        let mut terms = BTreeMap::new();
        if value != 0 {
            terms.insert(Vec::new(), value);
        }
        DimExpr { terms }
    }

    pub fn sym(name: impl Into<String>) -> DimExpr {
        DimExpr {
            terms: BTreeMap::from([(vec![name.into()], 1)]),
        }
    }

    /// Parses a dim as the checker writes it in constraints (`K`, `H * Dh`,
    /// `2 * N + 1`) or as it prints (`Dh*H`, `N+1`): sums and differences
    /// of products of integers and symbols.
    pub fn parse(text: &str) -> Option<DimExpr> {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if text.is_empty() {
            return None;
        }
        let mut out = DimExpr::default();
        let mut rest = text.as_str();
        let mut negative = false;
        if let Some(r) = rest.strip_prefix('-') {
            negative = true;
            rest = r;
        }
        loop {
            let end = rest.find(['+', '-']).unwrap_or(rest.len());
            let (term_text, tail) = rest.split_at(end);
            let mut term = DimExpr::constant(1);
            for factor in term_text.split('*') {
                let f = if factor.bytes().all(|b| b.is_ascii_digit()) && !factor.is_empty() {
                    DimExpr::constant(factor.parse().ok()?)
                } else if is_ident(factor) {
                    DimExpr::sym(factor)
                } else {
                    return None;
                };
                term = term.mul(&f);
            }
            out = if negative { out.sub(&term) } else { out.add(&term) };
            match tail.chars().next() {
                None => return Some(out),
                Some(sign) => {
                    negative = sign == '-';
                    rest = &tail[1..];
                }
            }
        }
    }

    /// The value, when the dim is a constant.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The symbol, when the dim is exactly one symbol.
    pub fn as_sym(&self) -> Option<&str> {
        match self.terms.iter().next() {
            Some((monomial, 1)) if self.terms.len() == 1 && monomial.len() == 1 => Some(&monomial[0]),
            _ => None,
        }
    }

    /// The symbols the dim mentions, sorted, each once.
    pub fn symbols(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.terms.keys().flatten().map(String::as_str).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The terms as `(symbols, coefficient)`, highest degree first and the
    /// constant last: the order in which they print.
    pub fn terms(&self) -> Vec<(&[String], i64)> {
        let mut terms: Vec<(&[String], i64)> = self.terms.iter().map(|(m, &c)| (m.as_slice(), c)).collect();
        terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        terms
    }

    fn insert(&mut self, monomial: Vec<String>, coeff: i64) {
        let entry = self.terms.entry(monomial.clone()).or_insert(0);
        *entry = entry.saturating_add(coeff);
        if *entry == 0 {
            self.terms.remove(&monomial);
        }
    }

    pub fn add(&self, other: &DimExpr) -> DimExpr {
        let mut out = self.clone();
        for (m, &c) in &other.terms {
            out.insert(m.clone(), c);
        }
        out
    }

    pub fn neg(&self) -> DimExpr {
        DimExpr {
            terms: self
                .terms
                .iter()
                .map(|(m, c)| (m.clone(), c.saturating_neg()))
                .collect(),
        }
    }

    pub fn sub(&self, other: &DimExpr) -> DimExpr {
        self.add(&other.neg())
    }

    pub fn mul(&self, other: &DimExpr) -> DimExpr {
        let mut out = DimExpr::default();
        for (ma, &ca) in &self.terms {
            for (mb, &cb) in &other.terms {
                let mut m: Vec<String> = ma.iter().chain(mb).cloned().collect();
                m.sort();
                out.insert(m, ca.saturating_mul(cb));
            }
        }
        out
    }

    /// Replaces symbols by dims (symbols `map` does not know stay).
    pub fn substitute(&self, map: impl Fn(&str) -> Option<DimExpr>) -> DimExpr {
        let mut out = DimExpr::default();
        for (monomial, &coeff) in &self.terms {
            let mut term = DimExpr::constant(coeff);
            for sym in monomial {
                term = term.mul(&map(sym).unwrap_or_else(|| DimExpr::sym(sym.clone())));
            }
            out = out.add(&term);
        }
        out
    }

    /// The value under an assignment of the symbols; `None` when a symbol is
    /// unbound or the arithmetic overflows.
    pub fn eval(&self, env: impl Fn(&str) -> Option<i64>) -> Option<i64> {
        let mut sum: i64 = 0;
        for (monomial, &coeff) in &self.terms {
            let mut term = coeff;
            for sym in monomial {
                term = term.checked_mul(env(sym)?)?;
            }
            sum = sum.checked_add(term)?;
        }
        Some(sum)
    }

    /// Whether the dim prints without parentheses inside a shape: a
    /// nonnegative constant, or a symbol that cannot be mistaken for the
    /// `x` separator (see `spec/ir.md`).
    pub(crate) fn is_bare(&self) -> bool {
        match (self.as_const(), self.as_sym()) {
            (Some(c), _) => c >= 0,
            (_, Some(s)) => !s.contains('x'),
            _ => false,
        }
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for DimExpr {
    /// The canonical text: `128`, `M`, `H*Dh` style products, `N+1` style
    /// sums, highest degree first and the constant last. Inside a shape the
    /// printer parenthesizes everything that is not bare.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        for (i, (monomial, coeff)) in self.terms().into_iter().enumerate() {
            let magnitude = coeff.unsigned_abs();
            if coeff < 0 {
                f.write_str("-")?;
            } else if i > 0 {
                f.write_str("+")?;
            }
            match (magnitude, monomial.is_empty()) {
                (m, true) => write!(f, "{m}")?,
                (1, false) => f.write_str(&monomial.join("*"))?,
                (m, false) => write!(f, "{m}*{}", monomial.join("*"))?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for DimExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl From<i64> for DimExpr {
    fn from(value: i64) -> DimExpr {
        DimExpr::constant(value)
    }
}

impl From<&str> for DimExpr {
    fn from(name: &str) -> DimExpr {
        DimExpr::sym(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_compare_equal_and_print_sorted() {
        let h = DimExpr::sym("H");
        let dh = DimExpr::sym("Dh");
        assert_eq!(h.mul(&dh), dh.mul(&h));
        assert_eq!(h.mul(&dh).to_string(), "Dh*H");
        let n1 = DimExpr::constant(1).add(&DimExpr::sym("N"));
        assert_eq!(n1.to_string(), "N+1");
        assert_eq!(DimExpr::sym("N").neg().sub(&DimExpr::constant(3)).to_string(), "-N-3");
        assert_eq!(DimExpr::constant(2).mul(&DimExpr::sym("N")).to_string(), "2*N");
        assert_eq!(h.sub(&h), DimExpr::constant(0));
        assert_eq!(h.mul(&h).add(&h).to_string(), "H*H+H");
    }

    #[test]
    fn eval_and_substitute() {
        let d = DimExpr::sym("H").mul(&DimExpr::sym("Dh")).add(&DimExpr::constant(1));
        let env = |s: &str| match s {
            "H" => Some(8),
            "Dh" => Some(64),
            _ => None,
        };
        assert_eq!(d.eval(env), Some(513));
        assert_eq!(DimExpr::sym("Q").eval(env), None);
        assert_eq!(DimExpr::constant(i64::MAX).add(&DimExpr::sym("H")).eval(env), None);
        let s = d.substitute(|s| (s == "H").then(|| DimExpr::constant(2)));
        assert_eq!(s.to_string(), "2*Dh+1");
    }

    #[test]
    fn dims_parse_in_both_spellings() {
        assert_eq!(DimExpr::parse("H * Dh"), DimExpr::parse("Dh*H"));
        assert_eq!(DimExpr::parse("2 * N + 1").unwrap().to_string(), "2*N+1");
        assert_eq!(DimExpr::parse("-N-3").unwrap().to_string(), "-N-3");
        assert_eq!(DimExpr::parse("N - 1").unwrap().to_string(), "N-1");
        assert_eq!(DimExpr::parse("N +"), None);
        assert_eq!(DimExpr::parse("f(x)"), None);
    }

    #[test]
    fn bare_dims() {
        assert!(DimExpr::constant(128).is_bare());
        assert!(DimExpr::sym("M").is_bare());
        assert!(!DimExpr::sym("idx").is_bare());
        assert!(!DimExpr::constant(-1).is_bare());
        assert!(!DimExpr::sym("N").add(&DimExpr::constant(1)).is_bare());
    }
}
