//! Operator-level functions to Graph IR: straight-line tensor code, one
//! `graph.*` op per operation, with the shapes inference found. Effects are
//! ordered by a chain of `!token` values.

use std::collections::HashMap;

use tessera_diagnostics::{Code, Diagnostic};
use tessera_hir::body::CallTarget;
use tessera_hir::db::{self, FnId, SourceFile};
use tessera_hir::ty::Ty;
use tessera_ir::{Attr, Builder, Dim, Module, OpBuilder, ScalarType, ShapeConstraint, Type, ValueId};
use tessera_syntax::ast::{Arg, BinOp, Expr, ExprKind, StmtKind, UnaryOp};

use crate::cx::{arg, ir_type, keyword, positional, saturates, FnCx, TensorAs};

struct Lower<'c, 'a, 'm> {
    cx: &'c mut FnCx<'a>,
    b: Builder<'m>,
    env: HashMap<String, ValueId>,
    /// Compile-time values: meshes, policies (used as attributes).
    meta: HashMap<String, &'a Expr>,
    token: Option<ValueId>,
}

pub(crate) fn lower(cx: &mut FnCx<'_>, m: &mut Module) {
    let mut inputs = Vec::new();
    for p in &cx.sig.params {
        match ir_type(&p.ty, TensorAs::Value) {
            Some(t) => inputs.push(t),
            None => {
                cx.unsupported_type(p.span, Some(&p.name), &p.ty);
                return;
            }
        }
    }
    // A tuple of tensors and scalars is one result each.
    let declared: Vec<&Ty> = match &cx.sig.ret {
        Ty::None | Ty::Unknown => Vec::new(),
        Ty::Tuple(parts) => parts.iter().collect(),
        ty => vec![ty],
    };
    let mut results = Vec::new();
    for ty in declared {
        match ir_type(ty, TensorAs::Value) {
            Some(t) => results.push(t),
            None => {
                cx.unsupported_type(cx.sig.ret_span.unwrap_or(cx.sig.name_span), None, ty);
                return;
            }
        }
    }
    let func = m.add_function(
        &cx.symbol(cx.file, &cx.sig.name),
        &inputs,
        &results,
        cx.loc(cx.def.span),
    );
    cx.set_common_attrs(m, func, "operator");
    let entry = m.entry_block(func).expect("a function has a body");
    let args = m.block_args(entry).to_vec();
    let env = cx.sig.params.iter().map(|p| p.name.clone()).zip(args).collect();
    let mut l = Lower {
        cx,
        b: Builder::at_end(m, entry),
        env,
        meta: HashMap::new(),
        token: None,
    };
    if needs_token(l.cx.db, l.cx.file, &l.cx.def.name.name, 0) {
        l.b.set_loc(l.cx.loc(l.cx.def.name.span));
        l.token = Some(l.b.op("graph.entry_token").result(Type::Token).build_value());
    }
    l.guards();
    let def = l.cx.def;
    let mut returned = false;
    for stmt in &def.body.stmts {
        l.b.set_loc(l.cx.loc(stmt.span));
        match &stmt.kind {
            StmtKind::Assign { targets, value } if targets.len() == 1 => {
                let ExprKind::Name(name) = &targets[0].kind else {
                    l.cx.unsupported(targets[0].span, "an assignment to something other than a name");
                    continue;
                };
                if l.is_meta(value) {
                    l.meta.insert(name.clone(), value);
                } else if let Some(v) = l.expr(value, None) {
                    l.env.insert(name.clone(), v);
                }
            }
            StmtKind::Return(value) => {
                // `return a, b` for a tuple of results: one value each.
                let items: Vec<&Expr> = match value.as_ref().map(|e| (e, &e.unparen().kind)) {
                    Some((_, ExprKind::Tuple(items))) if results.len() > 1 => items.iter().collect(),
                    Some((e, _)) => vec![e],
                    None => Vec::new(),
                };
                let mut values: Vec<ValueId> = items.into_iter().filter_map(|e| l.expr(e, None)).collect();
                // A result the checker lets widen to the declared type is
                // converted explicitly.
                if values.len() == results.len() {
                    for (v, declared) in values.iter_mut().zip(&results) {
                        if let Some(dims) = declared.dims() {
                            *v = l.conform(*v, dims);
                        }
                        if l.b.value_type(*v) != declared {
                            *v = l.convert(*v, declared.clone());
                        }
                    }
                }
                l.b.op("graph.return").operands(&values).build();
                returned = true;
                break;
            }
            StmtKind::Expr(e) => {
                l.expr(e, None);
            }
            StmtKind::Pass => {}
            StmtKind::For { .. } | StmtKind::While { .. } => {
                l.cx.unsupported(stmt.span, "a loop in an operator-level function")
            }
            StmtKind::If { .. } => l.cx.unsupported(stmt.span, "a branch in an operator-level function"),
            _ => {
                l.cx.unsupported(stmt.span, "this statement in an operator-level function")
            }
        }
    }
    if !returned {
        l.b.op("graph.return").build();
    }
}

/// `e`, or the compile-time value (a mesh, a stream) of the local `e`
/// names, from the function's `meta` values.
fn meta_value<'a>(meta: &HashMap<String, &'a Expr>, e: &'a Expr) -> &'a Expr {
    match &e.kind {
        ExprKind::Name(n) => meta.get(n).copied().unwrap_or(e),
        _ => e,
    }
}

/// A literal as an attribute: ints, floats, strings, booleans and tuples
/// or lists of them.
pub(crate) fn literal_attr(e: &Expr) -> Option<Attr> {
    Some(match &e.kind {
        // From 2^63 on, the bits of a `u64` literal.
        ExprKind::Int(i) => Attr::Int(*i as i64),
        ExprKind::Float(f) => Attr::Float(f.get()),
        ExprKind::Str(s) => Attr::Str(s.clone()),
        ExprKind::Bool(b) => Attr::Bool(*b),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => match literal_attr(operand)? {
            Attr::Int(i) => Attr::Int(-i),
            Attr::Float(f) => Attr::Float(-f),
            _ => return None,
        },
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            Attr::Array(items.iter().map(literal_attr).collect::<Option<Vec<_>>>()?)
        }
        ExprKind::Paren(inner) => literal_attr(inner)?,
        _ => return None,
    })
}

/// The devices along each axis of `dist.Mesh(axes=..., devices=...,
/// shape=...)`: `shape` when given, else, for one axis, the number of
/// `devices` (`range(n)`, `range(a, b)` or a list). None when unknown.
fn mesh_shape(mesh_args: &[Arg], axes: &Attr) -> Option<Vec<i64>> {
    let n_axes = axes.as_array()?.len();
    if let Some(shape) = keyword(mesh_args, "shape").and_then(literal_attr) {
        let shape = shape.as_ints()?;
        return (shape.len() == n_axes && shape.iter().all(|&d| d > 0)).then_some(shape);
    }
    if n_axes != 1 {
        return None;
    }
    let devices = keyword(mesh_args, "devices")?;
    let count = match &devices.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) => i64::try_from(items.len()).ok()?,
        ExprKind::Call { callee, args } if matches!(&callee.kind, ExprKind::Name(n) if n.as_str() == "range") => {
            let bound = |i: usize| positional(args, i).and_then(literal_attr).and_then(|a| a.as_int());
            match args.len() {
                1 => bound(0)?,
                2 => bound(1)? - bound(0)?,
                _ => return None,
            }
        }
        _ => return None,
    };
    (count > 0).then_some(vec![count])
}

/// The dims an operand of dims `own` is named by when broadcast to
/// `result`: matched from the end, each the result's unless it is 1 (or
/// `own` itself when it has more dims than the result).
fn broadcast_names(own: &[Dim], result: &[Dim]) -> Vec<Dim> {
    let Some(skip) = result.len().checked_sub(own.len()) else {
        return own.to_vec();
    };
    own.iter()
        .zip(&result[skip..])
        .map(|(d, r)| if d.as_const() == Some(1) { d.clone() } else { r.clone() })
        .collect()
}

/// The `graph.elementwise` function of an operator on tensors (`and` and
/// `or` ask for one truth value, not a tensor of them).
fn elementwise_fn(op: BinOp) -> Option<&'static str> {
    match op {
        BinOp::And | BinOp::Or => None,
        _ => crate::kernel::binary_fn(op).or_else(|| crate::kernel::cmp_pred(op)),
    }
}

impl<'a, 'm> Lower<'_, 'a, 'm> {
    /// The runtime guards the checker left (constraints of callees it
    /// could not prove at their calls): a `graph.guard` each, at the call,
    /// all checked on entry.
    fn guards(&mut self) {
        let guards = &self.cx.info.guards;
        for g in guards {
            let Some(constraint) = ShapeConstraint::parse(&g.constraint) else {
                self.cx.unsupported(
                    g.call,
                    format!(
                        "the runtime guard `{}` of `{}`, which is not over dims",
                        g.constraint, g.callee
                    ),
                );
                continue;
            };
            let Some(token) = self.token else { return };
            self.b.set_loc(self.cx.loc(g.call));
            let op = self
                .b
                .op("graph.guard")
                .operand(token)
                .attr("constraint", Attr::str(constraint.to_string()))
                .attr("callee", g.callee.as_str())
                .result(Type::Token)
                .build();
            self.token = self.b.results(op).first().copied();
        }
    }

    /// E0204 for an all-reduce over an `axis` its mesh (axes `axes`, made
    /// at `mesh_span`) does not have. The op is still built, so that what
    /// uses its result is not reported too.
    fn check_mesh_axis(&mut self, args: &[Arg], axes: &Attr, mesh_span: tessera_base::Span) {
        let Some(axis) = keyword(args, "axis") else {
            return;
        };
        let Some(Attr::Str(name)) = literal_attr(axis) else {
            return;
        };
        let names: Vec<&str> = axes
            .as_array()
            .unwrap_or_default()
            .iter()
            .filter_map(Attr::as_str)
            .collect();
        if names.is_empty() || names.contains(&name.as_str()) {
            return;
        }
        let listed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        let diag = Diagnostic::error(
            Code::E0204,
            format!("`op.all_reduce` reduces over axis \"{name}\", which its mesh does not have"),
        )
        .with_primary(
            self.cx.at(axis.span),
            format!("the mesh's axes are {}", listed.join(", ")),
        )
        .with_secondary(self.cx.at(mesh_span), "the mesh")
        .with_help(format!("reduce over one of the mesh's axes: `axis={}`", listed[0]));
        self.cx.errors.push(diag);
    }

    /// Values that exist only at compile time: meshes, policies, streams.
    /// Whether `e` is a call of the builtin `path`.
    fn is_builtin(&self, e: &Expr, path: &str) -> bool {
        matches!(self.cx.body.calls.get(&e.span).map(|c| &c.target), Some(CallTarget::Builtin(b)) if b.path == path)
    }

    fn is_meta(&self, e: &Expr) -> bool {
        !matches!(
            self.cx.ty(e),
            Some(Ty::Tensor(_) | Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool)
        )
    }

    /// The constant `axis` of an op along one axis (its second positional
    /// argument or `axis=`; -1 without one); None, reported, when it is
    /// not a constant integer.
    fn constant_axis(&mut self, args: &[Arg]) -> Option<i64> {
        let Some(given) = arg(args, 1, "axis") else {
            return Some(-1);
        };
        let axis = self.number(given).and_then(|a| a.as_int());
        if axis.is_none() {
            self.cx
                .unsupported(given.span, "an `axis` that is not a constant integer");
        }
        axis
    }

    /// The type of `e`'s value; called once its operands are lowered, it
    /// also points the builder at `e`, for the op about to be made.
    fn result_type(&mut self, e: &Expr) -> Option<Type> {
        self.b.set_loc(self.cx.loc(e.span));
        match self.cx.ty(e).and_then(|t| ir_type(t, TensorAs::Value)) {
            // Integers of arithmetic on dims (`C - 1`) are `i64` values in
            // the graph; `index` is the kernels' type of positions.
            Some(t) if t == Type::INDEX => Some(Type::I64),
            Some(t) => Some(t),
            None => {
                let ty = self.cx.ty(e);
                self.cx.unsupported_value(e.span, ty);
                None
            }
        }
    }

    /// Lowers `e`; `scalar` is the element type a literal takes (the other
    /// operand's), so that `x * 2.0` on bf16 multiplies by a bf16 constant.
    fn expr(&mut self, e: &'a Expr, scalar: Option<ScalarType>) -> Option<ValueId> {
        self.b.set_loc(self.cx.loc(e.span));
        match &e.kind {
            ExprKind::Paren(inner) => self.expr(inner, scalar),
            // Arithmetic of literals only, of no fixed width (`1.0 / 3.0`,
            // `2 ** -1`), is computed as Python computes it and is then one
            // literal (`2 ** -1` had been the integer power, 0).
            ExprKind::Binary { .. } | ExprKind::Unary { .. } if self.cx.float_literal_value(e).is_some() => {
                let f = self.cx.float_literal_value(e)?;
                Some(self.constant(Attr::Float(f), scalar.filter(|s| s.is_float())))
            }
            ExprKind::Name(n) => match (self.env.get(n), self.cx.constant(e)) {
                (Some(&v), _) => Some(v),
                (None, Some(value)) => Some(self.constant(value, scalar)),
                (None, None) if self.is_dim(n) => Some(self.dim(&Dim::sym(n.as_str()))),
                (None, None) => {
                    self.cx.unsupported(e.span, format!("the name `{n}` here"));
                    None
                }
            },
            ExprKind::Int(_) | ExprKind::Float(_) => {
                let value = literal_attr(e)?;
                Some(self.constant(value, scalar))
            }
            ExprKind::Bool(b) => Some(self.constant(Attr::Bool(*b), Some(ScalarType::I1))),
            ExprKind::Unary {
                op: UnaryOp::Pos,
                operand,
            } => self.expr(operand, scalar),
            // A constant of an imported module: `sizes.N`.
            ExprKind::Attr { .. } if self.cx.constant(e).is_some() => {
                let value = self.cx.constant(e)?;
                Some(self.constant(value, scalar))
            }
            ExprKind::Attr { base, name } if name.name == "T" => {
                let x = self.expr(base, scalar)?;
                let ty = self.result_type(e)?;
                let rank = ty.dims().map_or(0, <[_]>::len) as i64;
                let mut perm: Vec<i64> = (0..rank).collect();
                if rank >= 2 {
                    perm.swap(rank as usize - 1, rank as usize - 2);
                }
                Some(self.transposed(x, perm, ty))
            }
            ExprKind::Unary {
                op: op @ (UnaryOp::Neg | UnaryOp::Invert),
                operand,
            } => {
                // The result has its operand's type: a literal took the
                // dtype of the operand it meets (`x * -2` on f32).
                let x = self.expr(operand, scalar)?;
                let ty = self.b.value_type(x).clone();
                let f = if *op == UnaryOp::Neg { "neg" } else { "not" };
                Some(self.elementwise(f, &[x], ty))
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs),
            ExprKind::Call { callee, args } => self.call(e, callee, args),
            ExprKind::Subscript { base, args } if matches!(&base.kind, ExprKind::Attr { name, .. } if name.name == "shape") =>
            {
                let ExprKind::Attr { base: x, .. } = &base.kind else {
                    return None;
                };
                let axis = match args.as_slice() {
                    [a] if a.name.is_none() => literal_attr(&a.value).and_then(|a| a.as_int()),
                    _ => None,
                };
                self.dim_of(e, x, axis)
            }
            ExprKind::Subscript { base, args } => self.window(e, base, args),
            _ => {
                self.cx
                    .unsupported(e.span, "this expression in an operator-level function");
                None
            }
        }
    }

    /// The dtype two operands are compared in: the promotion of the
    /// tensors' dtypes (of the scalars' when neither is a tensor).
    fn compared_elem(&self, lhs: &Expr, rhs: &Expr) -> Option<ScalarType> {
        let tensor = |e: &Expr| matches!(self.cx.ty(e), Some(Ty::Tensor(_)));
        let (l, r) = (self.elem_of(lhs), self.elem_of(rhs));
        // An integer tensor meets a float scalar in the float (`x > 2.5`
        // with `x: i32[N]` compares in f32, as the checker types it), a
        // float literal's being f32.
        let in_float = |tensor: Option<ScalarType>, scalar: &Expr, elem: Option<ScalarType>| match tensor {
            Some(t) if !t.is_float() => match self.cx.ty(scalar) {
                Some(Ty::Float) => Some(ScalarType::F32),
                _ => elem.filter(|e| e.is_float()).or(tensor),
            },
            _ => tensor,
        };
        match (tensor(lhs), tensor(rhs)) {
            (true, false) => in_float(l, rhs, r),
            (false, true) => in_float(r, lhs, l),
            _ => match (l, r) {
                (Some(a), Some(b)) if a != b => Some(if b.is_float() && (!a.is_float() || b.bits() > a.bits()) {
                    b
                } else {
                    a
                }),
                (a, b) => a.or(b),
            },
        }
    }

    /// `x[i, a:b:k]`: a `graph.slice` from constant starts by constant
    /// steps (a negative one's start counted from the end of the dim), each
    /// index an extent of 1 that a `graph.reshape` then drops; the extents
    /// are the checker's. An index or bound may be negative when its dim is
    /// a constant; a negative step's start, when its dim is not.
    fn window(&mut self, e: &Expr, base: &'a Expr, args: &'a [Arg]) -> Option<ValueId> {
        let mask = |a: &&Arg| matches!(self.cx.ty(&a.value), Some(Ty::Tensor(t)) if t.dtype == Some(tessera_hir::ty::DType::Bool));
        if let Some(masked) = args.iter().find(mask) {
            self.cx.unsupported(
                masked.value.span,
                "a bool mask in an operator-level function (what it selects has a length known only when it runs): use `op.where(mask, x, 0.0)`",
            );
            return None;
        }
        let step_of = |a: &Arg| match &a.value.kind {
            ExprKind::Slice { step: Some(s), .. } => self.number(s).and_then(|k| k.as_int()).filter(|&k| k != 0),
            _ => Some(1),
        };
        if let Some(stepped) = args.iter().find(|a| step_of(a).is_none()) {
            self.cx.unsupported(
                stepped.value.span,
                "a slice whose step is not a constant in an operator-level function",
            );
            return None;
        }
        let steps: Vec<i64> = args.iter().map(|a| step_of(a).unwrap_or(1)).collect();
        let x = self.expr(base, None)?;
        let Type::Tensor { dims, elem } = self.b.value_type(x).clone() else {
            self.cx
                .unsupported(e.span, "an index into something that is not a tensor");
            return None;
        };
        let result = self.result_type(e)?;
        let kept_dims = result.dims().map(<[Dim]>::to_vec).unwrap_or_default();
        let mut kept = kept_dims.iter();
        let mut starts = Vec::new();
        let mut strides = Vec::new();
        let mut sliced = Vec::new();
        for (axis, dim) in dims.iter().enumerate() {
            strides.push(steps.get(axis).copied().unwrap_or(1));
            let Some(arg) = args.get(axis) else {
                sliced.push(kept.next().cloned().unwrap_or_else(|| dim.clone()));
                starts.push(0);
                continue;
            };
            let (start, extent) = match &arg.value.kind {
                ExprKind::Slice { lower, .. } => {
                    let start = match lower.as_deref() {
                        None => Some(0),
                        Some(l) if strides[axis] < 0 => self.position_from_end(l, dim),
                        Some(l) => self.const_position(l, dim),
                    };
                    (start, kept.next().cloned())
                }
                _ => (self.const_position(&arg.value, dim), Some(Dim::constant(1))),
            };
            let (Some(start), Some(extent)) = (start, extent) else {
                self.cx.unsupported(
                    arg.value.span,
                    "an index or slice bound that is not a constant (or is negative, of a dim known only at run time, or is where a negative step starts, at a non-negative index of one)",
                );
                return None;
            };
            starts.push(start);
            sliced.push(extent);
        }
        let window = Type::tensor(sliced, elem);
        let mut slice = self.b.op("graph.slice").operand(x).attr("starts", Attr::ints(starts));
        if strides.iter().any(|&k| k != 1) {
            slice = slice.attr("steps", Attr::ints(strides));
        }
        let v = slice.result(window.clone()).build_value();
        if window == result {
            return Some(v);
        }
        Some(self.b.op("graph.reshape").operand(v).result(result).build_value())
    }

    /// `x` with its dims permuted, dim `perm[i]` at `i`, of type `ty`.
    fn transposed(&mut self, x: ValueId, perm: Vec<i64>, ty: Type) -> ValueId {
        self.b
            .op("graph.transpose")
            .operand(x)
            .attr("perm", Attr::ints(perm))
            .result(ty)
            .build_value()
    }

    /// A number known when the function is compiled: a literal or a module
    /// constant.
    fn number(&self, e: &Expr) -> Option<Attr> {
        match &e.unparen().kind {
            ExprKind::Name(_) | ExprKind::Attr { .. } => self.cx.constant(e),
            _ => literal_attr(e),
        }
    }

    /// A constant index or bound along a dim `dim`, counted from the end
    /// when negative (and the dim is a constant).
    fn const_position(&self, e: &Expr, dim: &Dim) -> Option<i64> {
        let value = self.number(e)?.as_int()?;
        if value >= 0 {
            return Some(value);
        }
        dim.as_const().map(|d| (d + value).max(0))
    }

    /// How far before the end of `dim` the constant index `e` is, where a
    /// slice with a negative step starts (Python's bounds: an index past
    /// the end starts at the last element); None for a non-negative index
    /// of a dim known only at run time.
    fn position_from_end(&self, e: &Expr, dim: &Dim) -> Option<i64> {
        let value = self.number(e)?.as_int()?;
        if value < 0 {
            return Some(-value - 1);
        }
        dim.as_const().map(|d| (d - 1 - value).max(0))
    }

    /// Whether `name` is a dim of the function's parameters.
    fn is_dim(&self, name: &str) -> bool {
        self.cx.sig.dim_symbols().iter().any(|s| s == name)
    }

    /// The axes `op.sum` and kin reduce: their `axis` (one or a tuple,
    /// negative ones counted from the end), all without one.
    fn reduced_axes(&self, args: &'a [Arg]) -> Vec<Attr> {
        let rank = match arg(args, 0, "x").and_then(|x| self.cx.ty(x)) {
            Some(Ty::Tensor(t)) => t.rank().unwrap_or(0) as i64,
            _ => 0,
        };
        let normal = |a: i64| Attr::Int(if a < 0 { a + rank } else { a });
        match arg(args, 1, "axis").and_then(literal_attr) {
            Some(Attr::Int(a)) => vec![normal(a)],
            Some(Attr::Array(items)) => items.into_iter().map(|a| a.as_int().map_or(a, normal)).collect(),
            _ => (0..rank).map(Attr::Int).collect(),
        }
    }

    /// A `graph.reduce` of `v` over `axes` accumulating in `acc`, in tree
    /// order where the call `e` is in `@deterministic` code; its result
    /// type is the caller's.
    fn reduce(
        &mut self,
        e: &Expr,
        v: ValueId,
        kind: &str,
        axes: &[Attr],
        keepdims: bool,
        acc: ScalarType,
    ) -> OpBuilder<'_, 'm> {
        let tree = self.cx.info.tree_reductions.contains(&e.span);
        let op = self
            .b
            .op("graph.reduce")
            .operand(v)
            .attr("kind", kind)
            .attr("axes", Attr::Array(axes.to_vec()))
            .attr("keepdims", keepdims)
            .attr("accumulate", Type::Scalar(acc));
        if tree {
            op.attr("order", "tree")
        } else {
            op
        }
    }

    /// `op.var(x, axis, keepdims, correction)` and `op.std`: in the
    /// accumulator's type, the mean (kept dims), the squares of `x` minus
    /// it, their sum over the axes divided by the count less `correction`
    /// (and its square root), in the result's dtype.
    fn variance(&mut self, path: &str, e: &'a Expr, args: &'a [Arg]) -> Option<ValueId> {
        let x = self.operand(args, 0, "x", e)?;
        let x = self.as_float(x);
        let axes = self.reduced_axes(args);
        let keepdims = arg(args, 2, "keepdims").and_then(literal_attr) == Some(Attr::Bool(true));
        let correction = match arg(args, 3, "correction") {
            None => 1.0,
            Some(given) => match literal_attr(given) {
                Some(Attr::Int(c)) => c as f64,
                Some(Attr::Float(c)) => c,
                _ => {
                    self.cx
                        .unsupported(given.span, "a `correction` that is not a constant number");
                    return None;
                }
            },
        };
        let ty = self.result_type(e)?;
        let acc = self
            .cx
            .accumulate_over(keyword(args, "accumulate"), self.b.value_type(x).elem());
        let dims = self.b.value_type(x).dims().map(<[Dim]>::to_vec).unwrap_or_default();
        let reduced: Vec<usize> = axes
            .iter()
            .filter_map(|a| a.as_int().and_then(|a| usize::try_from(a).ok()))
            .collect();
        let x = match self.b.value_type(x).elem() {
            Some(elem) if elem != acc => self.convert(x, Type::tensor(dims.clone(), acc)),
            _ => x,
        };
        let reduce = |this: &mut Self, v: ValueId, kind: &str, keep: bool| {
            let out: Vec<Dim> = dims
                .iter()
                .enumerate()
                .filter_map(|(i, d)| match (reduced.contains(&i), keep) {
                    (false, _) => Some(d.clone()),
                    (true, true) => Some(Dim::constant(1)),
                    (true, false) => None,
                })
                .collect();
            let ty = if out.is_empty() {
                Type::Scalar(acc)
            } else {
                Type::tensor(out, acc)
            };
            this.reduce(e, v, kind, &axes, keep, acc).result(ty).build_value()
        };
        let mean = reduce(self, x, "mean", true);
        let full = Type::tensor(dims.clone(), acc);
        let centered = self.elementwise("sub", &[x, mean], full.clone());
        let squares = self.elementwise("mul", &[centered, centered], full);
        let sum = reduce(self, squares, "sum", keepdims);
        let mut count = self.constant(Attr::Int(1), Some(ScalarType::I64));
        for &i in &reduced {
            let d = self.dim(&dims[i].clone());
            count = self.elementwise("mul", &[count, d], Type::I64);
        }
        let count = self.convert(count, Type::Scalar(acc));
        let correction = self.constant(Attr::Float(correction), Some(acc));
        let divisor = self.elementwise("sub", &[count, correction], Type::Scalar(acc));
        // No fewer than 0 degrees of freedom, as NumPy and PyTorch: a
        // variance over no more elements than the correction is NaN (0/0).
        let zero = self.constant(Attr::Float(0.0), Some(acc));
        let divisor = self.elementwise("max", &[divisor, zero], Type::Scalar(acc));
        let sum_ty = self.b.value_type(sum).clone();
        let mut v = self.elementwise("div", &[sum, divisor], sum_ty.clone());
        if path == "op.std" {
            v = self.elementwise("sqrt", &[v], sum_ty);
        }
        match ty.elem() {
            Some(elem) if elem != acc => Some(self.convert(v, ty)),
            _ => Some(v),
        }
    }

    /// `x`, a tensor of integers or bools converted to f64, which holds
    /// each (to 2^53) and their sums exactly: the mean, variance and
    /// deviation of integers are then rounded once to the f32 they are, as
    /// the host's are (they had been summed in f32, off by ulps).
    fn as_float(&mut self, x: ValueId) -> ValueId {
        match self.b.value_type(x) {
            Type::Tensor { elem, .. } if !elem.is_float() => self.widen(x, ScalarType::F64),
            _ => x,
        }
    }

    /// The value of a dim, an `i64`: a constant, or a `graph.dim` the
    /// runtime binds.
    fn dim(&mut self, d: &Dim) -> ValueId {
        match d.as_const() {
            Some(c) => self.constant(Attr::Int(c), Some(ScalarType::I64)),
            None => self
                .b
                .op("graph.dim")
                .attr("dim", Attr::str(d.to_string()))
                .result(Type::I64)
                .build_value(),
        }
    }

    /// Dim `axis` of the tensor `x` (`x.shape[axis]`, `len(x)`).
    fn dim_of(&mut self, e: &Expr, x: &'a Expr, axis: Option<i64>) -> Option<ValueId> {
        let v = self.expr(x, None)?;
        let dims = self.b.value_type(v).dims().map(<[Dim]>::to_vec).unwrap_or_default();
        let rank = i64::try_from(dims.len()).unwrap_or(i64::MAX);
        let at = axis.map(|a| if a < 0 { a + rank } else { a });
        match at.and_then(|a| usize::try_from(a).ok()).and_then(|a| dims.get(a)) {
            Some(d) => Some(self.dim(&d.clone())),
            None => {
                self.cx
                    .unsupported(e.span, "a dim that is not a constant axis of a tensor");
                None
            }
        }
    }

    /// A literal's value as a `graph.constant`, in the dtype of the operand
    /// it meets (`scalar`), else `i64` or `f32`.
    fn constant(&mut self, value: Attr, scalar: Option<ScalarType>) -> ValueId {
        let ty = match (scalar, &value) {
            (Some(s), _) => Type::Scalar(s),
            (None, Attr::Int(_)) => Type::I64,
            (None, _) => Type::F32,
        };
        let value = match (&ty, value) {
            (Type::Scalar(s), Attr::Int(i)) if s.is_float() => Attr::Float(i as f64),
            (_, v) => v,
        };
        self.b
            .op("graph.constant")
            .attr("value", value)
            .result(ty)
            .build_value()
    }

    fn elem_of(&self, e: &Expr) -> Option<ScalarType> {
        match self.cx.ty(e).and_then(|t| ir_type(t, TensorAs::Value))? {
            Type::Scalar(ScalarType::Index) => Some(ScalarType::I64),
            Type::Scalar(s) => Some(s),
            Type::Tensor { elem, .. } => Some(elem),
            _ => None,
        }
    }

    fn elementwise(&mut self, f: &str, operands: &[ValueId], ty: Type) -> ValueId {
        let operands: Vec<ValueId> = match ty.dims() {
            Some(dims) => {
                let dims = dims.to_vec();
                operands.iter().map(|&v| self.broadcast_dims(v, &dims)).collect()
            }
            None => operands.to_vec(),
        };
        self.b
            .op("graph.elementwise")
            .operands(&operands)
            .attr("fn", f)
            .result(ty)
            .build_value()
    }

    fn binary(&mut self, e: &'a Expr, op: BinOp, lhs: &'a Expr, rhs: &'a Expr) -> Option<ValueId> {
        if op == BinOp::MatMul {
            let a = self.expr(lhs, None)?;
            let b = self.expr(rhs, None)?;
            let ty = self.result_type(e)?;
            let (a, b) = self.matmul_operands(a, b, &ty);
            let (a, b) = self.matmul_dtype(a, b, lhs, rhs);
            // As `op.matmul(a, b)` accumulates: f64 and integers in
            // themselves (an f32 accumulator was narrower than f64).
            let acc = self.cx.accumulate_over(None, self.b.value_type(a).elem());
            return Some(
                self.b
                    .op("graph.matmul")
                    .operands(&[a, b])
                    .attr("accumulate", Type::Scalar(acc))
                    .result(ty)
                    .build_value(),
            );
        }
        let Some(f) = elementwise_fn(op) else {
            self.cx
                .unsupported(e.span, format!("the operator `{}` on tensors", op.symbol()));
            return None;
        };
        // A comparison's operands meet in their own dtype, not its `i1`.
        let elem = if op.is_comparison() {
            self.compared_elem(lhs, rhs)
        } else {
            self.elem_of(e)
        };
        let a = self.expr(lhs, elem)?;
        let b = self.expr(rhs, elem)?;
        let ty = self.result_type(e)?;
        let (a, b) = match elem {
            Some(elem) => (self.widen(a, elem), self.widen(b, elem)),
            None => (a, b),
        };
        Some(self.elementwise(f, &[a, b], ty))
    }

    /// `v` with dims `want` (the same rank), reshaped when its own dims
    /// are other names for them: the checker accepts two dims named
    /// differently where the function's constraints make them equal
    /// (`where N == M`), and the graph's ops need them spelled the same.
    fn conform(&mut self, v: ValueId, want: &[Dim]) -> ValueId {
        let Type::Tensor { dims, elem } = self.b.value_type(v).clone() else {
            return v;
        };
        if dims.len() != want.len() || dims == want {
            return v;
        }
        self.b
            .op("graph.reshape")
            .operand(v)
            .result(Type::tensor(want.to_vec(), elem))
            .build_value()
    }

    /// [`Self::conform`] for an operand broadcast to `result`: each dim,
    /// matched from the end, is the result's unless it is 1.
    fn broadcast_dims(&mut self, v: ValueId, result: &[Dim]) -> ValueId {
        let Some(dims) = self.b.value_type(v).dims().map(<[_]>::to_vec) else {
            return v;
        };
        self.conform(v, &broadcast_names(&dims, result))
    }

    /// The operands of a matmul of result type `ty`, `b`'s rows named as
    /// `a`'s columns and each one's batch dims as the result's.
    fn matmul_operands(&mut self, a: ValueId, b: ValueId, ty: &Type) -> (ValueId, ValueId) {
        let (Some(ad), Some(bd), Some(rd)) = (
            self.b.value_type(a).dims().map(<[_]>::to_vec),
            self.b.value_type(b).dims().map(<[_]>::to_vec),
            ty.dims().map(<[_]>::to_vec),
        ) else {
            return (a, b);
        };
        let (Some(ab), Some(bb), Some(rb)) = (
            ad.len().checked_sub(2),
            bd.len().checked_sub(2),
            rd.len().checked_sub(2),
        ) else {
            return (a, b);
        };
        let mut a_want = broadcast_names(&ad[..ab], &rd[..rb]);
        a_want.extend(ad[ab..].iter().cloned());
        let mut b_want = broadcast_names(&bd[..bb], &rd[..rb]);
        b_want.push(ad[ab + 1].clone());
        b_want.push(bd[bb + 1].clone());
        (self.conform(a, &a_want), self.conform(b, &b_want))
    }

    /// A matmul's operands `a` and `b` (of the expressions `lhs` and `rhs`)
    /// in element types the graph's matmul multiplies together
    /// ([`FnCx::product_elem`]).
    fn matmul_dtype(&mut self, a: ValueId, b: ValueId, lhs: &Expr, rhs: &Expr) -> (ValueId, ValueId) {
        let elems = (self.b.value_type(a).elem(), self.b.value_type(b).elem());
        match self.cx.product_elem(elems, Some(lhs), Some(rhs)) {
            Some(elem) => (self.widen(a, elem), self.widen(b, elem)),
            None => (a, b),
        }
    }

    /// `v` converted to the element type `elem` when the checker promoted it
    /// (`f32 + bf16` is `f32`); widening is exact, so the cast's rounding
    /// never applies.
    fn widen(&mut self, v: ValueId, elem: ScalarType) -> ValueId {
        let ty = match self.b.value_type(v) {
            Type::Scalar(s) if *s != elem => Type::Scalar(elem),
            Type::Tensor { dims, elem: e } if *e != elem => Type::Tensor {
                dims: dims.clone(),
                elem,
            },
            _ => return v,
        };
        self.convert(v, ty)
    }

    /// A conversion the checker allowed implicitly (a promotion, a result
    /// widened to its declared type), rounding to nearest even.
    fn convert(&mut self, v: ValueId, ty: Type) -> ValueId {
        self.b
            .op("graph.cast")
            .operand(v)
            .attr("rounding", "nearest_even")
            .result(ty)
            .build_value()
    }

    fn call(&mut self, e: &'a Expr, callee: &'a Expr, args: &'a [Arg]) -> Option<ValueId> {
        let target = self.cx.body.calls.get(&e.span).map(|c| c.target.clone());
        match target {
            Some(CallTarget::Builtin(b)) => self.builtin(e, b.path, args),
            Some(CallTarget::Function { file, name }) => {
                let mut operands = self.call_operands(e, file, &name, args)?;
                let mut results: Vec<Type> = match self.cx.ty(e) {
                    Some(Ty::None) | None => Vec::new(),
                    Some(_) => vec![self.result_type(e)?],
                };
                // A callee with side effects or runtime guards goes on
                // this function's chain of them (inlined without it, each
                // such callee had started a second chain).
                let token = self.token.filter(|_| needs_token(self.cx.db, file, &name, 0));
                if let Some(token) = token {
                    operands.insert(0, token);
                    results.push(Type::Token);
                }
                let op = self
                    .b
                    .op("graph.call")
                    .operands(&operands)
                    .attr("callee", Attr::Symbol(self.cx.symbol(file, &name)))
                    .results(results)
                    .build();
                let results = self.b.results(op).to_vec();
                if token.is_some() {
                    self.token = results.last().copied();
                    return results.first().copied().filter(|_| results.len() > 1);
                }
                results.first().copied()
            }
            // A dtype called as a function, `f32(x)`, is a cast.
            None if matches!(self.cx.ty(callee), Some(Ty::DTypeValue(_))) => self.builtin(e, "cast", args),
            None => {
                self.cx
                    .unsupported(callee.span, "a call of something that is not a function");
                None
            }
        }
    }

    /// The operands of a call of operator function `name`, one per
    /// parameter in its order: by keyword or position, or the default (a
    /// number). A callee dim bound to different dims of the caller (`S`
    /// to `M` and to 16) was left a runtime guard `M == 16` by the
    /// checker; the tensors that give it the later sizes are reshaped to
    /// the first's, which the guard makes the same.
    fn call_operands(&mut self, e: &'a Expr, file: SourceFile, name: &str, args: &'a [Arg]) -> Option<Vec<ValueId>> {
        let db = self.cx.db;
        let func = FnId::new(db, file, name.to_string());
        let sig = db::signature(db, func);
        let def = db::fn_ast(db, func);
        let mut operands = Vec::new();
        for (i, param) in sig.params.iter().enumerate() {
            let want = ir_type(&param.ty, TensorAs::Value);
            let scalar = match &want {
                Some(Type::Scalar(s)) => Some(*s),
                _ => None,
            };
            let given = keyword(args, &param.name).or_else(|| positional(args, i));
            let v = match given {
                Some(a) => self.expr(a, scalar)?,
                None => {
                    let default = def
                        .as_ref()
                        .and_then(|d| d.params.get(i))
                        .and_then(|p| p.default.as_ref());
                    let Some(value) = default.and_then(literal_attr) else {
                        self.cx.unsupported(
                            e.span,
                            format!(
                                "a call of `{name}` that leaves `{}` to a default that is not a number",
                                param.name
                            ),
                        );
                        return None;
                    };
                    self.constant(value, scalar)
                }
            };
            let v = match (scalar, self.b.value_type(v).clone()) {
                (Some(want), Type::Scalar(have)) if have != want => self.convert(v, Type::Scalar(want)),
                _ => v,
            };
            operands.push((v, want));
        }
        let mut bound: HashMap<String, Dim> = HashMap::new();
        for (v, want) in &operands {
            let (Some(Type::Tensor { dims, .. }), Some(have)) = (want, self.b.value_type(*v).dims()) else {
                continue;
            };
            for (d, have) in dims.iter().zip(have) {
                if let Some(sym) = d.as_sym() {
                    bound.entry(sym.to_string()).or_insert_with(|| have.clone());
                }
            }
        }
        let mut out = Vec::new();
        for (v, want) in operands {
            let (Some(Type::Tensor { dims, .. }), Some(have)) = (want, self.b.value_type(v).dims().map(<[_]>::to_vec))
            else {
                out.push(v);
                continue;
            };
            let expected: Vec<Dim> = dims
                .iter()
                .zip(&have)
                .map(|(d, h)| {
                    if d.symbols().iter().all(|s| bound.contains_key(*s)) {
                        d.substitute(|s| bound.get(s).cloned())
                    } else {
                        h.clone()
                    }
                })
                .collect();
            out.push(self.conform(v, &expected));
        }
        Some(out)
    }

    fn operand(&mut self, args: &'a [Arg], index: usize, name: &str, at: &Expr) -> Option<ValueId> {
        match arg(args, index, name) {
            Some(x) => self.expr(x, None),
            None => {
                self.cx
                    .unsupported(at.span, format!("a call without its `{name}` argument"));
                None
            }
        }
    }

    fn builtin(&mut self, e: &'a Expr, path: &str, args: &'a [Arg]) -> Option<ValueId> {
        let unary = |f: &'static str| Some(f);
        let elementwise_unary = match path {
            "op.relu" => unary("relu"),
            // PyTorch's exact GELU unless `approximate="tanh"`.
            "op.gelu" => {
                let form = keyword(args, "approximate").or(args.get(1).filter(|a| a.name.is_none()).map(|a| &a.value));
                match form.map(|f| &f.kind) {
                    Some(ExprKind::Str(s)) if s == "tanh" => unary("gelu"),
                    _ => unary("gelu_erf"),
                }
            }
            "op.sigmoid" => unary("sigmoid"),
            "op.silu" => unary("silu"),
            "rsqrt" => unary("rsqrt"),
            "exp" => unary("exp"),
            "exp2" => unary("exp2"),
            "erf" => unary("erf"),
            "log" => unary("log"),
            "sqrt" => unary("sqrt"),
            "tanh" => unary("tanh"),
            "abs" => unary("abs"),
            "sin" => unary("sin"),
            "cos" => unary("cos"),
            "floor" => unary("floor"),
            "ceil" => unary("ceil"),
            _ => None,
        };
        if let Some(f) = elementwise_unary {
            let x = self.operand(args, 0, "x", e)?;
            let ty = self.result_type(e)?;
            // A float function of integers (`exp(n)`) computes on them
            // converted to its result's float, as the host does.
            let x = match (self.b.value_type(x).elem(), ty.elem()) {
                (Some(have), Some(want)) if want.is_float() && !have.is_float() => self.widen(x, want),
                _ => x,
            };
            return Some(self.elementwise(f, &[x], ty));
        }
        match path {
            "len" => {
                let x = arg(args, 0, "x")?;
                self.dim_of(e, x, Some(0))
            }
            "op.where" => {
                let ty = self.result_type(e)?;
                let elem = ty.elem();
                let cond = self.operand(args, 0, "condition", e)?;
                let x = self.expr(arg(args, 1, "x")?, elem)?;
                let y = self.expr(arg(args, 2, "y")?, elem)?;
                let (x, y) = match elem {
                    Some(elem) => (self.widen(x, elem), self.widen(y, elem)),
                    None => (x, y),
                };
                Some(self.elementwise("select", &[cond, x, y], ty))
            }
            "op.add" | "op.mul" | "min" | "max" => {
                if self.cx.host_only_key(path, args) {
                    return None;
                }
                let f = match path {
                    "op.add" => "add",
                    "op.mul" => "mul",
                    "min" => "min",
                    _ => "max",
                };
                let elem = self.elem_of(e);
                let ty = self.result_type(e)?;
                let widen = |l: &mut Self, v: ValueId| match elem {
                    Some(elem) => l.widen(v, elem),
                    None => v,
                };
                let first = self.expr(arg(args, 0, "a")?, elem)?;
                let mut acc = widen(self, first);
                // `min` and `max` of every value, left to right, in the
                // promoted dtype.
                for i in 1..args.iter().filter(|a| a.name.is_none()).count().max(2) {
                    let v = self.expr(arg(args, i, "b")?, elem)?;
                    let v = widen(self, v);
                    acc = self.elementwise(f, &[acc, v], ty.clone());
                }
                Some(acc)
            }
            "op.matmul" => {
                let a = self.operand(args, 0, "a", e)?;
                let b = self.operand(args, 1, "b", e)?;
                let ty = self.result_type(e)?;
                let (a, b) = self.matmul_operands(a, b, &ty);
                let (a, b) = match (arg(args, 0, "a"), arg(args, 1, "b")) {
                    (Some(lhs), Some(rhs)) => self.matmul_dtype(a, b, lhs, rhs),
                    _ => (a, b),
                };
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(a).elem());
                let mut op = self
                    .b
                    .op("graph.matmul")
                    .operands(&[a, b])
                    .attr("accumulate", Type::Scalar(acc));
                if let Some(tile) = keyword(args, "tile_shape").and_then(literal_attr) {
                    op = op.attr("tile_shape", tile);
                }
                Some(op.result(ty).build_value())
            }
            "op.softmax" | "op.log_softmax" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let rank = ty.dims().map_or(0, <[_]>::len) as i64;
                let axis = self.constant_axis(args)?;
                let axis = if axis < 0 { axis + rank } else { axis };
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(x).elem());
                // Along another axis than the last: that axis is swapped to
                // the end and back, around a softmax of rows.
                let mut perm: Vec<i64> = (0..rank).collect();
                if (0..rank - 1).contains(&axis) {
                    perm.swap(axis as usize, rank as usize - 1);
                }
                let swapped = |t: &Type| match t {
                    Type::Tensor { dims, elem } => Type::tensor(perm.iter().map(|&p| dims[p as usize].clone()), *elem),
                    other => other.clone(),
                };
                let moved = perm.iter().enumerate().any(|(i, &p)| i as i64 != p);
                let (x, rows_ty) = if moved {
                    let t = swapped(self.b.value_type(x));
                    (self.transposed(x, perm.clone(), t), swapped(&ty))
                } else {
                    (x, ty.clone())
                };
                let mut rows = self
                    .b
                    .op("graph.softmax")
                    .operand(x)
                    .attr("axis", Attr::Int(-1))
                    .attr("accumulate", Type::Scalar(acc));
                if path == "op.log_softmax" {
                    rows = rows.attr("log", Attr::Bool(true));
                }
                let rows = rows.result(rows_ty).build_value();
                if !moved {
                    return Some(rows);
                }
                Some(self.transposed(rows, perm, ty))
            }
            "op.cumsum" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let axis = self.constant_axis(args)?;
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(x).elem());
                Some(
                    self.b
                        .op("graph.cumsum")
                        .operand(x)
                        .attr("axis", Attr::Int(axis))
                        .attr("accumulate", Type::Scalar(acc))
                        .result(ty)
                        .build_value(),
                )
            }
            "op.flash_attention" => {
                let mut operands = Vec::new();
                for (i, name) in ["q", "k", "v"].into_iter().enumerate() {
                    operands.push(self.operand(args, i, name, e)?);
                }
                let head = |i: usize| self.b.value_type(operands[i]).dims().and_then(|d| d.last().cloned());
                if [head(0), head(2)].iter().flatten().any(|d| d.as_const().is_none()) {
                    self.cx.unsupported(
                        e.span,
                        "`op.flash_attention` with a head dim known only at run time (its kernels are compiled for a constant head dim: declare it, `q: bf16[B, S, 64]`)",
                    );
                    return None;
                }
                let scale = match keyword(args, "scale") {
                    None => None,
                    Some(given) => match self.number(given) {
                        Some(Attr::Int(i)) if i > 0 => Some(Attr::Float(i as f64)),
                        Some(Attr::Float(f)) if f > 0.0 && f.is_finite() => Some(Attr::Float(f)),
                        _ => {
                            self.cx
                                .unsupported(given.span, "a `scale` that is not a positive constant number");
                            return None;
                        }
                    },
                };
                let ty = self.result_type(e)?;
                let causal = keyword(args, "causal")
                    .and_then(literal_attr)
                    .unwrap_or(Attr::Bool(false));
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(operands[0]).elem());
                let mut op = self
                    .b
                    .op("graph.attention")
                    .operands(&operands)
                    .attr("causal", causal)
                    .attr("accumulate", Type::Scalar(acc));
                if let Some(scale) = scale {
                    op = op.attr("scale", scale);
                }
                Some(op.result(ty).build_value())
            }
            "op.layernorm" | "op.rmsnorm" => {
                // `op.layernorm(x, weight, bias, eps)`, `op.rmsnorm(x,
                // weight, eps)`: the defaults are the builtins' (1e-5, 1e-6).
                let layer = path == "op.layernorm";
                let tensors: &[&str] = if layer { &["weight", "bias"] } else { &["weight"] };
                let mut operands = vec![self.operand(args, 0, "x", e)?];
                for (i, name) in tensors.iter().enumerate() {
                    if let Some(x) = arg(args, i + 1, name) {
                        operands.push(self.expr(x, None)?);
                    }
                }
                let ty = self.result_type(e)?;
                let kind = if layer { "layer" } else { "rms" };
                let eps = match arg(args, tensors.len() + 1, "eps") {
                    None => Attr::Float(if layer { 1e-5 } else { 1e-6 }),
                    Some(given) => match self.number(given) {
                        Some(Attr::Int(i)) => Attr::Float(i as f64),
                        Some(v) => v,
                        None => {
                            self.cx
                                .unsupported(given.span, "an `eps` that is not a constant number");
                            return None;
                        }
                    },
                };
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(operands[0]).elem());
                Some(
                    self.b
                        .op("graph.norm")
                        .operands(&operands)
                        .attr("kind", kind)
                        .attr("axis", Attr::Int(-1))
                        .attr("eps", eps)
                        .attr("accumulate", Type::Scalar(acc))
                        .result(ty)
                        .build_value(),
                )
            }
            "op.var" | "op.std" => self.variance(path, e, args),
            "op.sum" | "op.mean" | "op.max" | "op.min" => {
                let x = self.operand(args, 0, "x", e)?;
                let x = if path == "op.mean" { self.as_float(x) } else { x };
                let axes = self.reduced_axes(args);
                let keepdims = keyword(args, "keepdims").and_then(literal_attr) == Some(Attr::Bool(true));
                let ty = self.result_type(e)?;
                let acc = self
                    .cx
                    .accumulate_over(keyword(args, "accumulate"), self.b.value_type(x).elem());
                let kind = path.trim_start_matches("op.");
                // A mean of integers reduces their f64s, then rounds once.
                let elem = self.b.value_type(x).elem();
                let reduced = match (ty.elem(), elem) {
                    (Some(want), Some(have)) if want != have && path == "op.mean" => {
                        let wide = match &ty {
                            Type::Tensor { dims, .. } => Type::tensor(dims.clone(), have),
                            _ => Type::Scalar(have),
                        };
                        let mean = self.reduce(e, x, kind, &axes, keepdims, acc).result(wide).build_value();
                        return Some(self.convert(mean, ty));
                    }
                    _ => self.reduce(e, x, kind, &axes, keepdims, acc).result(ty),
                };
                Some(reduced.build_value())
            }
            "op.transpose" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let rank = ty.dims().map_or(0, <[_]>::len) as i64;
                let axes = |a: Option<&Expr>| -> Option<Vec<i64>> {
                    let items = literal_attr(a?)?
                        .as_array()?
                        .iter()
                        .map(Attr::as_int)
                        .collect::<Option<Vec<_>>>()?;
                    Some(items.into_iter().map(|i| if i < 0 { i + rank } else { i }).collect())
                };
                let mut order: Vec<i64> = (0..rank).collect();
                match (
                    axes(keyword(args, "perm").or_else(|| arg(args, 1, "perm"))),
                    axes(keyword(args, "dims")),
                ) {
                    (Some(perm), _) => order = perm,
                    (None, Some(swap)) => {
                        let at = |i: usize| {
                            swap.get(i)
                                .and_then(|&a| usize::try_from(a).ok())
                                .filter(|&a| a < order.len())
                        };
                        if let (Some(i), Some(j)) = (at(0), at(1)) {
                            order.swap(i, j);
                        }
                    }
                    _ if rank >= 2 => order.swap(rank as usize - 1, rank as usize - 2),
                    _ => {}
                }
                Some(self.transposed(x, order, ty))
            }
            "op.reshape" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                Some(self.b.op("graph.reshape").operand(x).result(ty).build_value())
            }
            "op.concat" => {
                let items = match arg(args, 0, "tensors").map(|x| &x.unparen().kind) {
                    Some(ExprKind::List(items) | ExprKind::Tuple(items)) => items,
                    _ => {
                        self.cx
                            .unsupported(e.span, "`op.concat` of something other than a list");
                        return None;
                    }
                };
                let mut operands = Vec::new();
                for item in items {
                    operands.push(self.expr(item, None)?);
                }
                let axis = arg(args, 1, "axis").and_then(literal_attr).unwrap_or(Attr::Int(0));
                let ty = self.result_type(e)?;
                // Dims other than the axis are named as the first part's.
                if let (Some(first), Attr::Int(axis)) = (
                    operands
                        .first()
                        .and_then(|&v| self.b.value_type(v).dims().map(<[_]>::to_vec)),
                    &axis,
                ) {
                    let rank = first.len() as i64;
                    let at = if *axis < 0 { axis + rank } else { *axis };
                    for v in operands.iter_mut().skip(1) {
                        if let Some(mut want) = self.b.value_type(*v).dims().map(<[_]>::to_vec) {
                            for (i, (w, f)) in want.iter_mut().zip(&first).enumerate() {
                                if i as i64 != at {
                                    *w = f.clone();
                                }
                            }
                            *v = self.conform(*v, &want);
                        }
                    }
                }
                Some(
                    self.b
                        .op("graph.concat")
                        .operands(&operands)
                        .attr("axis", axis)
                        .result(ty)
                        .build_value(),
                )
            }
            "op.stack" => {
                // Each part with a dim of 1 at `axis`, concatenated there.
                let items = match arg(args, 0, "tensors").map(|x| &x.unparen().kind) {
                    Some(ExprKind::List(items) | ExprKind::Tuple(items)) => items,
                    _ => {
                        self.cx.unsupported(e.span, "`op.stack` of something other than a list");
                        return None;
                    }
                };
                let ty = self.result_type(e)?;
                let Type::Tensor { dims, elem } = &ty else {
                    self.cx.unsupported(e.span, "`op.stack` without a tensor result");
                    return None;
                };
                let rank = dims.len() as i64;
                let axis = match arg(args, 1, "axis").and_then(literal_attr) {
                    Some(Attr::Int(a)) if a < 0 => a + rank,
                    Some(Attr::Int(a)) => a,
                    _ => 0,
                };
                let mut part_dims = dims.clone();
                part_dims[usize::try_from(axis).ok()?] = Dim::constant(1);
                let part = Type::tensor(part_dims, *elem);
                let mut operands = Vec::new();
                for item in items {
                    let v = self.expr(item, Some(*elem))?;
                    operands.push(self.b.op("graph.reshape").operand(v).result(part.clone()).build_value());
                }
                Some(
                    self.b
                        .op("graph.concat")
                        .operands(&operands)
                        .attr("axis", Attr::Int(axis))
                        .result(ty)
                        .build_value(),
                )
            }
            "cast" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let rounding = keyword(args, "rounding")
                    .and_then(literal_attr)
                    .unwrap_or(Attr::str("nearest_even"));
                let mut op = self.b.op("graph.cast").operand(x).attr("rounding", rounding);
                if saturates(args) {
                    op = op.attr("saturate", Attr::Unit);
                }
                Some(op.result(ty).build_value())
            }
            "op.all_reduce" => {
                let x = self.operand(args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let Some(token) = self.token else {
                    self.cx
                        .unsupported(e.span, "a collective in a function without the collective effect");
                    return None;
                };
                let mut mesh_attrs = Vec::new();
                if let Some(mesh) = keyword(args, "mesh") {
                    let mesh = meta_value(&self.meta, mesh);
                    if let ExprKind::Call { args: mesh_args, .. } = &mesh.kind {
                        if let Some(axes) = keyword(mesh_args, "axes").and_then(literal_attr) {
                            self.check_mesh_axis(args, &axes, mesh.span);
                            if let Some(shape) = mesh_shape(mesh_args, &axes) {
                                mesh_attrs.push(("mesh_shape", Attr::ints(shape)));
                            }
                            mesh_attrs.push(("mesh_axes", axes));
                        }
                    }
                }
                let mut op = self.b.op("graph.all_reduce").operands(&[token, x]);
                for (key, value) in mesh_attrs {
                    op = op.attr(key, value);
                }
                for key in ["op", "axis", "algo"] {
                    if let Some(v) = keyword(args, key).and_then(literal_attr) {
                        op = op.attr(key, v);
                    }
                }
                if keyword(args, "deterministic").and_then(literal_attr) == Some(Attr::Bool(true)) {
                    op = op.flag("deterministic");
                }
                let results = op.results([ty, Type::Token]).build();
                let results = self.b.results(results).to_vec();
                self.token = Some(results[1]);
                Some(results[0])
            }
            "rng.uniform" | "rng.normal" => {
                let ty = self.result_type(e)?;
                let dist = if path == "rng.uniform" { "uniform" } else { "normal" };
                self.draw(e, args, dist, None, ty)
            }
            "op.dropout" => {
                let x = self.operand(args, 0, "x", e)?;
                let p = match arg(args, 1, "p").map(|p| (p, literal_attr(p))) {
                    Some((_, Some(Attr::Float(p)))) => p,
                    Some((_, Some(Attr::Int(p)))) => p as f64,
                    Some((p, _)) => {
                        self.cx
                            .unsupported(p.span, "a dropout probability that is not a number literal");
                        return None;
                    }
                    None => {
                        self.cx.unsupported(e.span, "a call without its `p` argument");
                        return None;
                    }
                };
                let ty = self.result_type(e)?;
                let mask = self.draw(e, args, "dropout", Some(p), ty.clone())?;
                Some(self.elementwise("mul", &[x, mask], ty))
            }
            _ => {
                self.cx
                    .unsupported(e.span, format!("`{path}` in an operator-level function"));
                None
            }
        }
    }

    /// A `graph.rng` of `ty` in the token chain: its stream is the call's
    /// `stream=rng.stream("name")` (directly or through a local), its seed
    /// the function's `@deterministic(seed=…)`.
    fn draw(&mut self, e: &'a Expr, args: &'a [Arg], dist: &str, p: Option<f64>, ty: Type) -> Option<ValueId> {
        let Some(token) = self.token else {
            self.cx
                .unsupported(e.span, "random numbers in a function without the random effect");
            return None;
        };
        let mut name = None;
        if let Some(stream) = keyword(args, "stream") {
            let stream = meta_value(&self.meta, stream);
            match &stream.kind {
                ExprKind::None => {}
                ExprKind::Call { args: named, .. } if self.is_builtin(stream, "rng.stream") => {
                    match arg(named, 0, "name").and_then(literal_attr) {
                        Some(Attr::Str(n)) => name = Some(n),
                        _ => {
                            self.cx
                                .unsupported(stream.span, "a stream whose name is not a string literal");
                            return None;
                        }
                    }
                }
                _ => {
                    self.cx
                        .unsupported(stream.span, "a stream other than `rng.stream(\"name\")`");
                    return None;
                }
            }
        }
        let mut op = self.b.op("graph.rng").operand(token).attr("dist", dist);
        if let Some(name) = name {
            op = op.attr("stream", Attr::Str(name));
        }
        if let Some(Some(seed)) = self.cx.sig.deterministic {
            op = op.attr("seed", Attr::Int(seed));
        }
        if let Some(p) = p {
            op = op.attr("p", Attr::Float(p));
        }
        let results = op.results([ty, Type::Token]).build();
        let results = self.b.results(results).to_vec();
        self.token = Some(results[1]);
        Some(results[0])
    }
}

/// Whether the operator function `name` of `file` orders side effects or
/// runtime guards on a chain of tokens: it has effects, guards the checker
/// left it, or calls an operator function that does (to the depth calls
/// are inlined).
fn needs_token(db: &dyn tessera_hir::Db, file: SourceFile, name: &str, depth: usize) -> bool {
    let effects = tessera_hir::effect_check::inferred_effects(db, file);
    if !effects.get(name).copied().unwrap_or_default().is_pure() {
        return true;
    }
    let info = db::infer(db, FnId::new(db, file, name.to_string()));
    if !info.guards.is_empty() {
        return true;
    }
    depth < 16
        && info.calls.iter().any(|call| match &call.target {
            CallTarget::Function { file: callee, name } => {
                crate::role(db, *callee, name) == crate::FnRole::Operator && needs_token(db, *callee, name, depth + 1)
            }
            _ => false,
        })
}
