//! The numerics contract (seed 001 §2.2): accumulating operations have an
//! accumulate dtype (E0701), policies are known (E0703), and narrowing float
//! conversions are explicit (E0702, reported by inference through
//! `implicit_downcast`).
//!
//! The policy in force at a point is that of the innermost enclosing
//! `with numerics(P):`, else the function's `@numerics(P)`, else none.

use std::collections::BTreeMap;

use tessera_base::Span;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Arg, Block, Expr, ExprKind, Stmt, StmtKind};

use crate::body::BodyCtx;
use crate::builtins::{Builtin, PRESET_POLICIES};
use crate::db::{self, relative, Db, SourceFile};
use crate::names::did_you_mean;
use crate::ty::{DType, Ty};

pub(crate) fn check(ctx: &BodyCtx) -> Vec<Diagnostic> {
    let module = module_policies(ctx.db, ctx.file).clone();
    let mut checker = Checker {
        ctx,
        module,
        diags: Vec::new(),
    };
    // Decorators apply outermost first, so the last `@numerics` is the one
    // in force (as in the signature).
    let mut in_force = None;
    for deco in &ctx.def.decorators {
        let Some(ExprKind::Call { callee, args }) = deco.clauses.first().map(|c| &c.kind) else {
            continue;
        };
        if matches!(&callee.kind, ExprKind::Name(n) if n == "numerics") {
            if let Some(arg) = args.first() {
                in_force = Some(checker.policy(&arg.value));
            }
        }
    }
    checker.block(&ctx.def.body, in_force.as_ref());
    checker.diags
}

/// What a top-level binding is, for `@numerics(P)` and `with numerics(P):`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Binding {
    /// `P = numerics.policy(...)` or an alias of a preset; whether it states
    /// an accumulate dtype.
    Policy { states_accumulate: bool },
    /// Anything else: not a policy.
    Other,
    /// Bound by an import: another file or module decides what it is.
    Imported,
}

/// A policy in force.
struct InForce {
    name: String,
    /// Whether it supplies an accumulate dtype. A policy the checker cannot
    /// look into (a local variable, `numerics.AdaptivePrecision(...)`) is
    /// trusted to.
    states_accumulate: bool,
}

struct Checker<'a, 'c> {
    ctx: &'c BodyCtx<'a>,
    module: BTreeMap<String, Binding>,
    diags: Vec<Diagnostic>,
}

impl Checker<'_, '_> {
    fn block(&mut self, block: &Block, policy: Option<&InForce>) {
        for stmt in &block.stmts {
            self.stmt(stmt, policy);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, policy: Option<&InForce>) {
        match &stmt.kind {
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e, policy),
            StmtKind::Del(targets) => targets.iter().for_each(|t| self.expr(t, policy)),
            StmtKind::Assign { targets, value } => {
                targets.iter().for_each(|t| self.expr(t, policy));
                self.expr(value, policy);
            }
            StmtKind::AnnAssign { target, value, .. } => {
                self.expr(target, policy);
                if let Some(v) = value {
                    self.expr(v, policy);
                }
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target, policy);
                self.expr(value, policy);
            }
            StmtKind::If { branches, orelse } => {
                for branch in branches {
                    self.expr(&branch.cond, policy);
                    self.block(&branch.body, policy);
                }
                if let Some(b) = orelse {
                    self.block(b, policy);
                }
            }
            StmtKind::For { target, iter, body } => {
                self.expr(target, policy);
                self.expr(iter, policy);
                self.block(body, policy);
            }
            StmtKind::While { cond, body } => {
                self.expr(cond, policy);
                self.block(body, policy);
            }
            StmtKind::With { items, body } => {
                let mut inner = None;
                for item in items {
                    match numerics_region(&item.expr) {
                        Some(arg) => inner = Some(self.policy(arg)),
                        // PyTorch's `with autocast(...)`, an unknown name
                        // (E0101, whose help names the policies): taken as
                        // a policy, so its body is not blamed as well.
                        None if is_autocast(&item.expr) => {
                            inner = Some(InForce {
                                name: "autocast".into(),
                                states_accumulate: true,
                            })
                        }
                        None => self.expr(&item.expr, policy),
                    }
                }
                self.block(body, inner.as_ref().or(policy));
            }
            StmtKind::Assert { cond, message } => {
                self.expr(cond, policy);
                if let Some(m) = message {
                    self.expr(m, policy);
                }
            }
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s, policy)),
            StmtKind::Return(None)
            | StmtKind::Def(_)
            | StmtKind::Import(_)
            | StmtKind::FromImport { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass => {}
        }
    }

    fn expr(&mut self, e: &Expr, policy: Option<&InForce>) {
        if let ExprKind::Call { args, .. } = &e.kind {
            if let Some(b) = self.ctx.builtin(e.span).filter(|b| b.accumulates) {
                self.accumulating_call(e, b, args, policy);
            }
        }
        e.kind.for_each_child(|child| self.expr(child, policy));
    }

    /// E0701: the call must get an accumulate dtype from somewhere.
    fn accumulating_call(&mut self, e: &Expr, b: &Builtin, args: &[Arg], policy: Option<&InForce>) {
        let keyword = |name: &str| args.iter().find(|a| a.name.as_ref().is_some_and(|n| n.name == name));
        let positional: Vec<&Arg> = args.iter().filter(|a| a.name.is_none()).collect();
        if let Some(stated) = keyword("accumulate").filter(|a| !matches!(a.value.kind, ExprKind::None)) {
            // A matmul multiplies in its operands' promotion.
            let second = positional.get(1).filter(|_| b.path == "op.matmul");
            let input = crate::ty::promote(
                positional.first().and_then(|a| self.dtype(a)),
                second.and_then(|a| self.dtype(a)),
            );
            let acc = match self.ctx.type_of(stated.value.span) {
                Some(Ty::DTypeValue(d)) => Some(*d),
                _ => self.dtype(stated),
            };
            if let (Some(input), Some(acc)) = (input, acc) {
                self.narrower_accumulate(b, stated, input, acc);
            }
            return;
        }
        // `tile.mma(A, B, C, ...)` accumulates into `C`: its dtype is the
        // accumulate dtype.
        let is_mma = b.path == "tile.mma";
        if is_mma
            && positional
                .get(2)
                .copied()
                .or(keyword("C"))
                .and_then(|c| self.dtype(c))
                .is_some()
        {
            return;
        }
        if policy.is_some_and(|p| p.states_accumulate) {
            return;
        }
        // Without a policy, f32 and f64 accumulate in their own type; the
        // narrower formats lose too much to do so silently.
        let Some(input) = positional.first().and_then(|a| self.dtype(a)) else {
            return;
        };
        if !matches!(
            input,
            DType::Tf32 | DType::F16 | DType::Bf16 | DType::Fp8E4m3 | DType::Fp8E5m2 | DType::Fp4E2m1 | DType::Nvfp4
        ) {
            return;
        }
        let why = match policy {
            Some(p) => format!(
                "this accumulates {input} values, and the policy `{}` states no accumulate dtype",
                p.name
            ),
            None => format!("this accumulates {input} values, and no numerics policy is in force"),
        };
        let diag = Diagnostic::error(
            Code::E0701,
            format!("`{}` on {input} values has no accumulate dtype", b.path),
        )
        .with_primary(relative(e.span, 0), why);
        if is_mma {
            self.diags.push(diag.with_help(
                "give the accumulator `C` a dtype (`C: mut f32[M, N]`), or put the function under a policy such as `@numerics(Training)`",
            ));
            return;
        }
        // After the last argument, so a trailing comma or a comment before
        // the closing parenthesis stays valid.
        let (at, text) = match args.last() {
            Some(last) => (Span::empty(last.span.end), ", accumulate=f32"),
            None => (Span::empty(e.span.end.saturating_sub(1)), "accumulate=f32"),
        };
        self.diags.push(
            diag.with_help("pass `accumulate=f32`, or put the function under a policy such as `@numerics(Training)`")
                .with_fix(
                    Fix::new("accumulate in f32", Applicability::MaybeIncorrect).with_edit(relative(at, 0), text),
                ),
        );
    }

    /// E0701: an `accumulate=` dtype narrower than the values it
    /// accumulates (an integer one for floats, or fewer bits) loses them.
    fn narrower_accumulate(&mut self, b: &Builtin, stated: &Arg, input: DType, acc: DType) {
        // fp8 and fp4 are storage formats: nothing accumulates in them.
        let storage = acc.is_float() && acc.bits() < 16;
        if !(storage || (input.is_float() && !acc.is_float()) || acc.bits() < input.bits()) {
            return;
        }
        let wide = if storage || input.is_float() && input.bits() < 32 {
            DType::F32
        } else {
            input
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0701,
                if storage {
                    format!(
                        "`accumulate={acc}` of `{}`: {acc} is a storage format, not an accumulator",
                        b.path
                    )
                } else {
                    format!("`accumulate={acc}` of `{}` is narrower than its {input} values", b.path)
                },
            )
            .with_primary(relative(stated.value.span, 0), "accumulating here would lose precision")
            .with_help(format!("accumulate in a type at least as wide: `accumulate={wide}`"))
            .with_fix(
                Fix::new(format!("accumulate in {wide}"), Applicability::MaybeIncorrect)
                    .with_edit(relative(stated.value.span, 0), wide.name()),
            ),
        );
    }

    fn dtype(&self, arg: &Arg) -> Option<DType> {
        self.ctx.type_of(arg.value.span).and_then(Ty::dtype)
    }

    /// Resolves the argument of `@numerics(...)` or `with numerics(...)`,
    /// reporting an unknown policy (E0703). After an error the region is
    /// treated as governed, so it does not also report E0701.
    fn policy(&mut self, arg: &Expr) -> InForce {
        let text = crate::pretty::expr(arg);
        let opaque = |name: &str| InForce {
            name: name.to_string(),
            states_accumulate: true,
        };
        let name = match &arg.unparen().kind {
            ExprKind::Name(n) => n.as_str(),
            // `numerics.Training`; inference resolves namespace members.
            ExprKind::Attr { base, .. } if matches!(&base.kind, ExprKind::Name(ns) if ns == "numerics") => {
                return opaque(&text);
            }
            ExprKind::Call { callee, args } if is_policy_call(callee) => {
                return InForce {
                    name: "numerics.policy(...)".into(),
                    states_accumulate: states_accumulate(args),
                };
            }
            _ => {
                self.not_a_policy(arg);
                return opaque(&text);
            }
        };
        match self.module.get(name) {
            Some(Binding::Policy { states_accumulate }) => {
                return InForce {
                    name: name.to_string(),
                    states_accumulate: *states_accumulate,
                };
            }
            Some(Binding::Other) => {
                self.diags.push(
                    Diagnostic::error(Code::E0703, format!("`{name}` is not a numerics policy"))
                        .with_primary(relative(arg.span, 0), "bound at the top level, but not to a policy")
                        .with_help(format!(
                            "bind it with `{name} = numerics.policy(storage=..., compute=..., accumulate=...)`"
                        )),
                );
                return opaque(name);
            }
            Some(Binding::Imported) => return opaque(name),
            None => {}
        }
        // A local bound to a policy value is typed as one by inference.
        if is_preset(name) || matches!(self.ctx.type_of(arg.span), Some(Ty::Policy(_))) {
            return opaque(name);
        }
        let module_policies = self
            .module
            .iter()
            .filter(|(_, b)| matches!(b, Binding::Policy { .. }))
            .map(|(n, _)| n.as_str());
        let help = match did_you_mean(name, PRESET_POLICIES.iter().map(|p| p.0).chain(module_policies)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => "use a preset (`Training`, `Inference`, `NVFP4`) or bind a policy at the top level with `numerics.policy(...)`".into(),
        };
        self.diags.push(
            Diagnostic::error(Code::E0703, format!("unknown numerics policy `{name}`"))
                .with_primary(relative(arg.span, 0), "not a preset or a policy of this file")
                .with_help(help),
        );
        opaque(name)
    }

    /// E0703 for a policy written as something other than a name or a
    /// `numerics.policy(...)` (`@numerics("Training")`, `@numerics(3)`):
    /// it names no policy, and would leave the region ungoverned.
    fn not_a_policy(&mut self, arg: &Expr) {
        let mut diag = Diagnostic::error(
            Code::E0703,
            format!("`{}` is not a numerics policy", crate::pretty::expr(arg)),
        )
        .with_primary(relative(arg.span, 0), "expected a policy's name");
        let named = match &arg.unparen().kind {
            ExprKind::Str(s) => did_you_mean(s, PRESET_POLICIES.iter().map(|p| p.0))
                .or_else(|| PRESET_POLICIES.iter().map(|p| p.0).find(|p| p.eq_ignore_ascii_case(s))),
            _ => None,
        };
        diag = match named {
            Some(name) => diag.with_help(format!("a policy is named, not quoted: `{name}`")).with_fix(
                Fix::new(format!("name the policy `{name}`"), Applicability::MaybeIncorrect)
                    .with_edit(relative(arg.span, 0), name),
            ),
            None => diag.with_help(
                "use a preset (`Training`, `Inference`, `NVFP4`) or a policy bound at the top level with `numerics.policy(...)`",
            ),
        };
        self.diags.push(diag);
    }
}

/// `autocast(...)` or `torch.autocast(...)`.
fn is_autocast(e: &Expr) -> bool {
    let ExprKind::Call { callee, .. } = &e.kind else {
        return false;
    };
    match &callee.kind {
        ExprKind::Name(n) => n == "autocast",
        ExprKind::Attr { name, .. } => name.name == "autocast",
        _ => false,
    }
}

/// The policy argument of a `with numerics(P):` item.
fn numerics_region(e: &Expr) -> Option<&Expr> {
    let ExprKind::Call { callee, args } = &e.kind else {
        return None;
    };
    if !matches!(&callee.kind, ExprKind::Name(n) if n == "numerics") {
        return None;
    }
    match args.as_slice() {
        [arg] if arg.name.is_none() => Some(&arg.value),
        _ => None,
    }
}

fn is_preset(name: &str) -> bool {
    PRESET_POLICIES.iter().any(|p| p.0 == name)
}

/// `numerics.<member>`.
fn is_numerics_member(e: &Expr, member: &str) -> bool {
    matches!(&e.kind, ExprKind::Attr { base, name }
        if name.name == member && matches!(&base.kind, ExprKind::Name(n) if n == "numerics"))
}

/// `numerics.policy`, the callee of a policy definition.
fn is_policy_call(callee: &Expr) -> bool {
    is_numerics_member(callee, "policy")
}

/// Whether a policy's arguments give its accumulate dtype: `accumulate=`,
/// or a keyword that means it (`accum=`, E0204 where the policy is bound),
/// so that the functions under it do not report E0701 as well.
fn states_accumulate(args: &[Arg]) -> bool {
    let names = crate::builtins::lookup("numerics.policy")
        .map(|b| b.param_names())
        .unwrap_or_default();
    args.iter().any(|a| {
        a.name
            .as_ref()
            .is_some_and(|n| crate::module::policy_keyword(&n.name, &names) == Some("accumulate"))
            && !matches!(a.value.kind, ExprKind::None)
    })
}

/// The top-level bindings of a file, by name; a later binding replaces an
/// earlier one, as at run time. A query of its own, without positions, so
/// an edit inside a function body does not re-run every body's checks.
#[salsa::tracked(returns(ref))]
fn module_policies(db: &dyn Db, file: SourceFile) -> BTreeMap<String, Binding> {
    let mut out = BTreeMap::new();
    for import in &db::item_tree(db, file).imports {
        out.insert(import.binding.clone(), Binding::Imported);
    }
    for (_, stmt) in db::top_level(db, file) {
        let (targets, value): (Vec<&Expr>, &Expr) = match &stmt.kind {
            StmtKind::Assign { targets, value } => (targets.iter().collect(), value),
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } => (vec![target], value),
            _ => continue,
        };
        let value = value.unparen();
        let binding = match &value.kind {
            ExprKind::Call { callee, args } if is_policy_call(callee) => Binding::Policy {
                states_accumulate: states_accumulate(args),
            },
            // Switches between two policies, each of which states its own.
            ExprKind::Call { callee, .. } if is_numerics_member(callee, "AdaptivePrecision") => Binding::Policy {
                states_accumulate: true,
            },
            ExprKind::Name(n) if is_preset(n) => Binding::Policy {
                states_accumulate: true,
            },
            ExprKind::Attr { name, .. } if is_preset(&name.name) && is_numerics_member(value, &name.name) => {
                Binding::Policy {
                    states_accumulate: true,
                }
            }
            _ => Binding::Other,
        };
        for target in targets {
            if let ExprKind::Name(n) = &target.kind {
                out.insert(n.clone(), binding);
            }
        }
    }
    out
}

/// An implicit float downcast, with the fix that makes it explicit. The fix
/// wraps the value's own text, so it keeps its spelling and comments.
pub(crate) fn implicit_downcast(value: &Expr, from: DType, to: DType) -> Diagnostic {
    let start = Span::empty(value.span.start);
    let end = Span::empty(value.span.end);
    Diagnostic::error(Code::E0702, format!("implicit downcast from {from} to {to}"))
        .with_primary(
            relative(value.span, 0),
            format!("this {from} value would be rounded to {to}"),
        )
        .with_help("make the conversion explicit, with its rounding mode")
        .with_fix(
            Fix::new(
                format!("cast to {to} with round-to-nearest-even"),
                Applicability::MachineApplicable,
            )
            .with_edit(relative(start, 0), "cast(")
            .with_edit(relative(end, 0), format!(", {to}, rounding=\"nearest_even\")")),
        )
}
