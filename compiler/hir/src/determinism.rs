//! The determinism contract (seed 000 §3, DESIGN §2): inside a function
//! marked `@deterministic(seed=N)` or a `with deterministic(seed=N):` region,
//! every random draw names its stream, floating-point atomics and other
//! timing-dependent operations are rejected, and reductions run in a fixed
//! tree order. `with nondeterministic("reason"):` waives the contract for its
//! body; a `with deterministic(...)` nested in it restores it.

use tessera_base::Span;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Arg, Block, Expr, ExprKind, Stmt, StmtKind};

use crate::body::{BodyCtx, CallTarget};
use crate::builtins::{Builtin, Det};
use crate::db::{self, relative, FnId, SourceFile};
use crate::signature::FnKind;
use crate::ty::Ty;

pub(crate) struct DeterminismResult {
    pub diagnostics: Vec<Diagnostic>,
    pub tree_reductions: Vec<Span>,
}

pub(crate) fn check(ctx: &BodyCtx) -> DeterminismResult {
    let mut checker = Checker {
        ctx,
        result: DeterminismResult {
            diagnostics: Vec::new(),
            tree_reductions: Vec::new(),
        },
        statement: None,
    };
    let region = ctx.sig.deterministic.is_some().then(|| Region {
        declared_at: decorator_span(ctx),
    });
    checker.block(&ctx.def.body, region);
    checker.result
}

/// A deterministic region being checked: where its contract is declared.
#[derive(Clone, Copy)]
struct Region {
    declared_at: Span,
}

struct Checker<'a> {
    ctx: &'a BodyCtx<'a>,
    result: DeterminismResult,
    /// The call that is a whole expression statement, whose value is unused.
    statement: Option<Span>,
}

impl Checker<'_> {
    fn block(&mut self, block: &Block, region: Option<Region>) {
        for stmt in &block.stmts {
            self.stmt(stmt, region);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, region: Option<Region>) {
        match &stmt.kind {
            StmtKind::Del(targets) => targets.iter().for_each(|t| self.expr(t, region)),
            StmtKind::Expr(e) => {
                self.statement = Some(e.unparen().span);
                self.expr(e, region);
            }
            StmtKind::Assign { targets, value } => {
                self.expr(value, region);
                targets.iter().for_each(|t| self.expr(t, region));
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    self.expr(value, region);
                }
                self.expr(target, region);
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target, region);
                self.expr(value, region);
            }
            StmtKind::If { branches, orelse } => {
                for branch in branches {
                    self.expr(&branch.cond, region);
                    self.block(&branch.body, region);
                }
                if let Some(orelse) = orelse {
                    self.block(orelse, region);
                }
            }
            StmtKind::For { target, iter, body } => {
                self.expr(iter, region);
                self.expr(target, region);
                self.block(body, region);
            }
            StmtKind::While { cond, body } => {
                self.expr(cond, region);
                self.block(body, region);
            }
            StmtKind::With { items, body } => {
                let mut inner = region;
                for item in items {
                    // The item itself runs in the enclosing region.
                    self.expr(&item.expr, region);
                    match self.region_call(&item.expr) {
                        Some("deterministic") => {
                            inner = Some(Region {
                                declared_at: item.expr.span,
                            })
                        }
                        Some("nondeterministic") => inner = None,
                        _ => {}
                    }
                }
                self.block(body, inner);
            }
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    self.expr(value, region);
                }
            }
            StmtKind::Assert { cond, message } => {
                self.expr(cond, region);
                if let Some(message) = message {
                    self.expr(message, region);
                }
            }
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s, region)),
            // Nested definitions are rejected by inference; their bodies are not this function's.
            StmtKind::Def(_)
            | StmtKind::Import(_)
            | StmtKind::FromImport { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass => {}
        }
    }

    /// The name of the region a `with` item opens: the builtin it calls, or
    /// the bare callee name when the call did not resolve (`deterministic`
    /// is recognized by its name until the op table lists it).
    fn region_call<'e>(&self, e: &'e Expr) -> Option<&'e str> {
        let call = e.unparen();
        let ExprKind::Call { callee, .. } = &call.kind else {
            return None;
        };
        match self.ctx.calls.get(&call.span).map(|c| &c.target) {
            Some(CallTarget::Builtin(b)) => Some(b.path),
            Some(CallTarget::Function { .. }) => None,
            None => match &callee.kind {
                ExprKind::Name(n) => Some(n.as_str()),
                _ => None,
            },
        }
    }

    fn expr(&mut self, e: &Expr, region: Option<Region>) {
        let Some(region) = region else { return };
        if let ExprKind::Call { args, .. } = &e.kind {
            match self.ctx.calls.get(&e.span).map(|c| &c.target) {
                Some(CallTarget::Builtin(b)) => self.call(e, b, args, region),
                Some(CallTarget::Function { file, name }) => self.device_call(e, *file, name, region),
                None => {}
            }
        }
        e.kind.for_each_child(|child| self.expr(child, Some(region)));
    }

    /// E0505: a device function is inlined into its caller, so deterministic
    /// code calls only device functions under the contract themselves.
    fn device_call(&mut self, call: &Expr, file: SourceFile, name: &str, region: Region) {
        let sig = db::signature(self.ctx.db, FnId::new(self.ctx.db, file, name.to_string()));
        if sig.kind != FnKind::Device || sig.deterministic.is_some() {
            return;
        }
        self.result.diagnostics.push(
            Diagnostic::error(
                Code::E0505,
                format!("deterministic code calls `{name}`, which is not `@deterministic`"),
            )
            .with_primary(relative(call.span, 0), format!("`{name}` is inlined here"))
            .with_secondary(
                relative(region.declared_at, 0),
                "the determinism contract is declared here",
            )
            .with_help(format!(
                "mark `{name}` `@deterministic` so that the contract is checked in its body too"
            )),
        );
    }

    fn call(&mut self, call: &Expr, b: &'static Builtin, args: &[Arg], region: Region) {
        let diag = match b.det {
            Det::Deterministic => return,
            Det::Rng if keyword(args, "stream").is_some_and(|a| !matches!(a.value.kind, ExprKind::None)) => return,
            Det::Rng => unbound_rng(call, b, args),
            Det::Atomic => match atomic_float(self.ctx, args) {
                Some(dtype) => float_atomic(call, b, &dtype),
                None if self.statement != Some(call.span) => used_atomic(call, b),
                None => return,
            },
            Det::Reduction => match keyword(args, "order").filter(|a| is_str(&a.value, "unordered")) {
                Some(order) => unordered_reduction(b, order),
                None => {
                    self.result.tree_reductions.push(call.span);
                    return;
                }
            },
            Det::Nondeterministic(alternative) => {
                Diagnostic::error(Code::E0504, format!("`{}` is nondeterministic", b.path))
                    .with_primary(
                        relative(call.span, 0),
                        "the result of this call can change from run to run",
                    )
                    .with_help(alternative)
            }
        };
        let diag = diag.with_secondary(
            relative(region.declared_at, 0),
            "the determinism contract is declared here",
        );
        self.result.diagnostics.push(diag);
    }
}

/// E0501: a random draw with no `stream=`.
fn unbound_rng(call: &Expr, b: &Builtin, args: &[Arg]) -> Diagnostic {
    let diag = Diagnostic::error(
        Code::E0501,
        format!("`{}` draws random numbers without a bound stream", b.path),
    )
    .with_primary(
        relative(call.span, 0),
        "this draw names no stream, so its numbers are not fixed by the seed",
    );
    if !b.params.contains("stream") {
        return diag.with_help("draw from a counter-based stream: `rng.uniform(..., stream=rng.stream(\"name\"))`");
    }
    // After the last argument (a trailing comma stays valid after it), or
    // just inside the parentheses when there is none.
    let (at, text) = match args.last() {
        Some(last) => (Span::empty(last.span.end), ", stream=rng.stream(\"name\")"),
        None => (
            Span::empty(call.span.end.saturating_sub(1)),
            "stream=rng.stream(\"name\")",
        ),
    };
    diag.with_help("pass `stream=rng.stream(\"name\")` so the numbers depend only on the seed and the stream")
        .with_fix(
            Fix::new("bind the draw to a named stream", Applicability::HasPlaceholders)
                .with_edit(relative(at, 0), text),
        )
}

/// E0502: an atomic that combines floating-point values.
fn float_atomic(call: &Expr, b: &Builtin, dtype: &str) -> Diagnostic {
    let (verb, note, reduce) = match b.name() {
        "atomic_max" | "atomic_min" => (
            "compares",
            "which of two equal zeros or two NaNs is kept depends on the order, so the bits change from run to run",
            format!(
                "reduce with `tile.reduce(..., op=\"{}\", order=\"tree\")`",
                &b.name()[7..]
            ),
        ),
        _ => (
            "adds",
            "floating-point addition is not associative, so the bits of the sum change from run to run",
            "sum with `tile.reduce(..., order=\"tree\")`".to_string(),
        ),
    };
    Diagnostic::error(
        Code::E0502,
        format!("floating-point `{}` in deterministic code", b.path),
    )
    .with_primary(
        relative(call.span, 0),
        format!("this {verb} {dtype} values in whatever order the threads arrive"),
    )
    .with_note(note)
    .with_help(format!(
        "{reduce}, accumulate in an integer, or wrap the atomic in `with nondeterministic(\"reason\"):`"
    ))
}

/// E0504: the old value an integer atomic gives, used: which value a
/// thread sees depends on the order the threads arrive in, though the
/// value left in memory does not.
fn used_atomic(call: &Expr, b: &Builtin) -> Diagnostic {
    Diagnostic::error(Code::E0504, format!("the old value of `{}` in deterministic code", b.path))
        .with_primary(
            relative(call.span, 0),
            "the value this gives depends on the order the threads arrive in",
        )
        .with_note("the value left in memory is the same on every run; the value each thread sees is not")
        .with_help("call the atomic as a statement and read the result after a barrier, or wrap it in `with nondeterministic(\"reason\"):`")
}

/// E0503: `order="unordered"` on a reduction.
fn unordered_reduction(b: &Builtin, order: &Arg) -> Diagnostic {
    Diagnostic::error(Code::E0503, format!("unordered `{}` in deterministic code", b.path))
        .with_primary(
            relative(order.value.span, 0),
            "an unordered reduction can sum in a different order on every run",
        )
        .with_help("reduce in the fixed tree order: `order=\"tree\"`")
        .with_fix(
            Fix::new("reduce in tree order", Applicability::MachineApplicable)
                .with_edit(relative(order.value.span, 0), "\"tree\""),
        )
}

/// The float dtype an atomic accumulates, if it is a float: from its value
/// (the second argument), else from its target.
fn atomic_float(ctx: &BodyCtx, args: &[Arg]) -> Option<String> {
    let positional: Vec<&Arg> = args.iter().filter(|a| a.name.is_none()).collect();
    let value = keyword(args, "value").or(positional.get(1).copied());
    let target = keyword(args, "target").or(positional.first().copied());
    [value, target]
        .into_iter()
        .flatten()
        .find_map(|arg| match ctx.type_of(arg.value.span) {
            Some(Ty::Float) => Some("floating-point".to_string()),
            Some(ty) => ty.dtype().filter(|d| d.is_float()).map(|d| d.to_string()),
            None => matches!(arg.value.unparen().kind, ExprKind::Float(_)).then(|| "floating-point".to_string()),
        })
}

fn keyword<'a>(args: &'a [Arg], name: &str) -> Option<&'a Arg> {
    args.iter().find(|a| a.name.as_ref().is_some_and(|n| n.name == name))
}

fn is_str(e: &Expr, text: &str) -> bool {
    matches!(&e.unparen().kind, ExprKind::Str(s) if s == text)
}

/// The span of the `@deterministic(...)` decorator, for the label that says
/// where the contract comes from.
fn decorator_span(ctx: &BodyCtx) -> Span {
    ctx.def
        .decorators
        .iter()
        .filter_map(|d| d.clauses.first())
        .find(|head| {
            let name = match &head.kind {
                ExprKind::Call { callee, .. } => &callee.kind,
                other => other,
            };
            matches!(name, ExprKind::Name(n) if n == "deterministic")
        })
        .map_or(ctx.sig.name_span, |head| head.span)
}
