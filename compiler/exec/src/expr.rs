//! The dim expressions of a manifest, evaluated for a launch: grid entries
//! (`cdiv(S, 64)`, `S`, `1`), buffer dims (`M`, `H*Dh`, `128`) and scratch
//! sizes (`4*N+512`), over the dims a call binds.
//!
//! Grammar: `sum := product (('+' | '-') product)*`,
//! `product := atom (('*' | '/' | '%') atom)*`,
//! `atom := INT | NAME | NAME '(' sum (',' sum)* ')' | '(' sum ')' | '-' atom`,
//! with the functions `cdiv`, `min` and `max`. `/` and `%` are floor
//! division and its remainder on non-negative operands.

use tessera_runtime::RunError;

/// The value of `text` with the dims `dims` bound.
pub fn eval(text: &str, dims: &[(String, i64)]) -> Result<i64, RunError> {
    let tokens = lex(text)?;
    let mut p = Parser {
        text,
        tokens,
        at: 0,
        dims,
    };
    let v = p.sum()?;
    if p.at != p.tokens.len() {
        return Err(p.error("unexpected text after the expression"));
    }
    Ok(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Name(String),
    Punct(char),
}

fn lex(text: &str) -> Result<Vec<Tok>, RunError> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '_') {
                i += 1;
            }
            let digits: String = chars[start..i].iter().filter(|c| **c != '_').collect();
            let v = digits
                .parse()
                .map_err(|_| RunError::value(format!("`{digits}` in `{text}` is too large")))?;
            out.push(Tok::Int(v));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Name(chars[start..i].iter().collect()));
        } else if "+-*/%(),".contains(c) {
            out.push(Tok::Punct(c));
            i += 1;
        } else {
            return Err(RunError::value(format!(
                "`{c}` cannot appear in the dim expression `{text}`"
            )));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Tok>,
    at: usize,
    dims: &'a [(String, i64)],
}

impl Parser<'_> {
    fn error(&self, what: &str) -> RunError {
        RunError::value(format!("cannot evaluate the dim expression `{}`: {what}", self.text))
    }

    fn eat(&mut self, c: char) -> bool {
        if self.tokens.get(self.at) == Some(&Tok::Punct(c)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn overflow(&self) -> RunError {
        self.error("the value overflows")
    }

    fn sum(&mut self) -> Result<i64, RunError> {
        let mut v = self.product()?;
        loop {
            if self.eat('+') {
                v = v.checked_add(self.product()?).ok_or_else(|| self.overflow())?;
            } else if self.eat('-') {
                v = v.checked_sub(self.product()?).ok_or_else(|| self.overflow())?;
            } else {
                return Ok(v);
            }
        }
    }

    fn product(&mut self) -> Result<i64, RunError> {
        let mut v = self.atom()?;
        loop {
            if self.eat('*') {
                v = v.checked_mul(self.atom()?).ok_or_else(|| self.overflow())?;
            } else if self.eat('/') {
                v = div(v, self.atom()?).ok_or_else(|| self.error("division by zero"))?;
            } else if self.eat('%') {
                let d = self.atom()?;
                v = v.checked_rem_euclid(d).ok_or_else(|| self.error("division by zero"))?;
            } else {
                return Ok(v);
            }
        }
    }

    fn atom(&mut self) -> Result<i64, RunError> {
        if self.eat('-') {
            return self.atom()?.checked_neg().ok_or_else(|| self.overflow());
        }
        if self.eat('(') {
            let v = self.sum()?;
            return if self.eat(')') {
                Ok(v)
            } else {
                Err(self.error("expected `)`"))
            };
        }
        match self.tokens.get(self.at).cloned() {
            Some(Tok::Int(v)) => {
                self.at += 1;
                Ok(v)
            }
            Some(Tok::Name(name)) => {
                self.at += 1;
                if self.eat('(') {
                    let mut args = vec![self.sum()?];
                    while self.eat(',') {
                        args.push(self.sum()?);
                    }
                    if !self.eat(')') {
                        return Err(self.error("expected `)`"));
                    }
                    self.call(&name, &args)
                } else {
                    self.dims
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| *v)
                        .ok_or_else(|| self.error(&format!("the dim `{name}` is not bound")))
                }
            }
            _ => Err(self.error("expected a number, a dim or `(`")),
        }
    }

    fn call(&self, name: &str, args: &[i64]) -> Result<i64, RunError> {
        match (name, args) {
            ("cdiv", [a, b]) => {
                let up = a.checked_add(b - 1).ok_or_else(|| self.overflow())?;
                div(up, *b).ok_or_else(|| self.error("division by zero"))
            }
            ("min", [a, rest @ ..]) => Ok(rest.iter().fold(*a, |m, v| m.min(*v))),
            ("max", [a, rest @ ..]) => Ok(rest.iter().fold(*a, |m, v| m.max(*v))),
            _ => Err(self.error(&format!("`{name}` with {} arguments is not a dim function", args.len()))),
        }
    }
}

fn div(a: i64, b: i64) -> Option<i64> {
    a.checked_div_euclid(b)
}

#[cfg(test)]
mod tests {
    use super::eval;

    fn dims() -> Vec<(String, i64)> {
        vec![("S".into(), 1000), ("M".into(), 256), ("Dh".into(), 64)]
    }

    #[test]
    fn evaluates_what_manifests_contain() {
        let d = dims();
        assert_eq!(eval("cdiv(S, 64)", &d).unwrap(), 16);
        assert_eq!(eval("S", &d).unwrap(), 1000);
        assert_eq!(eval("1", &d).unwrap(), 1);
        assert_eq!(eval("4*M*Dh+512", &d).unwrap(), 4 * 256 * 64 + 512);
        assert_eq!(eval("M-2*Dh", &d).unwrap(), 128);
        assert_eq!(eval("(M + 1) / 2 % 100", &d).unwrap(), 28);
        assert_eq!(eval("max(1, min(S, M))", &d).unwrap(), 256);
        assert_eq!(eval("-Dh + 1_000", &d).unwrap(), 936);
    }

    #[test]
    fn rejects_what_it_cannot_evaluate() {
        let d = dims();
        for bad in [
            "N",
            "cdiv(S)",
            "S /",
            "S $ 2",
            "(S",
            "S / 0",
            "cdiv(S, 0)",
            "S S",
            "9999999999999999999",
            "M*M*M*M*M*M*M*M",
        ] {
            let e = eval(bad, &d).unwrap_err();
            assert!(
                e.message.contains(bad) || e.message.contains("too large"),
                "{bad}: {}",
                e.message
            );
        }
    }
}
