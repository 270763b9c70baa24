//! Tensor operations of host code: elementwise arithmetic with NumPy
//! broadcasting, math functions, indexing and slicing, tree-ordered sums,
//! and the comparison behind `allclose`.

use tessera_diagnostics::Code;
use tessera_syntax::ast::{BinOp, UnaryOp};

use crate::reduce::{ordered_sum, rows_sum, TreeAdd, ROW_LANES};
use crate::tensor::{shape_text, Elem};
use crate::{DType, RunError, Tensor};

/// An operand of an elementwise operation.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'a> {
    Scalar(Elem),
    Tensor(&'a Tensor),
}

impl Operand<'_> {
    fn shape(&self) -> &[usize] {
        match self {
            Operand::Scalar(_) => &[],
            Operand::Tensor(t) => t.shape(),
        }
    }

    fn dtype(&self) -> Option<DType> {
        match self {
            Operand::Scalar(_) => None,
            Operand::Tensor(t) => Some(t.dtype()),
        }
    }
}

/// The broadcast of two shapes (NumPy's rule), or None.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// For each element of `out` (C order), the index of the element of a
/// tensor of shape `shape` that broadcasts to it.
fn broadcast_map(out: &[usize], shape: &[usize]) -> Vec<usize> {
    let n = out.len();
    let mut strides = vec![0usize; n];
    let mut stride = 1;
    for i in (0..shape.len()).rev() {
        let axis = i + n - shape.len();
        strides[axis] = if shape[i] == 1 { 0 } else { stride };
        stride *= shape[i];
    }
    let total: usize = out.iter().product();
    let mut map = Vec::with_capacity(total);
    let mut index = vec![0usize; n];
    for _ in 0..total {
        map.push(index.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for axis in (0..n).rev() {
            index[axis] += 1;
            if index[axis] < out[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    map
}

fn element(op: Operand<'_>, map: &[usize], i: usize) -> Elem {
    match op {
        Operand::Scalar(e) => e,
        Operand::Tensor(t) => t.get(map[i]),
    }
}

/// The arithmetic a dtype computes in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    F64,
    F32,
    Int,
    Bool,
}

fn class(d: DType) -> Class {
    match d {
        DType::F64 => Class::F64,
        DType::F32 | DType::F16 | DType::Bf16 | DType::Fp8E4m3 | DType::Fp8E5m2 => Class::F32,
        DType::Bool => Class::Bool,
        _ => Class::Int,
    }
}

fn does_not_broadcast(a: &[usize], b: &[usize]) -> RunError {
    RunError::new(
        Code::E0306,
        format!("shapes {} and {} do not broadcast", shape_text(a), shape_text(b)),
    )
    .with_help("in each dim, counted from the right, the sizes must be equal or one of them 1")
}

/// `a op b` elementwise. A scalar operand takes the tensor's dtype, except
/// that a float with an integer or bool tensor gives `f32`; two tensors
/// promote (`spec/types.md`); a comparison gives `bool`, and `/` of
/// integers gives `f32`.
pub(crate) fn binary(op: BinOp, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor, RunError> {
    let shape = broadcast_shape(a.shape(), b.shape()).ok_or_else(|| does_not_broadcast(a.shape(), b.shape()))?;
    let operands = joint_dtype(&a, &b).unwrap_or(DType::F64);
    let out_dtype = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        DType::Bool
    } else if op == BinOp::Div && !operands.is_float() {
        DType::F32
    } else {
        operands
    };
    let cls = if op == BinOp::Div && !operands.is_float() {
        Class::F32
    } else {
        class(operands)
    };
    let (ma, mb) = (broadcast_map(&shape, a.shape()), broadcast_map(&shape, b.shape()));
    let (a, b) = (weak(a, operands)?, weak(b, operands)?);
    let mut out = Tensor::zeros(out_dtype, &shape)?;
    for i in 0..out.numel() {
        let v = apply(op, cls, element(a, &ma, i), element(b, &mb, i))?;
        out.set(i, v);
    }
    Ok(out)
}

/// A Python float beside a tensor of a narrower float dtype, rounded to
/// that dtype first, as NumPy 2 treats such a "weak" scalar: an `f32`
/// element equals `0.1` when it is the `f32` nearest 0.1.
fn weak(o: Operand<'_>, dtype: DType) -> Result<Operand<'_>, RunError> {
    match o {
        Operand::Scalar(Elem::Float(f)) if dtype.is_float() && dtype != DType::F64 => {
            let mut t = Tensor::zeros(dtype, &[])?;
            t.set(0, Elem::Float(f));
            Ok(Operand::Scalar(t.get(0)))
        }
        o => Ok(o),
    }
}

/// The dtype two operands meet in, when one is a tensor: two tensors
/// promote; a number takes the tensor's dtype, except that a float with an
/// integer or bool tensor gives `f32`.
fn joint_dtype(a: &Operand<'_>, b: &Operand<'_>) -> Option<DType> {
    let float = |o: &Operand<'_>| matches!(o, Operand::Scalar(Elem::Float(_)));
    match (a.dtype(), b.dtype()) {
        (Some(x), Some(y)) => Some(x.promote(y)),
        (Some(x), None) if !x.is_float() && float(b) => Some(DType::F32),
        (None, Some(x)) if !x.is_float() && float(a) => Some(DType::F32),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// `op.where(cond, x, y)`: `x` where `cond` holds, else `y`, the three
/// broadcast. The alternatives' dtype is the one `x + y` would have (two
/// numbers give `f32`, or `i64` when both are integers).
pub(crate) fn choose(cond: Operand<'_>, x: Operand<'_>, y: Operand<'_>) -> Result<Tensor, RunError> {
    let xy = broadcast_shape(x.shape(), y.shape()).ok_or_else(|| does_not_broadcast(x.shape(), y.shape()))?;
    let shape = broadcast_shape(cond.shape(), &xy).ok_or_else(|| does_not_broadcast(cond.shape(), &xy))?;
    let float = |o: &Operand<'_>| matches!(o, Operand::Scalar(Elem::Float(_)));
    let dtype = joint_dtype(&x, &y).unwrap_or(if float(&x) || float(&y) { DType::F32 } else { DType::I64 });
    let maps = [cond.shape(), x.shape(), y.shape()].map(|s| broadcast_map(&shape, s));
    let mut out = Tensor::zeros(dtype, &shape)?;
    for i in 0..out.numel() {
        let pick = if element(cond, &maps[0], i).as_bool() {
            element(x, &maps[1], i)
        } else {
            element(y, &maps[2], i)
        };
        out.set(i, pick);
    }
    Ok(out)
}

fn apply(op: BinOp, cls: Class, a: Elem, b: Elem) -> Result<Elem, RunError> {
    use BinOp::*;
    if matches!(op, And | Or) {
        let (x, y) = (a.as_bool(), b.as_bool());
        return Ok(Elem::Bool(if op == And { x && y } else { x || y }));
    }
    match cls {
        Class::F64 | Class::F32 => {
            let (x, y) = (a.as_f64(), b.as_f64());
            if op.is_comparison() {
                let ord = match (cls, a, b) {
                    (Class::F64, Elem::Int(i), Elem::Float(f)) => int_cmp_float(i, f),
                    (Class::F64, Elem::Float(f), Elem::Int(i)) => int_cmp_float(i, f).map(std::cmp::Ordering::reverse),
                    _ => x.partial_cmp(&y),
                };
                return compare(op, ord);
            }
            let v = if cls == Class::F32 {
                float_op(op, x as f32, y as f32)? as f64
            } else {
                float_op(op, x, y)?
            };
            Ok(Elem::Float(v))
        }
        Class::Int | Class::Bool => {
            let (x, y) = (a.as_i64(), b.as_i64());
            if op.is_comparison() {
                return compare(op, Some(x.cmp(&y)));
            }
            int_op(op, x, y).map(Elem::Int)
        }
    }
}

/// An int against a float, exactly, as Python compares them: converting
/// the int to a float first rounds past 2^53 (`9007199254740993 ==
/// 9007199254740992.0` held).
pub(crate) fn int_cmp_float(i: i64, f: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering::*;
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return None;
    }
    if f >= TWO_63 {
        return Some(Less);
    }
    if f < -TWO_63 {
        return Some(Greater);
    }
    let whole = f.trunc();
    match i.cmp(&(whole as i64)) {
        Equal => 0.0.partial_cmp(&(f - whole)),
        other => Some(other),
    }
}

fn compare(op: BinOp, ord: Option<std::cmp::Ordering>) -> Result<Elem, RunError> {
    use std::cmp::Ordering::*;
    let r = match (op, ord) {
        (BinOp::Ne, None) => true,
        (_, None) => false,
        (BinOp::Eq, Some(o)) => o == Equal,
        (BinOp::Ne, Some(o)) => o != Equal,
        (BinOp::Lt, Some(o)) => o == Less,
        (BinOp::Le, Some(o)) => o != Greater,
        (BinOp::Gt, Some(o)) => o == Greater,
        (BinOp::Ge, Some(o)) => o != Less,
        _ => return Err(unsupported_op(op)),
    };
    Ok(Elem::Bool(r))
}

fn unsupported_op(op: BinOp) -> RunError {
    RunError::new(
        Code::E1006,
        format!("`{}` is not supported on tensors in host code", op.symbol()),
    )
}

/// Float arithmetic in the precision of `T` (Python's floor division and
/// modulo).
pub(crate) trait Float:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const HALF: Self;
    fn floor(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
}

impl Float for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const HALF: f32 = 0.5;
    fn floor(self) -> f32 {
        f32::floor(self)
    }
    fn powf(self, e: f32) -> f32 {
        f32::powf(self, e)
    }
    fn copysign(self, sign: f32) -> f32 {
        f32::copysign(self, sign)
    }
}

impl Float for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const HALF: f64 = 0.5;
    fn floor(self) -> f64 {
        f64::floor(self)
    }
    fn powf(self, e: f64) -> f64 {
        f64::powf(self, e)
    }
    fn copysign(self, sign: f64) -> f64 {
        f64::copysign(self, sign)
    }
}

/// `(x // y, x % y)` on floats as Python and NumPy compute them: the
/// remainder exact (`fmod`, moved to the divisor's sign), the quotient
/// from it; a zero divisor gives `x / y` and NaN.
pub(crate) fn divmod<T: Float>(x: T, y: T) -> (T, T) {
    if y == T::ZERO {
        return (x / y, x % y);
    }
    let mut m = x % y;
    let mut div = (x - m) / y;
    if m != T::ZERO {
        if (y < T::ZERO) != (m < T::ZERO) {
            m = m + y;
            div = div - T::ONE;
        }
    } else {
        m = T::ZERO.copysign(y);
    }
    let q = if div != T::ZERO {
        let f = div.floor();
        if div - f > T::HALF {
            f + T::ONE
        } else {
            f
        }
    } else {
        T::ZERO.copysign(x / y)
    };
    (q, m)
}

fn float_op<T: Float>(op: BinOp, x: T, y: T) -> Result<T, RunError> {
    Ok(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::FloorDiv => divmod(x, y).0,
        BinOp::Mod => divmod(x, y).1,
        BinOp::Pow => x.powf(y),
        _ => {
            return Err(RunError::new(
                Code::E1006,
                format!("`{}` needs integer operands", op.symbol()),
            ))
        }
    })
}

/// Integer arithmetic of tensors: wrapping, as on a GPU.
pub(crate) fn int_op(op: BinOp, x: i64, y: i64) -> Result<i64, RunError> {
    let zero = || {
        RunError::value(format!(
            "integer {} by zero",
            if op == BinOp::Mod { "modulo" } else { "division" }
        ))
    };
    Ok(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(zero());
            }
            // MIN // -1 wraps to MIN, as on a GPU (`%` of them overflows).
            x.wrapping_div(y) - i64::from((x.wrapping_rem(y) != 0) && ((x < 0) != (y < 0)))
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(zero());
            }
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => {
            let e = u32::try_from(y).map_err(|_| RunError::value(format!("integer power with exponent {y}")))?;
            x.wrapping_pow(e)
        }
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Shl | BinOp::Shr => {
            if !(0..64).contains(&y) {
                return Err(RunError::value(format!("shift by {y} bits")));
            }
            if op == BinOp::Shl {
                x.wrapping_shl(y as u32)
            } else {
                x >> y
            }
        }
        _ => return Err(unsupported_op(op)),
    })
}

/// `-x`, `+x`, `not x`, `~x` elementwise.
pub(crate) fn unary(op: UnaryOp, t: &Tensor) -> Result<Tensor, RunError> {
    let dtype = if op == UnaryOp::Not { DType::Bool } else { t.dtype() };
    if op == UnaryOp::Invert && t.dtype().is_float() {
        return Err(RunError::new(Code::E1006, "`~` needs an integer or bool tensor"));
    }
    let mut out = Tensor::zeros(dtype, t.shape())?;
    for i in 0..t.numel() {
        let e = t.get(i);
        out.set(
            i,
            match (op, e) {
                (UnaryOp::Pos, e) => e,
                (UnaryOp::Not, e) => Elem::Bool(!e.as_bool()),
                (UnaryOp::Neg, Elem::Float(x)) => Elem::Float(-x),
                (UnaryOp::Neg, e) => Elem::Int(e.as_i64().wrapping_neg()),
                (UnaryOp::Invert, Elem::Bool(b)) => Elem::Bool(!b),
                (UnaryOp::Invert, e) => Elem::Int(!e.as_i64()),
            },
        );
    }
    Ok(out)
}

/// The elementwise math functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MathFn {
    Abs,
    Sqrt,
    Exp,
    Exp2,
    Erf,
    Log,
    Tanh,
    Sin,
    Cos,
    Floor,
    Ceil,
    Relu,
    Rsqrt,
    Sigmoid,
    Silu,
    /// The tanh form (`approximate="tanh"`):
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    Gelu,
    /// The exact form: `0.5·x·(1 + erf(x/√2))`, in f64.
    GeluErf,
}

/// The bits of `(2/√π)·(-1)^n / (n!·(2n+1))`, n = 0..=21: Maclaurin's
/// series of erf(x)/x in x², rounded from 60 digits.
const ERF_SERIES: [u64; 22] = [
    0x3ff20dd750429b6d,
    0xbfd812746b0379e7,
    0x3fbce2f21a042be2,
    0xbf9b82ce31288b51,
    0x3f7565bcd0e6a53f,
    0xbf4c02db40040b86,
    0x3f1f9a326f9b89b7,
    0xbeef4d25c3e0c2eb,
    0x3ebb9e6c9dc651a3,
    0xbe85f742ec43e71a,
    0x3e4fcc5720624c1c,
    0xbe151d7181c5d36d,
    0x3dd9e6ad5e55a730,
    0xbd9d8453cb0c46ea,
    0x3d5f683ae4a97007,
    0xbd1f56f071a885cf,
    0x3cdd70b3537f4765,
    0xbc9a2007af3447f6,
    0x3c55f7919bc67b8c,
    0xbc118cc8a061c479,
    0x3bcab5cc31489f29,
    0xbb83676fc48c133c,
];

/// The error function in f64, as the kernels compute it
/// (`compiler/codegen/src/math.ll`): `x·P(x²)` below |x| = 1, then
/// `1 - erfc(|x|)` by erfc's continued fraction from its 200th level, ±1
/// from |x| = 6.
pub(crate) fn erf(x: f64) -> f64 {
    let a = x.abs();
    if x.is_nan() || a < 1.0 {
        let z = x * x;
        let p = ERF_SERIES.iter().rev().fold(0.0, |p, &c| p * z + f64::from_bits(c));
        return x * p;
    }
    if a >= 6.0 {
        return 1f64.copysign(x);
    }
    let mut fraction = a;
    for k in (1..=200).rev() {
        fraction = a + f64::from(k) * 0.5 / fraction;
    }
    let erfc = (-a * a).exp() * (1.0 / std::f64::consts::PI.sqrt()) / fraction;
    (1.0 - erfc).copysign(x)
}

impl MathFn {
    pub(crate) fn f64(self, x: f64) -> f64 {
        match self {
            MathFn::Abs => x.abs(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::Erf => erf(x),
            MathFn::Log => x.ln(),
            MathFn::Tanh => x.tanh(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            // NaN stays NaN, as PyTorch's `relu` and `max(x, 0.0)` give.
            MathFn::Relu if x > 0.0 || x.is_nan() => x,
            MathFn::Relu => 0.0,
            MathFn::Rsqrt => 1.0 / x.sqrt(),
            MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            MathFn::Silu => x / (1.0 + (-x).exp()),
            MathFn::Gelu => 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x)).tanh()),
            MathFn::GeluErf => 0.5 * x * (1.0 + erf(x * std::f64::consts::FRAC_1_SQRT_2)),
        }
    }

    fn f32(self, x: f32) -> f32 {
        match self {
            MathFn::Abs => x.abs(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::Erf => erf(f64::from(x)) as f32,
            MathFn::Log => x.ln(),
            MathFn::Tanh => x.tanh(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Relu if x > 0.0 || x.is_nan() => x,
            MathFn::Relu => 0.0,
            MathFn::Rsqrt => 1.0 / x.sqrt(),
            MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            MathFn::Silu => x / (1.0 + (-x).exp()),
            MathFn::Gelu => 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh()),
            MathFn::GeluErf => MathFn::GeluErf.f64(f64::from(x)) as f32,
        }
    }
}

/// `f(x)` elementwise, in the tensor's precision (`f32` for the halves;
/// integers stay integers for `abs` and `relu` and become `f32` otherwise).
pub(crate) fn math(f: MathFn, t: &Tensor) -> Result<Tensor, RunError> {
    let keeps_ints = matches!(f, MathFn::Abs | MathFn::Relu | MathFn::Floor | MathFn::Ceil);
    let dtype = if t.dtype().is_float() || keeps_ints {
        t.dtype()
    } else {
        DType::F32
    };
    let mut out = Tensor::zeros(dtype, t.shape())?;
    for i in 0..t.numel() {
        let e = t.get(i);
        let v = match (class(t.dtype()), e) {
            (Class::F64, e) => Elem::Float(f.f64(e.as_f64())),
            (Class::Int | Class::Bool, e) if keeps_ints => Elem::Int(f.f64(e.as_i64() as f64) as i64),
            (_, e) => Elem::Float(f.f32(e.as_f64() as f32) as f64),
        };
        out.set(i, v);
    }
    Ok(out)
}

/// One axis of an index expression, resolved against the dim's size.
#[derive(Clone, Debug)]
pub(crate) enum Sel {
    Index(usize),
    Slice {
        start: i64,
        step: i64,
        len: usize,
    },
    /// A bool mask of the tensor's own shape, as the only selection: the
    /// elements where it holds, in order, as one dim.
    Mask(Vec<bool>),
}

/// `i` (negative counts from the end) as an index into `n` elements.
pub(crate) fn resolve_index(i: i64, n: usize) -> Option<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    (0..n as i64).contains(&j).then_some(j as usize)
}

/// A Python slice `start:stop:step` of `n` elements, clamped as Python does.
pub(crate) fn resolve_slice(start: Option<i64>, stop: Option<i64>, step: i64, n: usize) -> Sel {
    let n = n as i64;
    let clamp = |v: i64, lo: i64, hi: i64| v.clamp(lo, hi);
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let start = start.map_or(if step > 0 { lo } else { hi }, |s| clamp(norm(s), lo, hi));
    let stop = stop.map_or(if step > 0 { hi } else { lo }, |s| clamp(norm(s), lo, hi));
    let len = if step > 0 {
        (stop - start + step - 1).max(0) / step
    } else {
        (start - stop - step - 1).max(0) / -step
    };
    Sel::Slice {
        start,
        step,
        len: len as usize,
    }
}

/// The shape of a selection and the flat indices it picks, in C order.
/// Axes beyond `sels` are taken whole.
pub(crate) fn select(shape: &[usize], sels: &[Sel]) -> (Vec<usize>, Vec<usize>) {
    if let [Sel::Mask(mask)] = sels {
        let picked: Vec<usize> = mask.iter().enumerate().filter(|(_, &m)| m).map(|(i, _)| i).collect();
        return (vec![picked.len()], picked);
    }
    let strides: Vec<usize> = (0..shape.len()).map(|a| shape[a + 1..].iter().product()).collect();
    let mut per_axis: Vec<Vec<usize>> = Vec::new();
    let mut out_shape = Vec::new();
    for (axis, &n) in shape.iter().enumerate() {
        match sels.get(axis) {
            Some(Sel::Index(i)) => per_axis.push(vec![*i]),
            Some(Sel::Mask(_)) => per_axis.push(Vec::new()),
            Some(Sel::Slice { start, step, len }) => {
                per_axis.push((0..*len as i64).map(|k| (start + k * step) as usize).collect());
                out_shape.push(*len);
            }
            None => {
                per_axis.push((0..n).collect());
                out_shape.push(n);
            }
        }
    }
    let mut indices = vec![0usize];
    for (axis, picks) in per_axis.iter().enumerate() {
        let stride = strides[axis];
        indices = indices
            .iter()
            .flat_map(|&base| picks.iter().map(move |&p| base + p * stride))
            .collect();
    }
    (out_shape, indices)
}

/// The selected elements as a new tensor.
pub(crate) fn gather(t: &Tensor, shape: &[usize], indices: &[usize]) -> Result<Tensor, RunError> {
    let mut out = Tensor::zeros(t.dtype(), shape)?;
    for (k, &i) in indices.iter().enumerate() {
        out.set(k, t.get(i));
    }
    Ok(out)
}

/// Stores `src` (broadcast to the selection's shape) into the selected
/// elements of `t`.
pub(crate) fn scatter(t: &mut Tensor, shape: &[usize], indices: &[usize], src: Operand<'_>) -> Result<(), RunError> {
    let fits = broadcast_shape(shape, src.shape()).is_some_and(|s| s == shape);
    if !fits {
        return Err(does_not_broadcast(src.shape(), shape));
    }
    let map = broadcast_map(shape, src.shape());
    for (k, &i) in indices.iter().enumerate() {
        t.set(i, element(src, &map, k));
    }
    Ok(())
}

/// Swaps the last two dims.
pub(crate) fn transpose(t: &Tensor) -> Result<Tensor, RunError> {
    let r = t.shape().len();
    let mut perm: Vec<usize> = (0..r).collect();
    if r >= 2 {
        perm.swap(r - 1, r - 2);
    }
    permute(t, &perm)
}

/// The tensor whose dim `i` is `t`'s dim `perm[i]` (`perm` a permutation
/// of `t`'s axes).
pub(crate) fn permute(t: &Tensor, perm: &[usize]) -> Result<Tensor, RunError> {
    let shape = t.shape();
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let mut out = Tensor::zeros(t.dtype(), &out_shape)?;
    let mut index = vec![0usize; out_shape.len()];
    for o in 0..out.numel() {
        let src: usize = index.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum();
        out.set(o, t.get(src));
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < out_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(out)
}

/// `tensors` joined along `axis`: they agree in dtype and in every other
/// dim.
pub(crate) fn concat(tensors: &[Tensor], axis: usize) -> Result<Tensor, RunError> {
    let Some(first) = tensors.first() else {
        return Err(RunError::value("`op.concat` of no tensors"));
    };
    let rank = first.shape().len();
    let mut along = 0;
    for (i, t) in tensors.iter().enumerate() {
        if t.dtype() != first.dtype() {
            return Err(RunError::value(format!(
                "`op.concat`: tensor {i} is {}, tensor 0 is {}; cast one of them first",
                t.dtype().name(),
                first.dtype().name()
            )));
        }
        let fits = t.shape().len() == rank && (0..rank).all(|d| d == axis || t.shape()[d] == first.shape()[d]);
        if !fits {
            return Err(RunError::value(format!(
                "`op.concat` along axis {axis}: tensor {i} has shape {}, which does not fit {}",
                crate::tensor::shape_text(t.shape()),
                crate::tensor::shape_text(first.shape())
            )));
        }
        along += t.shape()[axis];
    }
    let mut out_shape = first.shape().to_vec();
    out_shape[axis] = along;
    let mut out = Tensor::zeros(first.dtype(), &out_shape)?;
    let outer: usize = out_shape[..axis].iter().product();
    let inner: usize = out_shape[axis + 1..].iter().product();
    let mut at = 0;
    for o in 0..outer {
        for t in tensors {
            let run = t.shape()[axis] * inner;
            for k in 0..run {
                out.set(at, t.get(o * run + k));
                at += 1;
            }
        }
    }
    Ok(out)
}

/// `a @ b` over the last two dims (leading dims are a batch both share),
/// computed in float64 and then converted to `out`.
pub(crate) fn matmul(a: &Tensor, b: &Tensor, out: DType) -> Result<Tensor, RunError> {
    let (sa, sb) = (a.shape(), b.shape());
    let shapes = || {
        format!(
            "`op.matmul` of shapes {} and {}",
            crate::tensor::shape_text(sa),
            crate::tensor::shape_text(sb)
        )
    };
    if sa.len() < 2 || sb.len() < 2 {
        return Err(RunError::value(format!(
            "{}: both operands need 2 dims or more",
            shapes()
        )));
    }
    let (ra, rb) = (sa.len(), sb.len());
    let (m, k, n) = (sa[ra - 2], sa[ra - 1], sb[rb - 1]);
    if sb[rb - 2] != k {
        return Err(RunError::value(format!(
            "{}: the inner dims {k} and {} must agree",
            shapes(),
            sb[rb - 2]
        )));
    }
    // The batch dims broadcast as NumPy's do: aligned from the right, a
    // dim of 1 (or a missing one) stretched to the other's.
    let (batch_a, batch_b) = (&sa[..ra - 2], &sb[..rb - 2]);
    let rank = batch_a.len().max(batch_b.len());
    let aligned = |dims: &[usize], i: usize| (i + dims.len()).checked_sub(rank).map_or(1, |j| dims[j]);
    let mut batch = Vec::with_capacity(rank);
    for i in 0..rank {
        let (x, y) = (aligned(batch_a, i), aligned(batch_b, i));
        if x != y && x != 1 && y != 1 {
            return Err(RunError::value(format!(
                "{}: the batch dims do not broadcast ({x} against {y})",
                shapes()
            )));
        }
        batch.push(x.max(y));
    }
    let (offsets_a, offsets_b) = (broadcast_offsets(&batch, batch_a), broadcast_offsets(&batch, batch_b));
    let shape: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
    let mut c = Tensor::zeros(out, &shape)?;
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let mut row = vec![0.0f64; n];
    for (q, (&qa, &qb)) in offsets_a.iter().zip(&offsets_b).enumerate() {
        for i in 0..m {
            row.iter_mut().for_each(|x| *x = 0.0);
            for p in 0..k {
                let x = av[qa * m * k + i * k + p];
                let brow = &bv[qb * k * n + p * n..qb * k * n + (p + 1) * n];
                for (acc, y) in row.iter_mut().zip(brow) {
                    *acc += x * y;
                }
            }
            for (j, v) in row.iter().enumerate() {
                c.set(q * m * n + i * n + j, Elem::Float(*v));
            }
        }
    }
    Ok(c)
}

/// For each entry of the broadcast batch shape `batch`, in order, the index
/// of the entry of an operand's batch `dims` (aligned from the right, its
/// dims of 1 repeated) it reads.
fn broadcast_offsets(batch: &[usize], dims: &[usize]) -> Vec<usize> {
    let skip = batch.len() - dims.len();
    let mut offsets = vec![0usize];
    for (i, &size) in batch.iter().enumerate() {
        let own = i.checked_sub(skip).map_or(1, |j| dims[j]);
        offsets = offsets
            .iter()
            .flat_map(|&o| (0..size).map(move |x| o * own + if own == 1 { 0 } else { x }))
            .collect();
    }
    offsets
}

/// Softmax along `axis` (an index below the rank) in float64 (the
/// maximum subtracted first), or with `log` its logarithm `x - max -
/// log(sum)`, converted to `out`.
pub(crate) fn softmax(t: &Tensor, axis: usize, out: DType, log: bool) -> Result<Tensor, RunError> {
    let shape = t.shape();
    let n = shape.get(axis).copied().unwrap_or(1);
    let inner: usize = shape.iter().skip(axis + 1).product();
    let outer: usize = shape.iter().take(axis).product();
    let v = t.to_f64_vec();
    let mut r = Tensor::zeros(out, shape)?;
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * n + j) * inner + i;
            let max = (0..n).map(|j| v[at(j)]).fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = (0..n).map(|j| (v[at(j)] - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for (j, x) in e.iter().enumerate() {
                let y = if log { v[at(j)] - max - sum.ln() } else { x / sum };
                r.set(at(j), Elem::Float(y));
            }
        }
    }
    Ok(r)
}

/// The inclusive cumulative sum of `t` along `axis`, added in index
/// order in float64 (of integers into an integer `out`: in `i64`,
/// wrapping), converted to `out`.
pub(crate) fn cumsum(t: &Tensor, axis: usize, out: DType) -> Result<Tensor, RunError> {
    let shape = t.shape();
    let n = shape.get(axis).copied().unwrap_or(1);
    let inner: usize = shape.iter().skip(axis + 1).product();
    let outer: usize = shape.iter().take(axis).product();
    let integers = !t.dtype().is_float() && !out.is_float();
    let mut r = Tensor::zeros(out, shape)?;
    for o in 0..outer {
        for i in 0..inner {
            let (mut total, mut count) = (0.0, 0i64);
            for j in 0..n {
                let at = (o * n + j) * inner + i;
                let x = t.get(at);
                if integers {
                    count = count.wrapping_add(x.as_i64());
                    r.set(at, Elem::Int(count));
                } else {
                    total += x.as_f64();
                    r.set(at, Elem::Float(total));
                }
            }
        }
    }
    Ok(r)
}

/// The variance of `t` over `axes` (indices below the rank, each once) in
/// float64, `Σ(x - mean)² / max(n - correction, 0)`, or with `std` its square
/// root, converted to `out`; the kept dims in order.
pub(crate) fn variance(t: &Tensor, axes: &[usize], correction: f64, out: DType, std: bool) -> Result<Tensor, RunError> {
    let shape = t.shape();
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let n: usize = axes.iter().map(|&a| shape[a]).product();
    // The output element of each input element: its index over the kept dims.
    let strides: Vec<usize> = (0..shape.len()).map(|a| shape[a + 1..].iter().product()).collect();
    let output_of = |flat: usize| kept.iter().fold(0, |o, &a| o * shape[a] + flat / strides[a] % shape[a]);
    let v = t.to_f64_vec();
    let outputs: usize = out_shape.iter().product();
    let mut means = vec![0.0; outputs];
    for (i, x) in v.iter().enumerate() {
        means[output_of(i)] += x;
    }
    for m in &mut means {
        *m /= n as f64;
    }
    let mut squares = vec![0.0; outputs];
    for (i, x) in v.iter().enumerate() {
        let o = output_of(i);
        squares[o] += (x - means[o]) * (x - means[o]);
    }
    let mut r = Tensor::zeros(out, &out_shape)?;
    for (o, s) in squares.iter().enumerate() {
        let var = s / (n as f64 - correction).max(0.0);
        r.set(o, Elem::Float(if std { var.sqrt() } else { var }));
    }
    Ok(r)
}

/// Layer normalization (`weight` and `bias` given) or RMS normalization
/// (`bias` None and `rms`) over the last axis, in float64, converted to
/// `out`: `(x - mean) / sqrt(var + eps) · weight + bias` with the biased
/// variance, or `x / sqrt(mean(x²) + eps) · weight`.
pub(crate) fn norm_last(
    t: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    rms: bool,
    out: DType,
) -> Result<Tensor, RunError> {
    let n = t.shape().last().copied().unwrap_or(1);
    let params: Vec<Option<Vec<f64>>> = [weight, bias]
        .into_iter()
        .map(|p| {
            p.map(|p| {
                if p.numel() == n {
                    Ok(p.to_f64_vec())
                } else {
                    Err(RunError::value(format!(
                        "the weight and bias of a normalization have the last dim of `x`, {n} elements, not {}",
                        crate::tensor::shape_text(p.shape())
                    )))
                }
            })
            .transpose()
        })
        .collect::<Result<_, _>>()?;
    let mut r = Tensor::zeros(out, t.shape())?;
    if n == 0 {
        return Ok(r);
    }
    let v = t.to_f64_vec();
    for (row, chunk) in v.chunks(n).enumerate() {
        let mean = if rms { 0.0 } else { chunk.iter().sum::<f64>() / n as f64 };
        let var = chunk.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for (j, x) in chunk.iter().enumerate() {
            let mut y = (x - mean) * rstd;
            if let Some(w) = &params[0] {
                y *= w[j];
            }
            if let Some(b) = &params[1] {
                y += b[j];
            }
            r.set(row * n + j, Elem::Float(y));
        }
    }
    Ok(r)
}

/// Scaled dot-product attention in float64: `softmax(q·kᵀ / √d) · v` over
/// the last two dims (leading dims are a batch all three share); with
/// `causal`, query `i` sees keys `j ≤ i + (keys - queries)`.
pub(crate) fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: Option<f64>,
    out: DType,
) -> Result<Tensor, RunError> {
    let (sq, sk, sv) = (q.shape(), k.shape(), v.shape());
    let r = sq.len();
    let fits = r >= 2
        && sk.len() == r
        && sv.len() == r
        && sq[..r - 2] == sk[..r - 2]
        && sk[..r - 2] == sv[..r - 2]
        && sq[r - 1] == sk[r - 1]
        && sk[r - 2] == sv[r - 2];
    if !fits {
        return Err(RunError::value(format!(
            "attention of q {}, k {} and v {}: q and k share the head dim, k and v the key count, all three the batch dims",
            crate::tensor::shape_text(sq),
            crate::tensor::shape_text(sk),
            crate::tensor::shape_text(sv)
        )));
    }
    let (m, n, d, dv) = (sq[r - 2], sk[r - 2], sq[r - 1], sv[r - 1]);
    let mut shape = sq.to_vec();
    shape[r - 1] = dv;
    let mut o = Tensor::zeros(out, &shape)?;
    let (qv, kv, vv) = (q.to_f64_vec(), k.to_f64_vec(), v.to_f64_vec());
    let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
    let batch = q.numel() / (m * d).max(1);
    let mut scores = vec![0.0f64; n];
    for b in 0..batch {
        let (qb, kb, vb) = (&qv[b * m * d..], &kv[b * n * d..], &vv[b * n * dv..]);
        for i in 0..m {
            let visible = match (causal, i + n) {
                (false, _) => n,
                (true, last) if last >= m => (last - m + 1).min(n),
                (true, _) => 0,
            };
            for (j, s) in scores.iter_mut().enumerate().take(visible) {
                *s = (0..d).map(|c| qb[i * d + c] * kb[j * d + c]).sum::<f64>() * scale;
            }
            let max = scores[..visible].iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores[..visible].iter().map(|s| (s - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for c in 0..dv {
                let y: f64 = weights.iter().enumerate().map(|(j, w)| w * vb[j * dv + c]).sum();
                o.set(
                    b * m * dv + i * dv + c,
                    Elem::Float(if visible == 0 { 0.0 } else { y / total }),
                );
            }
        }
    }
    Ok(o)
}

/// A float sum in the order a compiled deterministic reduction adds it
/// (`spec/runtime.md`, "Tree-ordered sums"): along the last axis (`inner`
/// 1) rows of `row` values by the row order, along another in index order.
fn compiled_order<T: TreeAdd>(v: &[T], inner: usize, row: usize, lanes: usize) -> T {
    if inner == 1 {
        rows_sum(v, row, lanes)
    } else {
        ordered_sum(v)
    }
}

/// Sum, mean, largest or smallest element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    Sum,
    Mean,
    Max,
    Min,
}

/// `op.sum` / `op.mean` over `axis` (all elements when None), in the
/// order of a compiled deterministic reduction (`compiled_order`), accumulating in `accumulate` (by default `f32`
/// for floats up to `f32`, `f64` for `f64`, `i64` for integers); the result
/// has the input's dtype.
pub(crate) fn reduce(
    t: &Tensor,
    axis: Option<usize>,
    kind: Reduction,
    accumulate: Option<DType>,
) -> Result<Tensor, RunError> {
    let (outer, n, inner, out_shape) = around(t, axis);
    // Over every axis, the sum is of rows of the last one.
    let row = match axis {
        None => t.shape().last().copied().unwrap_or(1),
        Some(_) => n,
    };
    let acc = accumulate.unwrap_or(match t.dtype() {
        DType::F64 => DType::F64,
        d if d.is_float() => DType::F32,
        _ => DType::I64,
    });
    // A sum of bools counts them, as NumPy's does (an i64).
    let out_dtype = match (kind, t.dtype()) {
        (Reduction::Mean, d) if !d.is_float() => DType::F32,
        (Reduction::Sum, DType::Bool) => DType::I64,
        (_, d) => d,
    };
    let mut out = Tensor::zeros(out_dtype, &out_shape)?;
    let extreme = matches!(kind, Reduction::Max | Reduction::Min);
    if extreme && n == 0 && out.numel() > 0 {
        let what = if kind == Reduction::Max { "op.max" } else { "op.min" };
        return Err(RunError::value(format!(
            "`{what}` of no elements: the reduced dim is 0"
        )));
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| t.get(o * n * inner + k * inner + i);
            if extreme {
                out.set(o * inner + i, extremum(kind == Reduction::Max, (0..n).map(at)));
                continue;
            }
            let v = match acc {
                DType::F64 => {
                    let v: Vec<f64> = (0..n).map(|k| at(k).as_f64()).collect();
                    let s = compiled_order(&v, inner, row, ROW_LANES / 2);
                    Elem::Float(if kind == Reduction::Mean { s / n as f64 } else { s })
                }
                d if d.is_float() => {
                    let v: Vec<f32> = (0..n).map(|k| at(k).as_f64() as f32).collect();
                    let s = compiled_order(&v, inner, row, ROW_LANES);
                    Elem::Float(if kind == Reduction::Mean {
                        (s / n as f32) as f64
                    } else {
                        s as f64
                    })
                }
                _ => {
                    let v: Vec<i64> = (0..n).map(|k| at(k).as_i64()).collect();
                    let s = ordered_sum(&v);
                    if kind == Reduction::Mean {
                        Elem::Float(s as f64 / n as f64)
                    } else {
                        Elem::Int(s)
                    }
                }
            };
            out.set(o * inner + i, v);
        }
    }
    Ok(out)
}

/// How `t` lies around `axis` (all of it when None): the elements before
/// it, its extent, the elements after it, and the shape without it.
fn around(t: &Tensor, axis: Option<usize>) -> (usize, usize, usize, Vec<usize>) {
    let shape = t.shape();
    match axis {
        None => (1, t.numel(), 1, vec![]),
        Some(a) => {
            let mut s = shape.to_vec();
            s.remove(a);
            (
                shape[..a].iter().product(),
                shape[a],
                shape[a + 1..].iter().product(),
                s,
            )
        }
    }
}

/// `op.argmax` / `op.argmin` over `axis` (the flattened tensor when
/// None): the index of the first largest (smallest) element along it, as
/// `i64`; the first NaN where there is one, as in NumPy.
pub(crate) fn arg_extremum(t: &Tensor, axis: Option<usize>, largest: bool) -> Result<Tensor, RunError> {
    let (outer, n, inner, out_shape) = around(t, axis);
    let mut out = Tensor::zeros(DType::I64, &out_shape)?;
    if n == 0 && out.numel() > 0 {
        let what = if largest { "op.argmax" } else { "op.argmin" };
        return Err(RunError::value(format!(
            "`{what}` of no elements: the reduced dim is 0"
        )));
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| t.get(o * n * inner + k * inner + i);
            let better = |x: Elem, best: Elem| match (x, best) {
                (Elem::Int(a), Elem::Int(b)) => (a > b) == largest && a != b,
                (x, best) => {
                    let (a, b) = (x.as_f64(), best.as_f64());
                    !b.is_nan() && (a.is_nan() || if largest { a > b } else { a < b })
                }
            };
            let mut best = 0;
            for k in 1..n {
                if better(at(k), at(best)) {
                    best = k;
                }
            }
            out.set(o * inner + i, Elem::Int(best as i64));
        }
    }
    Ok(out)
}

/// The largest (or smallest) of `items`, compared as numbers of their
/// kind; a NaN among floats is the result, as in NumPy.
fn extremum(largest: bool, mut items: impl Iterator<Item = Elem>) -> Elem {
    let Some(mut best) = items.next() else {
        return Elem::Int(0);
    };
    for x in items {
        best = match (best, x) {
            (Elem::Int(a), Elem::Int(b)) => Elem::Int(if largest { a.max(b) } else { a.min(b) }),
            (a, b) => {
                let (a, b) = (a.as_f64(), b.as_f64());
                Elem::Float(if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if largest {
                    a.max(b)
                } else {
                    a.min(b)
                })
            }
        };
    }
    best
}

/// How far two tensors are from each other, as `allclose` reports it.
pub(crate) struct Closeness {
    pub(crate) total: usize,
    pub(crate) mismatched: usize,
    /// The largest absolute difference and the index where it occurs.
    pub(crate) worst: Option<(f64, Vec<usize>, f64, f64)>,
}

/// Compares elementwise: `|a - b| <= atol + rtol * |b|` (NaN is never close).
pub(crate) fn closeness(a: &Tensor, b: &Tensor, rtol: f64, atol: f64) -> Result<Closeness, RunError> {
    let shape = broadcast_shape(a.shape(), b.shape()).ok_or_else(|| does_not_broadcast(a.shape(), b.shape()))?;
    let (ma, mb) = (broadcast_map(&shape, a.shape()), broadcast_map(&shape, b.shape()));
    let total: usize = shape.iter().product();
    let mut mismatched = 0;
    let mut worst: Option<(f64, usize, f64, f64)> = None;
    for i in 0..total {
        let (x, y) = (a.get(ma[i]).as_f64(), b.get(mb[i]).as_f64());
        let diff = (x - y).abs();
        let close = diff <= atol + rtol * y.abs() || (x == y);
        if !close {
            mismatched += 1;
            let d = if diff.is_nan() { f64::INFINITY } else { diff };
            if worst.is_none_or(|(w, ..)| d > w) {
                worst = Some((d, i, x, y));
            }
        }
    }
    let unravel = |mut i: usize| {
        let mut idx = vec![0; shape.len()];
        for axis in (0..shape.len()).rev() {
            idx[axis] = i % shape[axis].max(1);
            i /= shape[axis].max(1);
        }
        idx
    };
    Ok(Closeness {
        total,
        mismatched,
        worst: worst.map(|(d, i, x, y)| (d, unravel(i), x, y)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shape(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shape(&[2, 1], &[1, 4]), Some(vec![2, 4]));
        assert_eq!(broadcast_shape(&[2, 3], &[2]), None);
        let a = Tensor::from_slice(&[2, 1], &[1.0f32, 2.0]).unwrap();
        let b = Tensor::from_slice(&[3], &[10.0f32, 20.0, 30.0]).unwrap();
        let s = binary(BinOp::Add, Operand::Tensor(&a), Operand::Tensor(&b)).unwrap();
        assert_eq!(s.shape(), &[2, 3]);
        assert_eq!(s.to_f64_vec(), vec![11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
        let e = binary(
            BinOp::Add,
            Operand::Tensor(&b),
            Operand::Tensor(&Tensor::zeros(DType::F32, &[2]).unwrap()),
        );
        assert_eq!(e.unwrap_err().code, Code::E0306);
    }

    #[test]
    fn arithmetic_keeps_the_dtype_and_rounds_in_it() {
        let x = Tensor::from_slice(&[2], &[0.1f32, 16777216.0]).unwrap();
        let y = binary(BinOp::Add, Operand::Tensor(&x), Operand::Scalar(Elem::Float(1.0))).unwrap();
        assert_eq!(y.dtype(), DType::F32);
        assert_eq!(
            y.as_slice::<f32>().unwrap(),
            &[0.1f32 + 1.0, 16777216.0],
            "f32 arithmetic, not f64"
        );
        let i = Tensor::from_slice(&[3], &[7i32, -7, 8]).unwrap();
        let q = binary(BinOp::FloorDiv, Operand::Tensor(&i), Operand::Scalar(Elem::Int(2))).unwrap();
        assert_eq!(q.as_slice::<i32>().unwrap(), &[3, -4, 4]);
        let m = binary(BinOp::Mod, Operand::Tensor(&i), Operand::Scalar(Elem::Int(3))).unwrap();
        assert_eq!(m.as_slice::<i32>().unwrap(), &[1, 2, 2]);
        let d = binary(BinOp::Div, Operand::Tensor(&i), Operand::Scalar(Elem::Int(2))).unwrap();
        assert_eq!((d.dtype(), d.to_f64_vec()), (DType::F32, vec![3.5, -3.5, 4.0]));
        let c = binary(BinOp::Lt, Operand::Tensor(&i), Operand::Scalar(Elem::Int(0))).unwrap();
        assert_eq!(c.dtype(), DType::Bool);
        assert!(binary(BinOp::Mod, Operand::Tensor(&i), Operand::Scalar(Elem::Int(0))).is_err());
    }

    #[test]
    fn slices_clamp_as_python_does() {
        let pick = |start, stop, step, n| match resolve_slice(start, stop, step, n) {
            Sel::Slice { start, step, len } => (0..len as i64).map(|k| start + k * step).collect::<Vec<_>>(),
            Sel::Index(_) | Sel::Mask(_) => unreachable!(),
        };
        assert_eq!(pick(Some(0), Some(4), 1, 10), vec![0, 1, 2, 3]);
        assert_eq!(pick(Some(8), Some(100), 1, 10), vec![8, 9]);
        assert_eq!(pick(Some(-3), None, 1, 10), vec![7, 8, 9]);
        assert_eq!(pick(None, None, -3, 10), vec![9, 6, 3, 0]);
        assert_eq!(pick(Some(5), Some(2), 1, 10), Vec::<i64>::new());
        assert_eq!(resolve_index(-1, 4), Some(3));
        assert_eq!(resolve_index(4, 4), None);
        let t = Tensor::from_slice(&[2, 3], &[0i32, 1, 2, 3, 4, 5]).unwrap();
        let (shape, idx) = select(t.shape(), &[resolve_slice(None, None, 1, 2), Sel::Index(1)]);
        assert_eq!((shape, idx), (vec![2], vec![1, 4]));
    }

    #[test]
    fn reductions_add_in_the_compiled_order() {
        // The pairwise tree along a row: (1e8 + 1) + (-1e8 + 1) rounds to 0.
        let v: Vec<f32> = vec![1e8, 1.0, -1e8, 1.0];
        let t = Tensor::from_slice(&[4], &v).unwrap();
        assert_eq!(reduce(&t, None, Reduction::Sum, None).unwrap().to_f64_vec(), vec![0.0]);
        // Over every axis, each row's sum and then the rows' in order:
        // (1e8 + -1e8) + (1 + 1).
        let rows = Tensor::from_slice(&[2, 2], &[1e8f32, -1e8, 1.0, 1.0]).unwrap();
        assert_eq!(
            reduce(&rows, None, Reduction::Sum, None).unwrap().to_f64_vec(),
            vec![2.0]
        );
        // Down a column, in index order: (1e8 + 1) + -1e8 is 0.
        let column = Tensor::from_slice(&[3, 1], &[1e8f32, 1.0, -1e8]).unwrap();
        assert_eq!(
            reduce(&column, Some(0), Reduction::Sum, None).unwrap().to_f64_vec(),
            vec![0.0]
        );
        let m = Tensor::from_slice(&[2, 3], &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!(
            reduce(&m, Some(0), Reduction::Sum, None).unwrap().to_f64_vec(),
            vec![5.0, 7.0, 9.0]
        );
        assert_eq!(
            reduce(&m, Some(1), Reduction::Mean, None).unwrap().to_f64_vec(),
            vec![2.0, 5.0]
        );
    }
}
