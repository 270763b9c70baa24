//! Printing host values as Python and NumPy do: scalars in Python's `repr`
//! form (`2.0`, `1e-07`, `True`), tensors in NumPy's default format (eight
//! fractional digits at most, decimal points aligned, scientific notation
//! when the magnitudes call for it, long tensors summarized with `...`).

use std::rc::Rc;

use crate::tensor::Elem;
use crate::{DType, Tensor};

use super::value::Value;

/// The shortest decimal digits that read back as `x` in `dtype`:
/// (digits without the point, exponent of the first digit). fp8 values
/// are printed exactly (their steps are so coarse that the shortest digits
/// reading back as 208 would be 210).
fn shortest(x: f64, dtype: DType) -> (String, i32) {
    let x = x.abs();
    let round_trips = |s: &str| -> bool {
        let Ok(y) = s.parse::<f64>() else { return false };
        match dtype {
            DType::F64 => y == x,
            DType::F32 => y as f32 == x as f32,
            DType::F16 => crate::half::f64_to_f16(y) == crate::half::f64_to_f16(x),
            DType::Bf16 => crate::half::f64_to_bf16(y) == crate::half::f64_to_bf16(x),
            _ => y == x,
        }
    };
    let text = (0..17)
        .map(|p| format!("{:.*e}", p, x))
        .find(|s| round_trips(s))
        .unwrap_or_else(|| format!("{x:e}"));
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_string(), exp.parse().unwrap_or(0))
}

/// Python's `repr` of a float.
pub fn python_float(x: f64) -> String {
    float_repr(x, DType::F64)
}

/// Python's `repr` of a float, with the shortest digits that read back as
/// `x` in `dtype` (NumPy's for a scalar of that dtype: `0.1` for the `f32`
/// nearest 0.1).
pub fn float_repr(x: f64, dtype: DType) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = shortest(x, dtype);
    // Positional from 1e-4 up to 1e16, or for a NumPy scalar of a
    // narrower dtype (NumPy 2.3 on) up to 10^(its decimal digits): 1e6
    // for f32, 1e3 for f16.
    let upper = match dtype {
        DType::F32 => 6,
        DType::F16 => 3,
        _ => 16,
    };
    if (-4..upper).contains(&exp) {
        format!("{sign}{}", positional(&digits, exp, 1))
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        format!("{sign}{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// `digits` × 10^(exp + 1 - len) written out, with at least
/// `min_fraction` fractional digits.
fn positional(digits: &str, exp: i32, min_fraction: usize) -> String {
    let n = digits.len() as i32;
    let (int, frac) = if exp < 0 {
        ("0".to_string(), format!("{}{digits}", "0".repeat((-exp - 1) as usize)))
    } else if exp + 1 >= n {
        (format!("{digits}{}", "0".repeat((exp + 1 - n) as usize)), String::new())
    } else {
        (
            digits[..(exp + 1) as usize].to_string(),
            digits[(exp + 1) as usize..].to_string(),
        )
    };
    let frac = if frac.len() < min_fraction {
        format!("{frac}{}", "0".repeat(min_fraction - frac.len()))
    } else {
        frac
    };
    format!("{int}.{frac}")
}

/// How the interpreter writes a tensor: its host copy in NumPy's `str`
/// ([`tensor`]) or `repr` ([`tensor_repr`]) form.
pub type TensorText<'a> = &'a dyn Fn(&super::value::TensorValue, Form) -> String;

/// Which of NumPy's forms a tensor is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Str,
    Repr,
}

/// How host code prints a value (`print(x)`, `str(x)`): a string as it
/// is, a tensor in NumPy's `str` form, anything else as [`repr`].
pub fn display(value: &Value, tensor_text: TensorText<'_>) -> String {
    match value {
        Value::Str(s) => s.to_string(),
        Value::Tensor(t) => tensor_text(t, Form::Str),
        _ => repr(value, tensor_text),
    }
}

/// A string as Python's `repr` writes it: in single quotes, or in double
/// quotes when it holds a single quote and no double one; the quote, the
/// backslash, `\t`, `\n` and `\r` escaped, and a character that is not
/// printable as `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let code = u32::from(c);
                let escaped = match code {
                    0..=0xff => format!("\\x{code:02x}"),
                    0x100..=0xffff => format!("\\u{code:04x}"),
                    _ => format!("\\U{code:08x}"),
                };
                out.push_str(&escaped);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Whether Python's `str.isprintable` holds for `c`: not a control
/// character, a format character, a separator other than the space or a
/// private-use character (those of the Basic Multilingual Plane's common
/// blocks; unassigned code points print as themselves).
fn printable(c: char) -> bool {
    !(c.is_control()
        || matches!(
            u32::from(c),
            0xa0 | 0xad
                | 0x600..=0x605
                | 0x61c
                | 0x6dd
                | 0x70f
                | 0x1680
                | 0x180e
                | 0x2000..=0x200f
                | 0x2028..=0x202f
                | 0x205f..=0x2064
                | 0x2066..=0x206f
                | 0x3000
                | 0xe000..=0xf8ff
                | 0xfeff
                | 0xfff9..=0xfffb
        ))
}

/// Python's `repr` of a value (a string quoted), as `repr(x)` gives it.
pub fn repr(value: &Value, tensor_text: TensorText<'_>) -> String {
    repr_within(value, tensor_text, &mut Vec::new())
}

/// [`repr`] inside the lists and dicts `open` (their addresses), which
/// print as `[...]` and `{...}` where they hold themselves, as in Python.
fn repr_within(value: &Value, tensor_text: TensorText<'_>, open: &mut Vec<*const ()>) -> String {
    match value {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float(*f),
        Value::Str(s) => str_repr(s),
        Value::List(items) => {
            let items_now = items.borrow().clone();
            inside(open, Rc::as_ptr(items).cast(), "[...]", |open| {
                let parts: Vec<String> = items_now.iter().map(|v| repr_within(v, tensor_text, open)).collect();
                format!("[{}]", parts.join(", "))
            })
        }
        Value::Dict(entries) => {
            let entries_now = entries.borrow().clone();
            inside(open, Rc::as_ptr(entries).cast(), "{...}", |open| {
                let parts: Vec<String> = entries_now
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "{}: {}",
                            repr_within(k, tensor_text, open),
                            repr_within(v, tensor_text, open)
                        )
                    })
                    .collect();
                format!("{{{}}}", parts.join(", "))
            })
        }
        Value::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(|v| repr_within(v, tensor_text, open)).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        Value::Tensor(t) => tensor_text(t, Form::Repr),
        Value::Range(a, b, 1) => format!("range({a}, {b})"),
        Value::Range(a, b, s) => format!("range({a}, {b}, {s})"),
        Value::DType(d) => d.name().into(),
        Value::Function(_, f) => format!("<function {f}>"),
        Value::Module(_, m) => format!("<module {m}>"),
        Value::Builtin(b) => format!("<builtin {b}>"),
        Value::Namespace(n) => format!("<namespace {n}>"),
        Value::Method(_, m) => format!("<method {m}>"),
    }
}

/// NumPy's line width and summarization thresholds.
const LINE_WIDTH: usize = 75;
const THRESHOLD: usize = 1000;
const EDGE_ITEMS: usize = 3;
const PRECISION: usize = 8;

/// `write` of the list or dict at address `at` with it among the `open`
/// ones, or `cycle` where it is already open (it holds itself).
fn inside(
    open: &mut Vec<*const ()>,
    at: *const (),
    cycle: &str,
    write: impl FnOnce(&mut Vec<*const ()>) -> String,
) -> String {
    if open.contains(&at) {
        return cycle.into();
    }
    open.push(at);
    let text = write(open);
    open.pop();
    text
}

/// A tensor as NumPy's `str` prints it.
pub fn tensor(t: &Tensor) -> String {
    let shape = t.shape();
    if shape.is_empty() {
        return element_alone(t.get(0), t.dtype());
    }
    // NumPy prints an array of no elements as `[]`, whatever its shape.
    if t.numel() == 0 {
        return "[]".to_string();
    }
    nested(t, STR_STYLE)
}

/// A tensor as NumPy 2's `repr` writes it: a scalar as `np.float32(…)`,
/// `np.int32(…)`, `np.True_` (ml_dtypes' bf16 and fp8 ones as their
/// `str`), an array as `array([…], …)` with `, ` between elements, the dtype where it is not float64, int64 or bool, and
/// the shape where it is empty but for its last dim or over 1000 elements.
pub fn tensor_repr(t: &Tensor) -> String {
    let shape = t.shape();
    if shape.is_empty() {
        let text = element_alone(t.get(0), t.dtype());
        return match t.dtype() {
            DType::Bool => format!("np.{text}_"),
            d if ml_dtype(d) => text,
            d => format!("np.{}({text})", numpy_name(d)),
        };
    }
    const PREFIX: &str = "array(";
    let body = if t.numel() == 0 {
        "[]".to_string()
    } else {
        nested(t, REPR_STYLE)
    };
    let mut extras = Vec::new();
    if (t.numel() == 0 && shape.len() != 1) || t.numel() > THRESHOLD {
        let dims = Value::tuple(shape.iter().map(|&d| Value::Int(d as i64)).collect());
        extras.push(format!("shape={}", repr(&dims, &|_, _| String::new())));
    }
    if !matches!(t.dtype(), DType::F64 | DType::I64 | DType::Bool) || t.numel() == 0 {
        // NumPy quotes the names of ml_dtypes' fp8 types (not bfloat16).
        let name = numpy_name(t.dtype());
        extras.push(match t.dtype() {
            DType::Fp8E4m3 | DType::Fp8E5m2 => format!("dtype='{name}'"),
            _ => format!("dtype={name}"),
        });
    }
    if extras.is_empty() {
        return format!("{PREFIX}{body})");
    }
    let head = format!("{PREFIX}{body},");
    let extra = format!("{})", extras.join(", "));
    let last_line = head.len() - head.rfind('\n').map_or(0, |i| i + 1);
    let spacer = if last_line + extra.len() + 1 > LINE_WIDTH {
        format!("\n{}", " ".repeat(PREFIX.len()))
    } else {
        " ".to_string()
    };
    format!("{head}{spacer}{extra}")
}

/// Whether NumPy holds `dtype` as one of ml_dtypes' types (bf16, fp8).
fn ml_dtype(dtype: DType) -> bool {
    matches!(dtype, DType::Bf16 | DType::Fp8E4m3 | DType::Fp8E5m2)
}

/// `x` as C's `%g` writes it (ml_dtypes' `str` of a scalar, C++'s default
/// stream format): 6 significant digits, rounded half to even from the
/// exact value; scientific (`e±XX`) below 1e-4 and from 1e6, else fixed;
/// trailing zeros (and a bare point) dropped; `nan`, `inf`, `-inf`.
fn general(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exp.abs());
    }
    trim(&format!("{x:.*}", (5 - exp) as usize))
}

/// NumPy's name of a dtype (ml_dtypes' for bfloat16 and the fp8 formats).
fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 => "float64",
        DType::F32 => "float32",
        DType::F16 => "float16",
        DType::Bf16 => "bfloat16",
        DType::Fp8E4m3 => "float8_e4m3fn",
        DType::Fp8E5m2 => "float8_e5m2",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::Bool => "bool",
    }
}

/// How the elements of an array are laid out: NumPy's `separator`, its
/// line width (75 less the suffix), and the indent of a wrapped line (one
/// for the `[`, and the prefix's length).
#[derive(Clone, Copy)]
struct Style {
    separator: &'static str,
    width: usize,
    indent: usize,
}

const STR_STYLE: Style = Style {
    separator: " ",
    width: LINE_WIDTH,
    indent: 1,
};

/// `repr`'s: after `array(`, before `)`.
const REPR_STYLE: Style = Style {
    separator: ", ",
    width: LINE_WIDTH - 1,
    indent: 7,
};

/// The nested brackets of a tensor of at least one dim.
fn nested(t: &Tensor, style: Style) -> String {
    let shape = t.shape();
    let summarize = t.numel() > THRESHOLD;
    // The elements that are shown, to size the columns.
    let shown = shown_indices(shape, summarize);
    let format = ElementFormat::new(t, &shown);
    let mut out = String::new();
    write_nested(t, shape, 0, 0, summarize, &format, &mut out, style.indent, style);
    out
}

/// The element of a 0-d tensor, as NumPy prints one: the scalar of its
/// dtype (`9.0`, `3.1115873`, `1e-07`), not an array element (`9.`). An
/// fp8 value is written exactly, as in an array (its shortest digits that
/// read back can hide it: 208 in E4M3 reads back from 210).
fn element_alone(e: Elem, dtype: DType) -> String {
    match e {
        Elem::Float(x) if ml_dtype(dtype) => general(x),
        Elem::Float(x) => float_repr(x, dtype),
        Elem::Int(i) => int_text(i, dtype == DType::U64),
        Elem::Bool(b) => if b { "True" } else { "False" }.into(),
    }
}

/// An integer element; a `u64`'s bits read unsigned.
fn int_text(i: i64, unsigned: bool) -> String {
    if unsigned {
        (i as u64).to_string()
    } else {
        i.to_string()
    }
}

/// Flat indices of the elements NumPy would show.
fn shown_indices(shape: &[usize], summarize: bool) -> Vec<usize> {
    let mut out = Vec::new();
    let strides: Vec<usize> = (0..shape.len()).map(|a| shape[a + 1..].iter().product()).collect();
    fn walk(shape: &[usize], strides: &[usize], axis: usize, base: usize, summarize: bool, out: &mut Vec<usize>) {
        if axis == shape.len() {
            out.push(base);
            return;
        }
        let n = shape[axis];
        let keep: Vec<usize> = if summarize && n > 2 * EDGE_ITEMS {
            (0..EDGE_ITEMS).chain(n - EDGE_ITEMS..n).collect()
        } else {
            (0..n).collect()
        };
        for i in keep {
            walk(shape, strides, axis + 1, base + i * strides[axis], summarize, out);
        }
    }
    walk(shape, &strides, 0, 0, summarize, &mut out);
    out
}

/// How every element of one tensor is written, so columns line up.
enum ElementFormat {
    /// ml_dtypes' floats (bf16, fp8), which NumPy prints as it prints
    /// objects: each element its own `str` ([`general`]), unpadded.
    General,
    Int {
        width: usize,
        /// `u64`, whose elements are held as the bits of an `i64`.
        unsigned: bool,
    },
    Bool,
    Float {
        dtype: DType,
        scientific: bool,
        int_width: usize,
        frac: usize,
        exp_width: usize,
    },
}

impl ElementFormat {
    fn new(t: &Tensor, shown: &[usize]) -> ElementFormat {
        match t.dtype() {
            DType::Bool => ElementFormat::Bool,
            d if ml_dtype(d) => ElementFormat::General,
            d if d.is_float() => {
                let values: Vec<f64> = shown.iter().map(|&i| t.get(i).as_f64()).collect();
                ElementFormat::floats(&values, d)
            }
            d => {
                let unsigned = d == DType::U64;
                ElementFormat::Int {
                    width: shown
                        .iter()
                        .map(|&i| int_text(t.get(i).as_i64(), unsigned).len())
                        .max()
                        .unwrap_or(1),
                    unsigned,
                }
            }
        }
    }

    fn floats(values: &[f64], dtype: DType) -> ElementFormat {
        let finite: Vec<f64> = values
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x != 0.0)
            .map(f64::abs)
            .collect();
        let (max, min) = finite
            .iter()
            .fold((0f64, f64::INFINITY), |(a, b), &x| (a.max(x), b.min(x)));
        // NumPy (2.3 on) writes magnitudes from 10^min(8, p) on in
        // scientific notation, p the decimal digits the dtype holds
        // (`finfo(dtype).precision`: 6 for f32, 3 for f16); bf16 and fp8,
        // which NumPy lacks, keep its older 10^8.
        let cutoff = match dtype {
            DType::F32 => 1e6,
            DType::F16 => 1e3,
            _ => 1e8,
        };
        // NumPy compares in the array's dtype: an f32 0.0001 is not below
        // the f32 1e-4, and 0.7 / 0.0007 in f32 is 1000, not above it.
        let r = |x: f64| match dtype {
            DType::F32 => f64::from(x as f32),
            DType::F16 => f64::from(crate::half::f16_to_f32(crate::half::f64_to_f16(x))),
            DType::Bf16 => f64::from(crate::half::bf16_to_f32(crate::half::f64_to_bf16(x))),
            _ => x,
        };
        let scientific = !finite.is_empty() && (max >= r(cutoff) || min < r(1e-4) || r(max / min) > r(1e3));
        let mut int_width = 1;
        let mut frac = 0;
        let mut exp_width = 2;
        let mut non_finite = 0usize;
        for &x in values {
            if !x.is_finite() {
                non_finite = non_finite.max(if x.is_sign_negative() && !x.is_nan() { 4 } else { 3 });
                continue;
            }
            let (int, f, e) = split(x, dtype, scientific);
            int_width = int_width.max(int.len());
            frac = frac.max(f.len());
            exp_width = exp_width.max(e.trim_start_matches('-').len());
        }
        // `inf` and `nan` widen the integer part only as far as they do
        // not fit the rest of the column, as in NumPy.
        let right = frac + 1 + if scientific { 2 + exp_width } else { 0 };
        int_width = int_width.max(non_finite.saturating_sub(right));
        ElementFormat::Float {
            dtype,
            scientific,
            int_width,
            frac,
            exp_width,
        }
    }

    fn text(&self, e: Elem) -> String {
        match (self, e) {
            (ElementFormat::General, e) => general(e.as_f64()),
            (ElementFormat::Bool, e) => format!("{:>5}", if e.as_bool() { "True" } else { "False" }),
            (ElementFormat::Int { width, unsigned }, e) => format!("{:>width$}", int_text(e.as_i64(), *unsigned)),
            (
                ElementFormat::Float {
                    dtype,
                    scientific,
                    int_width,
                    frac,
                    exp_width,
                },
                e,
            ) => {
                let x = e.as_f64();
                let total = int_width + 1 + frac + if *scientific { 2 + exp_width } else { 0 };
                if !x.is_finite() {
                    let s = if x.is_nan() {
                        "nan"
                    } else if x > 0.0 {
                        "inf"
                    } else {
                        "-inf"
                    };
                    return format!("{s:>total$}");
                }
                let (int, f, exp) = split(x, *dtype, *scientific);
                if *scientific {
                    // NumPy prints every element with the column's digits,
                    // of the value itself: 1e-45 in f32 is 1.4012985e-45
                    // beside 2.4061597e+38.
                    let (int, f, exp) = if f.len() < *frac {
                        let rounded = format!("{:.*e}", frac, x.abs());
                        let (mantissa, exp) = rounded.split_once('e').unwrap_or((&rounded, "0"));
                        let (first, f) = mantissa.split_once('.').unwrap_or((mantissa, ""));
                        let sign = if x.is_sign_negative() { "-" } else { "" };
                        (format!("{sign}{first}"), f.to_string(), exp.to_string())
                    } else {
                        (int, f, exp)
                    };
                    let sign = if exp.starts_with('-') { '-' } else { '+' };
                    let digits = exp.trim_start_matches('-');
                    format!("{int:>int_width$}.{f}e{sign}{digits:0>exp_width$}")
                } else {
                    format!("{int:>int_width$}.{f:<frac$}")
                }
            }
        }
    }
}

/// The integer part (with sign), fractional digits and exponent of `x` as
/// NumPy writes it: the shortest round-trip digits, at most eight
/// fractional ones.
fn split(x: f64, dtype: DType, scientific: bool) -> (String, String, String) {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return (format!("{sign}0"), String::new(), "0".into());
    }
    let (digits, exp) = shortest(x, dtype);
    if scientific {
        let (first, rest) = digits.split_at(1);
        let mut rest = rest.to_string();
        if rest.len() > PRECISION {
            let rounded = format!("{:.*e}", PRECISION, x.abs());
            let mantissa = rounded.split('e').next().unwrap_or("");
            rest = mantissa
                .split('.')
                .nth(1)
                .unwrap_or("")
                .trim_end_matches('0')
                .to_string();
            let exp = rounded.split('e').nth(1).unwrap_or("0").to_string();
            let first = mantissa.split('.').next().unwrap_or("0");
            return (format!("{sign}{first}"), rest, exp);
        }
        return (format!("{sign}{first}"), rest, exp.to_string());
    }
    let text = positional(&digits, exp, 0);
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    if frac.len() > PRECISION {
        let rounded = format!("{:.*}", PRECISION, x.abs());
        let (int, frac) = rounded.split_once('.').unwrap_or((&rounded, ""));
        return (
            format!("{sign}{int}"),
            frac.trim_end_matches('0').to_string(),
            "0".into(),
        );
    }
    (format!("{sign}{int}"), frac.to_string(), "0".into())
}

#[allow(clippy::too_many_arguments)]
fn write_nested(
    t: &Tensor,
    shape: &[usize],
    axis: usize,
    base: usize,
    summarize: bool,
    format: &ElementFormat,
    out: &mut String,
    indent: usize,
    style: Style,
) {
    let n = shape[axis];
    let stride: usize = shape[axis + 1..].iter().product();
    let skip = summarize && n > 2 * EDGE_ITEMS;
    let items: Vec<Option<usize>> = if skip {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain([None])
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    if axis + 1 == shape.len() {
        let mut line = indent;
        for (k, item) in items.iter().enumerate() {
            let text = match item {
                Some(i) => format.text(t.get(base + i * stride)),
                None => "...".to_string(),
            };
            if k > 0 {
                // Each enclosing `]` to come takes one column from the
                // line, as NumPy counts them.
                let sep = style.separator;
                out.push_str(sep);
                if line + sep.len() + text.len() + 1 + axis > style.width {
                    // A wrapped line ends as NumPy's `line.rstrip()`: with
                    // the separator's comma, else without the padding of
                    // its last element.
                    out.truncate(out.trim_end_matches(' ').len());
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                    line = indent;
                } else {
                    line += sep.len();
                }
            }
            out.push_str(&text);
            line += text.len();
        }
    } else {
        let blank_lines = shape.len() - axis - 1;
        for (k, item) in items.iter().enumerate() {
            if k > 0 {
                out.push_str(style.separator.trim_end());
                out.push_str(&"\n".repeat(blank_lines));
                out.push_str(&" ".repeat(indent));
            }
            match item {
                Some(i) => write_nested(
                    t,
                    shape,
                    axis + 1,
                    base + i * stride,
                    summarize,
                    format,
                    out,
                    indent + 1,
                    style,
                ),
                None => out.push_str("..."),
            }
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], v: &[f32]) -> String {
        tensor(&Tensor::from_slice(shape, v).unwrap())
    }

    /// Expected strings are NumPy 2's `repr` of the same arrays.
    #[test]
    fn tensor_reprs_are_numpys() {
        let sevenths: Vec<f64> = (0..12).map(|i| f64::from(i) / 7.0).collect();
        assert_eq!(
            tensor_repr(&Tensor::from_slice(&[3, 4], &sevenths).unwrap()),
            "array([[0.        , 0.14285714, 0.28571429, 0.42857143],\n       [0.57142857, 0.71428571, 0.85714286, 1.        ],\n       [1.14285714, 1.28571429, 1.42857143, 1.57142857]])"
        );
        let thirds: Vec<f32> = (0..3).map(|i| i as f32 / 3.0).collect();
        assert_eq!(
            tensor_repr(&Tensor::from_slice(&[3], &thirds).unwrap()),
            "array([0.        , 0.33333334, 0.6666667 ], dtype=float32)"
        );
        let counts: Vec<i64> = (0..2000).collect();
        assert_eq!(
            tensor_repr(&Tensor::from_slice(&[2000], &counts).unwrap()),
            "array([   0,    1,    2, ..., 1997, 1998, 1999], shape=(2000,))"
        );
        assert_eq!(
            tensor_repr(&Tensor::from_slice(&[0, 3], &[0.0f32; 0]).unwrap()),
            "array([], shape=(0, 3), dtype=float32)"
        );
        assert_eq!(
            tensor_repr(&Tensor::from_slice(&[], &[1.5f32]).unwrap()),
            "np.float32(1.5)"
        );
    }

    /// Expected strings are what NumPy 2 prints for the same arrays.
    #[test]
    fn tensors_print_as_numpy_does() {
        assert_eq!(f32s(&[4], &[1.0, 2.0, 3.0, 4.0]), "[1. 2. 3. 4.]");
        assert_eq!(f32s(&[3], &[0.5, 1.25, -3.0]), "[ 0.5   1.25 -3.  ]");
        assert_eq!(f32s(&[2], &[0.1, 0.2]), "[0.1 0.2]");
        assert_eq!(f32s(&[2], &[1.0 / 3.0, 2.0]), "[0.33333334 2.        ]");
        assert_eq!(f32s(&[2], &[1e-5, 1.0]), "[1.e-05 1.e+00]");
        assert_eq!(f32s(&[2], &[1.5e-5, 1.0]), "[1.5e-05 1.0e+00]");
        assert_eq!(f32s(&[2], &[1e9, 1.0]), "[1.e+09 1.e+00]");
        assert_eq!(f32s(&[3], &[f32::NAN, 1.0, f32::NEG_INFINITY]), "[ nan   1. -inf]");
        assert_eq!(f32s(&[2], &[f32::INFINITY, 1.5]), "[inf 1.5]");
        assert_eq!(f32s(&[3], &[f32::NEG_INFINITY, 1.25, 100.0]), "[  -inf   1.25 100.  ]");
        // Exponents of two digits when two suffice, and every element
        // with the column's digits of its own value.
        assert_eq!(f32s(&[2], &[1e-45, 1.0]), "[1.e-45 1.e+00]");
        assert_eq!(
            f32s(&[3], &[f32::INFINITY, 2.406_159_7e38, 1e-45]),
            "[          inf 2.4061597e+38 1.4012985e-45]"
        );
        assert_eq!(f32s(&[2], &[3.067_834e8, -1.0]), "[ 3.067834e+08 -1.000000e+00]");
        // A negative element has the shortest digits of its own dtype.
        assert_eq!(
            f32s(&[2], &[6.845_858_8e16, -2.601_983_7e16]),
            "[ 6.8458588e+16 -2.6019837e+16]"
        );
        // f32 magnitudes from 10^6 on are scientific (f64's from 10^8).
        assert_eq!(f32s(&[2], &[2_047_886.0, 432_959.0]), "[2.047886e+06 4.329590e+05]");
        assert_eq!(f32s(&[2], &[-1.1, 2.0]), "[-1.1  2. ]");
        assert_eq!(f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]), "[[1. 2.]\n [3. 4.]]");
        assert_eq!(f32s(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]), "[[[1. 2.]]\n\n [[3. 4.]]]");
        let ints = Tensor::from_slice(&[3], &[1i32, -20, 300]).unwrap();
        assert_eq!(tensor(&ints), "[  1 -20 300]");
        let mut bools = Tensor::zeros(DType::Bool, &[2]).unwrap();
        bools.set(0, Elem::Bool(true));
        assert_eq!(tensor(&bools), "[ True False]");
        let long: Vec<f32> = (0..2000).map(|i| i as f32).collect();
        assert_eq!(
            f32s(&[2000], &long),
            "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]"
        );
        let wide: Vec<f32> = (0..30).map(|i| i as f32).collect();
        assert_eq!(
            f32s(&[30], &wide),
            "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]"
        );
        assert_eq!(tensor(&Tensor::from_slice(&[], &[2.5f64]).unwrap()), "2.5");
        // A 0-d tensor prints as NumPy's scalar of its dtype.
        assert_eq!(f32s(&[], &[9.0]), "9.0");
        assert_eq!(f32s(&[], &[1.0 / 3.0]), "0.33333334");
        assert_eq!(f32s(&[], &[1e-7]), "1e-07");
        // fp8 values exactly, as ml_dtypes prints them: 205.4 is 208 in
        // E4M3 (whose shortest round-tripping digits, 210, would hide
        // that), 147.4 is 144.
        let e4m3 = Tensor::from_slice(&[2], &[205.4f32, -147.4])
            .unwrap()
            .cast(DType::Fp8E4m3)
            .unwrap();
        assert_eq!(tensor(&e4m3), "[208 -144]");
    }

    #[test]
    fn floats_print_as_python_does() {
        assert_eq!(python_float(2.0), "2.0");
        assert_eq!(python_float(0.1), "0.1");
        assert_eq!(python_float(-1.5e-7), "-1.5e-07");
        assert_eq!(python_float(1e16), "1e+16");
        assert_eq!(python_float(123456.789), "123456.789");
        assert_eq!(python_float(0.0001), "0.0001");
        assert_eq!(python_float(f64::NAN), "nan");
        assert_eq!(python_float(-0.0), "-0.0");
    }

    /// NumPy 2.4's `str` of its scalars of narrower dtypes.
    #[test]
    fn narrow_scalars_print_as_numpy_does() {
        assert_eq!(float_repr(999_999.0, DType::F32), "999999.0");
        assert_eq!(float_repr(1e6, DType::F32), "1e+06");
        assert_eq!(float_repr(-10_964_594.0, DType::F32), "-1.0964594e+07");
        assert_eq!(float_repr(999.0, DType::F16), "999.0");
        assert_eq!(float_repr(1024.0, DType::F16), "1.024e+03");
        assert_eq!(float_repr(1e15, DType::F64), "1000000000000000.0");
    }
}
