//! Dims as canonical polynomials over integer symbols: `H * Dh`, `2*N + 1`.
//! Two dim expressions are equal exactly when their canonical forms are.

use std::collections::BTreeMap;
use std::fmt;

/// A factor of a monomial: a dim symbol, or an opaque term for a
/// subexpression that is not polynomial (`ceil_div(N, 256)`, `N // 2`),
/// compared by its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    Sym(String),
    Opaque(String),
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Sym(s) => f.write_str(s),
            Atom::Opaque(s) => write!(f, "({s})"),
        }
    }
}

/// A sum of monomials with integer coefficients, zero terms removed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Poly {
    terms: BTreeMap<Vec<Atom>, i64>,
}

impl Poly {
    pub fn constant(value: i64) -> Poly {
        let mut terms = BTreeMap::new();
        if value != 0 {
            terms.insert(Vec::new(), value);
        }
        Poly { terms }
    }

    pub fn sym(name: &str) -> Poly {
        Poly::atom(Atom::Sym(name.to_string()))
    }

    pub fn opaque(text: &str) -> Poly {
        Poly::atom(Atom::Opaque(text.to_string()))
    }

    fn atom(atom: Atom) -> Poly {
        Poly {
            terms: BTreeMap::from([(vec![atom], 1)]),
        }
    }

    /// The value, when the polynomial is a constant.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The symbol, when the polynomial is exactly one symbol.
    pub fn as_sym(&self) -> Option<&str> {
        let (monomial, &coeff) = self.terms.iter().next()?;
        match (self.terms.len(), coeff, monomial.as_slice()) {
            (1, 1, [Atom::Sym(s)]) => Some(s),
            _ => None,
        }
    }

    /// The monomials with their coefficients, in canonical order.
    pub fn terms(&self) -> impl Iterator<Item = (&[Atom], i64)> {
        self.terms.iter().map(|(m, &c)| (m.as_slice(), c))
    }

    pub fn symbols(&self) -> impl Iterator<Item = &str> {
        self.terms.keys().flatten().filter_map(|a| match a {
            Atom::Sym(s) => Some(s.as_str()),
            Atom::Opaque(_) => None,
        })
    }

    /// The first factor that is not a symbol (`N // 2`), as written.
    pub fn first_opaque(&self) -> Option<&str> {
        self.terms.keys().flatten().find_map(|a| match a {
            Atom::Opaque(text) => Some(text.as_str()),
            Atom::Sym(_) => None,
        })
    }

    /// Whether some term has a factor that is not a symbol (`N // 2`).
    pub fn has_opaque(&self) -> bool {
        self.terms.keys().flatten().any(|a| matches!(a, Atom::Opaque(_)))
    }

    fn insert(&mut self, monomial: Vec<Atom>, coeff: i64) {
        let entry = self.terms.entry(monomial).or_insert(0);
        *entry = entry.saturating_add(coeff);
        if *entry == 0 {
            self.terms.retain(|_, c| *c != 0);
        }
    }

    pub fn add(&self, other: &Poly) -> Poly {
        let mut out = self.clone();
        for (m, c) in &other.terms {
            out.insert(m.clone(), *c);
        }
        out
    }

    pub fn neg(&self) -> Poly {
        Poly {
            terms: self
                .terms
                .iter()
                .map(|(m, c)| (m.clone(), c.saturating_neg()))
                .collect(),
        }
    }

    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.neg())
    }

    pub fn mul(&self, other: &Poly) -> Poly {
        let mut out = Poly::default();
        for (ma, ca) in &self.terms {
            for (mb, cb) in &other.terms {
                let mut m: Vec<Atom> = ma.iter().chain(mb).cloned().collect();
                m.sort();
                out.insert(m, ca.saturating_mul(*cb));
            }
        }
        out
    }

    /// `self / divisor` when the divisor is one term and divides every
    /// term of `self` exactly (`6*B*H / (2*H)` is `3*B`); None otherwise.
    pub fn div_exact(&self, divisor: &Poly) -> Option<Poly> {
        let [(factors, &by)] = divisor.terms.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let mut out = Poly::default();
        for (monomial, &coeff) in &self.terms {
            if coeff.checked_rem(by)? != 0 {
                return None;
            }
            let mut rest = monomial.clone();
            for f in factors {
                let at = rest.iter().position(|a| a == f)?;
                rest.remove(at);
            }
            out.insert(rest, coeff.checked_div(by)?);
        }
        Some(out)
    }

    /// `ceil(self / k)` for `k > 0`, when every term but the constant one
    /// is a multiple of `k` (so `self = k·Q + c` and the result is
    /// `Q + ceil(c / k)` for any integer symbols): `(2*H + 1) / 2` up is
    /// `H + 1`. None otherwise.
    pub fn div_ceil(&self, k: i64) -> Option<Poly> {
        if k <= 0 {
            return None;
        }
        let c = self.terms.get(&Vec::new()).copied().unwrap_or(0);
        let quotient = self.sub(&Poly::constant(c)).div_exact(&Poly::constant(k))?;
        let up = c.checked_add(k - 1)?.div_euclid(k);
        Some(quotient.add(&Poly::constant(up)))
    }

    /// Replaces symbols by polynomials.
    pub fn substitute(&self, map: &dyn Fn(&str) -> Option<Poly>) -> Poly {
        let mut out = Poly::default();
        for (monomial, coeff) in &self.terms {
            let mut term = Poly::constant(*coeff);
            for atom in monomial {
                let factor = match atom {
                    Atom::Sym(s) => map(s).unwrap_or_else(|| Poly::sym(s)),
                    Atom::Opaque(_) => Poly::atom(atom.clone()),
                };
                term = term.mul(&factor);
            }
            out = out.add(&term);
        }
        out
    }

    /// When every coefficient is a multiple of `k` (so the value is, for any
    /// integer symbols).
    pub fn divisible_by(&self, k: i64) -> bool {
        k != 0 && self.terms.values().all(|c| c % k == 0)
    }
}

impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        // Highest degree first, constants last.
        let mut terms: Vec<(&Vec<Atom>, &i64)> = self.terms.iter().collect();
        terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (i, (monomial, &coeff)) in terms.into_iter().enumerate() {
            let (sign, magnitude) = if coeff < 0 {
                ("-", coeff.unsigned_abs())
            } else {
                ("+", coeff as u64)
            };
            match (i, sign) {
                (0, "-") => f.write_str("-")?,
                (0, _) => {}
                (_, s) => write!(f, " {s} ")?,
            }
            let factors: Vec<String> = monomial.iter().map(ToString::to_string).collect();
            match (magnitude, factors.is_empty()) {
                (m, true) => write!(f, "{m}")?,
                (1, false) => f.write_str(&factors.join(" * "))?,
                (m, false) => write!(f, "{m} * {}", factors.join(" * "))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_compare_equal() {
        let h = Poly::sym("H");
        let dh = Poly::sym("Dh");
        assert_eq!(h.mul(&dh), dh.mul(&h));
        let two_n = Poly::sym("N").add(&Poly::sym("N"));
        assert_eq!(two_n, Poly::constant(2).mul(&Poly::sym("N")));
        assert_eq!(h.sub(&h), Poly::constant(0));
        assert_eq!(h.mul(&dh).add(&Poly::constant(2)).to_string(), "Dh * H + 2");
        assert_eq!(Poly::constant(-3).add(&Poly::sym("N").neg()).to_string(), "-N - 3");
    }

    #[test]
    fn substitution_evaluates() {
        let d = Poly::sym("H").mul(&Poly::sym("Dh"));
        let value = d.substitute(&|s| match s {
            "H" => Some(Poly::constant(8)),
            "Dh" => Some(Poly::constant(64)),
            _ => None,
        });
        assert_eq!(value.as_const(), Some(512));
    }

    #[test]
    fn divisibility_by_coefficients() {
        let p = Poly::constant(8).mul(&Poly::sym("N")).add(&Poly::constant(16));
        assert!(p.divisible_by(8));
        assert!(!p.divisible_by(16));
    }

    #[test]
    fn exact_division_by_one_term() {
        let (b, h) = (Poly::sym("B"), Poly::sym("H"));
        let total = b.mul(&h).mul(&Poly::constant(6));
        assert_eq!(
            total.div_exact(&h.mul(&Poly::constant(2))),
            Some(b.mul(&Poly::constant(3)))
        );
        assert_eq!(total.div_exact(&total), Some(Poly::constant(1)));
        assert_eq!(total.div_exact(&Poly::constant(4)), None);
        assert_eq!(total.div_exact(&Poly::sym("D")), None);
        assert_eq!(b.add(&h).div_exact(&b), None);
        assert_eq!(total.div_exact(&Poly::constant(0)), None);
        assert_eq!(
            Poly::constant(60).div_exact(&Poly::constant(6)),
            Some(Poly::constant(10))
        );
    }

    /// The length of a stepped slice: `ceil(len / k)`.
    #[test]
    fn division_rounding_up() {
        let h = Poly::sym("H");
        let two_h = h.mul(&Poly::constant(2));
        assert_eq!(two_h.div_ceil(2), Some(h.clone()));
        assert_eq!(two_h.sub(&Poly::constant(1)).div_ceil(2), Some(h.clone()));
        assert_eq!(
            two_h.add(&Poly::constant(1)).div_ceil(2),
            Some(h.add(&Poly::constant(1)))
        );
        assert_eq!(h.div_ceil(2), None);
        assert_eq!(Poly::constant(7).div_ceil(2), Some(Poly::constant(4)));
        assert_eq!(Poly::constant(-3).div_ceil(2), Some(Poly::constant(-1)));
        assert_eq!(two_h.div_ceil(0), None);
    }
}
