//! Checking run-time arguments against a function's parameters: kinds,
//! dtypes and ranks; the binding of symbolic dims (`N` in `f32[N]`); and the
//! `where` constraints the checker could not decide, reported with the
//! checker's codes and messages (E0302, E0303, E0304; `spec/shapes.md`).

use std::collections::HashMap;

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_hir::signature::dotted_name;
use tessera_syntax::ast::{BinOp, Expr, ExprKind, FnDef, Param, TypeKind, UnaryOp};

use super::value::Value;
use super::Unit;
use crate::tensor::shape_text;
use crate::{DType, Tensor};

/// Where an argument came from: its expression in a call, or the parameter
/// (for `--input`).
#[derive(Clone, Debug)]
pub(crate) struct ArgSite {
    pub(crate) span: Span,
}

/// A dim bound by an argument.
#[derive(Clone, Debug)]
struct Bound {
    value: i64,
    /// (argument index, dim index), None when derived from the `where` clause.
    from: Option<(usize, usize)>,
}

/// What a parameter's annotation asks for.
pub(crate) enum ParamKind<'a> {
    /// `f32[N, 4]`: the dtype name and the dims.
    Tensor(&'a str, &'a [Expr]),
    /// `f32`, `index`, `bool`.
    Scalar(&'a str),
    /// No annotation, or one the host does not interpret.
    Any,
}

pub(crate) fn param_kind(p: &Param) -> ParamKind<'_> {
    match p.ty.as_ref().map(|t| &t.kind) {
        Some(TypeKind::Named {
            name, dims: Some(dims), ..
        }) => ParamKind::Tensor(&name.name, dims),
        Some(TypeKind::Named { name, dims: None, .. }) => ParamKind::Scalar(&name.name),
        _ => ParamKind::Any,
    }
}

/// `t` for parameter `p`: `.npy` fp8 files (`|V1`) read as `fp8_e4m3`, and
/// their bytes are `fp8_e5m2` values where `p` asks for those.
pub(crate) fn fp8_as_param(t: Tensor, p: &Param) -> Tensor {
    let wanted = match param_kind(p) {
        ParamKind::Tensor(name, _) => DType::from_name(name),
        _ => None,
    };
    if t.dtype() == DType::Fp8E4m3 && wanted == Some(DType::Fp8E5m2) {
        Tensor::from_bytes(DType::Fp8E5m2, t.shape(), t.bytes()).unwrap_or(t)
    } else {
        t
    }
}

/// The source text of a parameter's type, for messages.
fn type_text(unit: &Unit<'_>, p: &Param) -> String {
    p.ty.as_ref()
        .map_or_else(|| "untyped".into(), |t| unit.text(t.span).to_string())
}

/// Gives a scalar parameter of a numeric type that is passed a tensor of
/// no dims (NumPy's scalar: `x[0]` of an `f32` tensor) its element.
pub(crate) fn numbers_for_scalars(def: &FnDef, args: &mut [Value]) {
    for (param, value) in def.params.iter().zip(args.iter_mut()) {
        let ParamKind::Scalar(ty) = param_kind(param) else {
            continue;
        };
        if DType::from_name(ty).is_none() && ty != "index" {
            continue;
        }
        if let Value::Tensor(t) = value {
            if t.shape().is_empty() {
                if let Ok(e) = t.element(0) {
                    *value = Value::from_elem(e);
                }
            }
        }
    }
}

/// Checks `args` (in parameter order) against `def`'s parameters and binds
/// its dims; returns the dims by name, in the order they first appear.
///
/// The arguments (`sites`, `call`) are places in `caller`, the parameters
/// and their rules in `callee`, the function's own file.
pub(crate) fn bind(
    caller: &Unit<'_>,
    callee: &Unit<'_>,
    def: &FnDef,
    args: &[Value],
    sites: &[ArgSite],
    call: Span,
    constants: &HashMap<String, i64>,
) -> Result<Vec<(String, i64)>, Box<Diagnostic>> {
    let at = |span: Span| caller.at(span);
    let at_def = |span: Span| callee.at(span);
    let fname = &def.name.name;
    // The module constants the signature names are bound from the start;
    // a dim that is one is checked against the argument's size below.
    let mut dims: HashMap<String, Bound> = constants
        .iter()
        .map(|(name, &value)| (name.clone(), Bound { value, from: None }))
        .collect();
    let mut order: Vec<String> = Vec::new();
    for (k, (param, value)) in def.params.iter().zip(args).enumerate() {
        let site = at(sites[k].span);
        let pname = &param.name.name;
        // The parameter is labelled where it is not the value's own site
        // (an `--entry` input's).
        let with_param = |d: Diagnostic, label: String| {
            if sites[k].span == param.span {
                d
            } else {
                d.with_secondary(at_def(param.span), label)
            }
        };
        let mismatch = |what: String| {
            Box::new(with_param(
                Diagnostic::error(
                    Code::E1005,
                    format!(
                        "argument `{pname}` of `{fname}` is {what}, but the parameter is {}",
                        type_text(callee, param)
                    ),
                )
                .with_primary(site, "this value"),
                "the parameter".to_string(),
            ))
        };
        match param_kind(param) {
            ParamKind::Any => {}
            ParamKind::Scalar(ty) => {
                let fits = match (ty, value) {
                    ("bool", Value::Bool(_)) => true,
                    (t, Value::Int(_) | Value::Bool(_)) => DType::from_name(t).is_some() || t == "index",
                    (t, Value::Float(_)) => DType::from_name(t).is_some_and(DType::is_float),
                    (t, Value::Tensor(_)) => DType::from_name(t).is_none() && t != "index",
                    _ => DType::from_name(ty).is_none() && ty != "index",
                };
                if !fits {
                    return Err(mismatch(value.describe()));
                }
                // An int the parameter's dtype does not hold is refused, as
                // a kernel's launch refuses it.
                let range = DType::from_name(ty).and_then(DType::int_range);
                if let (Some((lo, hi)), Value::Int(i)) = (range, value) {
                    if !(lo..=hi).contains(i) {
                        return Err(Box::new(with_param(
                            Diagnostic::error(
                                Code::E1005,
                                format!(
                                    "argument `{pname}` of `{fname}` is {i}, which {ty} does not hold ({lo} to {hi})"
                                ),
                            )
                            .with_primary(site, "this value"),
                            "the parameter".to_string(),
                        )));
                    }
                }
            }
            ParamKind::Tensor(dtype_name, pdims) => {
                let Value::Tensor(t) = value else {
                    return Err(mismatch(value.describe()));
                };
                if let Some(want) = tessera_hir::ty::DType::from_name(dtype_name) {
                    if DType::from_language(want) != Some(t.dtype()) {
                        return Err(mismatch(format!(
                            "{} tensor",
                            tessera_base::with_article(&t.dtype().to_string())
                        )));
                    }
                }
                let shape = t.shape();
                if shape.len() != pdims.len() {
                    return Err(Box::new(with_param(
                        Diagnostic::error(
                            Code::E0303,
                            format!(
                                "argument `{pname}` of `{fname}` has {} dims, but the parameter has {}",
                                shape.len(),
                                pdims.len()
                            ),
                        )
                        .with_primary(site, format!("this has shape {}", shape_text(&shape))),
                        format!("parameter `{pname}` is {}", type_text(callee, param)),
                    )));
                }
                for (i, (d, &size)) in pdims.iter().zip(&shape).enumerate() {
                    let ExprKind::Name(sym) = &d.unparen().kind else {
                        continue;
                    };
                    if constants.contains_key(sym) {
                        continue;
                    }
                    match dims.get(sym) {
                        Some(prev) if prev.value != size as i64 => {
                            let (pa, pd) = prev.from.unwrap_or((k, i));
                            let prev_name = &def.params[pa].name.name;
                            return Err(Box::new(
                                Diagnostic::error(
                                    Code::E0302,
                                    format!("dim `{sym}` of `{fname}` gets two different sizes"),
                                )
                                .with_primary(site, format!("dim {i} of `{pname}` is {sym} = {size}"))
                                .with_secondary(
                                    at(sites[pa].span),
                                    format!("but dim {pd} of `{prev_name}` is {sym} = {}", prev.value),
                                )
                                .with_help(format!("pass tensors whose `{sym}` dims agree")),
                            ));
                        }
                        Some(_) => {}
                        None => {
                            order.push(sym.clone());
                            dims.insert(
                                sym.clone(),
                                Bound {
                                    value: size as i64,
                                    from: Some((k, i)),
                                },
                            );
                        }
                    }
                }
            }
        }
    }
    let constraints: Vec<&Expr> = def.where_clause.iter().flat_map(|w| w.constraints.iter()).collect();
    derive(&constraints, &mut dims, &mut order);
    // A product dim (`H * D`) with one factor not bound otherwise is that
    // factor's size over the others' (`x: f32[S, H * D], w: f32[H]`), until
    // no product binds another (`A * B` once `B * C` gave `B`).
    loop {
        let known = dims.len();
        for (param, value) in def.params.iter().zip(args) {
            let (ParamKind::Tensor(_, pdims), Value::Tensor(t)) = (param_kind(param), value) else {
                continue;
            };
            for (d, size) in pdims.iter().zip(t.shape()) {
                solve_product(d, size as i64, &mut dims, &mut order);
            }
        }
        if dims.len() == known {
            break;
        }
    }
    // Composite dims (`H * Dh`, constants), once their symbols are known.
    for (k, (param, value)) in def.params.iter().zip(args).enumerate() {
        let (ParamKind::Tensor(_, pdims), Value::Tensor(t)) = (param_kind(param), value) else {
            continue;
        };
        for (i, (d, size)) in pdims.iter().zip(t.shape()).enumerate() {
            if matches!(&d.unparen().kind, ExprKind::Name(n) if !constants.contains_key(n)) {
                continue;
            }
            // Argument `k`'s dim `i` is the wrong size, as `label` says.
            let wrong_size = |label: String| {
                let pname = &param.name.name;
                Box::new(
                    Diagnostic::error(Code::E0302, format!("argument `{pname}` has the wrong size in dim {i}"))
                        .with_primary(at(sites[k].span), label)
                        .with_secondary(
                            at_def(param.span),
                            format!("parameter `{pname}` is {}", type_text(callee, param)),
                        ),
                )
            };
            let dim = callee.text(d.span);
            let Some(expected) = eval(d, &dims) else {
                // A product whose one unbound factor the size cannot give:
                // the other factors do not divide it.
                if let Some((sym, known)) = product_remainder(d, size as i64, &dims) {
                    return Err(wrong_size(format!(
                        "dim {i} is {size}, not a multiple of {known}, so no `{sym}` makes it `{dim}`"
                    )));
                }
                continue;
            };
            if expected != size as i64 {
                return Err(wrong_size(format!(
                    "dim {i} is {size}, but `{fname}` expects {dim} = {expected}"
                )));
            }
        }
    }
    for c in constraints {
        check_constraint(caller, callee, def, c, &dims, sites, call)?;
    }
    Ok(order.into_iter().map(|s| (s.clone(), dims[&s].value)).collect())
}

/// The one unbound symbol of the product `d` and the product of its other
/// factors, when that does not divide `size`.
fn product_remainder(d: &Expr, size: i64, dims: &HashMap<String, Bound>) -> Option<(String, i64)> {
    let (sym, known) = product_parts(d, dims)?;
    (known > 0 && size % known != 0).then_some((sym.to_string(), known))
}

/// The factors of a product of names and numbers (`H * D`, `2 * N`).
fn factors<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) -> bool {
    match &e.unparen().kind {
        ExprKind::Binary {
            op: BinOp::Mul,
            lhs,
            rhs,
        } => factors(lhs, out) && factors(rhs, out),
        ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Size(_) | ExprKind::Attr { .. } => {
            out.push(e.unparen());
            true
        }
        _ => false,
    }
}

/// The one unbound symbol of the product `d` and the product of its other
/// factors.
fn product_parts<'e>(d: &'e Expr, dims: &HashMap<String, Bound>) -> Option<(&'e str, i64)> {
    let mut parts = Vec::new();
    if !factors(d, &mut parts) || parts.len() < 2 {
        return None;
    }
    let unbound: Vec<&str> = parts
        .iter()
        .filter_map(|p| match &p.kind {
            ExprKind::Name(n) if !dims.contains_key(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    let [sym] = unbound[..] else { return None };
    let known = parts
        .iter()
        .filter(|p| !matches!(&p.kind, ExprKind::Name(n) if n == sym))
        .try_fold(1i64, |acc, p| acc.checked_mul(eval(p, dims)?))?;
    Some((sym, known))
}

/// Binds the one unbound symbol of the product `d` (names and numbers
/// multiplied) whose size is `size`, when the other factors divide it.
fn solve_product(d: &Expr, size: i64, dims: &mut HashMap<String, Bound>, order: &mut Vec<String>) {
    let Some((sym, known)) = product_parts(d, dims) else {
        return;
    };
    if known > 0 && size % known == 0 {
        let sym = sym.to_string();
        order.push(sym.clone());
        dims.insert(
            sym,
            Bound {
                value: size / known,
                from: None,
            },
        );
    }
}

/// Learns unbound symbols from equalities `X == expr` of the `where`
/// clause, until nothing more is learned.
fn derive(constraints: &[&Expr], dims: &mut HashMap<String, Bound>, order: &mut Vec<String>) {
    loop {
        let mut learned = false;
        for sides in constraints.iter().filter_map(|c| c.equation_sides()) {
            for (a, b) in sides {
                let ExprKind::Name(sym) = &a.unparen().kind else {
                    continue;
                };
                if dims.contains_key(sym) {
                    continue;
                }
                if let Some(v) = eval(b, dims) {
                    order.push(sym.clone());
                    dims.insert(sym.clone(), Bound { value: v, from: None });
                    learned = true;
                }
            }
        }
        if !learned {
            return;
        }
    }
}

/// The value of a dim expression, when every symbol in it is known.
fn eval(e: &Expr, dims: &HashMap<String, Bound>) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => i64::try_from(*v).ok(),
        ExprKind::Size(v) => i64::try_from(*v).ok(),
        ExprKind::Name(_) | ExprKind::Attr { .. } => dims.get(&dotted_name(e)?).map(|b| b.value),
        ExprKind::Paren(inner) => eval(inner, dims),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => eval(operand, dims)?.checked_neg(),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval(lhs, dims)?, eval(rhs, dims)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::FloorDiv => {
                    // Python's floor division (`7 // -2` is -4), None for
                    // a zero divisor and MIN // -1.
                    let q = a.checked_div(b)?;
                    Some(q - i64::from(a % b != 0 && (a < 0) != (b < 0)))
                }
                BinOp::Mod => {
                    let r = a.checked_rem(b)?;
                    Some(if r != 0 && (r < 0) != (b < 0) { r + b } else { r })
                }
                BinOp::Pow => a.checked_pow(u32::try_from(b).ok()?),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The names and dotted names (`ops.WIDTH`) the dims of `def`'s
/// parameters and result and its `where` clause mention.
pub(crate) fn signature_names(def: &FnDef) -> Vec<String> {
    fn walk(e: &Expr, out: &mut Vec<String>) {
        if let Some(name) = dotted_name(e) {
            if !out.contains(&name) {
                out.push(name);
            }
            return;
        }
        e.kind.for_each_child(|c| walk(c, out));
    }
    fn ty(t: &tessera_syntax::ast::Type, out: &mut Vec<String>) {
        match &t.kind {
            TypeKind::Named { dims: Some(dims), .. } => dims.iter().for_each(|d| walk(d, out)),
            TypeKind::Tuple(items) => items.iter().for_each(|t| ty(t, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    def.params
        .iter()
        .filter_map(|p| p.ty.as_ref())
        .chain(def.ret.as_ref())
        .for_each(|t| ty(t, &mut out));
    def.where_clause
        .iter()
        .flat_map(|w| &w.constraints)
        .for_each(|c| walk(c, &mut out));
    out
}

/// The symbols of an expression, in order.
fn symbols(e: &Expr, out: &mut Vec<String>) {
    if let ExprKind::Name(n) = &e.kind {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    e.kind.for_each_child(|c| symbols(c, out));
}

/// Checks one constraint, when its symbols are known; a violated one is
/// E0304 with the message the checker gives at compile time.
fn check_constraint(
    caller: &Unit<'_>,
    callee: &Unit<'_>,
    def: &FnDef,
    c: &Expr,
    dims: &HashMap<String, Bound>,
    sites: &[ArgSite],
    call: Span,
) -> Result<(), Box<Diagnostic>> {
    if let ExprKind::Binary {
        op: BinOp::And,
        lhs,
        rhs,
    } = &c.unparen().kind
    {
        check_constraint(caller, callee, def, lhs, dims, sites, call)?;
        return check_constraint(caller, callee, def, rhs, dims, sites, call);
    }
    let Some(arithmetic) = violation(c, dims) else {
        return Ok(());
    };
    let at = |span: Span| caller.at(span);
    let rule = callee.text(c.span);
    let fname = &def.name.name;
    let mut syms = Vec::new();
    symbols(c, &mut syms);
    let blamed = syms.iter().find_map(|s| {
        let b = dims.get(s)?;
        b.from.map(|(arg, dim)| (s.as_str(), b.value, arg, dim))
    });
    let d = match blamed {
        Some((sym, value, arg, dim)) => {
            let pname = &def.params[arg].name.name;
            let help = match divisor(c) {
                Some(k) if syms.len() == 1 && k > 0 => {
                    let padded = (value + k - 1) / k * k;
                    format!("pad dim {dim} of `{pname}` to {padded}, or relax the constraint")
                }
                _ => format!("pass a `{pname}` whose dim {dim} satisfies {rule}, or relax the constraint"),
            };
            Diagnostic::error(
                Code::E0304,
                format!("argument `{pname}` breaks a shape constraint of `{fname}`"),
            )
            .with_primary(
                at(sites[arg].span),
                format!("dim {dim} of `{pname}` is {sym} = {value}, and {arithmetic}"),
            )
            .with_secondary(callee.at(c.span), "the rule")
            .with_note(format!(
                "argument `{pname}`, dim {dim} ({sym} = {value}): requires {rule}"
            ))
            .with_help(help)
        }
        None => Diagnostic::error(Code::E0304, format!("this call breaks a shape constraint of `{fname}`"))
            .with_primary(at(call), format!("requires {rule}: {arithmetic}"))
            .with_secondary(callee.at(c.span), "the rule"),
    };
    Err(Box::new(d))
}

/// `k` of a divisibility constraint `X % k == 0`.
fn divisor(c: &Expr) -> Option<i64> {
    let ExprKind::Binary { op: BinOp::Eq, lhs, .. } = &c.unparen().kind else {
        return None;
    };
    let ExprKind::Binary {
        op: BinOp::Mod, rhs, ..
    } = &lhs.unparen().kind
    else {
        return None;
    };
    match rhs.unparen().kind {
        ExprKind::Int(k) => i64::try_from(k).ok(),
        _ => None,
    }
}

/// The arithmetic that shows a constraint false (`100 % 8 == 4`,
/// `9000 <= 8192 is false`, `0 is outside 1..=4096`), or None when it holds
/// or cannot be decided.
fn violation(c: &Expr, dims: &HashMap<String, Bound>) -> Option<String> {
    match &c.unparen().kind {
        ExprKind::Binary {
            op: BinOp::In,
            lhs,
            rhs,
        } => {
            let ExprKind::Range { start, end, inclusive } = &rhs.unparen().kind else {
                return None;
            };
            let (v, lo, hi) = (eval(lhs, dims)?, eval(start, dims)?, eval(end, dims)?);
            let inside = v >= lo && if *inclusive { v <= hi } else { v < hi };
            (!inside).then(|| format!("{v} is outside {lo}..{}{hi}", if *inclusive { "=" } else { "" }))
        }
        ExprKind::Binary { op, lhs, rhs } if op.is_comparison() => {
            let (a, b) = (eval(lhs, dims)?, eval(rhs, dims)?);
            if op.as_cmp()?.holds(a, b) {
                return None;
            }
            if let (Some(k), ExprKind::Binary { lhs: x, .. }) = (divisor(c), &lhs.unparen().kind) {
                let v = eval(x, dims)?;
                return Some(format!("{v} % {k} == {}", v.rem_euclid(k.max(1))));
            }
            Some(format!("{a} {} {b} is false", op.symbol()))
        }
        _ => None,
    }
}
