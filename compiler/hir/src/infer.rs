//! Inference over one function body: resolves names, gives every
//! expression a type with symbolic dims, checks calls against signatures
//! (arity, dtypes, dims, `where` constraints) and the op table (context,
//! shape rules), and enforces `mut`, kernel and memory-space rules. It then
//! runs the per-function analyses over what it learned.

use std::collections::{BTreeMap, HashMap};

use tessera_base::{range_len, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Arg, BinOp, Block, CompFor, CompKind, Expr, ExprKind, FnDef, Stmt, StmtKind, UnaryOp};

pub use crate::body::BodyInfo;
use crate::body::{Call, CallTarget, Guard};
use crate::builtins::{self, Builtin, Context, Shape};
use crate::constants::Constant;
use crate::db::{self, relative, Anchor, Db, FnId, SourceFile};
use crate::effects::{Effect, EffectSet};
use crate::names::did_you_mean;
use crate::poly::Poly;
use crate::signature::{dim_poly, FnKind, Signature};
use crate::solve::{self, ConstraintKind, Verdict};
use crate::ty::{promote, DType, Space, TensorTy, Ty, ALL_DTYPES};

pub(crate) fn infer(db: &dyn Db, func: FnId<'_>, def: &FnDef) -> BodyInfo {
    let file = func.file(db);
    let _running = crate::barrier::Inferring::enter(file, func.name(db));
    let sig = db::signature(db, func);
    let mut cx = Infer {
        db,
        file,
        sig,
        locals: HashMap::new(),
        sizes: crate::constants::Sizes::new(db, file, def),
        bound_at: HashMap::new(),
        info: BodyInfo {
            anchors: vec![Anchor {
                file,
                name: func.name(db).clone(),
            }],
            ..BodyInfo::default()
        },
        suspended: EffectSet::PURE,
        method_call: None,
    };
    for p in &sig.params {
        cx.locals.insert(
            p.name.clone(),
            Local {
                ty: p.ty.clone(),
                param: true,
                declared: false,
            },
        );
    }
    cx.block(&def.body);
    if let Some(ret) = def.ret.as_ref().filter(|_| sig.returns_value()) {
        if crate::assigned::end_reachable(def) {
            cx.error(
                Diagnostic::error(
                    Code::E0218,
                    format!(
                        "`{}` declares a result, but can end without returning one",
                        def.name.name
                    ),
                )
                .with_primary(cx.at(ret.span), format!("declared to return `{}`", sig.ret))
                .with_secondary(
                    cx.at(def.name.span),
                    "some path through this function falls off its end",
                )
                .with_help("end every path with `return …`"),
            );
        }
    }
    let mut info = cx.info;
    let ctx = crate::body::BodyCtx::new(db, file, def, sig, &info);
    let determinism = crate::determinism::check(&ctx);
    let mut more = determinism.diagnostics;
    more.extend(crate::barrier::check(&ctx));
    more.extend(crate::numerics::check(&ctx));
    more.extend(crate::async_copy::check(&ctx));
    info.tree_reductions = determinism.tree_reductions;
    info.diagnostics.extend(more);
    info
}

#[derive(Clone)]
struct Local {
    ty: Ty,
    param: bool,
    /// Declared with an annotation (`x: f32 = ...`).
    declared: bool,
}

struct Infer<'a> {
    db: &'a dyn Db,
    file: SourceFile,
    sig: &'a Signature,
    locals: HashMap<String, Local>,
    /// The sizes known when the function is compiled: module constants and
    /// locals that hold constants.
    sizes: crate::constants::Sizes,
    /// Where each local that holds a builtin function got it (`smem =
    /// tshared.alloc`): the value's span, for fixes.
    bound_at: HashMap<String, Span>,
    info: BodyInfo,
    /// Effects suspended by enclosing `with effects.suspend(...)` regions.
    suspended: EffectSet,
    /// The arguments of the call whose callee is being inferred, when it
    /// is an attribute (`x.sum(axis=1)`), as text.
    method_call: Option<String>,
}

/// An argument after inference.
struct ArgTy<'e> {
    name: Option<&'e str>,
    name_span: Option<Span>,
    ty: Ty,
    expr: &'e Expr,
}

impl<'a> Infer<'a> {
    fn error(&mut self, diag: Diagnostic) {
        self.info.diagnostics.push(diag);
    }

    fn at(&self, span: Span) -> tessera_base::FileSpan {
        relative(span, 0)
    }

    /// Kernels and device functions: the kernel-only builtins are theirs.
    fn in_device_code(&self) -> bool {
        self.sig.kind.is_device_code()
    }

    /// An anchor index for spans inside another function.
    fn anchor(&mut self, file: SourceFile, name: &str) -> u32 {
        if let Some(i) = self.info.anchors.iter().position(|a| a.file == file && a.name == name) {
            return i as u32;
        }
        self.info.anchors.push(Anchor {
            file,
            name: name.to_string(),
        });
        (self.info.anchors.len() - 1) as u32
    }

    fn record(&mut self, span: Span, ty: &Ty) {
        self.info.types.push((span, ty.clone()));
    }

    /// The type last recorded for the expression at `span`.
    fn recorded(&self, span: Span) -> Ty {
        self.info
            .types
            .iter()
            .rev()
            .find(|(s, _)| *s == span)
            .map_or(Ty::Unknown, |(_, ty)| ty.clone())
    }

    // ------------------------------------------------------------ statements

    fn block(&mut self, block: &Block) {
        for stmt in &block.stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.expr(e);
                self.discarded_check(e);
            }
            // `del x` unbinds a name (its type is kept for a later
            // assignment); `del d[k]` writes into `d`.
            StmtKind::Del(targets) => {
                for target in targets {
                    if !matches!(target.unparen().kind, ExprKind::Name(_)) {
                        self.check_store_target(target);
                        self.expr(target);
                    }
                }
            }
            StmtKind::Assign { targets, value } => {
                let ty = self.expr(value);
                self.launch_result(value, &ty);
                for target in targets {
                    self.check_unpack(target, &ty, value);
                    self.assign(target, &ty, value);
                }
            }
            StmtKind::AnnAssign { target, ty, value } => {
                let declared = crate::signature::lower_type(self.db, self.file, ty, &mut self.info.diagnostics);
                if let Some(value) = value {
                    let actual = self.expr(value);
                    // A number or a tensor declared; no string or list is one.
                    let declares_numbers = matches!(declared, Ty::Scalar(_) | Ty::Tensor(_));
                    let not_numbers = matches!(actual, Ty::Str | Ty::List(_) | Ty::Tuple(_) | Ty::None | Ty::Range);
                    if declares_numbers && not_numbers {
                        self.error(
                            Diagnostic::error(
                                Code::E0203,
                                format!("type mismatch: expected {declared}, found {actual}"),
                            )
                            .with_primary(self.at(value.span), format!("this value is {actual}")),
                        );
                    } else {
                        self.check_assignable(&actual, &declared, value, "this value");
                    }
                }
                if let ExprKind::Name(n) = &target.kind {
                    self.declare(n, target.span, declared);
                } else {
                    self.assign(target, &declared, target);
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                let current = self.expr(target);
                let rhs = self.expr(value);
                let result = self.binary(*op, &current, &rhs, stmt.span, target, value);
                self.check_store_target(target);
                self.check_assignable(&result, &current, value, "the result");
                // A local bound to a literal (`acc = 0.0`) takes the width
                // the result gives it (`acc += x[i]` with `x: f64`), as a
                // plain assignment's does.
                if let (ExprKind::Name(n), Ty::Int | Ty::Float) = (&target.kind, &current) {
                    let wider = result.dtype().is_some() || (current == Ty::Int && result == Ty::Float);
                    if wider && self.locals.get(n).is_some_and(|l| !l.param) {
                        self.bind(n, target.span, result);
                    }
                }
            }
            StmtKind::If { branches, orelse } => {
                for branch in branches {
                    let ty = self.expr(&branch.cond);
                    self.device_scalar(&ty, &branch.cond, "a condition");
                    self.block(&branch.body);
                }
                if let Some(b) = orelse {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                let ty = self.expr(cond);
                self.device_scalar(&ty, cond, "a condition");
                self.block(body);
            }
            StmtKind::For { target, iter, body } => {
                // `for i in a..b`: Rust's range, a loop's in kernels and
                // host code alike.
                let iter_ty = match &iter.unparen().kind {
                    ExprKind::Range { start, end, .. } => {
                        self.expr(start);
                        self.expr(end);
                        Ty::Range
                    }
                    _ => self.expr(iter),
                };
                let element = item_of(iter_ty);
                self.assign(target, &element, iter);
                self.block(body);
            }
            StmtKind::With { items, body } => {
                let outer = self.suspended;
                for item in items {
                    self.expr(&item.expr);
                    self.suspended_name(&item.expr);
                    if let Some(effect) = suspended_effect(&item.expr) {
                        self.suspended.insert(effect);
                    }
                    if let Some(alias) = &item.alias {
                        self.bind(&alias.name, alias.span, Ty::Unknown);
                    }
                }
                self.block(body);
                self.suspended = outer;
            }
            StmtKind::Return(value) => self.ret(stmt, value.as_ref()),
            StmtKind::Assert { cond, message } => {
                self.expr(cond);
                if let Some(m) = message {
                    self.expr(m);
                }
            }
            StmtKind::Def(def) => self.error(
                Diagnostic::error(Code::E0107, "functions cannot be nested")
                    .with_primary(self.at(def.name.span), "defined inside another function")
                    .with_help("move it to the top level of the file"),
            ),
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s)),
            StmtKind::Import(_)
            | StmtKind::FromImport { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass => {}
        }
    }

    fn ret(&mut self, stmt: &Stmt, value: Option<&Expr>) {
        let Some(value) = value else {
            if self.sig.returns_value() {
                self.error(
                    Diagnostic::error(
                        Code::E0218,
                        format!("`{}` declares a result, but this `return` gives none", self.sig.name),
                    )
                    .with_primary(self.at(stmt.span), "returns no value")
                    .with_help(format!("return a value of type `{}`", self.sig.ret)),
                );
            }
            return;
        };
        let ty = self.expr(value);
        if self.sig.kind == FnKind::Kernel {
            self.error(
                Diagnostic::error(Code::E0206, "a kernel cannot return a value")
                    .with_primary(self.at(stmt.span), "this returns a value from a kernel")
                    .with_help("write results into a `mut` parameter instead"),
            );
            return;
        }
        if let Ty::Tensor(TensorTy {
            space: Some(Space::Shared),
            ..
        }) = &ty
        {
            self.error(
                Diagnostic::error(Code::E0211, "a shared-memory buffer cannot escape its kernel")
                    .with_primary(self.at(value.span), "this buffer lives in shared memory")
                    .with_help("copy the data into a global tensor and return that"),
            );
            return;
        }
        let declared = self.sig.ret.clone();
        // A plain function of tensors is an operator function, whose
        // result type is its signature's: a tensor returned from one that
        // declares none has nowhere to go (host helpers, which return any
        // value, have no tensor parameters).
        let of_tensors = self.sig.params.iter().any(|p| matches!(p.ty, Ty::Tensor(_)));
        if declared == Ty::None && self.sig.kind == FnKind::Function && of_tensors && matches!(ty, Ty::Tensor(_)) {
            self.error(
                Diagnostic::error(
                    Code::E0203,
                    format!("`{}` returns {ty}, but declares no result", self.sig.name),
                )
                .with_primary(self.at(value.span), format!("this is {ty}"))
                .with_help(format!("declare the result after the parameters: `-> {ty}`")),
            );
            return;
        }
        let count = |t: &Ty| match t {
            Ty::Tuple(parts) => Some(parts.len()),
            Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool | Ty::Tensor(_) => Some(1),
            _ => None,
        };
        if let (Some(have), Some(want)) = (count(&ty), count(&declared)) {
            if have != want {
                self.error(
                    Diagnostic::error(
                        Code::E0203,
                        format!(
                            "this returns {}, and `{}` declares {}",
                            values_word(have),
                            self.sig.name,
                            values_word(want)
                        ),
                    )
                    .with_primary(self.at(value.span), format!("this is {ty}"))
                    .with_help(format!("return {}, as `-> {declared}` says", values_word(want))),
                );
                return;
            }
        }
        // Each part of a tuple against its declared type, at its own
        // expression where the value is written as a tuple (`return a, b`).
        if let (Ty::Tuple(have), Ty::Tuple(want)) = (&ty, &declared) {
            let items = match &value.unparen().kind {
                ExprKind::Tuple(items) if items.len() == have.len() => Some(items),
                _ => None,
            };
            for (i, (h, w)) in have.iter().zip(want).enumerate() {
                self.check_returned_part(h, w, items.map_or(value, |items| &items[i]));
            }
            return;
        }
        self.check_returned_part(&ty, &declared, value);
    }

    /// A returned value (or one part of a returned tuple) against its
    /// declared type: a scalar for a tensor or a tensor for a scalar, the
    /// dtype, and the dims.
    fn check_returned_part(&mut self, ty: &Ty, declared: &Ty, value: &Expr) {
        let scalar = |t: &Ty| matches!(t, Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool);
        let mismatch = match (declared, ty) {
            (Ty::Tensor(_), t) if scalar(t) => Some(("a scalar", "the tensor", "return a tensor of the declared shape".to_string())),
            (d, Ty::Tensor(TensorTy { dims: Some(dims), .. })) if scalar(d) && !dims.is_empty() => Some((
                "a tensor",
                "the scalar",
                format!(
                    "reduce it to one value (`op.sum({x}, accumulate=f32)`, `float({x}[0])`), or declare the tensor: `{ty}`",
                    x = crate::pretty::expr(value)
                ),
            )),
            _ => None,
        };
        if let Some((returned, kind, help)) = mismatch {
            self.error(
                Diagnostic::error(
                    Code::E0203,
                    format!(
                        "this returns {returned}, and `{}` declares {kind} `{declared}`",
                        self.sig.name
                    ),
                )
                .with_primary(self.at(value.span), format!("this is {ty}"))
                .with_help(help),
            );
            return;
        }
        self.check_assignable(ty, declared, value, "the returned value");
        self.check_returned_dims(ty, declared, value);
    }

    /// E0203 for a returned tensor whose dims are not the declared ones as
    /// far as the function's constraints show: `N` returned for `-> f32[K]`
    /// (a result dim no parameter binds), or `N` for `M` without `where N
    /// == M`. Dims the checker cannot write as polynomials (`N // 2`) are
    /// left alone; constants that differ are reported by
    /// [`Infer::check_assignable`].
    fn check_returned_dims(&mut self, actual: &Ty, declared: &Ty, value: &Expr) {
        let (Ty::Tensor(a), Ty::Tensor(d)) = (actual, declared) else {
            return;
        };
        let (Some(ad), Some(dd)) = (&a.dims, &d.dims) else {
            return;
        };
        if ad.len() != dd.len() {
            return;
        }
        for (i, (have, want)) in ad.iter().zip(dd).enumerate() {
            // Constants that differ are `check_assignable`'s to report, a
            // dim no call can bind the signature's (E0312).
            if (have.as_const().is_some() && want.as_const().is_some())
                || want.symbols().any(|s| self.sig.unbound_result.iter().any(|u| u == s))
            {
                continue;
            }
            // A dim that is no polynomial (`x[::2]` of `N`) returned for
            // one that is: nothing shows the two equal, and the IR could
            // not carry the value anyway.
            let (label, help) = match (have.first_opaque(), want.has_opaque()) {
                (Some(text), false) => (
                    format!("dim {i} of the returned value is `{text}`, not a polynomial of the dims"),
                    "write the parameters' dims as products so that it is one (`x: f32[2 * H]` makes `x[::2]` `f32[H]`), and declare the result with it".to_string(),
                ),
                _ if self.same_dim(have, want) => continue,
                _ => (
                    format!("dim {i} of the returned value is {have}, and the result's is {want}"),
                    match self.equate_help(want, have) {
                        Some(equate) => format!("return a tensor of the declared shape, or {equate}"),
                        None => "return a tensor of the declared shape".to_string(),
                    },
                ),
            };
            self.error(
                Diagnostic::error(
                    Code::E0203,
                    format!("`{}` returns {actual}, but declares {declared}", self.sig.name),
                )
                .with_primary(self.at(value.span), label)
                .with_help(help),
            );
            return;
        }
    }

    /// `a, b = value`: the value has as many parts as there are names.
    fn check_unpack(&mut self, target: &Expr, ty: &Ty, value: &Expr) {
        let (ExprKind::Tuple(items) | ExprKind::List(items)) = &target.kind else {
            return;
        };
        let count = match ty {
            Ty::Tuple(parts) => parts.len(),
            Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool => 1,
            _ => return,
        };
        if count != items.len() {
            self.error(
                Diagnostic::error(
                    Code::E0203,
                    format!("cannot unpack {} into {} names", values_word(count), items.len()),
                )
                .with_primary(self.at(value.span), format!("this is {ty}"))
                .with_secondary(self.at(target.span), format!("{} names", items.len())),
            );
        }
    }

    /// Binds or stores into an assignment target.
    fn assign(&mut self, target: &Expr, ty: &Ty, value: &Expr) {
        match &target.kind {
            ExprKind::Name(n) => {
                if let Some(local) = self.locals.get(n) {
                    if !local.param {
                        let current = local.ty.clone();
                        self.check_assignable(ty, &current, value, "this value");
                    }
                }
                if matches!(ty, Ty::Builtin(_)) {
                    self.bound_at.insert(n.clone(), value.span);
                } else {
                    self.bound_at.remove(n);
                }
                self.bind(n, target.span, ty.clone());
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let parts: Vec<Ty> = match ty {
                    Ty::Tuple(parts) if parts.len() == items.len() => parts.clone(),
                    _ => vec![Ty::Unknown; items.len()],
                };
                let values: Vec<&Expr> = match &value.kind {
                    ExprKind::Tuple(vs) if vs.len() == items.len() => vs.iter().collect(),
                    _ => vec![value; items.len()],
                };
                for ((item, part), v) in items.iter().zip(&parts).zip(values) {
                    self.assign(item, part, v);
                }
            }
            ExprKind::Paren(inner) => self.assign(inner, ty, value),
            ExprKind::Subscript { .. } => {
                let place = self.expr(target);
                self.check_store_target(target);
                let one_element = |t: &TensorTy| {
                    t.dims
                        .as_ref()
                        .is_some_and(|d| d.iter().all(|p| p.as_const() == Some(1)))
                };
                match (&place, ty) {
                    (Ty::Scalar(_), Ty::Tensor(t)) if !one_element(t) => self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!("a tensor stored into one element: {ty} into {place}"),
                        )
                        .with_primary(self.at(value.span), format!("this is {ty}"))
                        .with_secondary(self.at(target.span), format!("one element, {place}"))
                        .with_help("index the value too (`x[i]`), or store into a slice (`y[a:b] = x`)"),
                    ),
                    // Host code stores as NumPy does: a value that
                    // broadcasts to the selection fills it.
                    (Ty::Tensor(p), Ty::Tensor(v)) if !self.in_device_code() && broadcasts_to(v, p) => {
                        let elements = Ty::Tensor(TensorTy {
                            dims: None,
                            ..v.clone()
                        });
                        self.check_assignable(&elements, &place, value, "this value");
                    }
                    _ => self.check_assignable(ty, &place, value, "this value"),
                }
            }
            _ => {
                self.expr(target);
            }
        }
    }

    /// A comprehension, in Python's order: each clause's iterable, its
    /// target bound to the iterable's items, its conditions; then the
    /// element (and a dict's value). Its names are its own: a local of the
    /// same name is as it was once the comprehension is done. A list or a
    /// generator (host code evaluates it at once, to a list) is a list of
    /// its element's type.
    fn comprehension(&mut self, kind: CompKind, elt: &Expr, value: Option<&Expr>, clauses: &[CompFor]) -> Ty {
        let saved: Vec<(String, Option<Local>)> = clauses
            .iter()
            .flat_map(CompFor::bound_names)
            .map(|n| (n.to_string(), self.locals.get(n).cloned()))
            .collect();
        for clause in clauses {
            let element = item_of(self.expr(&clause.iter));
            for name in clause.bound_names() {
                self.locals.remove(name);
            }
            self.assign(&clause.target, &element, &clause.iter);
            for cond in &clause.conds {
                self.expr(cond);
            }
        }
        let item = self.expr(elt);
        if let Some(value) = value {
            self.expr(value);
        }
        for (name, old) in saved.into_iter().rev() {
            match old {
                Some(local) => self.locals.insert(name, local),
                None => self.locals.remove(&name),
            };
        }
        match kind {
            CompKind::List | CompKind::Generator => Ty::List(Box::new(item)),
            CompKind::Dict => Ty::Unknown,
        }
    }

    fn bind(&mut self, name: &str, span: Span, ty: Ty) {
        self.record(span, &ty);
        if !self.locals.contains_key(name) {
            self.info.locals.push((name.to_string(), span, ty.clone()));
        }
        // An annotated local, or one of device code (a slot of its first
        // type), keeps its (wider) type when a narrower value is stored;
        // in other code a rebinding is a new value of its own type, as in
        // Python (`x = rand(3)` then `x = cast(..., i32)` holds an i32
        // tensor). Rebinding a parameter's name makes it a plain local.
        let device = self.sig.kind.is_device_code();
        let declared = self.locals.get(name).is_some_and(|l| l.declared && !l.param);
        let ty = match self.locals.get(name) {
            Some(old) if !old.param && (old.declared || device) => match (old.ty.dtype(), ty.dtype()) {
                (Some(wide), Some(narrow)) if wide != narrow && narrow.widens_to(wide) => old.ty.clone(),
                _ => ty,
            },
            _ => ty,
        };
        self.locals.insert(
            name.to_string(),
            Local {
                ty,
                param: false,
                declared,
            },
        );
    }

    /// Binds an annotated local (`x: f32 = ...`) to its declared type.
    fn declare(&mut self, name: &str, span: Span, ty: Ty) {
        self.bind(name, span, ty);
        if let Some(local) = self.locals.get_mut(name) {
            local.declared = true;
        }
    }

    /// A store through `x[...]` needs `x` to be writable: a parameter
    /// declared `mut`, or one of host code declared without a type (a
    /// list or dict is changed in place for its caller, as in Python).
    fn check_store_target(&mut self, target: &Expr) {
        let mut container = target.unparen();
        while let ExprKind::Subscript { base, .. } = &container.kind {
            container = base.unparen();
        }
        if !std::ptr::eq(container, target.unparen()) && self.changes_constant(container, target.span) {
            return;
        }
        let mut base = target;
        while let ExprKind::Subscript { base: b, .. } | ExprKind::Attr { base: b, .. } = &base.kind {
            base = b;
        }
        let ExprKind::Name(name) = &base.kind else { return };
        let Some(param) = self.sig.param(name) else { return };
        let host_untyped = param.type_start.is_none() && !self.sig.kind.is_device_code();
        if param.mutable || host_untyped || self.locals.get(name).is_some_and(|l| !l.param) {
            return;
        }
        let mut diag = Diagnostic::error(
            Code::E0205,
            format!("cannot write to `{name}`: the parameter is not `mut`"),
        )
        .with_primary(self.at(target.span), "this writes into the parameter")
        .with_secondary(self.at(param.span), "declared without `mut`");
        match param.type_start {
            Some(at) => {
                diag = diag.with_fix(
                    Fix::new(format!("make `{name}` writable"), Applicability::MachineApplicable)
                        .with_edit(self.at(at), "mut "),
                );
            }
            // Without a type there is nowhere to write `mut`.
            None => {
                diag = diag.with_help(format!(
                    "give `{name}` a type with `mut` before it (`{name}: mut f32[M, N]`): in kernel code a parameter is read-only unless declared writable"
                ));
            }
        }
        self.error(diag);
    }

    /// Checks that a value of type `actual` may be stored where `expected`
    /// is: dtypes may widen, never narrow implicitly; dims must agree.
    fn check_assignable(&mut self, actual: &Ty, expected: &Ty, value: &Expr, what: &str) {
        let (Some(from), Some(to)) = (actual.dtype(), expected.dtype()) else {
            return;
        };
        if from != to && !from.widens_to(to) {
            if from.is_float() && to.is_float() {
                self.error(crate::numerics::implicit_downcast(value, from, to));
            } else {
                self.error(
                    Diagnostic::error(Code::E0203, format!("type mismatch: expected {to}, found {from}"))
                        .with_primary(self.at(value.span), format!("{what} is {actual}"))
                        .with_help(format!("convert it explicitly with `cast(..., {to})`")),
                );
            }
            return;
        }
        if let (Ty::Tensor(a), Ty::Tensor(e)) = (actual, expected) {
            if let (Some(ad), Some(ed)) = (&a.dims, &e.dims) {
                if dims_conflict(ad, ed) {
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!("shape mismatch: expected {expected}, found {actual}"),
                        )
                        .with_primary(self.at(value.span), format!("{what} is {actual}")),
                    );
                }
            }
        }
    }

    // ------------------------------------------------------------ expressions

    fn expr(&mut self, e: &Expr) -> Ty {
        let ty = self.expr_inner(e);
        self.record(e.span, &ty);
        ty
    }

    fn expr_inner(&mut self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Float(_) => Ty::Float,
            ExprKind::Size(_) => Ty::Size,
            ExprKind::Str(_) => Ty::Str,
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::None => Ty::None,
            ExprKind::Error => Ty::Unknown,
            ExprKind::Paren(inner) => self.expr(inner),
            ExprKind::Tuple(items) => Ty::Tuple(items.iter().map(|i| self.expr(i)).collect()),
            ExprKind::List(items) => {
                let tys: Vec<Ty> = items.iter().map(|i| self.expr(i)).collect();
                Ty::List(Box::new(list_item(tys)))
            }
            ExprKind::Dict(entries) => {
                for (k, v) in entries {
                    self.expr(k);
                    self.expr(v);
                }
                Ty::Unknown
            }
            ExprKind::Comp {
                kind,
                elt,
                value,
                clauses,
            } => self.comprehension(*kind, elt, value.as_deref(), clauses),
            ExprKind::Unary { op, operand } => {
                let ty = self.expr(operand);
                let ty = self.element_of_0d(ty);
                if *op == UnaryOp::Not {
                    self.device_scalar(&ty, operand, "the operand of `not`");
                    Ty::Bool
                } else {
                    ty
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                let r = self.expr(rhs);
                let (l, r) = (self.element_of_0d(l), self.element_of_0d(r));
                self.binary(*op, &l, &r, e.span, lhs, rhs)
            }
            // `a..b` belongs to a `where` constraint (`B in 1..=4096`) and
            // a `for` loop; as a value Python's `range` is the range (it
            // had passed the check and stopped the run or the build).
            ExprKind::Range { start, end, inclusive } => {
                self.expr(start);
                self.expr(end);
                let (a, b) = (crate::pretty::expr(start), crate::pretty::expr(end));
                let past = match &end.unparen().kind {
                    ExprKind::Int(n) => n.checked_add(1).map(|n| n.to_string()),
                    _ => None,
                };
                let written = match (*inclusive, past) {
                    (false, _) => format!("range({a}, {b})"),
                    (true, Some(past)) => format!("range({a}, {past})"),
                    (true, None) => format!("range({a}, {b} + 1)"),
                };
                self.error(
                    Diagnostic::error(Code::E0203, "a range `a..b` is a loop's or a constraint's, not a value")
                        .with_primary(self.at(e.span), "`a..b` as a value")
                        .with_help(format!("write `{written}`"))
                        .with_fix(
                            Fix::new(format!("write `{written}`"), Applicability::MachineApplicable)
                                .with_edit(self.at(e.span), written.clone()),
                        ),
                );
                Ty::Range
            }
            ExprKind::IfElse { cond, then, orelse } => {
                let ty = self.expr(cond);
                self.device_scalar(&ty, cond, "a condition");
                let t = self.expr(then);
                let o = self.expr(orelse);
                let scalar = |ty: &Ty| matches!(ty, Ty::Int | Ty::Float | Ty::Size | Ty::Scalar(_));
                // A kernel selects one of two tiles or buffers of one
                // element type (the Tile IR's `tile.select`), and of one
                // shape: its code indexes the one it selects with one layout.
                let dtypes = match (&t, &o) {
                    (Ty::Tensor(a), Ty::Tensor(b)) => a.dtype.zip(b.dtype).filter(|(a, b)| a != b),
                    _ => None,
                };
                let differs = dtypes
                    .map(|(a, b)| ("dtype", a.to_string(), b.to_string(), "cast one of them first"))
                    .or_else(|| different_shapes(&t, &o).map(|(a, b)| ("shape", a, b, "allocate both buffers alike")));
                if let Some((what, a, b, fix)) = differs.filter(|_| self.in_device_code()) {
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!("the alternatives of a conditional expression differ in {what}: {a} and {b}"),
                        )
                        .with_primary(self.at(orelse.span), format!("this is {o}"))
                        .with_secondary(self.at(then.span), format!("this is {t}"))
                        .with_help(format!("in kernel code both alternatives have one {what}; {fix}")),
                    );
                    Ty::Unknown
                } else if t.is_unknown() {
                    o
                } else if scalar(&t) && scalar(&o) && t != o {
                    // Both sides' numbers: `1 if c else 2.5` is a float.
                    self.arithmetic(BinOp::Add, &t, &o, e.span, then, orelse)
                } else {
                    t
                }
            }
            ExprKind::Attr { base, name } => {
                // A module as the base of a member is no value of its own.
                let base_ty = if self.names_module(base) {
                    Ty::Unknown
                } else {
                    self.expr(base)
                };
                if let Some(path) = self.module_path(e).filter(|p| self.is_module_path(p)) {
                    self.module_as_value(&crate::pretty::expr(e), &path, e.span);
                }
                self.attr(&base_ty, base, &name.name, name.span)
            }
            ExprKind::Subscript { base, args } => {
                let base_ty = self.expr(base);
                self.subscript(&base_ty, args, e)
            }
            ExprKind::Call { callee, args } => self.call(e, callee, args),
            ExprKind::Slice { lower, upper, step } => {
                for part in [lower, upper, step].into_iter().flatten() {
                    self.expr(part);
                }
                Ty::Unknown
            }
        }
    }

    fn name(&mut self, name: &str, span: Span) -> Ty {
        if let Some(local) = self.locals.get(name) {
            return local.ty.clone();
        }
        let tree = db::item_tree(self.db, self.file);
        if tree.functions.iter().any(|f| f == name) {
            return Ty::Function(name.to_string());
        }
        if let Some(import) = tree.imports.iter().find(|i| i.binding == name) {
            let path = crate::constants::binding_path(self.db, self.file, name);
            if let Some(path) = path.filter(|p| self.is_module_path(p)) {
                self.module_as_value(name, &path, span);
                return Ty::Unknown;
            }
            return self.imported(import);
        }
        if tree.globals.iter().any(|g| g == name) {
            return global_ty(self.db, self.file, name);
        }
        if let Some(ty) = global_builtin(name) {
            return ty;
        }
        // Dim symbols of the signature (parameters, return type, `where`)
        // are integers in the body.
        let in_constraints = self
            .sig
            .constraints
            .iter()
            .any(|c| constraint_symbols(&c.kind).iter().any(|s| s == name));
        if in_constraints
            || mentions_dim(&self.sig.ret, name)
            || self.sig.params.iter().any(|p| mentions_dim(&p.ty, name))
        {
            return Ty::Int;
        }
        let mut candidates: Vec<&str> = self.locals.keys().map(String::as_str).collect();
        candidates.extend(tree.functions.iter().map(String::as_str));
        candidates.extend(builtins::globals().map(|b| b.path));
        candidates.extend(builtins::NAMESPACES);
        candidates.extend(ALL_DTYPES.iter().map(|d| d.name()));
        let mut diag = Diagnostic::error(Code::E0101, format!("unknown name `{name}`"))
            .with_primary(self.at(span), "not defined here");
        if let Some(help) = foreign_name(name) {
            diag = diag.with_help(help);
        } else if let Some(d) = DType::foreign(name) {
            // The dtype is a value of its own (E0203 where it is used, not E0101 again).
            diag = diag.with_help(format!("did you mean `{}`?", d.name())).with_fix(
                Fix::new(format!("write `{}`", d.name()), Applicability::MachineApplicable)
                    .with_edit(self.at(span), d.name()),
            );
            self.error(diag);
            return Ty::DTypeValue(d);
        } else if let Some((written, path)) = self.module_defining(name) {
            // A member of an imported module named without it (as after a
            // wildcard import, E0030): typed as that member from here on.
            let qualified = format!("{written}.{name}");
            diag = diag
                .with_help(format!("`{written}` defines it: write `{qualified}`"))
                .with_fix(
                    Fix::new(format!("write `{qualified}`"), Applicability::MachineApplicable)
                        .with_edit(self.at(span), qualified.clone()),
                );
            self.error(diag);
            return self.member(&path, name).unwrap_or(Ty::Unknown);
        } else if let Some(s) = did_you_mean(name, candidates) {
            diag = diag.with_help(format!("did you mean `{s}`?"));
        }
        self.error(diag);
        Ty::Unknown
    }

    /// A module this file imports whole (`import ops`, `import pkg.m`,
    /// `import pkg.m as q`) that defines a function or constant `name`:
    /// how the file names the module, and its path.
    fn module_defining(&self, name: &str) -> Option<(String, String)> {
        db::item_tree(self.db, self.file)
            .imports
            .iter()
            .filter(|i| i.member.is_none())
            .find_map(|i| {
                let file = crate::module::resolve_module(self.db, self.file, &i.module)?;
                let tree = db::item_tree(self.db, file);
                let defines = tree.functions.iter().chain(&tree.globals).any(|n| n == name);
                // `import pkg.m` names the module `pkg.m`; `as q`, `q`.
                let written = if i.module.split('.').next() == Some(i.binding.as_str()) {
                    i.module.clone()
                } else {
                    i.binding.clone()
                };
                defines.then(|| (written, i.module.clone()))
            })
    }

    fn imported(&self, import: &db::Import) -> Ty {
        if import.module == "tessera" || import.module.starts_with("tessera.") {
            return match &import.member {
                Some(m) => global_builtin(m).unwrap_or(Ty::Unknown),
                None => Ty::Unknown,
            };
        }
        match &import.member {
            Some(member) => self.member(&import.module, member).unwrap_or(Ty::Unknown),
            None => Ty::Unknown,
        }
    }

    /// The member `name` of the module `module` (a dotted path from this
    /// file): a function, a module constant's type, or nothing for a
    /// module of the package `module` (whose own members are typed when
    /// named). None when the module has no such member.
    fn member(&self, module: &str, name: &str) -> Option<Ty> {
        let file = crate::module::resolve_module(self.db, self.file, module);
        if let Some(file) = file {
            if db::item_tree(self.db, file).functions.iter().any(|f| f == name) {
                return Some(Ty::Function(format!("{module}::{name}")));
            }
            if self.module_global(module, name) {
                return Some(global_ty(self.db, file, name));
            }
        }
        let dotted = format!("{module}.{name}");
        crate::module::resolve_module(self.db, self.file, &dotted)
            .is_some()
            .then_some(Ty::Unknown)
    }

    /// Whether the module `module` (a dotted path from this file) assigns
    /// `name` at its top level.
    fn module_global(&self, module: &str, name: &str) -> bool {
        crate::module::resolve_module(self.db, self.file, module)
            .is_some_and(|f| db::item_tree(self.db, f).globals.iter().any(|g| g == name))
    }

    /// E0220 when `container`, written into at `span` (an element stored
    /// or deleted, a list or dict method that changes it), is a module
    /// constant: the file's own, one imported by name, or a module's
    /// (`ops.TABLE`). Host code reads a copy of a constant's list or dict
    /// and never changes the constant; this had been E1005 when run.
    fn changes_constant(&mut self, container: &Expr, span: Span) -> bool {
        let tree = db::item_tree(self.db, self.file);
        let (written, module) = match &container.unparen().kind {
            ExprKind::Name(n) if self.locals.contains_key(n) => return false,
            ExprKind::Name(n) if tree.globals.contains(n) => (n.clone(), None),
            ExprKind::Name(n) => {
                let Some(import) = tree.imports.iter().find(|i| &i.binding == n) else {
                    return false;
                };
                let Some(member) = &import.member else { return false };
                if !self.module_global(&import.module, member) {
                    return false;
                }
                (n.clone(), Some(import.module.clone()))
            }
            ExprKind::Attr { base, name } => {
                let Some(path) = self.module_path(base) else {
                    return false;
                };
                if !self.module_global(&path, &name.name) {
                    return false;
                }
                (crate::pretty::expr(container), Some(path))
            }
            _ => return false,
        };
        let of = module.map_or_else(|| "a module constant".to_string(), |m| format!("a constant of `{m}`"));
        let local = written.rsplit('.').next().unwrap_or(&written).to_lowercase();
        self.error(
            Diagnostic::error(
                Code::E0220,
                format!("`{written}` is {of}, which host code does not change"),
            )
            .with_primary(self.at(span), "this changes it")
            .with_help(format!("copy it into a local and change that: `{local} = {written}`")),
        );
        true
    }

    /// E0203 for a whole tensor of type `ty` (the value of `e`) where
    /// kernel code takes one scalar per thread (`what`: a condition, an
    /// index, a vote's predicate): it had passed the check and stopped in
    /// the compiler's IR verifier. A tensor of no dims is its element.
    fn device_scalar(&mut self, ty: &Ty, e: &Expr, what: &str) {
        let Ty::Tensor(t) = ty else { return };
        if !self.in_device_code() || t.dims.as_ref().is_some_and(Vec::is_empty) {
            return;
        }
        let written = crate::pretty::expr(e);
        self.error(
            Diagnostic::error(Code::E0203, format!("{what} in kernel code is one scalar per thread, not a tensor"))
                .with_primary(self.at(e.span), format!("this is {ty}"))
                .with_help(format!(
                    "take one element of it (`x[i]` for a tensor `x`): each thread computes with its own elements, where `{written}` is the whole tensor"
                )),
        );
    }

    /// E0203 for a host list, tuple or string of type `ty` (the value of
    /// `e`) where a tensor is computed with, `message` saying where for
    /// its kind, and whether it was one.
    fn not_a_tensor(&mut self, ty: &Ty, e: &Expr, message: &dyn Fn(&str) -> String) -> bool {
        let kind = match ty {
            Ty::List(_) => "list",
            Ty::Tuple(_) => "tuple",
            Ty::Str => "string",
            _ => return false,
        };
        self.error(
            Diagnostic::error(Code::E0203, message(kind))
                .with_primary(self.at(e.span), format!("this is a {kind}"))
                .with_help(
                    "a host list is a Python value, not a tensor: make the tensor with `zeros`, `full` or `arange` and set its elements",
                ),
        );
        true
    }

    /// E0203 for a function given where a value is computed with
    /// (`x + f`, `op.sum(f)`, `allclose(f, x)`), and whether it was one: it
    /// had passed the check and stopped the run.
    fn function_as_value(&mut self, ty: &Ty, e: &Expr) -> bool {
        let what = match ty {
            Ty::Function(path) => path.rsplit("::").next().unwrap_or(path).to_string(),
            Ty::Builtin(b) => b.path.to_string(),
            _ => return false,
        };
        let written = crate::pretty::expr(e);
        let message = if written == what {
            format!("`{written}` is a function, not a value")
        } else {
            format!("`{written}` is the function `{what}`, not a value")
        };
        self.error(
            Diagnostic::error(Code::E0203, message)
                .with_primary(self.at(e.span), "a function")
                .with_help(format!("call it: `{written}(…)`")),
        );
        true
    }

    /// Whether `e` names a module of the program, or the package of one
    /// (`pkg` of `import pkg.mod`), rather than a value.
    fn names_module(&self, e: &Expr) -> bool {
        self.module_path(e).is_some_and(|path| self.is_module_path(&path))
    }

    /// Whether the dotted `path` is a module of the program or the package
    /// of one this file imports.
    fn is_module_path(&self, path: &str) -> bool {
        let package = format!("{path}.");
        crate::module::resolve_module(self.db, self.file, path).is_some()
            || db::item_tree(self.db, self.file)
                .imports
                .iter()
                .any(|i| i.module.starts_with(&package))
    }

    /// E0203 for a module used as a value (`print(ops)`,
    /// `allclose(ops, x)`): it had been typed unknown, and the program
    /// stopped when run.
    /// `written` as the source has it; `path`, the module's dotted path.
    fn module_as_value(&mut self, written: &str, path: &str, span: Span) {
        let package = format!("{path}.");
        let tree = db::item_tree(self.db, self.file);
        let modules: Vec<String> = tree
            .imports
            .iter()
            .filter(|i| i.module.starts_with(&package))
            .map(|i| format!("`{}`", i.module))
            .collect();
        let help = if crate::module::resolve_module(self.db, self.file, path).is_some() || modules.is_empty() {
            format!("name one of its functions or constants: `{written}.f(…)`, `{written}.LIMIT`")
        } else {
            format!(
                "it is a package: name a module of it, {}, and a member of that",
                modules.join(", ")
            )
        };
        self.error(
            Diagnostic::error(Code::E0203, format!("`{written}` is a module, not a value"))
                .with_primary(self.at(span), "a module")
                .with_help(help),
        );
    }

    /// The dotted path of the module (or package) `e` names, when it is a
    /// name bound by an `import` of this file and not shadowed by a local,
    /// or an attribute of one (`pkg.mod` of `import pkg.mod`).
    fn module_path(&self, e: &Expr) -> Option<String> {
        match &e.unparen().kind {
            ExprKind::Name(n) if self.locals.contains_key(n) => None,
            ExprKind::Name(_) => crate::constants::module_path(self.db, self.file, e),
            ExprKind::Attr { base, name } => Some(format!("{}.{}", self.module_path(base)?, name.name)),
            _ => None,
        }
    }

    fn attr(&mut self, base: &Ty, base_expr: &Expr, name: &str, span: Span) -> Ty {
        // `import helpers` then `helpers.f` or `helpers.LIMIT`: a function
        // or constant of the sibling module; `pkg.mod.f` likewise.
        if let Some(module) = self.module_path(base_expr) {
            let file = crate::module::resolve_module(self.db, self.file, &module);
            match (self.member(&module, name), file) {
                (Some(ty), _) => return ty,
                (None, Some(file)) => {
                    let tree = db::item_tree(self.db, file);
                    let mut diag = Diagnostic::error(
                        Code::E0105,
                        format!("`{module}` has no function, constant or module `{name}`"),
                    )
                    .with_primary(self.at(span), "not defined there");
                    let candidates = tree.functions.iter().chain(&tree.globals).map(String::as_str);
                    if let Some(s) = did_you_mean(name, candidates) {
                        diag = diag.with_help(format!("did you mean `{module}.{s}`?"));
                    }
                    self.error(diag);
                    return Ty::Unknown;
                }
                (None, None) => {}
            }
        }
        match base {
            Ty::Namespace(ns) => {
                let path = format!("{ns}.{name}");
                if let Some(b) = builtins::lookup(&path) {
                    return Ty::Builtin(b);
                }
                let mut diag = if *ns == builtins::GROUP {
                    Diagnostic::error(Code::E0102, format!("a cooperative group has no method `{name}`"))
                        .with_primary(self.at(span), "its methods are `thread_rank` and `sync`")
                } else {
                    Diagnostic::error(Code::E0102, format!("`{ns}` has no member `{name}`"))
                        .with_primary(self.at(span), format!("not in `{ns}`"))
                };
                if let Some(help) = foreign_member(ns, name) {
                    diag = diag.with_help(help);
                } else if let Some(s) = did_you_mean(name, builtins::members(ns).map(|b| b.name())) {
                    // A group's methods are called on the group's value.
                    let base = if *ns == builtins::GROUP {
                        crate::pretty::expr(base_expr)
                    } else {
                        ns.to_string()
                    };
                    diag = diag.with_help(format!("did you mean `{base}.{s}`?"));
                } else if builtins::lookup(name).is_some_and(|b| b.namespace().is_none()) {
                    // `op.exp`: the elementwise math functions are global.
                    diag = diag.with_help(format!("`{name}` is a global function: write `{name}(…)`"));
                }
                self.error(diag);
                Ty::Unknown
            }
            Ty::Tensor(t) => match name {
                "T" => transpose(t).map_or_else(
                    || {
                        self.error(
                            Diagnostic::error(
                                Code::E0303,
                                format!(
                                    "`.T` needs at least 2 dims, `{}` has {}",
                                    crate::pretty::expr(base_expr),
                                    t.rank().unwrap_or(0)
                                ),
                            )
                            .with_primary(self.at(span), "transposes the last two dims"),
                        );
                        Ty::Unknown
                    },
                    Ty::Tensor,
                ),
                "shape" => match &t.dims {
                    Some(d) => Ty::Tuple(vec![Ty::Int; d.len()]),
                    None => Ty::Unknown,
                },
                "ndim" => Ty::Int,
                "dtype" => t.dtype.map_or(Ty::Unknown, Ty::DTypeValue),
                _ => {
                    self.no_tensor_attr(base_expr, name, span);
                    Ty::Unknown
                }
            },
            // A string's, list's or tuple's methods are the host's: another
            // name is E0102 (`xs.appen(3)` had checked clean and stopped the
            // run with E1006).
            Ty::Str | Ty::List(_) | Ty::Tuple(_) => {
                let methods = builtins::methods_of(base);
                if !methods.iter().any(|(m, _)| *m == name) {
                    let kind = match base {
                        Ty::Str => "a string",
                        Ty::List(_) => "a list",
                        _ => "a tuple",
                    };
                    let listed = methods
                        .iter()
                        .map(|(m, _)| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let mut diag = Diagnostic::error(Code::E0102, format!("{kind} has no method `{name}`"))
                        .with_primary(self.at(span), format!("its methods are {listed}"));
                    let a_list_method = builtins::LIST_METHODS.iter().any(|(m, _)| *m == name);
                    if let (Ty::Tuple(_), true) = (base, a_list_method) {
                        diag = diag.with_help("make it a list, in brackets: `[a, b]` or `[]`");
                    } else if let Some(s) = did_you_mean(name, methods.iter().map(|(m, _)| *m)) {
                        diag = diag.with_help(format!("did you mean `{}.{s}`?", crate::pretty::expr(base_expr)));
                    }
                    self.error(diag);
                }
                Ty::Unknown
            }
            _ => Ty::Unknown,
        }
    }

    /// E0204 for a builtin call with more positional arguments than the
    /// builtin has parameters (`exp(1.0, 2.0)`, `min(a, b, c)` had read
    /// only the first ones); a builtin with a `*` parameter takes any
    /// number. Unknown keywords are `check_builtin_args`'.
    /// Also true when the call is CUDA's form of the builtin, reported as
    /// such: the call's other checks would only repeat it.
    fn check_arity(&mut self, b: &'static Builtin, args: &[ArgTy], span: Span) -> bool {
        let count = b.param_names().len();
        let mut positional = args.iter().filter(|a| a.name.is_none());
        if self.cuda_form(b, args) || self.separate_dims(b, args) {
            return true;
        }
        self.check_required(b, args, span);
        let Some(extra) = positional.clone().nth(count).filter(|_| !b.variadic()) else {
            return false;
        };
        let given = positional.by_ref().count();
        let what = if count == 1 { "argument" } else { "arguments" };
        self.error(
            Diagnostic::error(
                Code::E0204,
                format!("`{}` takes {count} positional {what}, but {given} were given", b.path),
            )
            .with_primary(self.at(extra.expr.span), "one too many")
            .with_note(format!("`{}` takes `{}{}`", b.path, b.path, b.params)),
        );
        false
    }

    /// E0204 for CUDA's forms of a shuffle and an atomic, one argument
    /// more than Tessera's: the lane mask first
    /// (`tile.warp_shuffle_down(0xffffffff, v, 16)`), or a pointer and an
    /// offset (`atomic_add(total, i, v)`). Each had given two errors, the
    /// first about another argument.
    fn cuda_form(&mut self, b: &Builtin, args: &[ArgTy]) -> bool {
        let positional: Vec<&ArgTy> = args.iter().filter(|a| a.name.is_none()).collect();
        let [first, second, third] = positional.as_slice() else {
            return false;
        };
        let shuffle = b.path.starts_with("tile.warp_shuffle") && matches!(first.expr.unparen().kind, ExprKind::Int(_));
        let atomic = matches!(
            b.path,
            "atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or" | "atomic_xor" | "atomic_exch"
        ) && matches!(first.expr.unparen().kind, ExprKind::Name(_))
            && matches!(first.ty, Ty::Tensor(_));
        let (f, s, t) = (
            crate::pretty::expr(first.expr),
            crate::pretty::expr(second.expr),
            crate::pretty::expr(third.expr),
        );
        let (message, label, written) = if shuffle {
            (
                format!("`{}` takes no lane mask: every lane of the warp takes part", b.path),
                "CUDA's mask",
                format!("{s}, {t}"),
            )
        } else if atomic {
            (
                format!("`{}` updates one element, written as an index: `{f}[{s}]`", b.path),
                "a tensor and an offset, as CUDA's pointer arithmetic",
                format!("{f}[{s}], {t}"),
            )
        } else {
            return false;
        };
        let all = Span::new(first.expr.span.start, third.expr.span.end);
        self.error(
            Diagnostic::error(Code::E0204, message)
                .with_primary(self.at(all), label)
                .with_help(format!("write `{}({written})`", b.path))
                .with_fix(
                    Fix::new(
                        format!("write `{}({written})`", b.path),
                        Applicability::MachineApplicable,
                    )
                    .with_edit(self.at(all), written.clone()),
                ),
        );
        true
    }

    /// E0204 for NumPy's `op.reshape(x, 2, 4)`, the dims as separate
    /// arguments, with a fix that makes them one tuple. It had been an
    /// E0308 for a reshape into the first dim as well.
    fn separate_dims(&mut self, b: &Builtin, args: &[ArgTy]) -> bool {
        let positional: Vec<&ArgTy> = args.iter().filter(|a| a.name.is_none()).collect();
        let ([_, first, .., last], "op.reshape") = (positional.as_slice(), b.path) else {
            return false;
        };
        let dims = Span::new(first.expr.span.start, last.expr.span.end);
        let listed: Vec<String> = positional[1..].iter().map(|a| crate::pretty::expr(a.expr)).collect();
        let written = format!("({})", listed.join(", "));
        self.error(
            Diagnostic::error(Code::E0204, "`op.reshape` takes the new dims as one tuple")
                .with_primary(
                    self.at(dims),
                    "the dims as separate arguments, as NumPy's method takes them",
                )
                .with_help(format!("write `{written}`"))
                .with_fix(
                    Fix::new(format!("write `{written}`"), Applicability::MachineApplicable)
                        .with_edit(self.at(dims), written.clone()),
                ),
        );
        true
    }

    /// E0204 for a builtin called without a parameter that has no default
    /// (`tile.warp_shuffle_down(x)`, `atomic_cas(t, 1.0)`), given neither
    /// by position nor by name. `min` and `max` of one iterable (host
    /// code) take one argument, `str()` none.
    fn check_required(&mut self, b: &'static Builtin, args: &[ArgTy], span: Span) {
        let given = args.iter().filter(|a| a.name.is_none()).count();
        let open = b.params.find('(').map_or(b.params.len(), |i| i + 1);
        let close = b.params.rfind(')').unwrap_or(b.params.len()).max(open);
        let mut required = Vec::new();
        let mut keyword_only = false;
        for p in tessera_base::split_top_level(&b.params[open..close]) {
            let p = p.trim();
            if p.starts_with('*') {
                keyword_only = true;
                continue;
            }
            // After `*shape` only a keyword can give the seed of `rand` and
            // `randn` (without one the run stopped, E1005).
            if keyword_only && p == "seed" && !args.iter().any(|a| a.name == Some("seed")) {
                self.error(
                    Diagnostic::error(Code::E0204, format!("`{}` is missing its argument `seed`", b.path))
                        .with_primary(self.at(span), format!("`{}` without `seed=`", b.path))
                        .with_help("draws are reproducible: name their seed, as in `randn(64, seed=0)`"),
                );
            }
            if !keyword_only && !p.is_empty() && !p.contains('=') {
                required.push(p);
            }
        }
        let least = match b.path {
            "min" | "max" => 1,
            "str" => 0,
            _ => required.len(),
        };
        let missing: Vec<&str> = required
            .iter()
            .enumerate()
            .filter(|(i, name)| *i >= given && !args.iter().any(|a| a.name == Some(**name)))
            .map(|(_, name)| *name)
            .collect();
        // An unknown keyword (`input=x`) is E0204 of its own, and most
        // likely the missing argument misnamed.
        let names = b.param_names();
        let misnamed = args.iter().any(|a| a.name.is_some_and(|n| !names.contains(&n)));
        if missing.is_empty() || given >= least || misnamed {
            return;
        }
        let names = missing.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let what = if missing.len() == 1 { "argument" } else { "arguments" };
        self.error(
            Diagnostic::error(Code::E0204, format!("`{}` is missing its {what} {names}", b.path))
                .with_primary(self.at(span), format!("`{}` without {names}", b.path))
                .with_note(format!("`{}` takes `{}{}`", b.path, b.path, b.params)),
        );
    }

    /// E0102 for `x.name` on a tensor: its attributes are `shape`, `ndim`,
    /// `dtype` and `T`. A NumPy method (`x.sum(axis=1)`) is a function of
    /// `op` or a global here; the help writes the call that way.
    fn no_tensor_attr(&mut self, base: &Expr, name: &str, span: Span) {
        let function = [format!("op.{name}"), name.to_string()]
            .into_iter()
            .find(|p| builtins::lookup(p).is_some_and(|b| b.context != Context::Kernel && b.path != "print"));
        let receiver = crate::pretty::expr(base);
        let mut diag = Diagnostic::error(Code::E0102, format!("a tensor has no attribute `{name}`"))
            .with_primary(self.at(span), "not an attribute of tensors")
            .with_note("a tensor's attributes are `shape`, `ndim`, `dtype` and `T`");
        // PyTorch's and NumPy's conversions: `x.to(f16)`, `x.astype(f16)`,
        // `x.half()`.
        let method_args = self.method_call.clone().unwrap_or_default();
        let cast = |dtype: &str| format!("convert with `cast({receiver}, {dtype})`");
        let conversion = match name {
            "to" | "astype" | "type" if DType::from_name(method_args.trim()).is_some() => {
                Some(cast(method_args.trim()))
            }
            "half" => Some(cast("f16")),
            "float" => Some(cast("f32")),
            "double" => Some(cast("f64")),
            "bfloat16" => Some(cast("bf16")),
            "int" => Some(cast("i32")),
            "long" => Some(cast("i64")),
            "astype" | "type" => Some(format!(
                "{}, DTYPE a dtype of Tessera's (`f16`, `bf16`, `f32`, `i32`, …)",
                cast("DTYPE")
            )),
            _ => None,
        };
        if let Some(help) = conversion {
            self.method_call = None;
            self.error(diag.with_help(help));
            return;
        }
        diag = match (function, self.method_call.take()) {
            (Some(f), Some(args)) if args.is_empty() => {
                diag.with_help(format!("tensor operations are functions: write `{f}({receiver})`"))
            }
            (Some(f), Some(args)) => diag.with_help(format!(
                "tensor operations are functions: write `{f}({receiver}, {args})`"
            )),
            (Some(f), None) => diag.with_help(format!("tensor operations are functions: `{f}({receiver}, …)`")),
            (None, _) if matches!(name, "cuda" | "cpu" | "to") => diag.with_help(format!(
                "use `{receiver}` as it is: a tensor is copied to the device where a kernel or operator needs it, and `tessera run --device cuda` (or `cpu`, `hip`) picks the device"
            )),
            (None, _) if matches!(name, "unsqueeze" | "expand_dims" | "view" | "squeeze") => diag.with_help(format!(
                "reshape it: `op.reshape({receiver}, (…))` adds or removes dims of 1"
            )),
            (None, _) if matches!(name, "size" | "dim" | "numel") => diag.with_help(format!(
                "its dims are `{receiver}.shape` (`{receiver}.shape[0]`), and their count `{receiver}.ndim`"
            )),
            (None, _) if matches!(name, "contiguous" | "detach" | "clone") => diag.with_help(format!(
                "use `{receiver}` as it is: a tensor is a contiguous value with no autograd history, and an operation gives a new one"
            )),
            (None, _) if name == "item" => diag.with_help(format!(
                "`float({receiver})` or `int({receiver})` gives the element of a one-element tensor"
            )),
            (None, _) => match did_you_mean(name, ["shape", "ndim", "dtype", "T"]) {
                Some(s) => diag.with_help(format!("did you mean `{receiver}.{s}`?")),
                None => diag,
            },
        };
        self.error(diag);
    }

    fn subscript(&mut self, base: &Ty, args: &[Arg], e: &Expr) -> Ty {
        let arg_tys: Vec<Ty> = args.iter().map(|a| self.expr(&a.value)).collect();
        for (a, t) in args.iter().zip(&arg_tys) {
            self.device_scalar(t, &a.value, "an index");
            let float = matches!(t, Ty::Float) || matches!(t, Ty::Scalar(d) if d.is_float());
            if float && matches!(base, Ty::Tensor(_) | Ty::List(_) | Ty::Tuple(_) | Ty::Str) {
                self.error(
                    Diagnostic::error(Code::E0203, format!("an index is an integer, not {t}"))
                        .with_primary(self.at(a.value.span), format!("this is {t}"))
                        .with_help("`/` divides to a float: divide integers with `//` (`i // 2`), or convert with `i64(x)`, which truncates"),
                );
            }
        }
        match base {
            Ty::Tensor(t) => {
                let Some(dims) = &t.dims else {
                    return Ty::Tensor(TensorTy {
                        dtype: t.dtype,
                        dims: None,
                        space: t.space,
                    });
                };
                if args.len() > dims.len() {
                    let mut diag = Diagnostic::error(
                        Code::E0310,
                        format!(
                            "too many indices: {} for a tensor with {}",
                            args.len(),
                            dims_word(dims.len())
                        ),
                    )
                    .with_primary(self.at(e.span), format!("this tensor is {base}"));
                    if let (true, ExprKind::Subscript { base, .. }) = (dims.is_empty(), &e.kind) {
                        // NumPy's `x[()]` reads a 0-d array's element.
                        let x = crate::pretty::expr(base);
                        diag = diag.with_help(format!(
                            "a tensor of no dims is its element: use `{x}` as it is, or `float({x})` or `int({x})` for a Python number"
                        ));
                    }
                    self.error(diag);
                    return Ty::Unknown;
                }
                let mut kept = Vec::new();
                for (i, dim) in dims.iter().enumerate() {
                    match args.get(i).map(|a| &a.value.kind) {
                        None => kept.push(dim.clone()),
                        Some(ExprKind::Slice {
                            lower,
                            upper,
                            step: None,
                        }) => {
                            let len = slice_len(dim, lower.as_deref(), upper.as_deref(), &self.sizes);
                            // A tile of kernel code has an element in every dim.
                            if self.in_device_code() && len.as_const().is_some_and(|c| c < 1) {
                                self.error(
                                    Diagnostic::error(Code::E0313, "an empty slice in kernel code")
                                        .with_primary(self.at(args[i].value.span), format!("no element of {dim}"))
                                        .with_help(
                                            "a tile has at least one element in every dim: check the slice's bounds",
                                        ),
                                );
                                // Unknown from here, so the error does not cascade.
                                kept.push(Poly::opaque(&crate::pretty::expr(&args[i].value)));
                                continue;
                            }
                            kept.push(len);
                        }
                        // A positive step k keeps ceil((hi - lo) / k) elements,
                        // a polynomial when k divides every term of hi - lo but
                        // the constant (`::2` of `2 * H` is `H`, and so is `1::2`);
                        // a negative one ceil((start - stop) / |k|), Python's
                        // (`negative_step_len`).
                        Some(ExprKind::Slice {
                            lower,
                            upper,
                            step: Some(step),
                        }) => {
                            let len = crate::signature::int(step).and_then(|k| {
                                if k < 0 {
                                    let d = self.sizes.substitute(dim);
                                    return negative_step_len(&d, lower.as_deref(), upper.as_deref(), k);
                                }
                                let span = slice_len(dim, lower.as_deref(), upper.as_deref(), &self.sizes);
                                match span.as_const() {
                                    Some(c) => Poly::constant(c.max(0)).div_ceil(k),
                                    // Not a polynomial: written as Python
                                    // counts it, `(N + 1) // 2`.
                                    None => span.div_ceil(k).or_else(|| {
                                        (k > 0).then(|| {
                                            Poly::opaque(&format!("({}) // {k}", span.add(&Poly::constant(k - 1))))
                                        })
                                    }),
                                }
                            });
                            kept.push(len.unwrap_or_else(|| Poly::opaque(&crate::pretty::expr(&args[i].value))));
                        }
                        // A bool mask (`x[x > 0.5]`) picks the elements where it
                        // holds: one dim, as long as it has true elements.
                        Some(_) if matches!(&arg_tys[i], Ty::Tensor(m) if m.dtype == Some(DType::Bool)) => {
                            let mask_dims = match &arg_tys[i] {
                                Ty::Tensor(m) => m.dims.clone(),
                                _ => None,
                            };
                            let fits = mask_dims.as_ref().is_none_or(|md| {
                                args.len() == 1
                                    && md.len() == dims.len()
                                    && md.iter().zip(dims.iter()).all(|(a, b)| self.same_dim(a, b))
                            });
                            if !fits {
                                self.error(
                                    Diagnostic::error(
                                        Code::E0306,
                                        format!("a bool mask of type {} does not select from {base}", arg_tys[i]),
                                    )
                                    .with_primary(self.at(args[i].value.span), format!("this mask is {}", arg_tys[i]))
                                    .with_help(
                                        "a mask has the shape of the tensor it selects from, and is its only index",
                                    ),
                                );
                                return Ty::Unknown;
                            }
                            return Ty::Tensor(TensorTy {
                                dtype: t.dtype,
                                dims: Some(vec![Poly::opaque(&format!(
                                    "count({})",
                                    crate::pretty::expr(&args[i].value)
                                ))]),
                                space: t.space,
                            });
                        }
                        // Indexing with an index tensor gathers: its dims replace this one.
                        Some(_) if matches!(arg_tys[i], Ty::Tensor(_)) => match &arg_tys[i] {
                            Ty::Tensor(TensorTy {
                                dims: Some(index_dims), ..
                            }) => kept.extend(index_dims.iter().cloned()),
                            _ => kept.push(Poly::opaque(&crate::pretty::expr(&args[i].value))),
                        },
                        // A constant index past a constant dim: in a kernel
                        // an async copy into slot 2 of two overran shared
                        // memory; elsewhere it stopped the run (E1007).
                        Some(_) => {
                            let at = self.sizes.substitute(&dim_poly(&args[i].value)).as_const();
                            let size = self.sizes.substitute(dim).as_const();
                            // Kernel code indexes memory from 0, with no
                            // count from the end: the run stopped with
                            // E1007, and a GPU read before the buffer.
                            if let Some(c) = at.filter(|&c| c < 0 && self.in_device_code()) {
                                let from_end = match (size, dim.as_sym()) {
                                    (Some(d), _) => (d + c).to_string(),
                                    (None, Some(sym)) => format!("{sym} - {}", -c),
                                    (None, None) => format!("({dim}) - {}", -c),
                                };
                                self.error(
                                    Diagnostic::error(
                                        Code::E0314,
                                        format!("index {c} in kernel code is before the start of dim {i}"),
                                    )
                                    .with_primary(
                                        self.at(args[i].value.span),
                                        "kernel code counts from 0, not from the end",
                                    )
                                    .with_secondary(self.at(e.span), format!("this is {base}"))
                                    .with_help(format!("write the index from the start: `{from_end}`"))
                                    .with_fix(
                                        Fix::new(format!("write `{from_end}`"), Applicability::MachineApplicable)
                                            .with_edit(self.at(args[i].value.span), from_end.clone()),
                                    ),
                                );
                                return Ty::Unknown;
                            }
                            if let (Some(c), Some(d)) = (at, size) {
                                if c >= d || c < -d {
                                    let base_text = match &e.kind {
                                        ExprKind::Subscript { base, .. } => crate::pretty::expr(base),
                                        _ => "the tensor".to_string(),
                                    };
                                    self.error(
                                        Diagnostic::error(
                                            Code::E0314,
                                            format!(
                                                "index {c} is out of range for dim {i} of `{base_text}`, of size {d}"
                                            ),
                                        )
                                        .with_primary(
                                            self.at(args[i].value.span),
                                            format!("dim {i} has indices 0 to {}", d - 1),
                                        )
                                        .with_secondary(self.at(e.span), format!("this is {base}")),
                                    );
                                    return Ty::Unknown;
                                }
                            }
                        }
                    }
                }
                if kept.is_empty() {
                    t.dtype.map_or(Ty::Unknown, Ty::Scalar)
                } else {
                    Ty::Tensor(TensorTy {
                        dtype: t.dtype,
                        dims: Some(kept),
                        space: t.space,
                    })
                }
            }
            Ty::List(item) => (**item).clone(),
            // `x.shape[0]`: the part a literal index names, or the one type
            // every part has.
            Ty::Tuple(parts) => {
                let index = match args {
                    [a] if a.name.is_none() => crate::signature::int(&a.value),
                    _ => None,
                };
                let len = i64::try_from(parts.len()).unwrap_or(i64::MAX);
                match index.map(|i| if i < 0 { i + len } else { i }) {
                    Some(i) if (0..len).contains(&i) => usize::try_from(i)
                        .ok()
                        .and_then(|i| parts.get(i))
                        .cloned()
                        .unwrap_or(Ty::Unknown),
                    Some(_) => {
                        let ExprKind::Subscript { base: shape, .. } = &e.kind else {
                            return Ty::Unknown;
                        };
                        if let ExprKind::Attr { base: tensor, name } = &shape.kind {
                            if name.name != "shape" {
                                return Ty::Unknown;
                            }
                            let dims = dims_word(parts.len());
                            self.error(
                                Diagnostic::error(
                                    Code::E0307,
                                    format!("axis {} is out of range for a tensor with {dims}", index.unwrap_or(0)),
                                )
                                .with_primary(self.at(e.span), format!("`{}` has {dims}", crate::pretty::expr(tensor)))
                                .with_help("dims count from 0; `.shape[-1]` is the last"),
                            );
                        }
                        Ty::Unknown
                    }
                    None if parts.windows(2).all(|w| w[0] == w[1]) => parts.first().cloned().unwrap_or(Ty::Unknown),
                    None => Ty::Unknown,
                }
            }
            Ty::Unknown | Ty::Size | Ty::Range | Ty::Namespace(_) => Ty::Unknown,
            // A character or a slice of a string, in host code.
            Ty::Str if !self.in_device_code() => Ty::Str,
            other => {
                self.not_indexable(e, other);
                Ty::Unknown
            }
        }
    }

    /// E0215 at `base[...]` when `base` holds no elements. A name bound to
    /// `tshared.alloc` itself, never called, gets the call as its fix; the
    /// name is then unknown, so that its other uses are not reported again.
    fn not_indexable(&mut self, e: &Expr, base: &Ty) {
        let ExprKind::Subscript { base: base_expr, .. } = &e.kind else {
            return;
        };
        if let ExprKind::Name(name) = &base_expr.kind {
            if let Some(local) = self.locals.get_mut(name) {
                local.ty = Ty::Unknown;
            }
        }
        let what = crate::pretty::expr(base_expr);
        let mut d = Diagnostic::error(Code::E0215, format!("`{what}` cannot be indexed")).with_primary(
            self.at(base_expr.span),
            format!("this is {base}, which holds no elements"),
        );
        if let Ty::Builtin(b) = base {
            if matches!(b.shape, Shape::AllocShared) {
                d = d.with_help(format!(
                    "`{}` allocates only when called, with a dtype and dims: `{}[f32](128)`",
                    b.path, b.path
                ));
                if let Some(&at) = self.bound_at.get(&what) {
                    d = d.with_fix(
                        Fix::new(format!("call `{}`", b.path), Applicability::HasPlaceholders)
                            .with_edit(self.at(at), format!("{}[f32](128)", b.path)),
                    );
                }
            }
        }
        self.error(d);
    }

    /// In device code a tensor of no dims (an `f32[]` parameter) in
    /// arithmetic is its one element, a number each thread reads (as a
    /// 0-d NumPy array is in arithmetic), not a tile spread over the
    /// block.
    fn element_of_0d(&self, ty: Ty) -> Ty {
        match &ty {
            Ty::Tensor(TensorTy {
                dtype: Some(d),
                dims: Some(dims),
                ..
            }) if dims.is_empty() && self.in_device_code() => Ty::Scalar(*d),
            _ => ty,
        }
    }

    fn binary(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span, lhs: &Expr, rhs: &Expr) -> Ty {
        if matches!(op, BinOp::And | BinOp::Or) {
            let what = format!("an operand of `{}`", op.symbol());
            self.device_scalar(l, lhs, &what);
            self.device_scalar(r, rhs, &what);
        }
        if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
            return match (l, r) {
                // Two tensors compare elementwise, broadcast.
                (Ty::Tensor(_), Ty::Tensor(_)) if op.as_cmp().is_some() => {
                    match self.broadcast_op(&format!("`{}`", op.symbol()), l, r, span, lhs, rhs) {
                        Ty::Tensor(t) => Ty::Tensor(TensorTy {
                            dtype: Some(DType::Bool),
                            ..t
                        }),
                        other => other,
                    }
                }
                (Ty::Tensor(t), _) | (_, Ty::Tensor(t))
                    if !matches!(
                        op,
                        BinOp::And | BinOp::Or | BinOp::In | BinOp::NotIn | BinOp::Is | BinOp::IsNot
                    ) =>
                {
                    Ty::Tensor(TensorTy {
                        dtype: Some(DType::Bool),
                        dims: t.dims.clone(),
                        space: None,
                    })
                }
                _ => Ty::Bool,
            };
        }
        if op == BinOp::MatMul {
            return self.matmul(l, r, span, lhs, rhs, None);
        }
        let bitwise = matches!(
            op,
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
        );
        if bitwise && !self.bitwise_operands(op, [(l, lhs), (r, rhs)]) {
            return Ty::Unknown;
        }
        let ty = self.arithmetic(op, l, r, span, lhs, rhs);
        if bitwise {
            return self.bitwise_result(op, [l, r], ty, span);
        }
        if op != BinOp::Div {
            return ty;
        }
        // `/` is true division, as in Python: integers divide as `f32`.
        match ty {
            Ty::Int | Ty::Size => Ty::Float,
            Ty::Scalar(d) if !d.is_float() => Ty::Scalar(DType::F32),
            Ty::Tensor(t) if t.dtype.is_some_and(|d| !d.is_float()) => Ty::Tensor(TensorTy {
                dtype: Some(DType::F32),
                ..t
            }),
            other => other,
        }
    }

    /// `op.matmul`'s `tile_shape=`: written as a list or tuple of three
    /// positive integer constants `[BM, BN, BK]` (E0204 otherwise), which
    /// the compiler reads at compile time.
    fn matmul_tile_shape(&mut self, tile: &Expr) {
        let (label, items) = match &tile.unparen().kind {
            ExprKind::None => return,
            ExprKind::List(items) | ExprKind::Tuple(items) => ("not three positive integers", Some(items)),
            _ => ("not a list written out", None),
        };
        if let Some(items) = items {
            if items.len() == 3 && items.iter().all(|i| i.int_value().is_some_and(|v| v > 0)) {
                return;
            }
        }
        self.error(
            Diagnostic::error(
                Code::E0204,
                "`tile_shape` of `op.matmul` is written as three positive integer constants [BM, BN, BK]",
            )
            .with_primary(self.at(tile.span), label)
            .with_help("write the tile's rows, columns and depth: `tile_shape=[128, 128, 32]`"),
        );
    }

    /// E0204 for a launch's bracket argument other than `grid`, `block`
    /// (also the first two positional ones) and `stream`: `grd=` had
    /// passed the checker and stopped the run.
    fn launch_arguments(&mut self, brackets: &[Arg], types: &[Ty]) {
        const LAUNCH: [&str; 3] = ["grid", "block", "stream"];
        for (k, (a, ty)) in brackets.iter().zip(types).enumerate() {
            // A size is an integer: `N / 256` is a float (E1008 when run).
            let size = matches!(a.name.as_ref().map(|n| n.name.as_str()), Some("grid" | "block"))
                || (a.name.is_none() && k < 2);
            let float = |t: &Ty| refused_number(t, |d| !d.is_float()).is_some();
            let floats = match ty {
                Ty::Tuple(items) => items.iter().any(float),
                t => float(t),
            };
            if size && floats {
                self.error(
                    Diagnostic::error(Code::E0203, "a launch's sizes are integers")
                        .with_primary(self.at(a.value.span), format!("this is {ty}"))
                        .with_help("`/` divides to a float: round the count of blocks up with `ceil_div(N, 256)`, or down with `N // 256`"),
                );
            }
            let refused = match &a.name {
                Some(n) if !LAUNCH.contains(&n.name.as_str()) => {
                    let diag = Diagnostic::error(Code::E0204, format!("a launch takes no `{}`", n.name))
                        .with_primary(self.at(n.span), "not a launch argument");
                    // CUDA's and Triton's names for the two sizes.
                    let alias = match n.name.as_str() {
                        "threads" | "num_threads" | "block_size" | "blockDim" => Some("block"),
                        "blocks" | "num_blocks" | "gridDim" => Some("grid"),
                        _ => None,
                    };
                    match alias.or_else(|| did_you_mean(&n.name, LAUNCH)) {
                        Some(s) => diag.with_help(format!("did you mean `{s}`?")).with_fix(
                            Fix::new(format!("write `{s}`"), Applicability::MachineApplicable)
                                .with_edit(self.at(n.span), s),
                        ),
                        None => diag.with_note(
                            "a launch takes `grid`, `block` and `stream`: `k[grid=(blocks,), block=(threads,)](...)`",
                        ),
                    }
                }
                None if k >= 2 => Diagnostic::error(Code::E0204, "a launch takes two sizes, the grid and the block")
                    .with_primary(self.at(a.span), "a third size")
                    .with_note("name the stream: `k[grid=(g,), block=(b,), stream=s](...)`"),
                _ => continue,
            };
            self.error(refused);
        }
    }

    /// E0217 for a launch's block of constant sizes that no GPU runs
    /// (more than 1024 threads, a z size above 64), or that differs from
    /// the kernel header's `tile[(…)]`, the shape the kernel is compiled
    /// for: both stopped the run (E1008) and now stop the check.
    fn launch_block(&mut self, name: &str, brackets: &[Arg]) {
        let Some(block) = brackets
            .iter()
            .enumerate()
            .find(|(k, a)| a.name.as_ref().map_or(*k == 1, |n| n.name == "block"))
            .map(|(_, a)| &a.value)
        else {
            return;
        };
        let items: Vec<&Expr> = match &block.unparen().kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![block],
        };
        let sizes: Option<Vec<i64>> = items
            .iter()
            .map(|e| self.sizes.substitute(&dim_poly(e)).as_const())
            .collect();
        let Some(sizes) = sizes.filter(|s| (1..=3).contains(&s.len()) && s.iter().all(|&v| v > 0)) else {
            return;
        };
        let shape = |s: &[i64]| match s {
            [x] => format!("({x},)"),
            _ => format!("({})", s.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
        };
        let threads: i64 = sizes.iter().fold(1, |p, &v| p.saturating_mul(v));
        if threads > 1024 || sizes.get(2).is_some_and(|&z| z > 64) {
            let (why, help) = if threads > 1024 {
                (
                    format!("{threads} threads; a block holds at most 1024"),
                    "give each block at most 1024 threads, and launch more blocks in the grid",
                )
            } else {
                (
                    "a z size above 64, the most a GPU allows".to_string(),
                    "lay the block's threads out along x and y",
                )
            };
            self.error(
                Diagnostic::error(Code::E0217, format!("a launch's block {} has {why}", shape(&sizes)))
                    .with_primary(self.at(block.span), "no GPU runs this block")
                    .with_help(help),
            );
            return;
        }
        let Some((file, fn_name)) = self.resolve_function(name) else {
            return;
        };
        let sig = db::signature(self.db, FnId::new(self.db, file, fn_name));
        let Some(declared) = sig.block.as_deref() else {
            return;
        };
        let padded = |s: &[i64]| (0..3).map(|i| s.get(i).copied().unwrap_or(1)).collect::<Vec<_>>();
        if padded(declared) != padded(&sizes) {
            self.error(
                Diagnostic::error(
                    Code::E0217,
                    format!(
                        "`{}` is compiled for blocks of {}, but the launch asks for {}",
                        sig.name,
                        shape(declared),
                        shape(&sizes)
                    ),
                )
                .with_primary(self.at(block.span), format!("not the header's {}", shape(declared)))
                .with_help(format!(
                    "launch it with `block={}`, the shape its header declares",
                    shape(declared)
                ))
                .with_fix(
                    Fix::new(
                        format!("launch blocks of {}", shape(declared)),
                        Applicability::MachineApplicable,
                    )
                    .with_edit(self.at(block.span), shape(declared)),
                )
                .with_note(
                    "a thread's linear index and its warp are computed for the block's shape as the kernel declares it",
                ),
            );
        }
    }

    /// E0204 for two arguments of `path` given in each other's places, at
    /// the first, with a fix that swaps them.
    fn swapped(&mut self, message: &str, [first, second]: [&ArgTy; 2], label: &str, why: &str, path: &str) {
        let (f, s) = (crate::pretty::expr(first.expr), crate::pretty::expr(second.expr));
        let fix = self.swap_fix("swap the arguments", [first, second]);
        self.error(
            Diagnostic::error(Code::E0204, message)
                .with_primary(self.at(first.expr.span), label)
                .with_help(format!("write `{path}({s}, {f})`, {why}"))
                .with_fix(fix),
        );
    }

    /// The fix that writes each of two arguments in the other's place.
    fn swap_fix(&self, title: &str, [first, second]: [&ArgTy; 2]) -> Fix {
        Fix::new(title, Applicability::MachineApplicable)
            .with_edit(self.at(first.expr.span), crate::pretty::expr(second.expr))
            .with_edit(self.at(second.expr.span), crate::pretty::expr(first.expr))
    }

    /// E0203 for the value of a kernel launch assigned (`r = k[…](out)`):
    /// a launch gives none; the kernel writes its `mut` parameters.
    fn launch_result(&mut self, value: &Expr, ty: &Ty) {
        let ExprKind::Call { callee, args } = &value.unparen().kind else {
            return;
        };
        if *ty != Ty::None || !matches!(callee.kind, ExprKind::Subscript { .. }) {
            return;
        }
        let written: Vec<String> = args.iter().map(|a| crate::pretty::expr(&a.value)).collect();
        let read = match written.last() {
            Some(last) => format!("read the kernel's output (`{last}`) after it"),
            None => "read the kernel's outputs after it".to_string(),
        };
        self.error(
            Diagnostic::error(Code::E0203, "a kernel launch gives no value")
                .with_primary(self.at(value.span), "this launch's value is `None`")
                .with_help(format!(
                    "launch it as a statement and {read}: a kernel writes its `mut` parameters"
                )),
        );
    }

    /// E0219 for a statement that is only a check whose result nothing
    /// reads: `allclose(a, b)` (the test it was meant to be passes
    /// whatever the values) or a comparison (`x == 1`).
    fn discarded_check(&mut self, e: &Expr) {
        let at = self.at(e.span);
        let text = crate::pretty::expr(e);
        let diag = match &e.unparen().kind {
            ExprKind::Call { callee, .. } if matches!(&callee.kind, ExprKind::Name(n) if n == "allclose" && !self.locals.contains_key(n)) => {
                Diagnostic::error(Code::E0219, "the result of `allclose` is discarded")
                    .with_primary(at, "this checks nothing: its result is not used")
                    .with_help(format!("assert it: `assert {text}`"))
                    .with_fix(
                        Fix::new("assert it", Applicability::MachineApplicable)
                            .with_edit(self.at(Span::empty(e.span.start)), "assert "),
                    )
            }
            ExprKind::Binary { op, lhs, rhs } if op.is_comparison() => {
                let mut diag = Diagnostic::error(Code::E0219, format!("the result of `{}` is discarded", op.symbol()))
                    .with_primary(at, "this compares and drops the answer");
                diag = match (op, &lhs.unparen().kind) {
                    (BinOp::Eq, ExprKind::Name(name)) => diag.with_help(format!(
                        "to check it, write `assert {text}`; to assign, `{name} = {}`",
                        crate::pretty::expr(rhs)
                    )),
                    _ => diag.with_help(format!("to check it, write `assert {text}`")),
                };
                diag
            }
            _ => return,
        };
        self.error(diag);
    }

    /// E0402 for `with effects.suspend("ioo")`: no effect of that name.
    fn suspended_name(&mut self, item: &Expr) {
        let Some((text, span)) = suspend_argument(item) else {
            return;
        };
        if Effect::from_name(text).is_some() {
            return;
        }
        let mut diag = Effect::unknown(text, self.at(span));
        if let Some(s) = Effect::closest(text).map(Effect::name) {
            diag = diag.with_fix(
                Fix::new(format!("suspend `{s}`"), Applicability::MachineApplicable)
                    .with_edit(self.at(span), format!("\"{s}\"")),
            );
        }
        self.error(diag);
    }

    /// Whether the operands of the bitwise or shift operator `op` are
    /// integers or bools, as Python's are (E0203 at a float one).
    fn bitwise_operands(&mut self, op: BinOp, operands: [(&Ty, &Expr); 2]) -> bool {
        for (ty, e) in operands {
            let float = match ty {
                Ty::Float => true,
                Ty::Scalar(d) => d.is_float(),
                Ty::Tensor(t) => t.dtype.is_some_and(DType::is_float),
                _ => false,
            };
            if float {
                let convert = if matches!(ty, Ty::Tensor(_)) {
                    "`cast(x, i32)`"
                } else {
                    "`i32(x)`"
                };
                let diag = Diagnostic::error(
                    Code::E0203,
                    format!("`{}` takes integers or bools, not {ty}", op.symbol()),
                )
                .with_primary(self.at(e.span), format!("this is {ty}"));
                // `x ^ 2` of a float is a power written as in maths or
                // MATLAB; converting `x` would make it a silent XOR.
                let diag = if op == BinOp::BitXor {
                    diag.with_help("`^` is the bitwise exclusive or; a power is written `x ** 2`")
                } else {
                    diag.with_help(format!(
                        "convert it to an integer first: {convert}, or reinterpret its bits with `bitcast`"
                    ))
                };
                self.error(diag);
                return false;
            }
        }
        true
    }

    /// E0203 for a bitwise or shift operator whose integer or bool operands
    /// promote to a float (`u8 & i8`: neither widens to the other, rule 3
    /// of the promotion), which no bitwise operation computes: the IR
    /// verifier had reported it (E0901).
    fn bitwise_result(&mut self, op: BinOp, [l, r]: [&Ty; 2], ty: Ty, span: Span) -> Ty {
        let (Some(a), Some(b), Some(result)) = (l.dtype(), r.dtype(), ty.dtype()) else {
            return ty;
        };
        if !result.is_float() || a.is_float() || b.is_float() {
            return ty;
        }
        let both = [DType::I16, DType::I32, DType::I64]
            .into_iter()
            .find(|w| (a == DType::Bool || a.widens_to(*w)) && (b == DType::Bool || b.widens_to(*w)));
        let help = match both {
            Some(w) => format!("convert both to one integer type first: `{w}(…)` holds the values of each"),
            None => format!("convert one operand to the other's type first, as its bits: `bitcast(…, {a})`"),
        };
        self.error(
            Diagnostic::error(
                Code::E0203,
                format!(
                    "`{}` of {a} and {b}: no integer type is the promotion of both",
                    op.symbol()
                ),
            )
            .with_primary(
                self.at(span),
                format!("{a} and {b} promote to {result}, and `{}` takes integers", op.symbol()),
            )
            .with_help(help),
        );
        Ty::Unknown
    }

    /// The type of `l op r` for the arithmetic operators: promotion and broadcasting.
    fn arithmetic(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span, lhs: &Expr, rhs: &Expr) -> Ty {
        if self.function_as_value(l, lhs) | self.function_as_value(r, rhs) {
            return Ty::Unknown;
        }
        let what = |kind: &str| format!("`{}` of a tensor and a {kind}", op.symbol());
        let refused = match (l, r) {
            (Ty::Tensor(_), _) => self.not_a_tensor(r, rhs, &what),
            (_, Ty::Tensor(_)) => self.not_a_tensor(l, lhs, &what),
            _ => false,
        };
        if refused {
            return Ty::Unknown;
        }
        match (l, r) {
            // Python's sequences repeat (`[1, 2] * n`, whatever integer
            // type `n` has) and concatenate; a tuple's items are typed one
            // by one, so a repeated tuple's are not known.
            (Ty::List(_) | Ty::Str, other) | (other, Ty::List(_) | Ty::Str)
                if op == BinOp::Mul && !matches!(other, Ty::Tensor(_)) =>
            {
                if matches!(l, Ty::List(_) | Ty::Str) {
                    l.clone()
                } else {
                    r.clone()
                }
            }
            (Ty::List(_), Ty::List(_)) | (Ty::Str, Ty::Str) if op == BinOp::Add && l == r => l.clone(),
            (Ty::List(_) | Ty::Tuple(_) | Ty::Str, _) | (_, Ty::List(_) | Ty::Tuple(_) | Ty::Str)
                if !matches!((l, r), (Ty::Tensor(_), _) | (_, Ty::Tensor(_))) =>
            {
                Ty::Unknown
            }
            (Ty::Tensor(_), Ty::Tensor(_)) => self.broadcast_op(&format!("`{}`", op.symbol()), l, r, span, lhs, rhs),
            (Ty::Tensor(t), other) | (other, Ty::Tensor(t)) => {
                let dtype = match other.dtype() {
                    Some(d) => promote(t.dtype, Some(d)),
                    None => float_literal_with(t.dtype, other),
                };
                Ty::Tensor(TensorTy {
                    dtype,
                    dims: t.dims.clone(),
                    space: None,
                })
            }
            (Ty::Scalar(a), Ty::Scalar(b)) => promote(Some(*a), Some(*b)).map_or(Ty::Unknown, Ty::Scalar),
            (Ty::Scalar(a), other) | (other, Ty::Scalar(a)) => {
                float_literal_with(Some(*a), other).map_or(Ty::Unknown, Ty::Scalar)
            }
            // What is not known (a call through a module that is not
            // found) stays unknown: `nosuch.g(x) + 1.0` had been a float.
            (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
            (Ty::Float, _) | (_, Ty::Float) => Ty::Float,
            // Python's `2 ** -1` is the float 0.5.
            (Ty::Int, Ty::Int)
                if op == BinOp::Pow
                    && matches!(crate::constants::literal_value(rhs), Some(crate::constants::Constant::Int(k)) if k < 0) =>
            {
                Ty::Float
            }
            (Ty::Int, Ty::Int) | (Ty::Size, _) | (_, Ty::Size) => Ty::Int,
            _ => Ty::Unknown,
        }
    }

    /// The broadcast of two tensor types for the operation `what` (an
    /// operator or a broadcasting builtin); anything else types as `+` does.
    fn broadcast_op(&mut self, what: &str, l: &Ty, r: &Ty, span: Span, lhs: &Expr, rhs: &Expr) -> Ty {
        let (Ty::Tensor(a), Ty::Tensor(b)) = (l, r) else {
            return self.binary(BinOp::Add, l, r, span, lhs, rhs);
        };
        let dims = match (&a.dims, &b.dims) {
            (Some(x), Some(y)) => match broadcast(x, y, &|p, q| self.same_dim(p, q)) {
                Some(d) => Some(d),
                None => {
                    let mut diag = Diagnostic::error(Code::E0306, format!("cannot broadcast {l} with {r}"))
                        .with_primary(self.at(span), format!("{what} does not broadcast"))
                        .with_secondary(self.at(lhs.span), format!("this is {l}"))
                        .with_secondary(self.at(rhs.span), format!("this is {r}"))
                        .with_note("dims are matched from the right; each pair must be equal or one of them 1");
                    let apart = x
                        .iter()
                        .rev()
                        .zip(y.iter().rev())
                        .find(|(p, q)| p.as_const() != Some(1) && q.as_const() != Some(1) && !self.same_dim(p, q));
                    if let Some(help) = apart.and_then(|(p, q)| self.equate_help(p, q)) {
                        diag = diag.with_help(help);
                    }
                    self.error(diag);
                    return Ty::Unknown;
                }
            },
            _ => None,
        };
        Ty::Tensor(TensorTy {
            dtype: promote(a.dtype, b.dtype),
            dims,
            space: None,
        })
    }

    /// `op.where(condition, x, y)`: the alternatives' type broadcast with
    /// the condition's dims; the condition is a bool tensor or a bool.
    fn select(&mut self, e: &Expr, cond: &ArgTy, x: &ArgTy, y: &ArgTy) -> Ty {
        let values = self.broadcast_op("`op.where`", &x.ty, &y.ty, e.span, x.expr, y.expr);
        let Ty::Tensor(c) = &cond.ty else {
            if !matches!(cond.ty, Ty::Bool | Ty::Scalar(DType::Bool) | Ty::Unknown) {
                self.not_a_condition(cond);
            }
            return values;
        };
        if c.dtype.is_some_and(|d| d != DType::Bool) {
            self.not_a_condition(cond);
            return Ty::Unknown;
        }
        let dtype = match &values {
            Ty::Tensor(t) => t.dtype,
            Ty::Float => Some(DType::F32),
            Ty::Int => Some(DType::I64),
            Ty::Bool => Some(DType::Bool),
            Ty::Scalar(d) => Some(*d),
            _ => return Ty::Unknown,
        };
        let dims = match &values {
            Ty::Tensor(v) => match (&c.dims, &v.dims) {
                (Some(cd), Some(vd)) => match broadcast(cd, vd, &|p, q| self.same_dim(p, q)) {
                    Some(d) => Some(d),
                    None => {
                        self.error(
                            Diagnostic::error(Code::E0306, format!("cannot broadcast {} with {values}", cond.ty))
                                .with_primary(self.at(e.span), "`op.where` does not broadcast")
                                .with_secondary(self.at(cond.expr.span), format!("the condition is {}", cond.ty))
                                .with_note("dims are matched from the right; each pair must be equal or one of them 1"),
                        );
                        return Ty::Unknown;
                    }
                },
                _ => None,
            },
            _ => c.dims.clone(),
        };
        Ty::Tensor(TensorTy {
            dtype,
            dims,
            space: None,
        })
    }

    fn not_a_condition(&mut self, cond: &ArgTy) {
        self.error(
            Diagnostic::error(
                Code::E0203,
                format!("the condition of `op.where` is a bool, not {}", cond.ty),
            )
            .with_primary(self.at(cond.expr.span), format!("this is {}", cond.ty))
            .with_help("compare to get one: `x > 0.0`"),
        );
    }

    fn matmul(&mut self, l: &Ty, r: &Ty, span: Span, lhs: &Expr, rhs: &Expr, accumulate: Option<DType>) -> Ty {
        let (Ty::Tensor(a), Ty::Tensor(b)) = (l, r) else {
            return Ty::Unknown;
        };
        let dtype = accumulate.or(promote(a.dtype, b.dtype));
        let (Some(ad), Some(bd)) = (&a.dims, &b.dims) else {
            return Ty::Tensor(TensorTy {
                dtype,
                dims: None,
                space: None,
            });
        };
        if ad.len() < 2 || bd.len() < 2 {
            self.error(
                Diagnostic::error(Code::E0303, "matmul needs operands with at least 2 dims")
                    .with_primary(self.at(span), format!("the operands are {l} and {r}")),
            );
            return Ty::Unknown;
        }
        let (m, k1) = (&ad[ad.len() - 2], &ad[ad.len() - 1]);
        let (k2, n) = (&bd[bd.len() - 2], &bd[bd.len() - 1]);
        if !self.same_dim(k1, k2) {
            let help = match self.equate_help(k1, k2) {
                Some(equate) => format!("the left operand's columns must equal the right operand's rows; {equate}"),
                None => "the left operand's columns must equal the right operand's rows".to_string(),
            };
            self.error(
                Diagnostic::error(Code::E0305, format!("matmul inner dims differ: {k1} and {k2}"))
                    .with_primary(self.at(span), format!("{l} @ {r}"))
                    .with_secondary(self.at(lhs.span), format!("the last dim of this is {k1}"))
                    .with_secondary(self.at(rhs.span), format!("the second-to-last dim of this is {k2}"))
                    .with_help(help),
            );
            return Ty::Unknown;
        }
        let batch = match broadcast(&ad[..ad.len() - 2], &bd[..bd.len() - 2], &|p, q| self.same_dim(p, q)) {
            Some(b) => b,
            None => {
                self.error(
                    Diagnostic::error(Code::E0306, format!("cannot broadcast the batch dims of {l} and {r}"))
                        .with_primary(self.at(span), "the batch dims do not broadcast"),
                );
                return Ty::Unknown;
            }
        };
        let mut dims = batch;
        dims.push(m.clone());
        dims.push(n.clone());
        Ty::Tensor(TensorTy {
            dtype,
            dims: Some(dims),
            space: None,
        })
    }

    /// `op.flash_attention(q, k, v)`: q [.., M, D], k [.., N, D] and
    /// v [.., N, Dv] of one rank and dtype, sharing the batch dims; the
    /// result is [.., M, Dv] in q's dtype.
    fn attention(&mut self, [q, k, v]: [&ArgTy; 3], span: Span) -> Ty {
        let (Ty::Tensor(qt), Ty::Tensor(kt), Ty::Tensor(vt)) = (&q.ty, &k.ty, &v.ty) else {
            return q.ty.clone();
        };
        let dtypes = [qt.dtype, kt.dtype, vt.dtype];
        if let [Some(a), Some(b), Some(c)] = dtypes {
            if a != b || b != c {
                self.error(
                    Diagnostic::error(
                        Code::E0203,
                        format!("attention operands differ in dtype: {a}, {b} and {c}"),
                    )
                    .with_primary(self.at(span), "q, k and v differ in dtype")
                    .with_help("cast them to one dtype first"),
                );
                return Ty::Unknown;
            }
        }
        let (Some(qd), Some(kd), Some(vd)) = (&qt.dims, &kt.dims, &vt.dims) else {
            return Ty::Tensor(TensorTy {
                dims: None,
                ..qt.clone()
            });
        };
        let r = qd.len();
        if r < 2 || kd.len() != r || vd.len() != r {
            self.error(
                Diagnostic::error(Code::E0303, "attention takes q, k and v of one rank, at least 2")
                    .with_primary(self.at(span), format!("q is {}, k {} and v {}", q.ty, k.ty, v.ty))
                    .with_note("attention takes q [.., M, D], k [.., N, D] and v [.., N, Dv]"),
            );
            return Ty::Unknown;
        }
        let pairs = [
            (q, &qd[r - 1], k, &kd[r - 1], "the head dim", "q and k share it"),
            (k, &kd[r - 2], v, &vd[r - 2], "the number of keys", "k and v share it"),
        ];
        let batch = (0..r - 2).flat_map(|i| {
            [
                (q, &qd[i], k, &kd[i], "a batch dim", "q, k and v share the batch dims"),
                (k, &kd[i], v, &vd[i], "a batch dim", "q, k and v share the batch dims"),
            ]
        });
        for (a, da, b, db, what, rule) in pairs.into_iter().chain(batch) {
            if self.same_dim(da, db) {
                continue;
            }
            let mut diagnostic = Diagnostic::error(
                Code::E0302,
                format!("attention operands disagree on {what}: {da} and {db}"),
            )
            .with_primary(self.at(b.expr.span), format!("this is {}", b.ty))
            .with_secondary(self.at(a.expr.span), format!("this is {}", a.ty))
            .with_note(format!(
                "attention takes q [.., M, D], k [.., N, D] and v [.., N, Dv]: {rule}"
            ));
            if let Some(equate) = self.equate_help(da, db) {
                diagnostic = diagnostic.with_help(equate);
            }
            self.error(diagnostic);
            return Ty::Unknown;
        }
        let mut dims = qd.clone();
        dims[r - 1] = vd[r - 1].clone();
        Ty::Tensor(TensorTy {
            dims: Some(dims),
            ..qt.clone()
        })
    }

    // ------------------------------------------------------------ calls

    fn call(&mut self, e: &Expr, callee: &Expr, args: &[Arg]) -> Ty {
        // Brackets before the call: launch configuration or a generic dtype.
        let (target_expr, brackets) = match &callee.kind {
            ExprKind::Subscript { base, args } => (&**base, Some(args.as_slice())),
            _ => (callee, None),
        };
        // `x.sum(axis=1)`: the arguments, for the help of E0102.
        // NumPy's `x.reshape(2, 4)` takes the dims as separate arguments,
        // `op.reshape` as one tuple.
        self.method_call = match &target_expr.kind {
            ExprKind::Attr { name, .. }
                if name.name == "reshape" && args.len() > 1 && args.iter().all(|a| a.name.is_none()) =>
            {
                Some(format!("({})", crate::pretty::arg_list(args)))
            }
            ExprKind::Attr { .. } => Some(crate::pretty::arg_list(args)),
            _ => None,
        };
        // `TABLE.append(3)` of a module constant's list or dict.
        if let ExprKind::Attr { base, name } = &target_expr.kind {
            let changes = builtins::LIST_METHODS[..builtins::LIST_MUTATORS]
                .iter()
                .chain(&builtins::DICT_METHODS[..builtins::DICT_MUTATORS])
                .any(|(m, _)| *m == name.name);
            if changes {
                self.changes_constant(base, e.span);
            }
        }
        let target = self.expr(target_expr);
        self.method_call = None;
        if let Some(brackets) = brackets {
            let mut sizes = Vec::new();
            for a in brackets {
                if !matches!(target, Ty::Builtin(_)) {
                    sizes.push(self.expr(&a.value));
                }
            }
            if let Ty::Function(name) = &target {
                self.launch_arguments(brackets, &sizes);
                self.launch_block(name, brackets);
            }
        }
        // `numerics(P)` names a policy, which the numerics check resolves
        // (and reports, E0703); it is not a value to look up here.
        if target == Ty::Namespace("numerics") {
            for a in args {
                let global_name = matches!(&a.value.kind, ExprKind::Name(n) if !self.locals.contains_key(n));
                if !global_name {
                    self.expr(&a.value);
                }
            }
            return Ty::Policy(args.first().map(|a| crate::pretty::expr(&a.value)).unwrap_or_default());
        }
        // A conversion or an elementwise math function reads a tensor of
        // no dims as its element in device code, as arithmetic does.
        let reads_elements = match &target {
            Ty::DTypeValue(_) => true,
            Ty::Builtin(b) => b.reads_elements,
            _ => false,
        };
        let arg_tys: Vec<ArgTy> = args
            .iter()
            .map(|a| {
                let ty = self.expr(&a.value);
                ArgTy {
                    name: a.name.as_ref().map(|n| n.name.as_str()),
                    name_span: a.name.as_ref().map(|n| n.span),
                    ty: if reads_elements { self.element_of_0d(ty) } else { ty },
                    expr: &a.value,
                }
            })
            .collect();
        match target {
            Ty::Builtin(b) => {
                // Brackets on a builtin give a dtype (`tshared.alloc[f16]`,
                // `tile.zeros[f32]`); only creators take one.
                if brackets.is_some() && !matches!(b.shape, Shape::AllocShared | Shape::Create) {
                    self.not_a_kernel(callee, &format!("`{}`", b.path));
                }
                self.builtin_call(e, b, &arg_tys, brackets)
            }
            Ty::Function(name) => self.user_call(e, target_expr, &name, &arg_tys, brackets.is_some()),
            Ty::DTypeValue(d) => match arg_tys.first().map(|a| &a.ty) {
                Some(Ty::Tensor(t)) => Ty::Tensor(TensorTy {
                    dtype: Some(d),
                    ..t.clone()
                }),
                Some(Ty::Unknown) => Ty::Unknown,
                _ => Ty::Scalar(d),
            },
            Ty::Unknown | Ty::Policy(_) | Ty::Namespace(_) => Ty::Unknown,
            other => {
                self.error(
                    Diagnostic::error(
                        Code::E0214,
                        format!("`{}` is not callable", crate::pretty::expr(target_expr)),
                    )
                    .with_primary(self.at(target_expr.span), format!("this is {other}")),
                );
                Ty::Unknown
            }
        }
    }

    fn not_a_kernel(&mut self, callee: &Expr, what: &str) {
        self.error(
            Diagnostic::error(Code::E0207, format!("launch brackets on {what}, which is not a kernel"))
                .with_primary(
                    self.at(callee.span),
                    "only `@kernel` functions are launched with `[grid=..., block=...]`",
                )
                .with_help("call it without brackets, or mark it `@kernel`"),
        );
    }

    fn builtin_call(&mut self, e: &Expr, b: &'static Builtin, args: &[ArgTy], brackets: Option<&[Arg]>) -> Ty {
        self.info.calls.push(Call {
            span: e.span,
            target: CallTarget::Builtin(b),
            launched: false,
        });
        let effects = b.effects.minus(self.suspended);
        self.info.direct_effects = self.info.direct_effects.union(effects);
        if let Some((index, name)) = b.writes {
            let written = args
                .iter()
                .find(|a| a.name == Some(name))
                .or_else(|| args.iter().filter(|a| a.name.is_none()).nth(index));
            // An async copy's destination in global memory is refused as
            // such (E0203), not as a write to a parameter that is not `mut`.
            let global_copy = |a: &&ArgTy| {
                matches!(b.path, "tile.async_copy" | "tile.cp_async") && a.ty.shared_tensor() == Some(false)
            };
            if let Some(a) = written.filter(|a| !global_copy(a)) {
                self.check_store_target(a.expr);
            }
        }
        match (b.context, self.in_device_code()) {
            (Context::Kernel, false) => self.error(
                Diagnostic::error(Code::E0208, format!("`{}` can only be used inside a kernel", b.path))
                    .with_primary(self.at(e.span), "this is not a `@kernel` function")
                    .with_help("move this code into a `@kernel` function and launch it"),
            ),
            (Context::Host, true) => {
                let what = if self.sig.kind == FnKind::Device {
                    "a device function"
                } else {
                    "a kernel"
                };
                // An f-string's fields are calls of `format` and `repr`.
                let (message, help) = if matches!(b.path, "format" | "repr") {
                    (
                        format!("f-strings and `{}` cannot be used inside {what}", b.path),
                        "a kernel's `print` takes the values themselves: `print(\"i =\", i)`",
                    )
                } else {
                    (
                        format!("`{}` cannot be used inside {what}", b.path),
                        "do this on the host, before or after the launch",
                    )
                };
                self.error(
                    Diagnostic::error(Code::E0209, message)
                        .with_primary(self.at(e.span), format!("host-only operation in {what}"))
                        .with_help(help),
                );
                // What it would give does not exist here: unknown, so that
                // no rule reports the same mistake again.
                return Ty::Unknown;
            }
            // Operator-level functions work on whole tensors; kernels have
            // their tile forms.
            (_, true) if b.namespace() == Some("op") => {
                let what = if self.sig.kind == FnKind::Device {
                    "a device function"
                } else {
                    "a kernel"
                };
                let help = match builtins::lookup(&format!("tile.{}", b.name())) {
                    Some(t) => format!("in {what}, `{}` works on a register tile", t.path),
                    None => "call it from an operator function or the host, before or after the launch".to_string(),
                };
                self.error(
                    Diagnostic::error(Code::E0209, format!("`{}` cannot be used inside {what}", b.path))
                        .with_primary(self.at(e.span), format!("an operator-level function in {what}"))
                        .with_help(help),
                );
                return Ty::Unknown;
            }
            _ => {}
        }
        if self.check_arity(b, args, e.span) || self.check_builtin_args(b, args) {
            // Its result would follow from arguments it does not take:
            // unknown, so the error does not cascade.
            return Ty::Unknown;
        }
        let positional: Vec<&ArgTy> = args.iter().filter(|a| a.name.is_none()).collect();
        let keyword = |name: &str| args.iter().find(|a| a.name == Some(name));
        let first = positional.first().map(|a| a.ty.clone()).unwrap_or(Ty::Unknown);
        // The two tensors compared broadcast against each other: shapes of
        // constant dims that do not were found only when run (E0306). A
        // symbolic dim in host code (a helper's `f64[R]`) is known then.
        if matches!(b.path, "allclose" | "assert_allclose") {
            let side = |name: &str, k: usize| keyword(name).or_else(|| positional.get(k).copied());
            let constant = |t: &Ty| matches!(t, Ty::Tensor(TensorTy { dims: Some(d), .. }) if d.iter().all(|p| p.as_const().is_some()));
            if let (Some(actual), Some(expected)) = (side("actual", 0), side("expected", 1)) {
                if constant(&actual.ty) && constant(&expected.ty) {
                    let what = format!("`{}`", b.path);
                    if self.broadcast_op(&what, &actual.ty, &expected.ty, e.span, actual.expr, expected.expr)
                        == Ty::Unknown
                    {
                        return Ty::Unknown;
                    }
                }
            }
        }
        match b.shape {
            Shape::Scalar(d) => Ty::Scalar(d),
            Shape::Unit => Ty::None,
            Shape::Index => {
                // `len` of a number: Python's TypeError, where the kernel
                // build had stopped (E0903).
                if let (true, Some(x)) = (b.path == "len", positional.first()) {
                    let number = matches!(x.ty, Ty::Int | Ty::Float | Ty::Bool | Ty::Scalar(_))
                        || matches!(&x.ty, Ty::Tensor(t) if t.dims.as_ref().is_some_and(Vec::is_empty));
                    if number {
                        self.error(
                            Diagnostic::error(Code::E0203, format!("`len` of a number, {}", x.ty))
                                .with_primary(self.at(x.expr.span), format!("this is {}", x.ty))
                                .with_help("`len` gives the size of a tensor's first dim, or the length of a list, tuple or string"),
                        );
                    }
                }
                Ty::Int
            }
            Shape::Range => {
                if let Some(step) = positional
                    .get(2)
                    .filter(|a| matches!(a.expr.unparen().kind, ExprKind::Int(0)))
                {
                    self.error(
                        Diagnostic::error(Code::E0204, "`range` with a step of 0")
                            .with_primary(self.at(step.expr.span), "a step of 0")
                            .with_note("a range steps up or down by at least 1 (Python raises ValueError)"),
                    );
                }
                Ty::Range
            }
            // `enumerate(xs)` and `zip(xs, ys)`: lists of tuples of items.
            Shape::Opaque if b.path == "enumerate" => Ty::List(Box::new(Ty::Tuple(vec![
                Ty::Int,
                positional.first().map_or(Ty::Unknown, |a| item_of(a.ty.clone())),
            ]))),
            Shape::Opaque if b.path == "zip" => Ty::List(Box::new(Ty::Tuple(
                positional.iter().map(|a| item_of(a.ty.clone())).collect(),
            ))),
            // A group's methods are the builtins of the `group` namespace.
            Shape::Opaque if b.path == "tile.cooperative_group" => Ty::Namespace(builtins::GROUP),
            Shape::Opaque => Ty::Unknown,
            Shape::Text => Ty::Str,
            Shape::Policy => Ty::Policy(b.name().to_string()),
            Shape::SameAsFirst if matches!(b.path, "op.softmax" | "op.log_softmax" | "op.cumsum") => {
                if b.path != "op.cumsum" && !self.float_operand(b.path, positional.first().copied()) {
                    return Ty::Unknown;
                }
                let axis = positional.get(1).copied().or_else(|| keyword("axis"));
                match (&first, axis) {
                    (Ty::Tensor(t), Some(axis)) => self.axis_in_range(b.path, t, axis, e),
                    _ => first,
                }
            }
            // `min(a, b, …)` and `max` of numbers or tensors: of the
            // promoted type, as arithmetic on them (`min(i8, i16)` is an
            // i16, `min(i32, f32)` an f32), broadcast.
            Shape::SameAsFirst
                if matches!(b.path, "min" | "max")
                    && positional.len() >= 2
                    && keyword("key").is_none()
                    && positional
                        .iter()
                        .all(|a| matches!(a.ty, Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Tensor(_))) =>
            {
                let what = format!("`{}`", b.path);
                positional[1..].iter().fold(first, |ty, a| {
                    self.broadcast_op(&what, &ty, &a.ty, e.span, positional[0].expr, a.expr)
                })
            }
            Shape::SameAsFirst if matches!(b.path, "op.layernorm" | "op.rmsnorm") => {
                if !self.float_operand(b.path, positional.first().copied()) {
                    return Ty::Unknown;
                }
                let params: &[&str] = if b.path == "op.layernorm" {
                    &["weight", "bias"]
                } else {
                    &["weight"]
                };
                for (i, name) in params.iter().enumerate() {
                    let given = positional.get(i + 1).copied().or_else(|| keyword(name));
                    if let (Ty::Tensor(x), Some(given)) = (&first, given) {
                        self.norm_parameter(b.path, name, x, given);
                    }
                }
                first
            }
            Shape::SameAsFirst => first,
            Shape::FloatOfFirst => match first {
                Ty::Int => Ty::Float,
                Ty::Bool => Ty::Scalar(DType::F32),
                Ty::Scalar(d) if !d.is_float() => Ty::Scalar(DType::F32),
                Ty::Tensor(t) if t.dtype.is_some_and(|d| !d.is_float()) => Ty::Tensor(TensorTy {
                    dtype: Some(DType::F32),
                    ..t
                }),
                other => other,
            },
            Shape::Cast => match positional.get(1).map(|a| &a.ty) {
                Some(Ty::DTypeValue(d)) => match first {
                    Ty::Tensor(t) => Ty::Tensor(TensorTy { dtype: Some(*d), ..t }),
                    // Of a value of unknown type (`load(...)`'s): a tensor
                    // or a number, not known which.
                    Ty::Unknown => Ty::Unknown,
                    _ => Ty::Scalar(*d),
                },
                _ => Ty::Unknown,
            },
            Shape::Select => match (
                keyword("condition").or(positional.first().copied()),
                keyword("x").or(positional.get(1).copied()),
                keyword("y").or(positional.get(2).copied()),
            ) {
                (Some(c), Some(x), Some(y)) => self.select(e, c, x, y),
                _ => Ty::Unknown,
            },
            Shape::Broadcast => match positional.as_slice() {
                [a, c, ..] => self.broadcast_op(&format!("`{}`", b.path), &a.ty, &c.ty, e.span, a.expr, c.expr),
                _ => first,
            },
            Shape::Attention => match positional.as_slice() {
                [q, k, v, ..] => self.attention([q, k, v], e.span),
                _ => Ty::Unknown,
            },
            Shape::Matmul => match positional.as_slice() {
                [a, c, ..] => {
                    let acc = keyword("accumulate").and_then(|a| {
                        a.ty.dtype().or(match a.ty {
                            Ty::DTypeValue(d) => Some(d),
                            _ => None,
                        })
                    });
                    if let Some(tile) = keyword("tile_shape") {
                        self.matmul_tile_shape(tile.expr);
                    }
                    self.matmul(&a.ty, &c.ty, e.span, a.expr, c.expr, acc)
                }
                _ => Ty::Unknown,
            },
            Shape::Reduce => {
                let keep = self.keepdims(keyword("keepdims"));
                let axis = keyword("axis").or(positional.get(1).copied());
                if matches!(b.path, "op.max" | "op.min") {
                    self.nonempty_reduction(e, b.path, &first, axis);
                }
                // A sum of bools counts them, as NumPy's does (an i64).
                // A mean, variance or deviation of integers or bools is
                // an f32, as the host's is (NumPy's is a float too).
                let first = match first {
                    Ty::Tensor(t) if b.path == "op.sum" && t.dtype == Some(DType::Bool) => Ty::Tensor(TensorTy {
                        dtype: Some(DType::I64),
                        ..t
                    }),
                    Ty::Tensor(t)
                        if matches!(b.path, "op.mean" | "op.var" | "op.std")
                            && t.dtype.is_some_and(|d| !d.is_float()) =>
                    {
                        Ty::Tensor(TensorTy {
                            dtype: Some(DType::F32),
                            ..t
                        })
                    }
                    other => other,
                };
                self.reduce(e, &first, axis, keep)
            }
            Shape::ArgReduce => {
                let keep = self.keepdims(keyword("keepdims"));
                let axis = keyword("axis").or(positional.get(1).copied());
                self.nonempty_reduction(e, b.path, &first, axis);
                match self.reduce(e, &first, axis, keep) {
                    Ty::Tensor(t) => Ty::Tensor(TensorTy {
                        dtype: Some(DType::I64),
                        ..t
                    }),
                    Ty::Scalar(_) => Ty::Scalar(DType::I64),
                    other => other,
                }
            }
            Shape::Transpose => self.transpose(
                e,
                &first,
                keyword("perm").or(positional.get(1).copied()),
                keyword("dims"),
            ),
            Shape::Reshape => self.reshape(e, &first, keyword("shape").or(positional.get(1).copied())),
            Shape::Concat => self.concat(
                e,
                keyword("tensors").or(positional.first().copied()),
                keyword("axis").or(positional.get(1).copied()),
            ),
            Shape::Stack => self.stack(
                e,
                keyword("tensors").or(positional.first().copied()),
                keyword("axis").or(positional.get(1).copied()),
            ),
            Shape::Create | Shape::AllocShared => {
                let dtype = brackets
                    .and_then(|br| br.first())
                    .and_then(|a| match &a.value.kind {
                        ExprKind::Name(n) => DType::from_name(n),
                        _ => None,
                    })
                    .or_else(|| {
                        keyword("dtype").and_then(|a| match a.ty {
                            Ty::DTypeValue(d) => Some(d),
                            _ => None,
                        })
                    })
                    .or((b.shape == Shape::Create).then_some(DType::F32));
                // A shared buffer given dims takes its dtype in brackets
                // (without one the lowering reported a shape it could not
                // know, E0903); seed 003's `tile.alloc_shared()`, of
                // neither, takes both from the copies into it.
                let no_dtype = brackets.is_none_or(<[Arg]>::is_empty) && keyword("dtype").is_none();
                if b.shape == Shape::AllocShared && no_dtype && !positional.is_empty() {
                    self.error(
                        Diagnostic::error(Code::E0204, format!("`{}` takes its dtype in brackets", b.path))
                            .with_primary(self.at(e.span), "a buffer of no dtype")
                            .with_help(format!("write `{}[f32](…)`", b.path)),
                    );
                    return Ty::Unknown;
                }
                // `arange(start, stop[, step])`: one dim, of the range's
                // length (known when the bounds are literals); its numbers
                // are no sizes.
                if b.path == "arange" && positional.len() > 1 {
                    let bound = |i: usize| {
                        positional
                            .get(i)
                            .and_then(|a| self.sizes.substitute(&dim_poly(a.expr)).as_const())
                    };
                    let step = if positional.len() > 2 { bound(2) } else { Some(1) };
                    let dims = match (bound(0), bound(1), step) {
                        (Some(start), Some(stop), Some(step)) if step != 0 => {
                            i64::try_from(range_len(start, stop, step))
                                .ok()
                                .map(|n| vec![Poly::constant(n)])
                        }
                        _ => None,
                    };
                    return Ty::Tensor(TensorTy {
                        dtype,
                        dims,
                        space: None,
                    });
                }
                // `full(*shape, value)`: the last positional is the value
                // when it is not passed by keyword.
                let sizes = match (b.path, keyword("value")) {
                    ("full", None) => &positional[..positional.len().saturating_sub(1)],
                    _ => &positional[..],
                };
                // `zeros((2, 3))`: the shape as one tuple, as NumPy takes it.
                let items: Vec<&Expr> = match sizes {
                    [one] => match &one.expr.unparen().kind {
                        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().collect(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let dims: Vec<Poly> = if !items.is_empty() {
                    items.into_iter().map(|e| self.sizes.substitute(&dim_poly(e))).collect()
                } else {
                    sizes
                        .iter()
                        .filter(|a| match &a.ty {
                            Ty::Int | Ty::Unknown => true,
                            Ty::Scalar(d) => d.is_int(),
                            _ => false,
                        })
                        .map(|a| self.sizes.substitute(&dim_poly(a.expr)))
                        .collect()
                };
                // A draw in kernel code without a shape is one value per thread.
                if let (Some("rng"), true, true) = (b.namespace(), dims.is_empty(), self.in_device_code()) {
                    return dtype.map_or(Ty::Unknown, Ty::Scalar);
                }
                if let Some(negative) = dims.iter().find(|d| d.as_const().is_some_and(|c| c < 0)) {
                    self.error(
                        Diagnostic::error(Code::E0204, format!("`{}` of a negative size, {negative}", b.path))
                            .with_primary(self.at(e.span), "a negative size")
                            .with_note(if b.shape == Shape::AllocShared {
                                "every dim of a shared buffer is 1 or more"
                            } else {
                                "every dim of a tensor is 0 or more"
                            }),
                    );
                    return Ty::Unknown;
                }
                if let (Shape::AllocShared, Some(zero)) = (b.shape, dims.iter().find(|d| d.as_const() == Some(0))) {
                    self.error(
                        Diagnostic::error(Code::E0204, format!("`{}` of a size of {zero}", b.path))
                            .with_primary(self.at(e.span), "a shared buffer of no elements")
                            .with_note("every dim of a shared buffer is 1 or more"),
                    );
                    return Ty::Unknown;
                }
                let space = (b.shape == Shape::AllocShared).then_some(Space::Shared);
                // A buffer sized when the kernel runs is laid out plainly.
                let laid_out = [keyword("swizzle"), keyword("bank_pad")]
                    .into_iter()
                    .flatten()
                    .find(|a| !matches!(a.expr.kind, ExprKind::Int(0) | ExprKind::None));
                let runtime = dims.iter().find(|d| d.as_const().is_none());
                if let (Shape::AllocShared, Some(layout), Some(runtime)) = (b.shape, laid_out, runtime) {
                    self.error(
                        Diagnostic::error(
                            Code::E0806,
                            "a shared buffer sized when the kernel runs is not swizzled or padded",
                        )
                        .with_primary(self.at(layout.expr.span), "this lays the buffer out")
                        .with_secondary(
                            self.at(e.span),
                            format!("`{runtime}` is known only when the kernel runs"),
                        )
                        .with_help("size a swizzled or padded buffer with constants"),
                    );
                    return Ty::Unknown;
                }
                if let (Shape::AllocShared, Some(swizzle)) = (b.shape, keyword("swizzle")) {
                    self.check_swizzle(e, swizzle, keyword("bank_pad"), &dims, dtype);
                }
                // `tile.alloc_shared()` with no dims has a rank fixed later.
                let dims = (!dims.is_empty() || b.shape == Shape::Create).then_some(dims);
                Ty::Tensor(TensorTy { dtype, dims, space })
            }
        }
    }

    /// The arguments the rules of a few builtins constrain: the launch
    /// geometry's `axis` is 0, 1 or 2; bitwise atomics and `tile.popcount`
    /// take integers.
    /// A kernel's `print` formats scalars and string literals (the runtime
    /// formats the values it records, `spec/kernels.md`, "Printing"); a
    /// tensor is printed on the host.
    fn check_kernel_print(&mut self, args: &[ArgTy]) {
        for a in args {
            let literal = matches!(a.expr.unparen().kind, ExprKind::Str(_));
            if a.name == Some("end") {
                self.error(
                    Diagnostic::error(Code::E0204, "a kernel's `print` has no `end`")
                        .with_primary(self.at(a.expr.span), "each record is a line of its own")
                        .with_help("remove `end=`; the runtime shows each thread's print on its own line"),
                );
                continue;
            }
            if a.name == Some("sep") {
                if !literal {
                    self.error(
                        Diagnostic::error(Code::E0204, "the `sep` of a kernel's `print` is a string literal")
                            .with_primary(self.at(a.expr.span), "not a string literal")
                            .with_help("write the separator in the call, `sep=\", \"`"),
                    );
                }
                continue;
            }
            let (label, help) = match &a.ty {
                Ty::Unknown | Ty::Int | Ty::Float | Ty::Bool | Ty::Scalar(_) => continue,
                Ty::Str if literal => continue,
                Ty::Str => (
                    "a string that is not a literal".to_string(),
                    "a kernel prints string literals: write the text in the call",
                ),
                Ty::Tensor(_) => (
                    format!("`{}`", a.ty),
                    "print one element, `x[i]`, or print the tensor on the host after the launch",
                ),
                other => (format!("`{other}`"), "print its scalars one by one"),
            };
            self.error(
                Diagnostic::error(Code::E0209, "a kernel prints scalars and string literals")
                    .with_primary(self.at(a.expr.span), label)
                    .with_help(help),
            );
        }
    }

    /// E0203 for a dtype written as a string (`cast(x, "f16")`,
    /// `zeros(4, dtype="float16")`): a dtype is a name.
    fn quoted_dtype(&mut self, b: &Builtin, text: &str, arg: &ArgTy) {
        let mut diag = Diagnostic::error(Code::E0203, format!("`{}` takes a dtype, not a string", b.path))
            .with_primary(self.at(arg.expr.span), "a string");
        diag = match DType::from_name(text).or_else(|| did_you_mean(text, ALL_DTYPES.iter().map(|d| d.name())).and_then(DType::from_name)) {
            Some(d) => diag.with_help(format!("write the dtype as a name: `{}`", d.name())).with_fix(
                Fix::new(format!("write `{}`", d.name()), Applicability::MachineApplicable)
                    .with_edit(self.at(arg.expr.span), d.name()),
            ),
            None => diag.with_note("the dtypes are f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2, fp4_e2m1, nvfp4, i8–i64, u8–u64 and bool"),
        };
        self.error(diag);
    }

    /// Checks the arguments of a call of `b`; whether one was refused
    /// (an unknown keyword, a dtype written as a string), which leaves the
    /// call's result unknown.
    fn check_builtin_args(&mut self, b: &Builtin, args: &[ArgTy]) -> bool {
        let names = b.param_names();
        let mut refused = false;
        // A function is a value only for `key=` (and to print).
        if !matches!(b.path, "print" | "str" | "repr") {
            for arg in args.iter().filter(|a| a.name != Some("key")) {
                refused |= self.function_as_value(&arg.ty, arg.expr);
            }
        }
        // A host list, tuple or string where a tensor is computed with:
        // it had passed the check and stopped the run (E1005).
        let takes_tensors = b.namespace() == Some("op")
            || b.shape == Shape::FloatOfFirst
            || matches!(b.path, "allclose" | "assert_allclose");
        let mut position = 0;
        for arg in args {
            let param = arg.name.or_else(|| {
                position += 1;
                names.get(position - 1).copied()
            });
            let tensor_param = matches!(
                param,
                Some("x" | "a" | "b" | "q" | "k" | "v" | "condition" | "target" | "values" | "actual" | "expected")
            );
            if takes_tensors && tensor_param {
                refused |= self.not_a_tensor(&arg.ty, arg.expr, &|kind| {
                    format!("`{}` takes a tensor, not a {kind}", b.path)
                });
            }
            if let (Some("dtype" | "accumulate"), ExprKind::Str(text)) = (param, &arg.expr.unparen().kind) {
                self.quoted_dtype(b, text, arg);
                refused = true;
            }
        }
        for arg in args {
            let Some(name) = arg.name.filter(|n| !names.contains(n)) else {
                continue;
            };
            refused = true;
            // PyTorch's and NumPy's names for the same parameters.
            let alias = match name {
                "dim" => Some("axis"),
                "keepdim" => Some("keepdims"),
                "input" => Some("x"),
                "axes" | "dims" => Some("perm"),
                "size" => Some("shape"),
                "generator" => Some("seed"),
                _ => None,
            }
            .filter(|a| names.contains(a));
            let near = alias.or_else(|| did_you_mean(name, names.iter().copied()));
            let diag = crate::builtins::unknown_keyword(
                b,
                name,
                self.at(arg.name_span.unwrap_or(arg.expr.span)),
                arg.name_span.map(|at| self.at(at)),
                near,
            );
            self.error(diag);
        }
        let first = args.iter().find(|a| a.name.is_none());
        if b.name().starts_with("atomic_") {
            let target = args.iter().find(|a| a.name == Some("target")).or(first);
            if let Some(target) = target {
                let element = matches!(target.expr.unparen().kind, ExprKind::Subscript { .. })
                    && !matches!(target.ty, Ty::Tensor(_));
                if !element {
                    refused = true;
                    self.error(
                        Diagnostic::error(
                            Code::E0204,
                            format!("the target of `{}` is one element of a tensor or shared buffer", b.path),
                        )
                        .with_primary(self.at(target.expr.span), format!("this is {}", target.ty))
                        .with_help(format!(
                            "index one element, as in `{}(x[i], …)`; to combine many, give each its own atomic or reduce them first",
                            b.path
                        )),
                    );
                }
            }
        }
        if builtins::GEOMETRY.contains(&b.path) {
            let axis = args.iter().find(|a| a.name == Some("axis")).or(first);
            if let Some(axis) = axis.filter(|a| !matches!(a.expr.unparen().kind, ExprKind::None)) {
                let value = axis.expr.int_value();
                if !value.is_some_and(|v| (0..3).contains(&v)) {
                    let label = match value {
                        Some(v) => format!("axis {v}"),
                        None => "not a constant".to_string(),
                    };
                    self.error(
                        Diagnostic::error(Code::E0204, format!("the `axis` of `{}` is 0, 1 or 2", b.path))
                            .with_primary(self.at(axis.expr.span), label)
                            .with_help("x is 0, y is 1, z is 2; leave `axis` out for the linear index"),
                    );
                }
            }
            return refused;
        }
        // A string that names one of a few choices (E0901 at the IR
        // verifier, before, for `tile.reduce(x, op="add")`).
        for (path, param, choices, default) in crate::builtins::CHOICES {
            if path != b.path {
                continue;
            }
            let position = names.iter().position(|n| *n == param);
            let given = args
                .iter()
                .find(|a| a.name == Some(param))
                .or_else(|| position.and_then(|k| args.iter().filter(|a| a.name.is_none()).nth(k)));
            let Some(given) = given else { continue };
            if let Some(diag) =
                crate::builtins::unknown_choice(path, param, choices, default, given.expr, self.at(given.expr.span))
            {
                self.error(diag);
                refused = true;
            }
        }
        let positional: Vec<&ArgTy> = args.iter().filter(|a| a.name.is_none()).collect();
        // `save(x, "out.npy")`: NumPy's order is the path, then the array.
        if let ("save", [tensor, path]) = (b.path, positional.as_slice()) {
            if matches!(tensor.ty, Ty::Tensor(_)) && path.ty == Ty::Str {
                self.swapped(
                    "`save` takes the path, then the tensor",
                    [tensor, path],
                    "the tensor is the second argument",
                    "as `numpy.save` takes them",
                    b.path,
                );
                return true;
            }
        }
        // `cast(f16, x)`: the dtype first, as in C++'s `static_cast<T>(x)`
        // (the build stopped at the name `f16`, E0903).
        if let ("cast", [dtype, value, ..]) = (b.path, positional.as_slice()) {
            if matches!(dtype.ty, Ty::DTypeValue(_)) && !matches!(value.ty, Ty::DTypeValue(_)) {
                self.swapped(
                    "`cast` takes the value, then the dtype",
                    [dtype, value],
                    "the dtype is the second argument",
                    "as `cast(x, dtype)` takes them",
                    b.path,
                );
                return true;
            }
        }
        // A random draw's stream is a named stream (`stream=3` stopped the
        // build, E0903, and a tensor, `stream=op.relu(x)`, likewise).
        if b.path.starts_with("rng.") && b.path != "rng.stream" || b.path == "op.dropout" {
            let stream = args.iter().find(|a| a.name == Some("stream"));
            let literal = stream.filter(|s| {
                matches!(s.expr.unparen().kind, ExprKind::Int(_) | ExprKind::Str(_))
                    || matches!(
                        s.ty,
                        Ty::Tensor(_)
                            | Ty::Scalar(_)
                            | Ty::Int
                            | Ty::Float
                            | Ty::Bool
                            | Ty::Str
                            | Ty::List(_)
                            | Ty::Tuple(_)
                    )
            });
            if let Some(stream) = literal {
                let mut diag = Diagnostic::error(Code::E0203, "a random draw's `stream` is a named stream")
                    .with_primary(self.at(stream.expr.span), format!("this is {}", stream.ty));
                diag = match &stream.expr.unparen().kind {
                    ExprKind::Str(name) => diag.with_help(format!("name it with `rng.stream(\"{name}\")`")).with_fix(
                        Fix::new("make it a stream", Applicability::MachineApplicable)
                            .with_edit(self.at(stream.expr.span), format!("rng.stream(\"{name}\")")),
                    ),
                    _ => diag.with_help(
                        "make one with `rng.stream(\"name\")`: draws of one name and seed give the same values wherever they run",
                    ),
                };
                self.error(diag);
                refused = true;
            }
        }
        // A cooperative group holds at least one thread (`size=0` divided
        // by zero when run).
        if b.path == "tile.cooperative_group" {
            let size = args
                .iter()
                .find(|a| a.name == Some("size"))
                .or(positional.first().copied());
            if let Some(size) = size.filter(|s| crate::signature::int(s.expr).is_some_and(|v| v < 1)) {
                self.error(
                    Diagnostic::error(Code::E0204, "a cooperative group has at least one thread")
                        .with_primary(self.at(size.expr.span), "no thread")
                        .with_help("give the group's threads, a divisor of the block's (`size=32` for a warp)"),
                );
                refused = true;
            }
        }
        if matches!(b.path, "tshared.alloc" | "tile.alloc_shared") {
            // Sizes are integers (`128.0` was reported three lines later,
            // as a tensor stored into one element).
            for dim in &positional {
                if let Some(float) = refused_number(&dim.ty, |d| !d.is_float()) {
                    self.error(
                        Diagnostic::error(Code::E0203, format!("a shared buffer's dims are integers, not {float}"))
                            .with_primary(self.at(dim.expr.span), format!("this is {}", dim.ty))
                            .with_help("write the size as an integer (`128`), or convert it with `int(…)`"),
                    );
                    refused = true;
                }
            }
            let pad = args.iter().find(|a| a.name == Some("bank_pad"));
            if let Some(pad) = pad.filter(|p| crate::signature::int(p.expr).is_some_and(|v| v < 0)) {
                self.error(
                    Diagnostic::error(Code::E0204, "`bank_pad` is a count of elements, 0 or more")
                        .with_primary(self.at(pad.expr.span), "a negative padding")
                        .with_help("pad each row by the elements that shift it to another bank (`bank_pad=8` for f16 rows), or leave it out"),
                );
                refused = true;
            }
        }
        if b.path == "op.dropout" {
            // Dropout scales the kept values by 1 / (1 - p): floats only
            // (an integer input reached the graph verifier, E0901).
            self.float_operand(b.path, first);
            return refused;
        }
        if b.path == "op.gelu" {
            // GELU keeps its input's dtype, which must be a float one.
            self.float_operand(b.path, args.iter().find(|a| a.name.is_none()));
            if let Some(form) = args.iter().find(|a| a.name == Some("approximate")).or(args.get(1)) {
                let named = match &form.expr.unparen().kind {
                    ExprKind::Str(s) => Some(s.as_str()),
                    _ => None,
                };
                if !matches!(named, Some("none" | "tanh")) {
                    let label = match named {
                        Some(s) => format!("\"{s}\""),
                        None => "not a string literal".to_string(),
                    };
                    self.error(
                        Diagnostic::error(Code::E0204, "the `approximate` of `op.gelu` is \"none\" or \"tanh\"")
                            .with_primary(self.at(form.expr.span), label)
                            .with_help("\"none\" (the default) is the exact form with `erf`, \"tanh\" the tanh approximation, as in PyTorch"),
                    );
                }
            }
            return refused;
        }
        if b.path == "print" && self.in_device_code() {
            self.check_kernel_print(args);
            return refused;
        }
        if b.path == "bitcast" {
            let to = args.iter().filter(|a| a.name.is_none()).nth(1).map(|a| &a.ty);
            if let (Some(first), Some(Ty::DTypeValue(to))) = (first, to) {
                if let Some(from) = first.ty.dtype().filter(|d| d.bits() != to.bits()) {
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!(
                                "`bitcast` keeps the width: `{}` has {} bits, `{}` {}",
                                from.name(),
                                from.bits(),
                                to.name(),
                                to.bits()
                            ),
                        )
                        .with_primary(self.at(first.expr.span), format!("this is `{}`", from.name()))
                        .with_help("read the bits as a type of the same width (`f32` and `u32`, `f64` and `i64`)"),
                    );
                }
            }
            return refused;
        }
        // No atomic updates a bool (LLVM's atomics take 8 bits at least:
        // `atomicrmw umax i1` stopped the build with E0904).
        if let (true, Some(first)) = (b.name().starts_with("atomic_"), first) {
            if first.ty.dtype() == Some(DType::Bool) {
                self.error(
                    Diagnostic::error(Code::E0203, format!("`{}` takes no bool element", b.path))
                        .with_primary(self.at(first.expr.span), format!("this is {}", first.ty))
                        .with_help(format!(
                            "keep the flag in an integer (`i32`, 0 or 1) and update it with `{}(flag[0], 1)`",
                            b.path
                        )),
                );
                return true;
            }
        }
        // A vote's predicate is a condition: a float one (`vote_any(x)`)
        // had been read as `x != 0`, where CUDA's `__any_sync` truncates
        // it to an int first, so 0.5 is false there.
        let vote = matches!(b.path, "tile.vote_any" | "tile.vote_all" | "tile.vote_ballot");
        if let (true, Some(first)) = (vote, first) {
            if let Some(name) = refused_number(&first.ty, |d| !d.is_float()) {
                let written = crate::pretty::expr(first.expr);
                let compared = format!("{written} != 0.0");
                self.error(
                    Diagnostic::error(Code::E0203, format!("`{}` takes a condition, not `{name}`", b.path))
                        .with_primary(self.at(first.expr.span), format!("this is `{name}`"))
                        .with_help(format!("compare it: `{compared}`"))
                        .with_fix(
                            Fix::new(format!("compare with `{compared}`"), Applicability::MaybeIncorrect)
                                .with_edit(self.at(first.expr.span), compared.clone()),
                        ),
                );
            }
        }
        let integers_only = matches!(b.path, "atomic_and" | "atomic_or" | "atomic_xor" | "tile.popcount");
        if let (true, Some(first)) = (integers_only, first) {
            if let Some(name) = refused_number(&first.ty, |d| d.is_int()) {
                self.error(
                    Diagnostic::error(Code::E0203, format!("`{}` takes an integer, not `{name}`", b.path))
                        .with_primary(self.at(first.expr.span), format!("this is `{name}`"))
                        .with_help("bitwise operations work on the bits of integers"),
                );
            }
        }
        // fp8 and fp4 values are storage: no atomic computes one (LLVM has
        // no such float types); one may be exchanged or compared and
        // swapped as its bits.
        let computes = matches!(b.path, "atomic_add" | "atomic_max" | "atomic_min");
        if let (true, Some(first)) = (computes, first) {
            if let Some(d) = first.ty.dtype().filter(|d| d.is_float() && d.bits() < 16) {
                self.error(
                    Diagnostic::error(Code::E0203, format!("`{}` takes no {d} values", b.path))
                        .with_primary(self.at(first.expr.span), format!("this is {}", first.ty))
                        .with_help("fp8 and fp4 are storage formats: keep the value updated atomically in f16, f32 or an integer"),
                );
            }
            // A float added to an integer element: the lowering computed
            // in the float's type and stored into the integer (E0901).
            let value = args
                .iter()
                .filter(|a| a.name.is_none())
                .nth(1)
                .or(args.iter().find(|a| a.name == Some("value")));
            let target = first.ty.dtype().filter(|d| d.is_int());
            if let (Some(t), Some(v)) = (target, value) {
                if let Some(float) = refused_number(&v.ty, |d| !d.is_float()) {
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!(
                                "`{}` into an {} element takes an integer, not {float}",
                                b.path,
                                t.name()
                            ),
                        )
                        .with_primary(self.at(v.expr.span), format!("this is {}", v.ty))
                        .with_help(format!("convert the value to the element's type: `{}(…)`", t.name())),
                    );
                }
            }
        }
        // Random draws are floats: an integer `dtype=` reached the IR
        // verifiers (E0901).
        if matches!(b.path, "rand" | "randn" | "rng.uniform" | "rng.normal") {
            if let Some(dtype) = args.iter().find(|a| a.name == Some("dtype")) {
                if let Ty::DTypeValue(d) = dtype.ty {
                    if !d.is_float() {
                        self.error(
                            Diagnostic::error(Code::E0203, format!("`{}` draws floats, not {}", b.path, d.name()))
                                .with_primary(self.at(dtype.expr.span), "not a float type")
                                .with_help(format!(
                                    "draw floats and convert them: `cast({}(…), {})`",
                                    b.path,
                                    d.name()
                                )),
                        );
                    }
                }
            }
        }
        // An asynchronous copy moves elements as they are: into a buffer
        // of the source's dtype (the Tile IR verifier reported E0901).
        if matches!(b.path, "tile.async_copy" | "tile.cp_async") {
            let mut operands = args.iter().filter(|a| a.name.is_none());
            let dst = args.iter().find(|a| a.name == Some("dst")).or(operands.next());
            let src = args.iter().find(|a| a.name == Some("src")).or(operands.next());
            if let (Some(dst), Some(src)) = (dst, src) {
                // Into shared memory only: a global destination stopped the
                // build (E0903), and a swapped pair was offered `mut`.
                if dst.ty.shared_tensor() == Some(false) {
                    let (d, s) = (crate::pretty::expr(dst.expr), crate::pretty::expr(src.expr));
                    let mut diag = Diagnostic::error(
                        Code::E0203,
                        format!(
                            "`{}` copies into a shared buffer, and `{d}` is in global memory",
                            b.path
                        ),
                    )
                    .with_primary(self.at(dst.expr.span), format!("this is {}", dst.ty));
                    diag = if src.ty.shared_tensor() == Some(true) && dst.name.is_none() && src.name.is_none() {
                        diag.with_help(format!("the destination comes first: `{}({s}, {d}, …)`", b.path))
                            .with_fix(self.swap_fix("swap the destination and the source", [dst, src]))
                    } else {
                        diag.with_help("copy into a buffer of `tshared.alloc`, or write global memory with a store (`out[i] = x[i]`)")
                    };
                    self.error(diag);
                    return true;
                }
                let tensors = matches!(dst.ty, Ty::Tensor(_)) && matches!(src.ty, Ty::Tensor(_));
                if let (true, Some(d), Some(s)) = (tensors, dst.ty.dtype(), src.ty.dtype()) {
                    if d != s {
                        self.error(
                            Diagnostic::error(
                                Code::E0203,
                                format!("`{}` copies {s} elements into a buffer of {d}", b.path),
                            )
                            .with_primary(self.at(src.expr.span), format!("this is {}", src.ty))
                            .with_secondary(self.at(dst.expr.span), format!("this is {}", dst.ty))
                            .with_help(
                                "an asynchronous copy converts nothing: allocate the buffer with the source's dtype",
                            ),
                        );
                    }
                }
                // It fills the buffer: a source of another known shape
                // (`A[7:128]` into 128) would be read past its end.
                if let (Ty::Tensor(d), Ty::Tensor(s)) = (&dst.ty, &src.ty) {
                    let consts =
                        |t: &TensorTy| -> Option<Vec<i64>> { t.dims.as_ref()?.iter().map(|d| d.as_const()).collect() };
                    if let (Some(dd), Some(sd)) = (consts(d), consts(s)) {
                        if dd != sd {
                            self.error(
                                Diagnostic::error(
                                    Code::E0203,
                                    format!("`{}` copies {} into a buffer of {}", b.path, src.ty, dst.ty),
                                )
                                .with_primary(self.at(src.expr.span), format!("this is {}", src.ty))
                                .with_secondary(self.at(dst.expr.span), format!("this is {}", dst.ty))
                                .with_help("a copy fills the whole buffer: slice the source to the buffer's shape"),
                            );
                        }
                    }
                }
            }
        }
        // `tile.mma`'s tile sizes are positive constants, and its
        // accumulator `C` is f32, what the loop accumulates in (the Tile IR
        // verifier reported E0901; a tile of 0 referred to no shared memory),
        // in whole 16-wide fragments (`BK=255` kept LLVM's AMDGPU pipeline
        // busy for minutes on a scalar product it unrolled).
        if b.path == "tile.mma" {
            for name in ["BM", "BN", "BK"] {
                let Some(size) = args.iter().find(|a| a.name == Some(name)) else {
                    continue;
                };
                match size.expr.int_value() {
                    Some(v) if v > 0 && v % 16 == 0 => {}
                    Some(v) if v > 0 => self.error(
                        Diagnostic::error(
                            Code::E0204,
                            format!("`tile.mma`'s `{name}` is a multiple of 16, not {v}"),
                        )
                        .with_primary(self.at(size.expr.span), "not a whole number of 16-wide fragments")
                        .with_help(format!(
                            "the tensor cores multiply 16-wide fragments on every target: take `{name}={}`",
                            (v + 15) / 16 * 16
                        )),
                    ),
                    _ => self.error(
                        Diagnostic::error(
                            Code::E0204,
                            format!("`tile.mma`'s `{name}` is a positive integer constant"),
                        )
                        .with_primary(self.at(size.expr.span), "not a positive constant")
                        .with_help("the tile sizes fix the kernel's shared memory and registers when it is compiled"),
                    ),
                }
            }
            let operands: Vec<&ArgTy> = args.iter().filter(|a| a.name.is_none()).collect();
            // Tensor cores multiply two operands of one dtype: `tile.mma`
            // takes no conversion between them.
            if let [a, bb, ..] = operands[..] {
                if let Some((da, db)) = a.ty.dtype().zip(bb.ty.dtype()).filter(|(da, db)| da != db) {
                    let promoted =
                        crate::ty::promote(Some(da), Some(db)).map_or("f32".into(), |d| d.name().to_string());
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!("`tile.mma` multiplies A and B of one dtype, not {da} and {db}"),
                        )
                        .with_primary(self.at(bb.expr.span), format!("this is {}, A is {da}", bb.ty))
                        .with_secondary(self.at(a.expr.span), format!("A is {da}"))
                        .with_help(format!(
                            "declare both as one dtype, or multiply with `tile.dot`, which converts to their promotion (`{promoted}`)"
                        )),
                    );
                }
            }
            if let Some((c, dc)) = operands
                .get(2)
                .and_then(|c| Some((*c, c.ty.dtype()?)))
                .filter(|(_, d)| *d != DType::F32)
            {
                self.error(
                    Diagnostic::error(Code::E0203, format!("`tile.mma` accumulates in f32, not {dc}"))
                        .with_primary(self.at(c.expr.span), format!("this is {}", c.ty))
                        .with_help("declare the accumulator `C` as f32; convert the result afterwards"),
                );
            }
        }
        // A tile's softmax along an axis it has (the Tile IR verifier
        // reported another as E0901).
        if b.path == "tile.softmax" {
            let axis = args
                .iter()
                .find(|a| a.name == Some("axis"))
                .or(args.iter().filter(|a| a.name.is_none()).nth(1));
            if let (Some(Ty::Tensor(TensorTy { dims: Some(dims), .. })), Some(axis)) = (first.map(|f| &f.ty), axis) {
                let rank = dims.len() as i64;
                match axis.expr.int_value() {
                    Some(k) if !(-rank..rank).contains(&k) => {
                        let (message, label) = axis_out_of_range(k, rank);
                        self.error(
                            Diagnostic::error(Code::E0307, message).with_primary(self.at(axis.expr.span), label),
                        );
                    }
                    // Every target generates it along the rows (the code
                    // generator reported another axis as E0904).
                    Some(k) if k != -1 && k != rank - 1 => self.error(
                        Diagnostic::error(Code::E0204, "`tile.softmax` works along a tile's last axis")
                            .with_primary(self.at(axis.expr.span), format!("axis {k} of a tile of {rank} dims"))
                            .with_help("lay the tile out with the softmax's axis last, or leave `axis` out"),
                    ),
                    _ => {}
                }
            }
        }
        // Votes, popcounts, an atomic's values, a shuffle's lane and a
        // loop's bounds are one scalar per thread in kernel code.
        let scalars: &[usize] = match b.path {
            "tile.vote_any" | "tile.vote_all" | "tile.vote_ballot" | "tile.popcount" => &[0],
            "tile.warp_shuffle_down" | "tile.warp_shuffle_up" | "tile.warp_shuffle_xor" | "tile.warp_shuffle" => &[1],
            "range" => &[0, 1, 2],
            path if path.starts_with("atomic_") => &[1, 2],
            _ => &[],
        };
        for (i, arg) in args.iter().filter(|a| a.name.is_none()).enumerate() {
            if scalars.contains(&i) {
                self.device_scalar(&arg.ty, arg.expr, &format!("an argument of `{}`", b.path));
            }
        }
        // A shuffle moves one scalar a lane; a tensor is moved an element
        // at a time.
        let shuffle = matches!(
            b.path,
            "tile.warp_shuffle_down" | "tile.warp_shuffle_up" | "tile.warp_shuffle_xor" | "tile.warp_shuffle"
        );
        // The lane offset (or lane, or XOR mask) is an integer, as a
        // bitwise operand is (a float was truncated silently).
        let lane = args.iter().filter(|a| a.name.is_none()).nth(1);
        if let (true, Some(lane)) = (shuffle, lane) {
            if let Some(name) = refused_number(&lane.ty, |d| !d.is_float()) {
                self.error(
                    Diagnostic::error(
                        Code::E0203,
                        format!("`{}` takes an integer lane offset, not `{name}`", b.path),
                    )
                    .with_primary(self.at(lane.expr.span), format!("this is `{name}`"))
                    .with_help("lanes are counted in whole numbers: convert with `i32(…)`"),
                );
            }
        }
        if let (true, Some(first)) = (shuffle, first) {
            if let Ty::Tensor(_) = &first.ty {
                self.error(
                    Diagnostic::error(
                        Code::E0203,
                        format!("`{}` moves a scalar between lanes, not a tensor", b.path),
                    )
                    .with_primary(self.at(first.expr.span), format!("this is {}", first.ty))
                    .with_help("shuffle one element, `x[i]`, and store the result"),
                );
            }
        }
        refused
    }

    /// A numeric `swizzle=` of a shared allocation: a span of 32, 64 or 128
    /// bytes, over the last two dims (rows in multiples of 8, rows of whole
    /// spans), and never beside `bank_pad` (`spec/memory.md`).
    fn check_swizzle(&mut self, e: &Expr, swizzle: &ArgTy, pad: Option<&ArgTy>, dims: &[Poly], dtype: Option<DType>) {
        let Some(span) = swizzle.expr.int_value() else {
            return;
        };
        let at = self.at(swizzle.expr.span);
        let error = |message: String, label: String| Diagnostic::error(Code::E0311, message).with_primary(at, label);
        if ![32, 64, 128].contains(&span) {
            self.error(
                error(
                    format!("a swizzle spans 32, 64 or 128 bytes, not {span}"),
                    "the span of the XOR pattern".into(),
                )
                .with_help("TMA and wgmma swizzle 32-, 64- or 128-byte rows"),
            );
            return;
        }
        if let Some(pad) = pad.filter(|p| p.expr.int_value().is_some_and(|v| v > 0)) {
            self.error(
                error(
                    "a shared buffer is swizzled or padded, not both".into(),
                    format!("a {span}-byte swizzle"),
                )
                .with_secondary(self.at(pad.expr.span), "and padded rows")
                .with_help("both keep rows off the same banks; keep one"),
            );
            return;
        }
        let consts: Option<Vec<i64>> = dims.iter().map(Poly::as_const).collect();
        let (Some([.., rows, cols]), Some(dtype)) = (consts.as_deref(), dtype) else {
            if dims.len() < 2 {
                self.error(error(
                    "a swizzle runs over a buffer's last two dims; this one has fewer".into(),
                    "needs rows and columns".into(),
                ));
            }
            return;
        };
        let row_bytes = cols * i64::from(dtype.bits()) / 8;
        if rows % 8 != 0 || row_bytes % span != 0 {
            let fits = [128, 64, 32].into_iter().find(|s| row_bytes % s == 0 && row_bytes > 0);
            let help = match fits {
                Some(s) if rows % 8 == 0 => format!("rows of {row_bytes} bytes take `swizzle={s}`"),
                _ => "make the rows a multiple of 8 and whole spans, or pad them with `bank_pad`".into(),
            };
            self.error(
                error(
                    format!("a {span}-byte swizzle needs rows in multiples of 8, each whole {span}-byte units"),
                    format!("{rows} rows of {row_bytes} bytes"),
                )
                .with_secondary(self.at(e.span), "the buffer")
                .with_help(help),
            );
        }
    }

    /// `keepdims=` of a reduction: it decides the result's dims, so it is
    /// written out (`True` or `False`); absent, False.
    fn keepdims(&mut self, arg: Option<&ArgTy>) -> bool {
        let Some(arg) = arg else { return false };
        match arg.expr.unparen().kind {
            ExprKind::Bool(keep) => keep,
            _ => {
                self.error(
                    Diagnostic::error(Code::E0204, "`keepdims` must be written `True` or `False`")
                        .with_primary(self.at(arg.expr.span), "not a bool literal")
                        .with_note("it decides the dims of the result, which the checker must know"),
                );
                false
            }
        }
    }

    /// The type of a reduction of `x` along `axis` (every axis without
    /// it): the dims that are not reduced, or with `keep` every dim, the
    /// reduced ones 1.
    /// A maximum, minimum or their index has no value over no elements:
    /// in an operator function, each reduced dim the checker cannot show
    /// to be at least 1 becomes the runtime guard `dim >= 1` (the host's
    /// operators stop there too, E1009, as NumPy raises; the compiled ones
    /// gave -inf).
    fn nonempty_reduction(&mut self, e: &Expr, path: &str, x: &Ty, axis: Option<&ArgTy>) {
        if self.in_device_code() {
            return;
        }
        let Ty::Tensor(TensorTy { dims: Some(dims), .. }) = x else {
            return;
        };
        let rank = dims.len() as i64;
        let axes: Vec<i64> = match axis.map(|a| &a.expr.unparen().kind) {
            None => (0..rank).collect(),
            Some(ExprKind::Tuple(items) | ExprKind::List(items)) => items.iter().filter_map(Expr::int_value).collect(),
            Some(_) => axis.and_then(|a| a.expr.int_value()).into_iter().collect(),
        };
        for k in axes {
            let index = if k < 0 { k + rank } else { k };
            let Some(dim) = usize::try_from(index).ok().and_then(|i| dims.get(i)) else {
                continue;
            };
            let dim = self.sizes.substitute(dim);
            if dim.as_const().is_some() {
                continue;
            }
            let constraint = format!("{dim} >= 1");
            if !self
                .info
                .guards
                .iter()
                .any(|g| g.constraint == constraint && g.call == e.span)
            {
                self.info.guards.push(Guard {
                    call: e.span,
                    callee: path.to_string(),
                    constraint,
                });
            }
        }
    }

    fn reduce(&mut self, e: &Expr, x: &Ty, axis: Option<&ArgTy>, keep: bool) -> Ty {
        let Ty::Tensor(t) = x else { return x.clone() };
        let Some(axis) = axis else {
            return match (&t.dims, keep) {
                (Some(dims), true) => Ty::Tensor(TensorTy {
                    dtype: t.dtype,
                    dims: Some(vec![Poly::constant(1); dims.len()]),
                    space: None,
                }),
                _ => t.dtype.map_or(Ty::Unknown, Ty::Scalar),
            };
        };
        // One axis, or a tuple of them (`axis=(0, 1)`), each once.
        let (tuple, items): (bool, Vec<&Expr>) = match &axis.expr.unparen().kind {
            ExprKind::Tuple(items) | ExprKind::List(items) => (true, items.iter().collect()),
            _ => (false, vec![axis.expr]),
        };
        let axes: Option<Vec<i64>> = items.iter().map(|i| i.int_value()).collect();
        let (Some(dims), Some(axes)) = (&t.dims, axes) else {
            return Ty::Tensor(TensorTy {
                dtype: t.dtype,
                dims: None,
                space: None,
            });
        };
        let rank = dims.len() as i64;
        let mut removed: Vec<usize> = Vec::new();
        for (&k, item) in axes.iter().zip(&items) {
            let index = if k < 0 { k + rank } else { k };
            let problem = if !(0..rank).contains(&index) {
                Some(axis_out_of_range(k, rank))
            } else if removed.contains(&(index as usize)) {
                Some((format!("axis {k} is reduced twice"), "each axis once".to_string()))
            } else {
                None
            };
            if let Some((message, label)) = problem {
                self.error(
                    Diagnostic::error(Code::E0307, message)
                        .with_primary(self.at(item.span), label)
                        .with_secondary(self.at(e.span), format!("reduces {x}")),
                );
                return Ty::Unknown;
            }
            removed.push(index as usize);
        }
        let kept: Vec<Poly> = dims
            .iter()
            .enumerate()
            .filter_map(|(i, d)| match (removed.contains(&i), keep) {
                (false, _) => Some(d.clone()),
                (true, true) => Some(Poly::constant(1)),
                (true, false) => None,
            })
            .collect();
        // A tuple naming every axis gives a number; one axis, a tensor.
        if tuple && kept.is_empty() {
            return t.dtype.map_or(Ty::Unknown, Ty::Scalar);
        }
        Ty::Tensor(TensorTy {
            dtype: t.dtype,
            dims: Some(kept),
            space: None,
        })
    }

    /// `op.transpose(x)` swaps the last two dims; `perm=(2, 0, 1)` puts
    /// dim `perm[i]` at `i`; `dims=(0, 2)` swaps two dims. Axes may count
    /// from the end.
    fn transpose(&mut self, e: &Expr, x: &Ty, perm: Option<&ArgTy>, swap: Option<&ArgTy>) -> Ty {
        let Ty::Tensor(t) = x else { return Ty::Unknown };
        let Some(dims) = &t.dims else {
            return Ty::Tensor(TensorTy {
                dims: None,
                ..t.clone()
            });
        };
        let rank = dims.len();
        let given = perm.or(swap);
        // `op.transpose(x, 0, 1)`, PyTorch's swap: the axes are one tuple
        // (the numbers bound `perm` and `dims`, and the build stopped
        // with E0903).
        if let Some(a) = given.filter(|a| matches!(a.ty, Ty::Int | Ty::Scalar(_))) {
            self.error(
                Diagnostic::error(Code::E0203, "`op.transpose` takes its axes as one tuple")
                    .with_primary(self.at(a.expr.span), format!("this is {}", a.ty))
                    .with_help("swap two dims with `dims=(0, 1)`, or give the whole order with `perm=(1, 0)`"),
            );
            return Ty::Unknown;
        }
        let axes: Option<Vec<i64>> = given.and_then(|a| match &a.expr.unparen().kind {
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().map(Expr::int_value).collect(),
            _ => None,
        });
        let order: Vec<usize> = match (given, axes) {
            (None, _) if rank < 2 => return Ty::Unknown,
            (None, _) => {
                let mut order: Vec<usize> = (0..rank).collect();
                order.swap(rank - 1, rank - 2);
                order
            }
            // Not literal: the dims are known when it runs.
            (Some(_), None) => {
                return Ty::Tensor(TensorTy {
                    dims: None,
                    ..t.clone()
                })
            }
            (Some(arg), Some(axes)) => {
                let r = i64::try_from(rank).unwrap_or(i64::MAX);
                let normal: Vec<Option<usize>> = axes
                    .iter()
                    .map(|&a| {
                        usize::try_from(if a < 0 { a + r } else { a })
                            .ok()
                            .filter(|&a| a < rank)
                    })
                    .collect();
                let problem = if let Some(bad) = axes.iter().zip(&normal).find(|(_, n)| n.is_none()) {
                    Some(format!("axis {} is out of range for a tensor with {rank} dims", bad.0))
                } else if perm.is_some() && axes.len() != rank {
                    Some(format!(
                        "`perm` names {} axes, but the tensor has {rank} dims",
                        axes.len()
                    ))
                } else if perm.is_none() && axes.len() != 2 {
                    Some(format!("`dims` names {} axes; it swaps two", axes.len()))
                } else {
                    let mut seen = vec![false; rank];
                    normal
                        .iter()
                        .flatten()
                        .find(|&&a| std::mem::replace(&mut seen[a], true))
                        .map(|a| format!("axis {a} appears twice"))
                };
                if let Some(problem) = problem {
                    let help = if perm.is_some() {
                        format!("`perm` lists each of the {rank} axes once, in the order of the result")
                    } else {
                        "`dims=(i, j)` swaps two different axes".to_string()
                    };
                    self.error(
                        Diagnostic::error(Code::E0307, format!("`op.transpose`: {problem}"))
                            .with_primary(self.at(arg.expr.span), format!("`{x}` has {}", dims_word(rank)))
                            .with_secondary(self.at(e.span), "in this transpose")
                            .with_help(help),
                    );
                    return Ty::Unknown;
                }
                let normal: Vec<usize> = normal.into_iter().flatten().collect();
                if perm.is_some() {
                    normal
                } else {
                    let mut order: Vec<usize> = (0..rank).collect();
                    order.swap(normal[0], normal[1]);
                    order
                }
            }
        };
        Ty::Tensor(TensorTy {
            dtype: t.dtype,
            dims: Some(order.iter().map(|&i| dims[i].clone()).collect()),
            space: t.space,
        })
    }

    fn reshape(&mut self, e: &Expr, x: &Ty, shape: Option<&ArgTy>) -> Ty {
        let (Ty::Tensor(t), Some(shape)) = (x, shape) else {
            return Ty::Unknown;
        };
        let items = match &shape.expr.unparen().kind {
            ExprKind::Tuple(items) | ExprKind::List(items) => items.as_slice(),
            // One number is a shape of one dim, as NumPy reads `reshape(x, 32)`.
            _ if matches!(shape.ty, Ty::Int | Ty::Scalar(_)) && shape.ty.dtype().is_none_or(|d| d.is_int()) => {
                std::slice::from_ref(shape.expr)
            }
            _ => {
                return Ty::Tensor(TensorTy {
                    dtype: t.dtype,
                    dims: None,
                    space: None,
                })
            }
        };
        let mut new_dims: Vec<Poly> = items.iter().map(|i| self.sizes.substitute(&dim_poly(i))).collect();
        let count = |ds: &[Poly]| ds.iter().fold(Poly::constant(1), |acc, d| acc.mul(d));
        // One dim written -1 is what the others leave (NumPy's rule).
        let inferred: Vec<usize> = (0..items.len()).filter(|&i| items[i].int_value() == Some(-1)).collect();
        if let [at] = inferred[..] {
            let Some(dims) = &t.dims else {
                return Ty::Tensor(TensorTy {
                    dtype: t.dtype,
                    dims: None,
                    space: None,
                });
            };
            let mut others = new_dims.clone();
            others.remove(at);
            match count(dims).div_exact(&count(&others)) {
                Some(d) => new_dims[at] = d,
                None => {
                    self.error(
                        Diagnostic::error(
                            Code::E0308,
                            format!("cannot tell the dim -1 stands for in reshaping {x}"),
                        )
                        .with_primary(self.at(items[at].span), "inferred dim")
                        .with_secondary(
                            self.at(e.span),
                            format!("{} elements over [{}]", count(dims), join(&others)),
                        )
                        .with_help("write the dim: -1 is inferred only where the other dims divide the count exactly"),
                    );
                    return Ty::Unknown;
                }
            }
        } else if inferred.len() > 1 {
            self.error(
                Diagnostic::error(Code::E0308, "a reshape infers at most one dim")
                    .with_primary(self.at(items[inferred[1]].span), "a second -1")
                    .with_secondary(self.at(items[inferred[0]].span), "the first")
                    .with_help("write all but one of the dims"),
            );
            return Ty::Unknown;
        }
        if let Some(dims) = &t.dims {
            let (before, after) = (count(dims), count(&new_dims));
            if let (Some(a), Some(b)) = (before.as_const(), after.as_const()) {
                if a != b {
                    self.error(
                        Diagnostic::error(Code::E0308, format!("cannot reshape {x} into [{}]", join(&new_dims)))
                            .with_primary(self.at(shape.expr.span), format!("this holds {b} elements"))
                            .with_secondary(self.at(e.span), format!("the tensor holds {a}"))
                            .with_help("a reshape keeps the number of elements"),
                    );
                    return Ty::Unknown;
                }
            } else if before != after {
                self.info.guards.push(Guard {
                    call: e.span,
                    callee: "op.reshape".into(),
                    constraint: format!("{before} == {after}"),
                });
            }
        }
        Ty::Tensor(TensorTy {
            dtype: t.dtype,
            dims: Some(new_dims),
            space: None,
        })
    }

    /// The tensors of a list or tuple argument (`op.concat([a, b])`).
    /// Whether `x`, the tensor `what` normalizes or takes the softmax of,
    /// is of a float dtype (E0203 for an integer or bool one).
    fn float_operand(&mut self, what: &str, x: Option<&ArgTy>) -> bool {
        let Some(x) = x else { return true };
        let Some(d) = x.ty.dtype().filter(|d| !d.is_float()) else {
            return true;
        };
        if !matches!(x.ty, Ty::Tensor(_)) {
            return true;
        }
        self.error(
            Diagnostic::error(Code::E0203, format!("`{what}` takes a float tensor, not {d}"))
                .with_primary(self.at(x.expr.span), format!("this is {}", x.ty))
                .with_help("convert it first: `cast(x, f32)`"),
        );
        false
    }

    /// A norm's `weight` or `bias`: one value per element of the
    /// normalized (last) dim of `x` (E0302 otherwise).
    fn norm_parameter(&mut self, what: &str, name: &str, x: &TensorTy, given: &ArgTy) {
        let (Some(xd), Ty::Tensor(TensorTy { dims: Some(pd), .. })) = (&x.dims, &given.ty) else {
            return;
        };
        let Some(last) = xd.last() else { return };
        if let [p] = pd.as_slice() {
            if self.same_dim(p, last) {
                return;
            }
        }
        let mut diagnostic = Diagnostic::error(
            Code::E0302,
            format!("the `{name}` of `{what}` has one value per element of the last dim, {last}"),
        )
        .with_primary(self.at(given.expr.span), format!("this is {}", given.ty));
        if let [p] = pd.as_slice() {
            if let Some(equate) = self.equate_help(p, last) {
                diagnostic = diagnostic.with_help(equate);
            }
        }
        self.error(diagnostic);
    }

    /// Whether the tensors `op.concat` or `op.stack` joins have one dtype
    /// (E0203 when two known ones differ).
    fn one_dtype(&mut self, e: &Expr, what: &str, parts: &[TensorTy]) -> bool {
        let mut dtypes = parts.iter().filter_map(|p| p.dtype);
        let Some(first) = dtypes.next() else { return true };
        let Some(other) = dtypes.find(|&d| d != first) else {
            return true;
        };
        self.error(
            Diagnostic::error(
                Code::E0203,
                format!("`{what}` joins tensors of one dtype, not {first} and {other}"),
            )
            .with_primary(self.at(e.span), format!("{first} and {other} tensors"))
            .with_help(format!("cast them to one dtype first: `cast(x, {first})`")),
        );
        false
    }

    fn tensor_parts(&self, tensors: Option<&ArgTy>) -> Option<Vec<TensorTy>> {
        // A tuple's type has each part's; a list literal's type has only
        // its first item's, so each item's is looked up.
        let parts: Vec<Ty> = match tensors.map(|t| (&t.ty, &t.expr.unparen().kind)) {
            Some((Ty::Tuple(parts), _)) => parts.clone(),
            Some((Ty::List(_), ExprKind::List(items))) => items.iter().map(|i| self.recorded(i.span)).collect(),
            _ => return None,
        };
        Some(
            parts
                .iter()
                .filter_map(|p| match p {
                    Ty::Tensor(t) => Some(t.clone()),
                    _ => None,
                })
                .collect(),
        )
    }

    /// `op.stack(tensors, axis)`: tensors of one shape, with a new dim of
    /// their count at `axis` (from -(rank + 1) to rank).
    fn stack(&mut self, e: &Expr, tensors: Option<&ArgTy>, axis: Option<&ArgTy>) -> Ty {
        let Some(parts) = self.tensor_parts(tensors) else {
            return Ty::Unknown;
        };
        if !self.one_dtype(e, "op.stack", &parts) {
            return Ty::Unknown;
        }
        let axis = axis.and_then(|a| a.expr.int_value()).unwrap_or(0);
        let Some(first_dims) = parts.first().and_then(|f| f.dims.clone()) else {
            return Ty::Unknown;
        };
        let rank = first_dims.len() as i64;
        let index = if axis < 0 { axis + rank + 1 } else { axis };
        if !(0..=rank).contains(&index) {
            self.error(
                Diagnostic::error(
                    Code::E0307,
                    format!("axis {axis} is out of range for stacking tensors with {rank} dims"),
                )
                .with_primary(
                    self.at(e.span),
                    format!("the new dim goes at 0 to {rank}, or -1 to -{}", rank + 1),
                ),
            );
            return Ty::Unknown;
        }
        for part in &parts {
            let Some(dims) = &part.dims else { return Ty::Unknown };
            let same = dims.len() == first_dims.len() && dims.iter().zip(&first_dims).all(|(a, b)| self.same_dim(a, b));
            if !same {
                self.error(
                    Diagnostic::error(Code::E0309, "stacked tensors differ in shape")
                        .with_primary(
                            self.at(e.span),
                            format!("[{}] and [{}] are stacked", join(&first_dims), join(dims)),
                        )
                        .with_help("`op.stack` takes tensors of one shape; `op.concat` joins along an existing dim"),
                );
                return Ty::Unknown;
            }
        }
        let mut dims = first_dims;
        dims.insert(index as usize, Poly::constant(parts.len() as i64));
        Ty::Tensor(TensorTy {
            dtype: parts[0].dtype,
            dims: Some(dims),
            space: None,
        })
    }

    /// The type of `path(x, axis)`, `x` of type `t` (a softmax along one
    /// axis): `t` itself, after E0307 when a constant `axis` is not one of
    /// its dims.
    fn axis_in_range(&mut self, path: &str, t: &TensorTy, axis: &ArgTy, e: &Expr) -> Ty {
        if let (Some(dims), Some(k)) = (&t.dims, axis.expr.int_value()) {
            let rank = dims.len() as i64;
            if !(-rank..rank).contains(&k) {
                let (message, label) = axis_out_of_range(k, rank);
                self.error(
                    Diagnostic::error(Code::E0307, message)
                        .with_primary(self.at(axis.expr.span), label)
                        .with_secondary(self.at(e.span), format!("`{path}` of {}", Ty::Tensor(t.clone()))),
                );
                return Ty::Unknown;
            }
        }
        Ty::Tensor(t.clone())
    }

    fn concat(&mut self, e: &Expr, tensors: Option<&ArgTy>, axis: Option<&ArgTy>) -> Ty {
        let Some(parts) = self.tensor_parts(tensors) else {
            return Ty::Unknown;
        };
        if !self.one_dtype(e, "op.concat", &parts) {
            return Ty::Unknown;
        }
        let axis = axis.and_then(|a| a.expr.int_value()).unwrap_or(0);
        let Some(first) = parts.first() else { return Ty::Unknown };
        let Some(first_dims) = &first.dims else {
            return Ty::Unknown;
        };
        let rank = first_dims.len() as i64;
        let index = if axis < 0 { axis + rank } else { axis };
        if !(0..rank).contains(&index) {
            self.error(
                Diagnostic::error(
                    Code::E0307,
                    format!("axis {axis} is out of range for tensors with {rank} dims"),
                )
                .with_primary(self.at(e.span), "concatenates along a dim that does not exist"),
            );
            return Ty::Unknown;
        }
        let mut total = Poly::constant(0);
        for part in &parts {
            let Some(dims) = &part.dims else { return Ty::Unknown };
            let apart = dims
                .iter()
                .zip(first_dims)
                .enumerate()
                .find(|(i, (a, b))| *i as i64 != index && !self.same_dim(a, b));
            if dims.len() != first_dims.len() || apart.is_some() {
                let help = match apart.and_then(|(_, (a, b))| self.equate_help(b, a)) {
                    Some(equate) => format!("only dim {index} may differ; {equate}"),
                    None => format!("only dim {index} may differ"),
                };
                self.error(
                    Diagnostic::error(
                        Code::E0309,
                        "concatenated tensors differ outside the concatenation axis",
                    )
                    .with_primary(
                        self.at(e.span),
                        format!(
                            "[{}] and [{}] differ in a dim other than {index}",
                            join(first_dims),
                            join(dims)
                        ),
                    )
                    .with_help(help),
                );
                return Ty::Unknown;
            }
            total = total.add(&dims[index as usize]);
        }
        let mut dims = first_dims.clone();
        dims[index as usize] = total;
        Ty::Tensor(TensorTy {
            dtype: first.dtype,
            dims: Some(dims),
            space: None,
        })
    }

    /// The file and name of the function `name` (`helpers::scale` is
    /// `scale` of the module `helpers`).
    fn resolve_function(&self, name: &str) -> Option<(SourceFile, String)> {
        match name.rsplit_once("::") {
            Some((module, member)) => {
                crate::module::resolve_module(self.db, self.file, module).map(|f| (f, member.to_string()))
            }
            None => Some((self.file, name.to_string())),
        }
    }

    fn user_call(&mut self, e: &Expr, callee: &Expr, name: &str, args: &[ArgTy], launched: bool) -> Ty {
        let Some((file, fn_name)) = self.resolve_function(name) else {
            return Ty::Unknown;
        };
        let func = FnId::new(self.db, file, fn_name.clone());
        let sig = db::signature(self.db, func);
        self.info.calls.push(Call {
            span: e.span,
            target: CallTarget::Function {
                file,
                name: fn_name.clone(),
            },
            launched,
        });
        self.info.calls_to.push((file, fn_name.clone(), e.span, self.suspended));
        match (sig.kind, launched) {
            (FnKind::Kernel, false) => self.error(
                Diagnostic::error(
                    Code::E0210,
                    format!("kernel `{fn_name}` must be launched with a grid and a block"),
                )
                .with_primary(self.at(e.span), "called like a function")
                .with_help(format!(
                    "launch it: `{}[grid=(blocks,), block=(threads,)](...)`",
                    crate::pretty::expr(callee)
                )),
            ),
            (FnKind::Function | FnKind::Device, true) => self.not_a_kernel(callee, &format!("`{fn_name}`")),
            (FnKind::Device, false) if !self.in_device_code() => self.error(
                Diagnostic::error(
                    Code::E0216,
                    format!("device function `{fn_name}` can only be called from device code"),
                )
                .with_primary(self.at(e.span), "called outside a kernel")
                .with_help(format!(
                    "call `{fn_name}` from a `@kernel` (or another `@device` function) and launch the kernel"
                )),
            ),
            _ => {}
        }
        if sig.kind == FnKind::Kernel && self.in_device_code() {
            self.error(
                Diagnostic::error(
                    Code::E0208,
                    format!("kernel `{fn_name}` cannot be launched from inside a kernel"),
                )
                .with_primary(self.at(e.span), "launches are made from host code"),
            );
        }
        let anchor = self.anchor(file, &fn_name);
        let Some(bindings) = self.bind_args(e, &fn_name, sig, args, anchor) else {
            return Ty::Unknown;
        };
        let values = self.check_constraints(e, &fn_name, sig, &bindings, anchor);
        // A host helper (no tensor parameters) that declares no result may
        // return any value: in host code, not known here, as `load(...)`'s.
        // (Device code inlines the function with the types it declares.)
        let helper = sig.kind == FnKind::Function && !sig.params.iter().any(|p| matches!(p.ty, Ty::Tensor(_)));
        if helper && sig.ret_span.is_none() && !self.in_device_code() {
            return Ty::Unknown;
        }
        substitute_ty(&sig.ret, &|s: &str| values.get(s).cloned())
    }

    /// Matches arguments to parameters and binds the callee's dim symbols.
    fn bind_args(
        &mut self,
        e: &Expr,
        fn_name: &str,
        sig: &Signature,
        args: &[ArgTy],
        anchor: u32,
    ) -> Option<BTreeMap<String, Binding>> {
        let mut assigned: Vec<Option<&ArgTy>> = vec![None; sig.params.len()];
        let mut positional = 0;
        for arg in args {
            let index = match arg.name {
                None => {
                    positional += 1;
                    positional - 1
                }
                Some(n) => match sig.params.iter().position(|p| p.name == n) {
                    Some(i) => i,
                    None => {
                        let mut diag = Diagnostic::error(Code::E0204, format!("`{fn_name}` has no parameter `{n}`"))
                            .with_primary(
                                self.at(arg.name_span.unwrap_or(arg.expr.span)),
                                "unknown keyword argument",
                            );
                        if let Some(s) = did_you_mean(n, sig.params.iter().map(|p| p.name.as_str())) {
                            diag = diag.with_help(format!("did you mean `{s}`?"));
                        }
                        self.error(diag);
                        return None;
                    }
                },
            };
            if index >= sig.params.len() {
                self.error(
                    Diagnostic::error(
                        Code::E0204,
                        format!(
                            "`{fn_name}` takes {}, but {} given",
                            tessera_base::counted(sig.params.len(), "argument", "arguments"),
                            tessera_base::counted(args.len(), "was", "were")
                        ),
                    )
                    .with_primary(self.at(arg.expr.span), "an argument too many")
                    .with_secondary(relative(sig.name_span, anchor), "defined here"),
                );
                return None;
            }
            if let Some(first) = assigned[index] {
                let name = &sig.params[index].name;
                self.error(
                    Diagnostic::error(Code::E0204, format!("`{fn_name}` is given parameter `{name}` twice"))
                        .with_primary(self.at(arg.expr.span), format!("`{name}` again"))
                        .with_secondary(self.at(first.expr.span), format!("`{name}` is this argument"))
                        .with_secondary(relative(sig.name_span, anchor), "defined here"),
                );
                return None;
            }
            assigned[index] = Some(arg);
        }
        if let Some(missing) = sig
            .params
            .iter()
            .zip(&assigned)
            .find(|(p, a)| a.is_none() && !p.has_default)
        {
            let mut diag = Diagnostic::error(
                Code::E0204,
                format!("missing argument `{}` in the call to `{fn_name}`", missing.0.name),
            )
            .with_primary(self.at(e.span), format!("`{}` is not given", missing.0.name))
            .with_secondary(relative(missing.0.span, anchor), "this parameter has no default");
            // Arguments bind in order: a tensor bound to a number parameter
            // (or a number to a tensor one) says the one missing is earlier
            // (`saxpy(X, Y, Out)` without `a`).
            let shifted = sig.params.iter().zip(&assigned).find_map(|(p, a)| {
                let a = a.filter(|a| a.name.is_none())?;
                let tensor = |t: &Ty| matches!(t, Ty::Tensor(_));
                let number = |t: &Ty| matches!(t, Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool);
                ((tensor(&a.ty) && number(&p.ty)) || (number(&a.ty) && tensor(&p.ty))).then_some((p, a))
            });
            if let Some((p, a)) = shifted {
                diag = diag
                    .with_secondary(
                        self.at(a.expr.span),
                        format!("this {} is bound to `{}`, a parameter of {}", a.ty, p.name, p.ty),
                    )
                    .with_help(format!(
                        "the arguments bind in order: is the one for `{}` missing before it?",
                        p.name
                    ));
            }
            self.error(diag);
            return None;
        }
        let mut bindings: BTreeMap<String, Binding> = BTreeMap::new();
        let mut ok = true;
        for (param, arg) in sig.params.iter().zip(assigned) {
            let Some(arg) = arg else { continue };
            let arg_name = crate::pretty::expr(arg.expr);
            // A tensor for a scalar parameter, or a number for a tensor one.
            let scalar = |t: &Ty| matches!(t, Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool);
            let tensor = |t: &Ty| matches!(t, Ty::Tensor(_));
            // A tensor of no dims serves wherever a number does
            // (`spec/runtime.md`, "Values"), a number parameter included.
            let arg_ty = match &arg.ty {
                Ty::Tensor(TensorTy {
                    dtype: Some(d),
                    dims: Some(dims),
                    ..
                }) if dims.is_empty() && scalar(&param.ty) => Ty::Scalar(*d),
                ty => ty.clone(),
            };
            if (tensor(&arg_ty) && scalar(&param.ty)) || (scalar(&arg_ty) && tensor(&param.ty)) {
                let (what, expected, help) = if tensor(&arg_ty) {
                    ("a tensor", "a number", "pass one number, such as an element: `x[0]`")
                } else {
                    (
                        "a number",
                        "a tensor",
                        "pass a tensor; `full(...)` makes one of a number",
                    )
                };
                self.error(
                    Diagnostic::error(
                        Code::E0203,
                        format!(
                            "argument `{arg_name}` is {what}, but parameter `{}` of `{fn_name}` is {expected}",
                            param.name
                        ),
                    )
                    .with_primary(
                        self.at(arg.expr.span),
                        format!("this is {}, but parameter `{}` is {}", arg.ty, param.name, param.ty),
                    )
                    .with_secondary(relative(param.span, anchor), "the parameter")
                    .with_help(help),
                );
                ok = false;
                continue;
            }
            if let (Some(pd), Some(ad)) = (param.ty.dtype(), arg_ty.dtype()) {
                let compatible = pd == ad || (!matches!(arg_ty, Ty::Tensor(_)) && ad.widens_to(pd));
                if !compatible {
                    self.error(
                        Diagnostic::error(
                            Code::E0203,
                            format!("argument `{arg_name}` has the wrong dtype for `{fn_name}`"),
                        )
                        .with_primary(
                            self.at(arg.expr.span),
                            format!("this is {}, but parameter `{}` is {}", arg.ty, param.name, param.ty),
                        )
                        .with_secondary(relative(param.span, anchor), "the parameter")
                        .with_help(format!("convert it with `cast({arg_name}, {pd})`")),
                    );
                    ok = false;
                    continue;
                }
            }
            let (Ty::Tensor(pt), Ty::Tensor(at)) = (&param.ty, &arg.ty) else {
                continue;
            };
            let (Some(pdims), Some(adims)) = (&pt.dims, &at.dims) else {
                continue;
            };
            if pdims.len() != adims.len() {
                self.error(
                    Diagnostic::error(
                        Code::E0303,
                        format!(
                            "argument `{arg_name}` has {} dims, `{fn_name}` expects {}",
                            adims.len(),
                            pdims.len()
                        ),
                    )
                    .with_primary(self.at(arg.expr.span), format!("this is {}", arg.ty))
                    .with_secondary(
                        relative(param.span, anchor),
                        format!("parameter `{}` is {}", param.name, param.ty),
                    ),
                );
                ok = false;
                continue;
            }
            for (i, (pd, ad)) in pdims.iter().zip(adims).enumerate() {
                let Some(sym) = pd.as_sym() else { continue };
                match bindings.get(sym) {
                    Some(prev) if !self.dims_agree(e.span, fn_name, &prev.value, ad) => {
                        self.error(
                            Diagnostic::error(
                                Code::E0302,
                                format!("dim `{sym}` of `{fn_name}` gets two different sizes"),
                            )
                            .with_primary(
                                self.at(arg.expr.span),
                                format!("dim {i} of `{arg_name}` is {sym} = {ad}"),
                            )
                            .with_secondary(
                                self.at(prev.arg_span),
                                format!("but dim {} of `{}` is {sym} = {}", prev.dim, prev.arg, prev.value),
                            )
                            .with_help(format!("pass tensors whose `{sym}` dims agree")),
                        );
                        ok = false;
                    }
                    Some(_) => {}
                    None => {
                        bindings.insert(
                            sym.to_string(),
                            Binding {
                                value: ad.clone(),
                                arg: arg_name.clone(),
                                dim: i,
                                arg_span: arg.expr.span,
                            },
                        );
                    }
                }
            }
            // Composite dims (`H * Dh`, constants) are checked once every
            // symbol they mention is bound.
            for (i, (pd, ad)) in pdims.iter().zip(adims).enumerate() {
                if pd.as_sym().is_some() {
                    continue;
                }
                let expected = pd.substitute(&|s| bindings.get(s).map(|b| b.value.clone()));
                let bound = pd.symbols().all(|s| bindings.contains_key(s));
                let agree = if bound {
                    self.dims_agree(e.span, fn_name, &expected, ad)
                } else {
                    may_equal(&expected, ad)
                };
                if !agree {
                    self.error(
                        Diagnostic::error(
                            Code::E0302,
                            format!("argument `{arg_name}` has the wrong size in dim {i}"),
                        )
                        .with_primary(
                            self.at(arg.expr.span),
                            if pd == &expected {
                                format!("dim {i} is {ad}, but `{fn_name}` expects {pd}")
                            } else {
                                format!("dim {i} is {ad}, but `{fn_name}` expects {pd} = {expected}")
                            },
                        )
                        .with_secondary(
                            relative(param.span, anchor),
                            format!("parameter `{}` is {}", param.name, param.ty),
                        ),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(bindings)
    }

    /// Whether dims `a` and `b` are known to be equal: the same polynomial,
    /// or equal by the function's constraints (`where N == M`). Two dims
    /// named differently may differ at run time, and an op that needs them
    /// equal is an error unless a constraint says they are. A dim the
    /// checker cannot write as a polynomial (`N // 2`) is taken at its
    /// word.
    fn same_dim(&self, a: &Poly, b: &Poly) -> bool {
        if a == b || a.has_opaque() || b.has_opaque() {
            return true;
        }
        if a.as_const().is_some() && b.as_const().is_some() {
            return false;
        }
        self.decide_equal(a, b).1 == Verdict::Holds
    }

    /// `a == b` as a constraint, and whether the function's own constraints
    /// prove it, refute it or say nothing.
    fn decide_equal(&self, a: &Poly, b: &Poly) -> (ConstraintKind, Verdict) {
        let equal = ConstraintKind::Compare {
            lhs: a.clone(),
            op: solve::CmpOp::Eq,
            rhs: b.clone(),
        };
        let facts: Vec<ConstraintKind> = self.sig.constraints.iter().map(|c| c.kind.clone()).collect();
        let verdict = solve::decide(&equal, &facts);
        (equal, verdict)
    }

    /// The help that states two dims equal (`add `where N == M` to `f` if
    /// the two are always equal`), when a constraint could say so: one of
    /// them is not a constant.
    fn equate_help(&self, a: &Poly, b: &Poly) -> Option<String> {
        let symbolic = a.as_const().is_none() || b.as_const().is_none();
        (symbolic && !a.has_opaque() && !b.has_opaque()).then(|| {
            format!(
                "add `where {a} == {b}` to `{}` if the two are always equal",
                self.sig.name
            )
        })
    }

    /// Whether dims `a` and `b` that a call of `fn_name` binds to one dim
    /// of the callee may be equal. When the caller's constraints decide
    /// neither way (`M` and 16, `M` and `N`), the call leaves the runtime
    /// guard `a == b`, as for an unproven constraint of the callee.
    fn dims_agree(&mut self, call: Span, fn_name: &str, a: &Poly, b: &Poly) -> bool {
        if a == b {
            return true;
        }
        let (equal, verdict) = self.decide_equal(a, b);
        match verdict {
            Verdict::Holds => true,
            Verdict::Unknown => {
                self.info.guards.push(Guard {
                    call,
                    callee: fn_name.to_string(),
                    constraint: equal.to_string(),
                });
                true
            }
            Verdict::Violated(_) => false,
        }
    }

    /// Checks the callee's constraints; returns every dim symbol's value,
    /// derived ones included.
    fn check_constraints(
        &mut self,
        e: &Expr,
        fn_name: &str,
        sig: &Signature,
        bindings: &BTreeMap<String, Binding>,
        anchor: u32,
    ) -> BTreeMap<String, Poly> {
        let facts: Vec<ConstraintKind> = self.sig.constraints.iter().map(|c| c.kind.clone()).collect();
        let mut values: BTreeMap<String, Poly> = bindings.iter().map(|(k, b)| (k.clone(), b.value.clone())).collect();
        let kinds: Vec<ConstraintKind> = sig.constraints.iter().map(|c| c.kind.clone()).collect();
        solve::derive(&kinds, &mut values);
        for constraint in &sig.constraints {
            let concrete = constraint.kind.substitute(&|s| values.get(s).cloned());
            match solve::decide(&concrete, &facts) {
                Verdict::Holds => {}
                Verdict::Unknown => self.info.guards.push(Guard {
                    call: e.span,
                    callee: fn_name.to_string(),
                    constraint: concrete.to_string(),
                }),
                Verdict::Violated(arithmetic) => {
                    self.constraint_violated(e, fn_name, constraint, &arithmetic, bindings, &values, anchor);
                }
            }
        }
        values
    }

    #[allow(clippy::too_many_arguments)]
    fn constraint_violated(
        &mut self,
        e: &Expr,
        fn_name: &str,
        constraint: &crate::solve::Constraint,
        arithmetic: &str,
        bindings: &BTreeMap<String, Binding>,
        values: &BTreeMap<String, Poly>,
        anchor: u32,
    ) {
        let symbols: Vec<String> = constraint_symbols(&constraint.kind);
        let blamed = symbols.iter().find_map(|s| bindings.get(s).map(|b| (s.clone(), b)));
        let rule = relative(constraint.span, anchor);
        let Some((sym, binding)) = blamed else {
            self.error(
                Diagnostic::error(
                    Code::E0304,
                    format!("this call breaks a shape constraint of `{fn_name}`"),
                )
                .with_primary(self.at(e.span), format!("requires {}: {arithmetic}", constraint.text))
                .with_secondary(rule, "the rule"),
            );
            return;
        };
        let value = values.get(&sym).cloned().unwrap_or_else(|| binding.value.clone());
        let message = format!(
            "argument `{}`, dim {} ({sym} = {value}): requires {}",
            binding.arg, binding.dim, constraint.text
        );
        let help = match (&constraint.kind, value.as_const()) {
            (ConstraintKind::Divisible { by, .. }, Some(v)) if constraint_symbols(&constraint.kind).len() == 1 => {
                let padded = (v + by - 1) / by * by;
                format!(
                    "pad dim {} of `{}` to {padded}, or relax the constraint",
                    binding.dim, binding.arg
                )
            }
            _ => format!(
                "pass for `{}` a tensor whose dim {} satisfies {}, or relax the constraint",
                binding.arg, binding.dim, constraint.text
            ),
        };
        self.error(
            Diagnostic::error(
                Code::E0304,
                format!("argument `{}` breaks a shape constraint of `{fn_name}`", binding.arg),
            )
            .with_primary(
                self.at(binding.arg_span),
                format!(
                    "dim {} of `{}` is {sym} = {value}, and {arithmetic}",
                    binding.dim, binding.arg
                ),
            )
            .with_secondary(rule, "the rule")
            .with_note(message)
            .with_help(help),
        );
    }
}

struct Binding {
    value: Poly,
    arg: String,
    dim: usize,
    arg_span: Span,
}

fn mentions_dim(ty: &Ty, name: &str) -> bool {
    match ty {
        Ty::Tensor(t) => t.dims.iter().flatten().any(|d| d.symbols().any(|s| s == name)),
        Ty::Tuple(items) => items.iter().any(|t| mentions_dim(t, name)),
        _ => false,
    }
}

fn constraint_symbols(c: &ConstraintKind) -> Vec<String> {
    let polys: Vec<&Poly> = match c {
        ConstraintKind::Divisible { dim, .. } => vec![dim],
        ConstraintKind::Compare { lhs, rhs, .. } => vec![lhs, rhs],
        ConstraintKind::InRange { dim, lo, hi, .. } => vec![dim, lo, hi],
    };
    let mut out: Vec<String> = Vec::new();
    for p in polys {
        for s in p.symbols() {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
    }
    out
}

/// The item type of a list of items of `tys`: theirs when they agree, a
/// float for ints and floats, otherwise unknown (`[1, [2, 3]]` holds an
/// int and a list, and `nest[1][0]` indexes the list, as in Python).
fn list_item(tys: Vec<Ty>) -> Ty {
    let Some(first) = tys.first().cloned() else {
        return Ty::Unknown;
    };
    if tys.iter().all(|t| *t == first) {
        return first;
    }
    if tys.iter().all(|t| matches!(t, Ty::Int | Ty::Float)) {
        return Ty::Float;
    }
    Ty::Unknown
}

/// "1 value", "3 values".
fn values_word(n: usize) -> String {
    if n == 1 {
        "1 value".to_string()
    } else {
        format!("{n} values")
    }
}

/// Names that resolve without a definition: namespaces, global builtins,
/// dtypes used as values, policy presets.
fn global_builtin(name: &str) -> Option<Ty> {
    if let Some(ns) = builtins::NAMESPACES.iter().find(|n| **n == name) {
        return Some(Ty::Namespace(ns));
    }
    if let Some(b) = builtins::lookup(name).filter(|b| b.namespace().is_none()) {
        return Some(Ty::Builtin(b));
    }
    if let Some(d) = DType::from_name(name) {
        return Some(Ty::DTypeValue(d));
    }
    if builtins::PRESET_POLICIES.iter().any(|p| p.0 == name) {
        return Some(Ty::Policy(name.to_string()));
    }
    None
}

/// What Tessera writes for a name from NumPy, PyTorch, Triton or CUDA,
/// whose users write it from habit (a did-you-mean would offer a local
/// name a letter away).
fn foreign_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "np" | "numpy" | "torch" | "jnp" | "cupy" => {
            "tensors are made with `zeros`, `ones`, `full`, `arange`, `rand` and `randn`, and computed with `op.*` (`op.matmul`, `op.softmax`); there is no module to import for them"
        }
        "tl" | "triton" => {
            "a kernel's block index is `launch.block_id()` (Triton's `tl.program_id`), its thread's `launch.thread_id()`; tile operations are `tile.*`"
        }
        "threadIdx" => "a thread's index in its block is `launch.local_id()` (axis 0 is x: `launch.local_id(1)` is y)",
        "blockIdx" => "a block's index is `launch.block_id()` (axis 0 is x: `launch.block_id(1)` is y)",
        "blockDim" => "a block's size is `launch.block_dim()` (axis 0 is x)",
        "gridDim" => "the grid's size is `launch.grid_dim()` (axis 0 is x)",
        "__syncthreads" | "syncthreads" => "a block's barrier is `tbarrier()`",
        "autocast" => {
            "mixed precision is a numerics policy: `@numerics(Training)` on the function, or `with numerics(Training):` around the code"
        }
        "__shfl_sync" | "__shfl_down_sync" | "__shfl_up_sync" | "__shfl_xor_sync" => {
            "a warp's shuffles are `tile.warp_shuffle`, `tile.warp_shuffle_down`, `tile.warp_shuffle_up` and `tile.warp_shuffle_xor`"
        }
        "atomicAdd" | "atomicMax" | "atomicMin" | "atomicCAS" | "atomicExch" => {
            "the atomics are `atomic_add(x[i], v)`, `atomic_max`, `atomic_min`, `atomic_cas` and `atomic_exch`, on one element"
        }
        "atomic_inc" | "atomicInc" | "atomic_dec" | "atomicDec" | "atomic_sub" | "atomicSub" => {
            "add with `atomic_add(x[i], 1)` (or `-1`, or `-v`): it gives the old value, as CUDA's `atomicInc` does below its wrap-around"
        }
        _ => return None,
    })
}

/// What CUDA's, Triton's and PyTorch's names for members of Tessera's
/// namespaces are written as.
fn foreign_member(ns: &str, name: &str) -> Option<&'static str> {
    Some(match (ns, name) {
        ("tile", "commit_group" | "cp_async_commit" | "commit" | "pipeline_commit") => {
            "copies complete by stage: start them with `tile.async_copy(dst, src, stage=s)` and wait with `tile.wait_async(stage=s)`; there is no commit"
        }
        ("tile", "syncthreads" | "__syncthreads" | "sync" | "barrier" | "syncwarp") => "a block's barrier is `tbarrier()`",
        ("tile", "warp_reduce_sum" | "warp_sum" | "reduce_add_sync" | "warp_reduce") => {
            "sum over a warp with shuffles, `for o in [16, 8, 4, 2, 1]: v += tile.warp_shuffle_down(v, o)`, or over the block's tile with `tile.reduce(v, op=\"sum\")`"
        }
        ("tile", "this_grid" | "grid_sync" | "grid_group") => {
            "there is no barrier across a grid: end the kernel where the grid must meet, and launch a second one"
        }
        ("op", "broadcast_to" | "expand" | "expand_as") => {
            "broadcasting is implicit in arithmetic (`x + zeros(3, 5)`); `op.reshape` adds dims of 1"
        }
        ("op", "unsqueeze" | "expand_dims" | "view") => "`op.reshape(x, (1, N))` adds or removes dims of 1",
        _ => return None,
    })
}

/// The effect a `with effects.suspend("io")` item suspends.
pub(crate) fn suspended_effect(e: &Expr) -> Option<Effect> {
    // A misspelled effect is reported (E0402) and taken for the one it
    // resembles, so the calls inside are not blamed for it too.
    let (name, _) = suspend_argument(e)?;
    Effect::from_name(name).or_else(|| Effect::closest(name))
}

/// The string of a `with effects.suspend("io")` item, and its span.
fn suspend_argument(e: &Expr) -> Option<(&str, Span)> {
    let ExprKind::Call { callee, args } = &e.kind else {
        return None;
    };
    let ExprKind::Attr { base, name } = &callee.kind else {
        return None;
    };
    if !matches!(&base.kind, ExprKind::Name(n) if n == "effects") || name.name != "suspend" {
        return None;
    }
    let arg = args.first()?;
    match &arg.value.kind {
        ExprKind::Str(s) => Some((s.as_str(), arg.value.span)),
        _ => None,
    }
}

/// Dims that are not provably different.
fn may_equal(a: &Poly, b: &Poly) -> bool {
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// NumPy broadcasting over dims aligned from the right.
/// NumPy's broadcast of shapes `a` and `b`, `same` deciding whether two
/// dims that are not 1 are equal.
fn broadcast(a: &[Poly], b: &[Poly], same: &dyn Fn(&Poly, &Poly) -> bool) -> Option<Vec<Poly>> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let x = (i + a.len()).checked_sub(n).map(|j| &a[j]);
        let y = (i + b.len()).checked_sub(n).map(|j| &b[j]);
        out.push(match (x, y) {
            (Some(x), None) => x.clone(),
            (None, Some(y)) => y.clone(),
            (Some(x), Some(y)) if x.as_const() == Some(1) => y.clone(),
            (Some(x), Some(y)) if y.as_const() == Some(1) => x.clone(),
            (Some(x), Some(y)) if same(x, y) => x.clone(),
            _ => return None,
        });
    }
    Some(out)
}

/// What a loop over a value of type `ty` yields: integers of a range, the
/// items of a list, a tensor's rows (its elements when it has one dim), the
/// parts of a tuple of one type (`(0, 64)`).
fn item_of(ty: Ty) -> Ty {
    match ty {
        Ty::Range => Ty::Int,
        Ty::List(item) => *item,
        Ty::Tensor(t) if t.rank() == Some(1) => t.dtype.map_or(Ty::Unknown, Ty::Scalar),
        Ty::Tensor(TensorTy {
            dtype,
            dims: Some(dims),
            space,
        }) if dims.len() > 1 => Ty::Tensor(TensorTy {
            dtype,
            dims: Some(dims[1..].to_vec()),
            space,
        }),
        Ty::Tuple(parts) if parts.windows(2).all(|w| w[0] == w[1]) => parts.into_iter().next().unwrap_or(Ty::Unknown),
        _ => Ty::Unknown,
    }
}

fn transpose(t: &TensorTy) -> Option<TensorTy> {
    let dims = t.dims.as_ref()?;
    if dims.len() < 2 {
        return None;
    }
    let mut dims = dims.clone();
    let n = dims.len();
    dims.swap(n - 1, n - 2);
    Some(TensorTy {
        dtype: t.dtype,
        dims: Some(dims),
        space: t.space,
    })
}

/// The dtype of arithmetic between a value of `dtype` and a literal of
/// type `literal`: the literal takes the dtype, except that a float
/// literal with an integer (or bool) gives `f32` (`n * 0.5` for an `i32`
/// `n` is not 0).
fn float_literal_with(dtype: Option<DType>, literal: &Ty) -> Option<DType> {
    match (dtype, literal) {
        (Some(d), Ty::Float) if !d.is_float() => Some(DType::F32),
        _ => dtype,
    }
}

/// E0307's message and label for axis `k` of a tensor of `rank` dims.
fn axis_out_of_range(k: i64, rank: i64) -> (String, String) {
    (
        format!("axis {k} is out of range for a tensor with {rank} dims"),
        format!("valid axes are {}..={}", -rank, rank - 1),
    )
}

/// The length of `lower:upper:k` (k < 0) over `dim`, as Python counts it:
/// the start (the last element without a bound) and the stop (before the
/// first without one) each a constant index, negative ones from the end
/// and both clamped to the dim where it is a constant; where it is not,
/// taken to lie inside it (as a positive step's bounds are).
fn negative_step_len(dim: &Poly, lower: Option<&Expr>, upper: Option<&Expr>, k: i64) -> Option<Poly> {
    let bound = |e: Option<&Expr>| e.map(|e| dim_poly(e).as_const());
    let (lo, hi) = (bound(lower), bound(upper));
    let step = k.checked_neg()?;
    if let Some(d) = dim.as_const() {
        // Python's `slice.indices` for a negative step.
        let clamp = |b: i64| {
            let b = if b < 0 { b + d } else { b };
            b.clamp(-1, d - 1)
        };
        let start = lo.map_or(Some(d - 1), |b| b.map(clamp))?;
        let stop = hi.map_or(Some(-1), |b| b.map(clamp))?;
        return Poly::constant((start - stop).max(0)).div_ceil(step);
    }
    // `dim + b` for a negative bound b; `dim - 1` and `-1` without one.
    let from_end = |b: Option<Option<i64>>, none: Poly| match b {
        None => Some(none),
        Some(Some(b)) if b < 0 => Some(dim.add(&Poly::constant(b))),
        Some(Some(b)) => Some(Poly::constant(b)),
        Some(None) => None,
    };
    let start = from_end(lo, dim.sub(&Poly::constant(1)))?;
    let stop = from_end(hi, Poly::constant(-1))?;
    start.sub(&stop).div_ceil(step)
}

/// The length of `lower:upper` over `dim` (module constants and sized
/// locals substituted, in the dim and the bounds), as Python counts it: a
/// negative constant bound counts from the end (`dim + b`), and over a
/// constant dim constant bounds clamp to it (`x[:100]` of 10 is 10,
/// `x[8:2]` is 0); a bound that is not a constant is taken to lie inside
/// the dim, and a length that comes out a negative constant is 0.
fn slice_len(dim: &Poly, lower: Option<&Expr>, upper: Option<&Expr>, sizes: &crate::constants::Sizes) -> Poly {
    let dim = &sizes.substitute(dim);
    let bound = |e: &Expr| {
        let b = sizes.substitute(&dim_poly(e));
        match b.as_const() {
            Some(c) if c < 0 => dim.add(&Poly::constant(c)),
            _ => b,
        }
    };
    let lo = lower.map_or(Poly::constant(0), bound);
    let hi = upper.map_or(dim.clone(), bound);
    if let Some(d) = dim.as_const() {
        let clamped = |b: &Poly| b.as_const().map(|c| c.clamp(0, d));
        if let (Some(l), Some(h)) = (clamped(&lo), clamped(&hi)) {
            return Poly::constant((h - l).max(0));
        }
    }
    let len = hi.sub(&lo);
    match len.as_const() {
        Some(c) if c < 0 => Poly::constant(0),
        _ => len,
    }
}

fn substitute_ty(ty: &Ty, map: &dyn Fn(&str) -> Option<Poly>) -> Ty {
    match ty {
        Ty::Tensor(t) => Ty::Tensor(TensorTy {
            dtype: t.dtype,
            dims: t.dims.as_ref().map(|d| d.iter().map(|p| p.substitute(map)).collect()),
            space: t.space,
        }),
        Ty::Tuple(items) => Ty::Tuple(items.iter().map(|t| substitute_ty(t, map)).collect()),
        other => other.clone(),
    }
}

/// "1 dim", "3 dims".
fn dims_word(n: usize) -> String {
    if n == 1 {
        "1 dim".to_string()
    } else {
        format!("{n} dims")
    }
}

fn join(dims: &[Poly]) -> String {
    dims.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Whether a value of type `value` broadcasts to a selection of type
/// `place` by NumPy's rule (aligned at the last dim, each of its dims 1 or
/// the selection's), as far as the dims are known: a value of more dims,
/// or a known dim that is neither 1 nor the selection's, does not.
fn broadcasts_to(value: &TensorTy, place: &TensorTy) -> bool {
    let (Some(v), Some(p)) = (&value.dims, &place.dims) else {
        return false;
    };
    v.len() <= p.len()
        && v.iter()
            .rev()
            .zip(p.iter().rev())
            .all(|(a, b)| match (a.as_const(), b.as_const()) {
                (Some(1), _) => true,
                (Some(x), Some(y)) => x == y,
                _ => a == b,
            })
}

/// Whether two shapes certainly differ: in rank, or in two different
/// constants at one dim.
fn dims_conflict(a: &[Poly], b: &[Poly]) -> bool {
    a.len() != b.len()
        || a.iter()
            .zip(b)
            .any(|(x, y)| matches!((x.as_const(), y.as_const()), (Some(p), Some(q)) if p != q))
}

/// The shapes, as text, of two tensor types whose shapes conflict.
fn different_shapes(a: &Ty, b: &Ty) -> Option<(String, String)> {
    let (Ty::Tensor(a), Ty::Tensor(b)) = (a, b) else {
        return None;
    };
    let (da, db) = (a.dims.as_ref()?, b.dims.as_ref()?);
    let text = |dims: &[Poly]| {
        format!(
            "[{}]",
            dims.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )
    };
    dims_conflict(da, db).then(|| (text(da), text(db)))
}

/// The name of `ty` when it is a number or an element type `ok` refuses
/// (`float` for an untyped float literal).
fn refused_number(ty: &Ty, ok: impl Fn(DType) -> bool) -> Option<String> {
    match ty {
        Ty::Float => Some("float".to_string()),
        ty => ty.dtype().filter(|&d| !ok(d)).map(|d| d.name().to_string()),
    }
}

/// The type of a module constant: its value's when it is a number or a
/// bool, else unknown (a list, a dict, a string).
/// The type of the module global `name` of `file`: a constant's, a list's
/// or string's when its one assignment is a list or string literal (so
/// that their methods are checked: `ops.TABLE.appen(3)` had stopped the
/// run), else unknown.
fn global_ty(db: &dyn crate::Db, file: SourceFile, name: &str) -> Ty {
    if let Some(c) = crate::constants::constant(db, file, name) {
        return constant_ty(Some(c));
    }
    if crate::constants::top_level_assignments(db, file, name) != 1 {
        return Ty::Unknown;
    }
    let value = db::top_level(db, file).find_map(|(_, stmt)| match &stmt.kind {
        StmtKind::Assign { targets, value }
            if targets
                .iter()
                .any(|t| matches!(&t.kind, ExprKind::Name(n) if n == name)) =>
        {
            Some(value)
        }
        _ => None,
    });
    match value.map(|v| &v.unparen().kind) {
        Some(ExprKind::List(_)) => Ty::List(Box::new(Ty::Unknown)),
        Some(ExprKind::Str(_)) => Ty::Str,
        _ => Ty::Unknown,
    }
}

fn constant_ty(c: Option<Constant>) -> Ty {
    match c {
        Some(Constant::Int(_)) => Ty::Int,
        Some(Constant::Float(_)) => Ty::Float,
        Some(Constant::Bool(_)) => Ty::Bool,
        None => Ty::Unknown,
    }
}
