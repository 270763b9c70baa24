//! What lowering one function needs: its signature, inference results and
//! source positions, type conversion from `tessera-hir` to `tessera-ir`,
//! and the E0903 error for what the IR cannot express yet.

use std::sync::Arc;

use tessera_base::{FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};
use tessera_hir::body::{BodyCtx, BodyInfo};
use tessera_hir::db::{self, Db, FnId, SourceFile};
use tessera_hir::effects::EffectSet;
use tessera_hir::poly::{Atom, Poly};
use tessera_hir::signature::Signature;
use tessera_hir::ty::{DType, Space, Ty};
use tessera_ir::{Attr, Dim, DimExpr, Loc, MemSpace, Module, OpId, ScalarType, Type};
use tessera_syntax::ast::{Arg, Expr, ExprKind, FnDef};

pub(crate) struct FnCx<'a> {
    pub db: &'a dyn Db,
    pub file: SourceFile,
    /// The file whose module the function is lowered into: its own, or
    /// that of a function of another module that calls it
    /// ([`FnCx::symbol`]).
    pub home: SourceFile,
    pub path: String,
    pub offset: u32,
    pub def: &'a FnDef,
    pub sig: &'a Signature,
    pub info: &'a BodyInfo,
    pub body: BodyCtx<'a>,
    pub effects: EffectSet,
    pub errors: Vec<Diagnostic>,
}

impl<'a> FnCx<'a> {
    pub fn new(db: &'a dyn Db, func: FnId<'a>, def: &'a Arc<FnDef>, effects: EffectSet) -> FnCx<'a> {
        let file = func.file(db);
        let sig = db::signature(db, func);
        let info = db::infer(db, func);
        FnCx {
            db,
            file,
            home: file,
            path: file.path(db).clone(),
            offset: *db::fn_offset(db, func),
            def,
            sig,
            info,
            body: BodyCtx::new(db, file, def, sig, info),
            effects,
            errors: Vec::new(),
        }
    }

    /// The symbol of the function `name` of `file` in the module of
    /// [`FnCx::home`]: its name for a function of that file, else the
    /// name qualified by its module's path from there, each part joined
    /// by a `$`, which no name of the language holds and PTX and ELF
    /// symbols take where they refuse a `.` (`steps$doubled`,
    /// `pkg$ops$gelu`).
    pub fn symbol(&self, file: SourceFile, name: &str) -> String {
        if file == self.home {
            return name.to_string();
        }
        let module = tessera_hir::module_name(self.db, self.home, file);
        format!("{}${name}", module.replace('.', "$"))
    }

    /// The location of a span of this function in its file.
    pub fn loc(&self, span: Span) -> Loc {
        Loc::source(
            self.path.clone(),
            Span::new(span.start + self.offset, span.end + self.offset),
        )
    }

    /// Where `span` (relative to the function's text) is in its file.
    pub fn at(&self, span: Span) -> FileSpan {
        Span::new(span.start + self.offset, span.end + self.offset).in_file(self.file.id(self.db))
    }

    /// Reports a construct the IR layers cannot express yet.
    pub fn unsupported(&mut self, span: Span, what: impl Into<String>) {
        self.unsupported_with(span, what.into(), None);
    }

    /// E0903 for a `key=` of `min` or `max` (`path`), a key function only
    /// host code calls; whether there was one.
    pub fn host_only_key(&mut self, path: &str, args: &[Arg]) -> bool {
        let Some(key) = keyword(args, "key") else { return false };
        self.unsupported_with(
            key.span,
            format!("`key=` of `{path}` in code the IR layers compile"),
            Some(format!(
                "order the values in host code, or compare them with `{path}` alone"
            )),
        );
        true
    }

    /// E0903 for `what` with `help`.
    pub fn unsupported_because(&mut self, span: Span, what: impl Into<String>, help: impl Into<String>) {
        self.unsupported_with(span, what.into(), Some(help.into()));
    }

    pub fn unsupported_with(&mut self, span: Span, what: String, help: Option<String>) {
        let at = Span::new(span.start + self.offset, span.end + self.offset).in_file(self.file.id(self.db));
        if self.errors.iter().any(|d| d.primary_span() == Some(at)) {
            return;
        }
        let mut diag = Diagnostic::error(Code::E0903, format!("cannot lower {what}"))
            .with_primary(at, "not expressible in the IR layers yet")
            .with_note(format!("in function `{}`", self.sig.name));
        if let Some(help) = help {
            diag = diag.with_help(help);
        }
        self.errors.push(diag);
    }

    /// E0903 for parameter `name` or the result (`None`) of type `ty`,
    /// which the IR cannot write; when a dim of it is not a polynomial
    /// (`D // 2`), the help writes the dims as products instead.
    pub fn unsupported_type(&mut self, span: Span, name: Option<&str>, ty: &Ty) {
        let what = match name {
            Some(n) => format!("parameter `{n}` without a complete type"),
            None => "a return type that is not a tensor, a scalar or a tuple of them".to_string(),
        };
        let help = opaque_dim(ty).map(polynomial_help);
        self.unsupported_with(span, what, help);
    }

    /// E0903 for an expression whose type the IR cannot write; when a dim
    /// of it is not a polynomial (`x[::2]` of `N`), it says so, with the
    /// help that writes the dims as products.
    pub fn unsupported_value(&mut self, span: Span, ty: Option<&Ty>) {
        match ty.and_then(opaque_dim) {
            Some(dim) => self.unsupported_because(
                span,
                format!("a tensor whose dim `{dim}` is not a polynomial of the dims"),
                polynomial_help(dim),
            ),
            None => self.unsupported(span, "an expression whose type is not a tensor or scalar"),
        }
    }

    /// The value of `e` when it is arithmetic of float literals only, of
    /// no fixed width (`1.0 / 3.0`, `2 ** -1`): computed as Python
    /// computes it, in f64, to be one literal rounded once where it is used.
    pub fn float_literal_value(&self, e: &Expr) -> Option<f64> {
        match (self.ty(e), tessera_hir::constants::literal_value(e)) {
            (Some(Ty::Float), Some(tessera_hir::constants::Constant::Float(f))) => Some(f.get()),
            _ => None,
        }
    }

    pub fn ty(&self, e: &Expr) -> Option<&'a Ty> {
        self.body.types.get(&e.span).copied()
    }

    /// The module constant `e` names in the function's file (its own or an
    /// imported one: `N`, `sizes.N`), as an attribute.
    pub fn constant(&self, e: &Expr) -> Option<Attr> {
        use tessera_hir::constants::{named_constant, Constant};
        Some(match named_constant(self.db, self.file, e)? {
            Constant::Int(v) => Attr::Int(v),
            Constant::Float(f) => Attr::Float(f.get()),
            Constant::Bool(b) => Attr::Int(i64::from(b)),
        })
    }

    /// The function attributes every layer carries.
    pub fn set_common_attrs(&self, m: &mut Module, func: OpId, kind: &str) {
        m.set_attr(func, "kind", Attr::str(kind));
        let effects: Vec<Attr> = self.effects.iter().map(|e| Attr::str(e.name())).collect();
        m.set_attr(func, "effects", Attr::Array(effects));
        let numerics = self.sig.numerics.clone().unwrap_or_else(|| "none".to_string());
        m.set_attr(func, "numerics", Attr::Str(numerics));
        match self.sig.deterministic {
            Some(Some(seed)) => m.set_attr(func, "deterministic", Attr::Int(seed)),
            Some(None) => m.set_attr(func, "deterministic", Attr::Unit),
            None => {}
        }
        if let (Some((knobs, _)), "operator") = (&self.sig.autotune, kind) {
            let knobs = knobs
                .iter()
                .map(|(k, values)| (k.clone(), Attr::ints(values.iter().copied())))
                .collect();
            m.set_attr(func, "autotune.space", Attr::Dict(knobs));
        }
        if !self.sig.constraints.is_empty() {
            let constraints = self
                .sig
                .constraints
                .iter()
                .map(|c| Attr::str(c.kind.to_string()))
                .collect();
            m.set_attr(func, "constraints", Attr::Array(constraints));
        }
    }

    /// The runtime guards the checker left in a kernel (constraints of the
    /// device functions it calls that it could not prove there, dims a
    /// call binds apart): the kernel's `guards` attribute, each a dict of
    /// its `constraint` (the canonical text of `ShapeConstraint`), the
    /// `callee` and the call's byte `span` in the file. The launcher
    /// checks them over the launch's dims before the kernel runs.
    pub fn set_kernel_guards(&mut self, m: &mut Module, func: OpId) {
        let mut guards = Vec::new();
        for g in &self.info.guards {
            let Some(constraint) = tessera_ir::ShapeConstraint::parse(&g.constraint) else {
                self.unsupported(
                    g.call,
                    format!(
                        "the runtime guard `{}` of `{}`, which is not over dims",
                        g.constraint, g.callee
                    ),
                );
                continue;
            };
            let span = [g.call.start + self.offset, g.call.end + self.offset];
            guards.push(Attr::Dict(
                [
                    ("constraint".to_string(), Attr::Str(constraint.to_string())),
                    ("callee".to_string(), Attr::Str(g.callee.clone())),
                    ("span".to_string(), Attr::ints(span.iter().map(|&s| i64::from(s)))),
                ]
                .into_iter()
                .collect(),
            ));
        }
        if !guards.is_empty() {
            m.set_attr(func, "guards", Attr::Array(guards));
        }
    }

    /// The accumulate dtype of a reducing op: stated with `accumulate=`,
    /// else the policy's, else f32 (the rule of `spec/numerics.md` when no
    /// policy is in force and the inputs are narrower).
    /// [`FnCx::accumulate`] for an op over values of `operand`: without a
    /// stated type or a policy, `f64` values accumulate in `f64` (the
    /// checker's rule: values accumulate in their own type when no policy
    /// says otherwise), narrower ones in `f32`.
    /// The element type both operands of a matrix product (of element
    /// types `a` and `b`, the expressions `lhs` and `rhs`) are converted to
    /// where the product does not multiply theirs together (one dtype, or
    /// two fp8 formats): their promotion, as the checker types the result
    /// and the host multiplies (`f32 @ bf16` in f32). None: they stay.
    pub fn product_elem(
        &self,
        (a, b): (Option<ScalarType>, Option<ScalarType>),
        lhs: Option<&Expr>,
        rhs: Option<&Expr>,
    ) -> Option<ScalarType> {
        if let (Some(a), Some(b)) = (a, b) {
            if a.multiplies_with(b) {
                return None;
            }
        }
        let dtype = |e: Option<&Expr>| e.and_then(|e| self.ty(e)).and_then(Ty::dtype);
        tessera_hir::ty::promote(dtype(lhs), dtype(rhs)).map(scalar_of)
    }

    pub fn accumulate_over(&self, stated: Option<&Expr>, operand: Option<ScalarType>) -> ScalarType {
        let acc = self.accumulate(stated);
        match operand {
            // A policy's accumulator is a floor: f64 operands accumulate in
            // f64 (it had narrowed them to the policy's f32).
            Some(ScalarType::F64) if stated.is_none() => ScalarType::F64,
            // Integers (and bools) accumulate in i64, exactly, whatever
            // float a numerics policy accumulates in.
            Some(s) if stated.is_none() && !s.is_float() => ScalarType::I64,
            _ => acc,
        }
    }

    pub fn accumulate(&self, stated: Option<&Expr>) -> ScalarType {
        if let Some(d) = stated.and_then(expr_dtype) {
            return scalar_of(d);
        }
        let policy = self.sig.numerics.as_deref();
        tessera_hir::builtins::PRESET_POLICIES
            .iter()
            .find(|p| Some(p.0) == policy)
            .map_or(ScalarType::F32, |p| scalar_of(p.3))
    }
}

/// The argument passed by keyword `name`.
pub(crate) fn keyword<'e>(args: &'e [Arg], name: &str) -> Option<&'e Expr> {
    args.iter()
        .find(|a| a.name.as_ref().is_some_and(|n| n.name == name))
        .map(|a| &a.value)
}

/// Whether a `cast` call says `saturate=True`.
pub(crate) fn saturates(args: &[Arg]) -> bool {
    keyword(args, "saturate").is_some_and(|e| matches!(e.kind, ExprKind::Bool(true)))
}

/// The `index`-th argument passed by position.
pub(crate) fn positional(args: &[Arg], index: usize) -> Option<&Expr> {
    args.iter().filter(|a| a.name.is_none()).nth(index).map(|a| &a.value)
}

/// Parameter `name` of a call: by keyword, else the `index`-th positional.
pub(crate) fn arg<'e>(args: &'e [Arg], index: usize, name: &str) -> Option<&'e Expr> {
    keyword(args, name).or_else(|| positional(args, index))
}

/// A dtype written as an expression: `f32`, `numerics.f32` is not a thing.
pub(crate) fn expr_dtype(e: &Expr) -> Option<DType> {
    match &e.kind {
        tessera_syntax::ast::ExprKind::Name(n) => DType::from_name(n),
        _ => None,
    }
}

pub fn scalar_of(d: DType) -> ScalarType {
    match d {
        DType::F64 => ScalarType::F64,
        DType::F32 | DType::Tf32 => ScalarType::F32,
        DType::F16 => ScalarType::F16,
        DType::Bf16 => ScalarType::BF16,
        DType::Fp8E4m3 => ScalarType::F8E4M3,
        DType::Fp8E5m2 => ScalarType::F8E5M2,
        DType::Fp4E2m1 | DType::Nvfp4 => ScalarType::F4E2M1,
        DType::I8 => ScalarType::I8,
        DType::I16 => ScalarType::I16,
        DType::I32 => ScalarType::I32,
        DType::I64 => ScalarType::I64,
        DType::U8 => ScalarType::U8,
        DType::U16 => ScalarType::U16,
        DType::U32 => ScalarType::U32,
        DType::U64 => ScalarType::U64,
        DType::Bool => ScalarType::I1,
    }
}

/// A dim polynomial in the IR's form; `None` for dims with an opaque part
/// (`ceil_div(N, 256)`), which the IR has no syntax for.
pub fn dim_of(p: &Poly) -> Option<Dim> {
    let mut out = DimExpr::constant(0);
    for (monomial, coeff) in p.terms() {
        let mut term = DimExpr::constant(coeff);
        for atom in monomial {
            match atom {
                Atom::Sym(s) => term = term.mul(&DimExpr::sym(s.clone())),
                Atom::Opaque(_) => return None,
            }
        }
        out = out.add(&term);
    }
    Some(out)
}

/// How tensors appear: values in Graph IR, memory in Tile IR.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TensorAs {
    Value,
    Memory,
}

fn space_of(s: Option<Space>) -> MemSpace {
    match s {
        Some(Space::Shared) => MemSpace::Shared,
        Some(Space::Local | Space::Register) => MemSpace::Local,
        Some(Space::Tmem) => MemSpace::Tmem,
        _ => MemSpace::Global,
    }
}

/// The IR type of a value of type `ty`; integers without a fixed width
/// are `index` (they are indices and dims), float literals `f32`.
pub(crate) fn ir_type(ty: &Ty, tensors: TensorAs) -> Option<Type> {
    Some(match ty {
        Ty::Scalar(d) => Type::Scalar(scalar_of(*d)),
        Ty::Int => Type::INDEX,
        Ty::Float => Type::F32,
        Ty::Bool => Type::I1,
        Ty::Tensor(t) => {
            let elem = scalar_of(t.dtype?);
            let dims = t.dims.as_ref()?.iter().map(dim_of).collect::<Option<Vec<_>>>()?;
            match tensors {
                TensorAs::Value => Type::tensor(dims, elem),
                TensorAs::Memory => Type::memref(dims, elem, space_of(t.space)),
            }
        }
        _ => return None,
    })
}

/// The first dim of `ty` (a tensor, or a tuple's tensor) that is not a
/// polynomial of the dims.
fn opaque_dim(ty: &Ty) -> Option<&str> {
    match ty {
        Ty::Tensor(t) => t.dims.iter().flatten().find_map(|d| d.first_opaque()),
        Ty::Tuple(parts) => parts.iter().find_map(opaque_dim),
        _ => None,
    }
}

fn polynomial_help(dim: &str) -> String {
    format!(
        "the dim `{dim}` is not a polynomial of the dims, which is what the IR carries: name its parts and write the dims as their products (`D // 2` with `D` as `2 * H` is `H`, and so is `x[::2]`: `x: f32[S, 2 * H], c: f32[S, H]`)"
    )
}
