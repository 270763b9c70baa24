//! Python's `format(value, spec)`, which f-string fields become
//! (`{x:.3f}` is `format(x, ".3f")`): the format-spec mini-language
//! `[[fill]align][sign][#][0][width][,|_][.precision][type]` for ints,
//! floats, bools and strings. The caller passes a tensor of no dims as
//! its element (as a NumPy scalar formats); any other tensor takes only an
//! empty spec.

use crate::RunError;

use super::print::python_float;
use super::value::Value;

/// A parsed format spec.
#[derive(Debug, Default, PartialEq)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    alternate: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    kind: Option<char>,
}

/// The widest field and the most digits a spec may ask for (Python's
/// limits are memory's).
const LARGEST: usize = 10_000;

fn bad(spec: &str, why: &str) -> RunError {
    RunError::value(format!("invalid format spec {spec:?}: {why}"))
}

fn parse(text: &str) -> Result<Spec, RunError> {
    let chars: Vec<char> = text.chars().collect();
    let mut s = Spec::default();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '^' | '=');
    if chars.len() >= 2 && is_align(chars[1]) {
        s.fill = Some(chars[0]);
        s.align = Some(chars[1]);
        i = 2;
    } else if chars.first().is_some_and(|&c| is_align(c)) {
        s.align = Some(chars[0]);
        i = 1;
    }
    if let Some(&c @ ('+' | '-' | ' ')) = chars.get(i) {
        s.sign = Some(c);
        i += 1;
    }
    if chars.get(i) == Some(&'#') {
        s.alternate = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') {
        s.zero = true;
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        chars[start..*i].iter().collect::<String>()
    };
    let width = digits(&mut i);
    if !width.is_empty() {
        s.width = width
            .parse()
            .ok()
            .filter(|&w| w <= LARGEST)
            .ok_or_else(|| bad(text, &format!("the width is more than {LARGEST}")))?;
    }
    if let Some(&c @ (',' | '_')) = chars.get(i) {
        s.grouping = Some(c);
        i += 1;
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        let p = digits(&mut i);
        if p.is_empty() {
            return Err(bad(text, "`.` without a precision"));
        }
        s.precision = Some(
            p.parse()
                .ok()
                .filter(|&p| p <= LARGEST)
                .ok_or_else(|| bad(text, &format!("the precision is more than {LARGEST}")))?,
        );
    }
    if let Some(&c) = chars.get(i) {
        if !"bcdeEfFgGnosxX%".contains(c) {
            return Err(bad(text, &format!("unknown format code `{c}`")));
        }
        s.kind = Some(c);
        i += 1;
    }
    if i != chars.len() {
        return Err(bad(text, "it does not end where the spec does"));
    }
    Ok(s)
}

/// `format(value, spec)`; `text` gives a value's `str` (an empty spec).
pub(crate) fn format(value: &Value, spec: &str, text: &dyn Fn(&Value) -> String) -> Result<String, RunError> {
    if spec.is_empty() {
        return Ok(text(value));
    }
    let s = parse(spec)?;
    let (body, numeric) = match (value, s.kind) {
        (Value::Str(text), None | Some('s')) => {
            if s.sign.is_some() || s.zero || s.grouping.is_some() {
                return Err(bad(spec, "a sign, `0` or grouping applies to numbers, not strings"));
            }
            let t: String = match s.precision {
                Some(p) => text.chars().take(p).collect(),
                None => text.to_string(),
            };
            (t, false)
        }
        // A bool with a spec formats as the int it is (Python's `bool` is an `int`).
        (Value::Bool(b), _) => (number(&Value::Int(*b as i64), &s, spec)?, true),
        (Value::Int(_) | Value::Float(_), _) => (number(value, &s, spec)?, true),
        (Value::Tensor(t), _) => {
            return Err(RunError::value(format!(
                "a tensor of shape {:?} takes no format spec ({spec:?}): format its elements",
                t.shape()
            )))
        }
        (v, _) => {
            return Err(RunError::value(format!(
                "{} takes no format spec ({spec:?})",
                v.describe()
            )))
        }
    };
    Ok(pad(body, &s, numeric))
}

/// The digits of a number with its sign (before padding).
fn number(value: &Value, s: &Spec, spec: &str) -> Result<String, RunError> {
    let plus = |negative: bool| match (negative, s.sign) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    };
    match (value, s.kind) {
        (Value::Int(i), None | Some('d' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c')) => {
            if s.precision.is_some() {
                return Err(bad(spec, "an integer takes no precision"));
            }
            let magnitude = i.unsigned_abs();
            // Binary, octal and hex digits group by fours, and only with `_`.
            if s.grouping == Some(',') && matches!(s.kind, Some('b' | 'o' | 'x' | 'X')) {
                return Err(bad(spec, "`,` groups decimal digits; `_` groups these by fours"));
            }
            let by_fours = |digits: String| group(&digits, s.grouping, 4);
            let (digits, prefix) = match s.kind {
                Some('b') => (by_fours(format!("{magnitude:b}")), "0b"),
                Some('o') => (by_fours(format!("{magnitude:o}")), "0o"),
                Some('x') => (by_fours(format!("{magnitude:x}")), "0x"),
                Some('X') => (by_fours(format!("{magnitude:X}")), "0X"),
                Some('c') => {
                    let c = u32::try_from(*i)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| RunError::value(format!("{i} is not a character")))?;
                    return Ok(c.to_string());
                }
                _ => (group(&magnitude.to_string(), s.grouping, 3), ""),
            };
            let prefix = if s.alternate { prefix } else { "" };
            Ok(format!("{}{prefix}{digits}", plus(*i < 0)))
        }
        (Value::Int(i), Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%')) => number(&Value::Float(*i as f64), s, spec),
        (Value::Int(_), Some(k)) => Err(RunError::value(format!(
            "Unknown format code '{k}' for object of type 'int'"
        ))),
        (Value::Float(x), kind) => {
            if matches!(kind, Some('d' | 'b' | 'o' | 'x' | 'X' | 'c')) {
                return Err(bad(spec, "an integer format for a float"));
            }
            if let Some(k) = kind.filter(|k| !"eEfFgGn%".contains(*k)) {
                return Err(RunError::value(format!(
                    "Unknown format code '{k}' for object of type 'float'"
                )));
            }
            Ok(format!(
                "{}{}",
                plus(x.is_sign_negative() && !x.is_nan()),
                float(x.abs(), s)
            ))
        }
        _ => Err(bad(spec, "not a number")),
    }
}

/// A non-negative float in the spec's presentation.
fn float(x: f64, s: &Spec) -> String {
    let upper = matches!(s.kind, Some('E' | 'F' | 'G'));
    if !x.is_finite() {
        let t = if x.is_nan() { "nan" } else { "inf" };
        return if upper { t.to_uppercase() } else { t.to_string() };
    }
    let text = match s.kind {
        Some('f' | 'F') => fixed(x, s.precision.unwrap_or(6), s),
        Some('%') => format!("{}%", fixed(x * 100.0, s.precision.unwrap_or(6), s)),
        Some('e' | 'E') => exponent(x, s.precision.unwrap_or(6), s.alternate),
        Some('g' | 'G' | 'n') => general(x, s.precision.unwrap_or(6), s, false),
        // No type: `repr` without a precision, else general with at
        // least one digit after the point.
        _ => match s.precision {
            None => {
                let r = python_float(x);
                match s.grouping {
                    Some(g) if !r.contains('e') => {
                        let (int, frac) = r.split_once('.').unwrap_or((&r, ""));
                        format!("{}.{frac}", group(int, Some(g), 3))
                    }
                    _ => r,
                }
            }
            Some(p) => general(x, p, s, true),
        },
    };
    if upper {
        text.to_uppercase()
    } else {
        text
    }
}

fn fixed(x: f64, precision: usize, s: &Spec) -> String {
    let t = format!("{x:.precision$}");
    let (int, frac) = t.split_once('.').unwrap_or((&t, ""));
    let int = group(int, s.grouping, 3);
    match (frac.is_empty(), s.alternate) {
        (true, true) => format!("{int}."),
        (true, false) => int,
        _ => format!("{int}.{frac}"),
    }
}

/// `d.ddde±XX`, Python's exponent of at least two digits.
fn exponent(x: f64, precision: usize, alternate: bool) -> String {
    let t = format!("{x:.precision$e}");
    let (mantissa, exp) = t.split_once('e').unwrap_or((&t, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let point = if alternate && !mantissa.contains('.') { "." } else { "" };
    format!("{mantissa}{point}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// Python's `g`: `precision` significant digits, fixed when the exponent
/// is at least -4 and below the precision, else scientific; trailing zeros
/// dropped (kept with `#`). `repr_like` (no type, a precision given)
/// keeps one digit after the point of a fixed result.
fn general(x: f64, precision: usize, s: &Spec, repr_like: bool) -> String {
    let p = precision.max(1);
    if x == 0.0 {
        return match (s.alternate, repr_like) {
            (true, _) => format!("{:.*}", p - 1, 0.0),
            (false, true) => "0.0".into(),
            (false, false) => "0".into(),
        };
    }
    let sci = format!("{x:.*e}", p - 1);
    let exp: i64 = sci.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
    let trim = |t: String| -> String {
        if s.alternate || !t.contains('.') {
            return t;
        }
        let (mantissa, tail) = match t.find('e') {
            Some(at) => (t[..at].to_string(), t[at..].to_string()),
            None => (t, String::new()),
        };
        let m = mantissa.trim_end_matches('0').trim_end_matches('.');
        let m = if repr_like && tail.is_empty() && !m.contains('.') {
            format!("{m}.0")
        } else {
            m.to_string()
        };
        format!("{m}{tail}")
    };
    if exp >= -4 && exp < p as i64 {
        let decimals = (p as i64 - 1 - exp).max(0) as usize;
        trim(fixed(x, decimals, s))
    } else {
        trim(exponent(x, p - 1, s.alternate))
    }
}

/// `digits` with `sep` every `every` digits from the right.
fn group(digits: &str, sep: Option<char>, every: usize) -> String {
    let Some(sep) = sep else { return digits.to_string() };
    let n = digits.len();
    let mut out = String::with_capacity(n + n / every);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (n - i).is_multiple_of(every) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// `body` padded to the spec's width.
fn pad(body: String, s: &Spec, numeric: bool) -> String {
    let len = body.chars().count();
    if len >= s.width {
        return body;
    }
    let fill_len = s.width - len;
    let (fill, align) = match (s.fill, s.align) {
        (f, Some(a)) => (f.unwrap_or(' '), a),
        (_, None) if s.zero && numeric => ('0', '='),
        (_, None) => (' ', if numeric { '>' } else { '<' }),
    };
    let fill_str = |k: usize| fill.to_string().repeat(k);
    match align {
        '<' => format!("{body}{}", fill_str(fill_len)),
        '^' => format!("{}{body}{}", fill_str(fill_len / 2), fill_str(fill_len - fill_len / 2)),
        '=' => {
            // After the sign (and a base prefix).
            let signed = body.starts_with(['+', '-', ' ']);
            let (sign, rest) = body.split_at(usize::from(signed));
            let prefixed = ["0x", "0X", "0b", "0o"].iter().any(|p| rest.starts_with(p));
            let (prefix, digits) = rest.split_at(if prefixed { 2 } else { 0 });
            format!("{sign}{prefix}{}{digits}", fill_str(fill_len))
        }
        _ => format!("{}{body}", fill_str(fill_len)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: Value, spec: &str) -> String {
        format(&v, spec, &|v| super::super::print::display(v, &|_, _| String::new())).unwrap()
    }

    /// Expected strings are what Python 3 gives for `format(value, spec)`.
    #[test]
    fn formats_as_python_does() {
        let x = Value::Float(3.25159265);
        assert_eq!(f(x.clone(), ".3f"), "3.252");
        assert_eq!(f(x.clone(), "8.2f"), "    3.25");
        assert_eq!(f(x.clone(), "<8.2f"), "3.25    ");
        assert_eq!(f(x.clone(), "^9.1f"), "   3.3   ");
        assert_eq!(f(x.clone(), "+.1f"), "+3.3");
        assert_eq!(f(x.clone(), "08.3f"), "0003.252");
        assert_eq!(f(x.clone(), ".2e"), "3.25e+00");
        assert_eq!(f(x.clone(), ".3g"), "3.25");
        assert_eq!(f(x.clone(), ".3"), "3.25");
        assert_eq!(f(x, ".0f"), "3");
        assert_eq!(f(Value::Float(-0.000123456), ".3g"), "-0.000123");
        assert_eq!(f(Value::Float(1234567.0), ".3g"), "1.23e+06");
        assert_eq!(f(Value::Float(1234567.0), ",.2f"), "1,234,567.00");
        assert_eq!(f(Value::Float(0.256), ".1%"), "25.6%");
        assert_eq!(f(Value::Float(1e-7), ""), "1e-07");
        assert_eq!(f(Value::Float(2.0), "g"), "2");
        assert_eq!(f(Value::Float(2.0), ".2"), "2.0");
        assert_eq!(f(Value::Float(1e20), "g"), "1e+20");
        assert_eq!(f(Value::Float(f64::INFINITY), "F"), "INF");
        assert_eq!(f(Value::Float(f64::NAN), ".2f"), "nan");
        assert_eq!(f(Value::Float(12.0), "E"), "1.200000E+01");
        assert_eq!(f(Value::Int(42), "5d"), "   42");
        assert_eq!(f(Value::Int(-42), "05d"), "-0042");
        assert_eq!(f(Value::Int(255), "#x"), "0xff");
        assert_eq!(f(Value::Int(255), "#010b"), "0b11111111");
        assert_eq!(f(Value::Int(1234567), ","), "1,234,567");
        assert_eq!(f(Value::Int(1234567), "_d"), "1_234_567");
        assert_eq!(f(Value::Int(7), ".2f"), "7.00");
        assert_eq!(f(Value::Int(-7), "*^7"), "**-7***");
        assert_eq!(f(Value::Bool(true), ""), "True");
        assert_eq!(f(Value::Bool(true), "d"), "1");
        assert_eq!(f(Value::Bool(false), ">6"), "     0");
        assert_eq!(f(Value::str("ab"), ">4"), "  ab");
        assert_eq!(f(Value::str("abcdef"), ".3"), "abc");
        assert_eq!(f(Value::str("ab"), "-^6s"), "--ab--");
    }

    #[test]
    fn refuses_what_python_refuses() {
        let err = |v: Value, spec: &str| format(&v, spec, &|_| String::new()).is_err();
        assert!(err(Value::Int(3), ".2d"));
        assert!(err(Value::Float(3.0), "d"));
        assert!(err(Value::str("a"), "+"));
        assert!(err(Value::Float(1.0), ".f"));
        assert!(err(Value::Float(1.0), "q"));
        assert!(err(Value::Float(1.0), "3.2fx"));
        assert!(err(Value::None, "5"));
        assert!(err(Value::Float(1.0), "100000"));
        assert!(err(Value::Float(1.0), ".100000f"));
    }
}
