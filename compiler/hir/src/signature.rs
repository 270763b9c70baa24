//! Function signatures: parameter and return types, shape constraints,
//! declared effects and the attributes decorators give (kernel, determinism,
//! numerics policy, shared-memory budget).

use tessera_base::Span;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Arg, BinOp, Expr, ExprKind, FnDef, Type, TypeKind};

use crate::db::{relative, Db, SourceFile};
use crate::effects::{Effect, EffectSet};
use crate::names::did_you_mean;
use crate::poly::Poly;
use crate::solve::{Constraint, ConstraintKind};
use crate::ty::{DType, Space, TensorTy, Ty, ALL_DTYPES};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FnKind {
    /// `@kernel`: written per tile/thread, launched with brackets.
    Kernel,
    /// `@device`: a function of kernel code, called from kernels and
    /// other device functions (and inlined into them).
    Device,
    /// Any other function: operator-level code and host code.
    Function,
}

impl FnKind {
    /// Kernels and device functions: code that runs as one thread of a block.
    pub fn is_device_code(self) -> bool {
        matches!(self, FnKind::Kernel | FnKind::Device)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamSig {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    pub has_default: bool,
    pub span: Span,
    /// Where `mut` would go: the start of the type annotation.
    pub type_start: Option<Span>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    pub name: String,
    pub kind: FnKind,
    pub params: Vec<ParamSig>,
    pub ret: Ty,
    pub ret_span: Option<Span>,
    pub constraints: Vec<Constraint>,
    /// The `effects(...)` clause: its set and its span.
    pub declared_effects: Option<(EffectSet, Span)>,
    /// `@deterministic(seed=N)`: `Some(seed)`.
    pub deterministic: Option<Option<i64>>,
    /// `@numerics(P)`: the policy's name.
    pub numerics: Option<String>,
    /// `shared(16_KiB)` in a kernel header.
    pub shared_budget: Option<u64>,
    /// `tile[(x, y, z)]` in a kernel header: the block's shape, checked
    /// (1 to 3 positive sizes, at most 1024 threads).
    pub block: Option<Vec<i64>>,
    pub is_test: bool,
    /// `@autotune(BM=[64, 128], ...)`: each knob and its candidates, in
    /// the decorator's order, and the decorator's span.
    pub autotune: Option<(SearchSpace, Span)>,
    pub name_span: Span,
    /// Symbols of the result's dims that no call can bind (E0312): the
    /// return check leaves them alone rather than report the same mistake
    /// again.
    pub unbound_result: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Signature {
    pub fn missing(name: &str) -> Signature {
        Signature {
            name: name.to_string(),
            kind: FnKind::Function,
            params: Vec::new(),
            ret: Ty::Unknown,
            ret_span: None,
            constraints: Vec::new(),
            declared_effects: None,
            deterministic: None,
            numerics: None,
            shared_budget: None,
            block: None,
            is_test: false,
            autotune: None,
            name_span: Span::default(),
            unbound_result: Vec::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Whether every path through the function must return a value: it
    /// declares a result, and is not a kernel (which returns none, E0206).
    pub fn returns_value(&self) -> bool {
        self.kind != FnKind::Kernel && !matches!(self.ret, Ty::Unknown | Ty::None)
    }

    pub fn param(&self, name: &str) -> Option<&ParamSig> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The symbols of the parameters' dims, in order of first appearance:
    /// the dims a call or launch binds.
    pub fn dim_symbols(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.params {
            if let Ty::Tensor(t) = &p.ty {
                for d in t.dims.iter().flatten() {
                    for s in d.symbols() {
                        if !out.iter().any(|o| o == s) {
                            out.push(s.to_string());
                        }
                    }
                }
            }
        }
        out
    }
}

pub(crate) const DECORATORS: [&str; 7] = [
    "kernel",
    "device",
    "deterministic",
    "numerics",
    "test",
    "host",
    "autotune",
];

/// The knobs of an `@autotune` and their candidates, in order.
pub type SearchSpace = Vec<(String, Vec<i64>)>;

/// The knobs `@autotune` may turn: the tile of matmul and attention
/// kernels (`BM`, `BN`, `BK`), the matmul's pipeline stages, the warps
/// per block of both, whether a kernel asks for a producer warpgroup
/// (`producers`, 0 or 1) and whether a matmul walks its tiles on a
/// persistent grid (`persistent`, 0 or 1).
pub const AUTOTUNE_KNOBS: [&str; 7] = ["BM", "BN", "BK", "stages", "warps", "producers", "persistent"];

/// The knobs whose candidates are 0 and 1, and what the two mean.
pub const SWITCH_KNOBS: [(&str, &str); 2] = [
    ("producers", "without and with a producer warpgroup"),
    (
        "persistent",
        "a block per tile, and a persistent grid whose blocks walk the tiles",
    ),
];

pub(crate) fn lower(db: &dyn Db, file: SourceFile, def: &FnDef) -> Signature {
    let mut lowering = Lowering {
        db,
        file,
        diags: Vec::new(),
    };
    let mut sig = Signature::missing(&def.name.name);
    sig.name_span = def.name.span;
    for deco in &def.decorators {
        lowering.decorator(deco.clauses.as_slice(), &mut sig);
    }
    if let (FnKind::Kernel, Some((_, span))) = (sig.kind, &sig.autotune) {
        lowering.diags.push(
            Diagnostic::error(Code::E0204, "`@autotune` tunes operator functions, not kernels")
                .with_primary(relative(*span, 0), "on a kernel")
                .with_note("a kernel's tile sizes are written in its body; `@autotune` chooses the tiles the compiler gives the kernels of an operator function"),
        );
    }
    // `tessera test` calls a test with nothing and expects nothing back;
    // a kernel is launched, so it is tested by a test that launches it.
    if sig.is_test && sig.kind == FnKind::Kernel {
        lowering.diags.push(
            Diagnostic::error(Code::E0204, format!("the kernel `{}` cannot be a `@test`", def.name.name))
                .with_primary(relative(def.name.span, 0), "a kernel, which host code launches")
                .with_help(format!(
                    "write a `@test` function that makes inputs, launches `{}[grid=…, block=…](…)` and asserts on its output",
                    def.name.name
                )),
        );
    } else if sig.is_test {
        if let Some(first) = def.params.first() {
            lowering.diags.push(
                Diagnostic::error(
                    Code::E0204,
                    format!("the `@test` function `{}` takes parameters", def.name.name),
                )
                .with_primary(relative(first.span, 0), "`tessera test` passes no arguments")
                .with_help("make the inputs inside the test, such as `x = randn(64, seed=1)`"),
            );
        }
        if let Some(ret) = &def.ret {
            lowering.diags.push(
                Diagnostic::error(
                    Code::E0204,
                    format!("the `@test` function `{}` returns a value", def.name.name),
                )
                .with_primary(relative(ret.span, 0), "`tessera test` reads no result")
                .with_help("check the result inside the test with `assert`, and drop the return type"),
            );
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for p in &def.params {
        if seen.contains(&p.name.name.as_str()) {
            lowering.diags.push(
                Diagnostic::error(Code::E0106, format!("duplicate parameter `{}`", p.name.name))
                    .with_primary(relative(p.name.span, 0), "this name is already a parameter"),
            );
        }
        seen.push(&p.name.name);
        sig.params.push(ParamSig {
            name: p.name.name.clone(),
            ty: p.ty.as_ref().map_or(Ty::Unknown, |t| lowering.ty(t)),
            mutable: p.mutable.is_some(),
            has_default: p.default.is_some(),
            span: p.span,
            type_start: p.ty.as_ref().map(|t| Span::empty(t.span.start)),
        });
    }
    // `tessera run` calls `main` with nothing, or with the command line's
    // strings as one tuple (`def main(args):`).
    if def.name.name == "main" && sig.kind == FnKind::Function {
        let typed = sig
            .params
            .first()
            .filter(|p| !matches!(p.ty, Ty::Unknown | Ty::Tuple(_)));
        if let Some(extra) = sig.params.get(1).or(typed) {
            lowering.diags.push(
                Diagnostic::error(Code::E0204, "`main` takes no parameters, or one for the command line")
                    .with_primary(relative(extra.span, 0), "`tessera run` passes nothing for this")
                    .with_help("make the inputs inside `main` (`x = randn(1024, seed=1)`), or take `def main(args):`, the strings after `--`, and convert them"),
            );
        }
    }
    if let Some(ret) = &def.ret {
        sig.ret = lowering.ty(ret);
        sig.ret_span = Some(ret.span);
    } else {
        sig.ret = Ty::None;
    }
    if let Some(clause) = &def.effects {
        let mut set = EffectSet::PURE;
        for e in &clause.effects {
            match Effect::from_name(&e.name) {
                Some(effect) => set.insert(effect),
                None => lowering.diags.push(Effect::unknown(&e.name, relative(e.span, 0))),
            }
        }
        sig.declared_effects = Some((set, clause.span));
    }
    if let Some(clause) = &def.where_clause {
        for c in &clause.constraints {
            if let Some(kind) = lowering.constraint(c) {
                sig.constraints.push(Constraint {
                    kind,
                    text: crate::pretty::expr(c),
                    span: c.span,
                });
            }
        }
    }
    sig.unbound_result = lowering.unbindable_dims(def);
    lowering.unknown_dims_in_where(def);
    sig.diagnostics = lowering.diags;
    sig
}

/// Lowers a type annotation inside a body (`x: f32 = 0.0`).
pub(crate) fn lower_type(db: &dyn Db, file: SourceFile, ty: &Type, diags: &mut Vec<Diagnostic>) -> Ty {
    let mut lowering = Lowering {
        db,
        file,
        diags: Vec::new(),
    };
    let lowered = lowering.ty(ty);
    diags.append(&mut lowering.diags);
    lowered
}

struct Lowering<'a> {
    db: &'a dyn Db,
    /// The file the function is in, whose module constants dims may name.
    file: SourceFile,
    diags: Vec<Diagnostic>,
}

impl Lowering<'_> {
    fn decorator(&mut self, clauses: &[Expr], sig: &mut Signature) {
        let Some(head) = clauses.first() else { return };
        let (name, args) = match &head.kind {
            ExprKind::Name(n) => (n.as_str(), &[][..]),
            ExprKind::Call { callee, args } => match &callee.kind {
                ExprKind::Name(n) => (n.as_str(), args.as_slice()),
                _ => return self.unknown_decorator(head, sig),
            },
            _ => return self.unknown_decorator(head, sig),
        };
        match name {
            "kernel" | "device" if sig.kind != FnKind::Function => {
                self.diags.push(
                    Diagnostic::error(Code::E0216, "a function is `@kernel` or `@device`, not both")
                        .with_primary(relative(head.span, 0), format!("a second kind, `@{name}`"))
                        .with_help("a kernel is launched from the host; a device function is called from kernels"),
                );
                return;
            }
            "kernel" => {
                sig.kind = FnKind::Kernel;
                self.no_arguments(
                    name,
                    head,
                    args,
                    "its header takes clauses: `@kernel tile[(256,)] shared(16_KiB)`",
                );
                for clause in &clauses[1..] {
                    self.kernel_clause(clause, sig);
                }
                return;
            }
            _ if !DECORATORS.contains(&name) => return self.unknown_decorator(head, sig),
            _ => {}
        }
        if let Some(extra) = clauses.get(1) {
            self.diags.push(
                Diagnostic::error(Code::E0204, format!("`@{name}` takes no clauses"))
                    .with_primary(relative(extra.span, 0), "a clause after it")
                    .with_note("only `@kernel` takes clauses (`tile[(256,)]`, `shared(16_KiB)`)"),
            );
        }
        match name {
            "device" => {
                sig.kind = FnKind::Device;
                self.no_arguments(
                    name,
                    head,
                    args,
                    "a device function is inlined into the kernels that call it",
                );
            }
            "deterministic" => sig.deterministic = Some(self.deterministic_seed(args)),
            "numerics" => {
                if !matches!(args, [a] if a.name.is_none()) {
                    self.diags.push(
                        Diagnostic::error(Code::E0204, "`@numerics` takes one policy")
                            .with_primary(relative(head.span, 0), "not one policy")
                            .with_help("write `@numerics(Training)`, or name a policy of this file"),
                    );
                }
                sig.numerics = args.first().map(|a| crate::pretty::expr(&a.value));
            }
            "test" => {
                sig.is_test = true;
                self.no_arguments(name, head, args, "`tessera test` runs every `@test` function of a file");
            }
            "autotune" => sig.autotune = Some((self.autotune(args), head.span)),
            "host" => self.no_arguments(name, head, args, "host code runs on the host as written"),
            _ => {}
        }
    }

    /// E0204 for arguments to a decorator that takes none (`@test(timeout=10)`):
    /// they would be dropped without a word.
    fn no_arguments(&mut self, name: &str, head: &Expr, args: &[Arg], note: &str) {
        if args.is_empty() && !matches!(head.kind, ExprKind::Call { .. }) {
            return;
        }
        self.diags.push(
            Diagnostic::error(Code::E0204, format!("`@{name}` takes no arguments"))
                .with_primary(relative(head.span, 0), "arguments it would ignore")
                .with_note(note)
                .with_fix(
                    Fix::new("remove the arguments", Applicability::MaybeIncorrect)
                        .with_edit(relative(head.span, 0), name),
                ),
        );
    }

    /// A clause of a `@kernel` header after `kernel`: `tile[(x, y, z)]`,
    /// the block's shape, or `shared(bytes)`, the shared-memory budget.
    fn kernel_clause(&mut self, clause: &Expr, sig: &mut Signature) {
        let (name, span) = match &clause.kind {
            ExprKind::Subscript { base, args } if matches!(&base.kind, ExprKind::Name(n) if n == "tile") => {
                sig.block = self.block_shape(clause, args);
                return;
            }
            ExprKind::Call { callee, args } if matches!(&callee.kind, ExprKind::Name(n) if n == "shared") => {
                sig.shared_budget = self.shared_budget(clause, args);
                return;
            }
            ExprKind::Name(n) => (n.as_str(), clause.span),
            ExprKind::Subscript { base, .. } | ExprKind::Call { callee: base, .. } => match &base.kind {
                ExprKind::Name(n) => (n.as_str(), base.span),
                _ => ("", clause.span),
            },
            _ => ("", clause.span),
        };
        let shown = if name.is_empty() {
            crate::pretty::expr(clause)
        } else {
            name.to_string()
        };
        let mut diag = Diagnostic::error(Code::E0204, format!("`{shown}` is not a clause of `@kernel`"))
            .with_primary(relative(span, 0), "unknown clause");
        diag = match did_you_mean(name, ["tile", "shared"]) {
            Some(s) => diag.with_help(format!("did you mean `{s}`?")).with_fix(
                Fix::new(format!("write `{s}`"), Applicability::MaybeIncorrect).with_edit(relative(span, 0), s),
            ),
            None => diag.with_note("a kernel header takes `tile[(x, y, z)]`, the block's shape, and `shared(bytes)`, its shared-memory budget"),
        };
        self.diags.push(diag);
    }

    /// The sizes of `tile[(x, y, z)]`: literals or module constants, 1 to
    /// 3 of them, positive, at most 1024 threads in all and a z size of at
    /// most 64, as every GPU target allows (E0217; a launch's block is
    /// held to the same, `launch_block` in `infer.rs`).
    fn block_shape(&mut self, clause: &Expr, args: &[Arg]) -> Option<Vec<i64>> {
        let items: Vec<&Expr> = match args.first().map(|a| &a.value.unparen().kind) {
            Some(ExprKind::Tuple(items) | ExprKind::List(items)) => items.iter().collect(),
            _ => args.iter().map(|a| &a.value).collect(),
        };
        let sizes: Vec<Option<i64>> = items.iter().map(|e| self.int(e)).collect();
        if let Some(at) = items
            .iter()
            .zip(&sizes)
            .find_map(|(e, v)| v.is_none().then_some(e.span))
        {
            self.diags.push(
                Diagnostic::error(Code::E0217, "a block size is an integer constant")
                    .with_primary(relative(at, 0), "not an integer literal or module constant")
                    .with_help("write the sizes as numbers or module constants: `tile[(BLOCK,)]` with `BLOCK = 128`"),
            );
            return None;
        }
        let dims: Vec<i64> = sizes.into_iter().flatten().collect();
        let threads = dims.iter().try_fold(1i64, |t, &d| t.checked_mul(d));
        let deep = dims.get(2).is_some_and(|&z| z > 64);
        if dims.is_empty() || dims.len() > 3 || dims.iter().any(|&d| d <= 0) || threads.is_none_or(|t| t > 1024) || deep
        {
            let text = dims.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            self.diags.push(
                Diagnostic::error(
                    Code::E0217,
                    format!(
                        "`tile[({text}{})]` is not a block",
                        if dims.len() == 1 { "," } else { "" }
                    ),
                )
                .with_primary(relative(clause.span, 0), "the block's shape")
                .with_note("a block has 1 to 3 positive sizes, 1 to 1024 threads in all and a z size of at most 64")
                .with_help(if threads.is_none_or(|t| t > 1024) {
                    "split the work over more blocks: `tile[(256,)]` and a larger grid"
                } else if deep {
                    "lay the block's threads out along x and y: `tile[(16, 16, 4)]`"
                } else {
                    "give it 1 to 3 sizes of at least 1: `tile[(256,)]`, `tile[(16, 16)]`"
                }),
            );
            return None;
        }
        Some(dims)
    }

    /// The bytes of `shared(16_KiB)`: a size, an integer or a module
    /// constant.
    fn shared_budget(&mut self, clause: &Expr, args: &[Arg]) -> Option<u64> {
        let budget = match args {
            [a] if a.name.is_none() => match &a.value.kind {
                ExprKind::Size(b) | ExprKind::Int(b) => Some(*b),
                _ => self.int(&a.value).and_then(|v| u64::try_from(v).ok()),
            },
            _ => None,
        };
        if budget.is_none() {
            let at = args.first().map_or(clause.span, |a| a.value.span);
            self.diags.push(
                Diagnostic::error(Code::E0203, "the shared-memory budget is a size")
                    .with_primary(relative(at, 0), "not a size, an integer or a module constant")
                    .with_help("write it with a binary unit: `shared(16_KiB)`"),
            );
        }
        budget
    }

    /// The seed of `@deterministic(seed=N)`, none without one. Any other
    /// argument is an error: a misspelled (`sead=3`) or positional seed
    /// would be dropped and the function seeded as if it had none.
    fn deterministic_seed(&mut self, args: &[Arg]) -> Option<i64> {
        let mut seed = None;
        for arg in args {
            let diag = match &arg.name {
                Some(n) if n.name == "seed" => match self.int(&arg.value) {
                    Some(_) if seed.is_some() => {
                        Diagnostic::error(Code::E0204, "the seed of `@deterministic` is given twice")
                            .with_primary(relative(arg.span, 0), "again here")
                    }
                    Some(v) => {
                        seed = Some(v);
                        continue;
                    }
                    None => Diagnostic::error(Code::E0203, "the seed of `@deterministic` is an integer")
                        .with_primary(relative(arg.value.span, 0), "not an integer constant")
                        .with_help("write `seed=1`, or a module constant bound to an integer"),
                },
                Some(n) => {
                    let diag =
                        Diagnostic::error(Code::E0204, format!("`@deterministic` takes no argument `{}`", n.name))
                            .with_primary(relative(n.span, 0), "not `seed`");
                    match did_you_mean(&n.name, ["seed"]) {
                        Some(s) => diag.with_help(format!("did you mean `{s}`?")).with_fix(
                            Fix::new(format!("write `{s}`"), Applicability::MachineApplicable)
                                .with_edit(relative(n.span, 0), s),
                        ),
                        None => diag.with_note("its one argument is the seed: `@deterministic(seed=1)`"),
                    }
                }
                None => {
                    let diag = Diagnostic::error(Code::E0204, "`@deterministic` takes its seed by name")
                        .with_primary(relative(arg.span, 0), "a seed without `seed=`");
                    match self.int(&arg.value) {
                        Some(_) => diag.with_help("write `seed=` before it").with_fix(
                            Fix::new("name the seed", Applicability::MachineApplicable)
                                .with_edit(relative(Span::empty(arg.span.start), 0), "seed="),
                        ),
                        None => diag.with_help("write `@deterministic(seed=1)`"),
                    }
                }
            };
            self.diags.push(diag);
        }
        seed
    }

    /// The knobs of `@autotune(BM=[64, 128], stages=[2, 3])`: keyword
    /// arguments naming a knob, each a non-empty list of positive integers.
    fn autotune(&mut self, args: &[Arg]) -> SearchSpace {
        let mut knobs: SearchSpace = Vec::new();
        for arg in args {
            let Some(name) = &arg.name else {
                self.diags.push(
                    Diagnostic::error(Code::E0204, "`@autotune` takes its knobs by name")
                        .with_primary(relative(arg.span, 0), "a knob without a name")
                        .with_help("write `@autotune(BM=[64, 128], BN=[64, 128])`"),
                );
                continue;
            };
            if !AUTOTUNE_KNOBS.contains(&name.name.as_str()) {
                let mut diag =
                    Diagnostic::error(Code::E0204, format!("`{}` is not a knob `@autotune` turns", name.name))
                        .with_primary(relative(name.span, 0), "unknown knob");
                diag = match did_you_mean(&name.name, AUTOTUNE_KNOBS.iter().copied()) {
                    Some(s) => diag.with_help(format!("did you mean `{s}`?")),
                    None => diag.with_note(format!(
                        "the knobs are {}",
                        AUTOTUNE_KNOBS.map(|k| format!("`{k}`")).join(", ")
                    )),
                };
                self.diags.push(diag);
                continue;
            }
            if knobs.iter().any(|(k, _)| *k == name.name) {
                self.diags.push(
                    Diagnostic::error(Code::E0204, format!("the knob `{}` is given twice", name.name))
                        .with_primary(relative(arg.span, 0), "again here"),
                );
                continue;
            }
            let switch = SWITCH_KNOBS.iter().find(|(k, _)| *k == name.name);
            let values: Option<Vec<i64>> = match &arg.value.kind {
                ExprKind::List(items) if !items.is_empty() => items
                    .iter()
                    .map(|e| match e.kind {
                        ExprKind::Int(v) => {
                            i64::try_from(v)
                                .ok()
                                .filter(|&v| if switch.is_some() { v == 0 || v == 1 } else { v > 0 })
                        }
                        _ => None,
                    })
                    .collect(),
                _ => None,
            };
            match values {
                Some(values) => knobs.push((name.name.clone(), values)),
                None => match switch {
                    Some((knob, meaning)) => self.diags.push(
                        Diagnostic::error(Code::E0204, format!("the candidates of `{knob}` are 0 and 1"))
                            .with_primary(relative(arg.value.span, 0), "not a list of 0s and 1s")
                            .with_help(format!("write `{knob}=[0, 1]`: {meaning}")),
                    ),
                    None => self.diags.push(
                        Diagnostic::error(
                            Code::E0204,
                            format!("the candidates of `{}` must be a list of positive integers", name.name),
                        )
                        .with_primary(relative(arg.value.span, 0), "not a list of positive integers")
                        .with_help(format!(
                            "write `{}=[{}]`",
                            name.name,
                            match name.name.as_str() {
                                "stages" => "2, 3, 4",
                                "warps" => "4, 8",
                                _ => "64, 128",
                            }
                        )),
                    ),
                },
            }
        }
        knobs
    }

    /// E0103 for a decorator Tessera does not know. One that is meant as
    /// `@kernel` or `@device` (a misspelling, or another language's
    /// `@triton.jit`, `@cuda.jit`) makes the function that kind, so its
    /// body is not also reported for using kernel builtins outside one.
    fn unknown_decorator(&mut self, head: &Expr, sig: &mut Signature) {
        let text = crate::pretty::expr(head);
        let name = text.split('(').next().unwrap_or(&text).to_string();
        let mut diag = Diagnostic::error(Code::E0103, format!("unknown decorator `@{name}`"))
            .with_primary(relative(head.span, 0), "not a decorator Tessera knows");
        let meant = did_you_mean(&name, DECORATORS.iter().copied());
        let jit = name.ends_with("jit");
        if jit {
            diag = diag.with_help("a kernel is written `@kernel`").with_fix(
                Fix::new("write `@kernel`", Applicability::MaybeIncorrect).with_edit(relative(head.span, 0), "kernel"),
            );
        } else if let Some(s) = meant {
            diag = diag.with_help(format!("did you mean `@{s}`?"));
        } else {
            diag = diag.with_note(format!(
                "the decorators are {}",
                DECORATORS.map(|d| format!("`@{d}`")).join(", ")
            ));
        }
        self.diags.push(diag);
        if sig.kind == FnKind::Function {
            match meant {
                _ if jit => sig.kind = FnKind::Kernel,
                Some("kernel") => sig.kind = FnKind::Kernel,
                Some("device") => sig.kind = FnKind::Device,
                _ => {}
            }
        }
    }

    pub(crate) fn ty(&mut self, ty: &Type) -> Ty {
        match &ty.kind {
            TypeKind::None => Ty::None,
            TypeKind::Tuple(items) => Ty::Tuple(items.iter().map(|t| self.ty(t)).collect()),
            TypeKind::Named { space, name, dims } => {
                let space = space.as_ref().and_then(|s| self.space(&s.name, s.span));
                if name.name == "tensor" {
                    let dtype = dims.as_ref().and_then(|d| d.first()).and_then(|e| match &e.kind {
                        ExprKind::Name(n) => self.dtype(n, e.span),
                        _ => None,
                    });
                    return Ty::Tensor(TensorTy {
                        dtype,
                        dims: None,
                        space,
                    });
                }
                let Some(dtype) = self.dtype(&name.name, name.span) else {
                    return Ty::Unknown;
                };
                match dims {
                    None => Ty::Scalar(dtype),
                    Some(dims) => Ty::Tensor(TensorTy {
                        dtype: Some(dtype),
                        dims: Some(dims.iter().map(|d| self.positive_dim(d)).collect()),
                        space,
                    }),
                }
            }
        }
    }

    fn dtype(&mut self, name: &str, span: Span) -> Option<DType> {
        if let Some(d) = DType::from_name(name) {
            return Some(d);
        }
        let mut diag = Diagnostic::error(Code::E0201, format!("unknown type `{name}`"))
            .with_primary(relative(span, 0), "not a dtype");
        // Another library's name for a dtype is a sure fix; a near name, a guess.
        let foreign = DType::foreign(name).map(|d| (d.name(), Applicability::MachineApplicable));
        let near =
            || did_you_mean(name, ALL_DTYPES.iter().map(|d| d.name())).map(|s| (s, Applicability::MaybeIncorrect));
        match foreign.or_else(near) {
            Some((s, sure)) => {
                diag = diag
                    .with_help(format!("did you mean `{s}`?"))
                    .with_fix(Fix::new(format!("write `{s}`"), sure).with_edit(relative(span, 0), s))
            }
            None => diag = diag.with_note("the dtypes are f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2, fp4_e2m1, nvfp4, i8–i64, u8–u64 and bool"),
        }
        self.diags.push(diag);
        None
    }

    fn space(&mut self, name: &str, span: Span) -> Option<Space> {
        let Some(space) = Space::from_name(name) else {
            const SPACES: [&str; 9] = [
                "register", "shared", "lds", "global", "managed", "host", "tmem", "constant", "local",
            ];
            let mut diag = Diagnostic::error(Code::E0202, format!("unknown memory space `{name}`"))
                .with_primary(relative(span, 0), "not a memory space");
            if let Some(s) = did_you_mean(name, SPACES.iter().copied()) {
                diag = diag.with_help(format!("did you mean `{s}`?"));
            }
            self.diags.push(diag);
            return None;
        };
        let target = self.db.workspace().options(self.db).target;
        if space == Space::Tmem && !target.has_tmem() {
            self.diags.push(
                Diagnostic::error(
                    Code::E0212,
                    format!("the target {} has no tensor memory", target.name()),
                )
                .with_primary(relative(span, 0), "`tmem` needs sm_100 or later")
                .with_help("keep the accumulator in `register` or `shared` memory on this target"),
            );
        }
        Some(space)
    }

    /// E0101 for a name in a `where` constraint that is no dim of the
    /// parameters or the result, nor one an equation derives (`D == H *
    /// Dh`), nor a module constant: the constraint would hold of nothing
    /// (`where D % 8 == 0` over `x: f32[N]`).
    fn unknown_dims_in_where(&mut self, def: &FnDef) {
        let Some(clause) = &def.where_clause else { return };
        let mut known: Vec<String> = def.params.iter().map(|p| p.name.name.clone()).collect();
        let types = def.params.iter().filter_map(|p| p.ty.as_ref()).chain(def.ret.as_ref());
        for ty in types {
            dims_named_in(ty, &mut known);
        }
        for c in &clause.constraints {
            if let ExprKind::Binary { op: BinOp::Eq, lhs, .. } = &c.unparen().kind {
                if !is_mod(lhs) {
                    names_in(c, &mut known);
                }
            }
        }
        let dims: Vec<String> = known
            .iter()
            .filter(|n| !def.params.iter().any(|p| p.name.name == **n))
            .cloned()
            .collect();
        let mut reported: Vec<String> = Vec::new();
        for c in &clause.constraints {
            let mut names = Vec::new();
            names_in(c, &mut names);
            for name in names {
                if known.contains(&name)
                    || reported.contains(&name)
                    || crate::constants::scoped(self.db, self.file, &name).is_some()
                {
                    continue;
                }
                let mut diag = Diagnostic::error(Code::E0101, format!("`{name}` is not a dim of `{}`", def.name.name))
                    .with_primary(
                        relative(c.span, 0),
                        format!("`{name}` appears in no parameter's or result's shape"),
                    );
                diag = match did_you_mean(&name, dims.iter().map(String::as_str)) {
                    Some(s) => diag.with_help(format!("did you mean `{s}`?")),
                    None => {
                        diag.with_note("a constraint limits the dims named in the parameters' and the result's shapes")
                    }
                };
                self.diags.push(diag);
                reported.push(name);
            }
        }
    }

    /// E0312 for parameter dims whose symbols no call or launch can bind.
    /// A call binds (as `tessera run` does) a symbol that is a whole dim
    /// of a parameter, then one that a `where S == expr` gives from bound
    /// ones, then, over and over, the one unbound factor of a product dim
    /// (`H * D` with `H` bound elsewhere). A symbol still unbound (both
    /// factors of `H * D` alone, `N` of `N + 1`) would stop every call.
    /// Gives the symbols of the result's dims it reported.
    fn unbindable_dims(&mut self, def: &FnDef) -> Vec<String> {
        let dims: Vec<(&Expr, &str)> = def
            .params
            .iter()
            .filter_map(|p| match &p.ty.as_ref()?.kind {
                TypeKind::Named { dims: Some(dims), .. } => Some(dims.iter().map(move |d| (d, p.name.name.as_str()))),
                _ => None,
            })
            .flatten()
            .collect();
        let is_symbol = |n: &str| !n.contains('.') && crate::constants::scoped(self.db, self.file, n).is_none();
        let mut bound: Vec<String> = dims
            .iter()
            .filter_map(|(d, _)| match &d.unparen().kind {
                ExprKind::Name(n) if is_symbol(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let unbound = |e: &Expr, bound: &[String]| -> Vec<String> {
            let mut names = Vec::new();
            names_in(e, &mut names);
            names.retain(|n| is_symbol(n) && !bound.contains(n));
            names.dedup();
            names
        };
        let constraints: Vec<&Expr> = def.where_clause.iter().flat_map(|w| w.constraints.iter()).collect();
        loop {
            let mut learned = Vec::new();
            for sides in constraints.iter().filter_map(|c| c.equation_sides()) {
                for (a, b) in sides {
                    if let ExprKind::Name(n) = &a.unparen().kind {
                        if is_symbol(n) && !bound.contains(n) && unbound(b, &bound).is_empty() {
                            learned.push(n.clone());
                        }
                    }
                }
            }
            for (d, _) in &dims {
                if is_product(d) {
                    if let [one] = &unbound(d, &bound)[..] {
                        learned.push(one.clone());
                    }
                }
            }
            if learned.is_empty() {
                break;
            }
            bound.extend(learned);
        }
        // The result's dims come from the parameters' (a result dim no
        // parameter gives, `-> f32[K]`, made every call fail when it ran).
        let mut result_dims: Vec<&Expr> = Vec::new();
        let mut types: Vec<&Type> = def.ret.iter().collect();
        while let Some(t) = types.pop() {
            match &t.kind {
                TypeKind::Named { dims: Some(ds), .. } => result_dims.extend(ds),
                TypeKind::Tuple(parts) => types.extend(parts),
                _ => {}
            }
        }
        let whole: Vec<(String, &str)> = dims
            .iter()
            .filter_map(|(d, param)| match &d.unparen().kind {
                ExprKind::Name(n) if is_symbol(n) => Some((n.clone(), *param)),
                _ => None,
            })
            .collect();
        let mut known: Vec<&str> = Vec::new();
        for n in &bound {
            if !known.contains(&n.as_str()) {
                known.push(n);
            }
        }
        let known: Vec<String> = known.into_iter().map(String::from).collect();
        let places = dims
            .into_iter()
            .map(|(d, param)| (d, Some(param)))
            .chain(result_dims.into_iter().map(|d| (d, None)));
        let mut unbound_result = Vec::new();
        for (d, param) in places {
            let missing = unbound(d, &bound);
            if missing.is_empty() {
                continue;
            }
            // Each symbol is reported once, where it first appears.
            bound.extend(missing.iter().cloned());
            let names = missing
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            let dim = crate::pretty::expr(d);
            let first = &missing[0];
            // `where N == 2 * H` with `N` a parameter's whole dim: a call
            // binds `H` when the parameter is written `f32[2 * H]`.
            let rewrite = constraints.iter().find_map(|c| {
                c.equation_sides()?.into_iter().find_map(|(a, b)| {
                    let ExprKind::Name(n) = &a.unparen().kind else { return None };
                    let (_, param) = whole.iter().find(|(w, _)| w == n)?;
                    let mut uses = Vec::new();
                    names_in(b, &mut uses);
                    uses.contains(first).then(|| {
                        let written = crate::pretty::expr(b);
                        format!(
                            "write `{param}`'s dim `{n}` as `{written}`, so a call binds `{first}` from its size, and drop `{}` from the `where` clause",
                            crate::pretty::expr(c)
                        )
                    })
                })
            });
            let diag = match param {
                Some(param) => Diagnostic::error(Code::E0312, format!("no call can bind {names} of `{dim}`"))
                    .with_primary(relative(d.span, 0), format!("a dim of `{param}`"))
                    .with_note(if is_product(d) {
                        format!("a call binds one unknown factor of `{dim}` from its size, not {}", missing.len())
                    } else {
                        "a call binds a symbol that is a whole dim of a parameter, or one factor of a product of them"
                            .to_string()
                    })
                    .with_help(rewrite.unwrap_or_else(|| {
                        format!(
                            "give `{first}` a dim of its own in a parameter (`w: f32[{first}]`), or fix it with `where {first} == …`"
                        )
                    })),
                None => {
                    unbound_result.extend(missing.iter().cloned());
                    let from = match &known[..] {
                        [] => "the parameters give no dims to write it with: fix it".to_string(),
                        given => format!(
                            "write the result's dim with the parameters' ({}), or fix it",
                            given.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ),
                    };
                    Diagnostic::error(Code::E0312, format!("no call can bind {names} of the result"))
                        .with_primary(relative(d.span, 0), "a dim of the result only")
                        .with_note("a call knows the dims its arguments give and what the `where` equalities derive from them")
                        .with_help(rewrite.unwrap_or_else(|| format!("{from} with `where {first} == …`")))
                }
            };
            self.diags.push(diag);
        }
        unbound_result
    }

    /// A dim of a type, E0313 where it is a constant below 1.
    /// A dim naming no integer constant through a module is E0105, and
    /// opaque from there on (it is no symbol a call binds).
    fn positive_dim(&mut self, e: &Expr) -> Poly {
        let dim = self.dim(e);
        let scope = crate::constants::scope(self.db, self.file);
        for name in dim.symbols().filter(|s| s.contains('.')) {
            let (module, member) = name.rsplit_once('.').unwrap_or_default();
            let members = scope.iter().filter_map(|(n, c)| {
                let m = n.strip_prefix(module)?.strip_prefix('.')?;
                c.as_int().map(|_| m)
            });
            let diag = Diagnostic::error(
                Code::E0105,
                format!("`{name}` is no integer constant of an imported module"),
            )
            .with_primary(
                relative(e.span, 0),
                "a dim names a module's integer constant, or a dim symbol",
            );
            self.diags.push(match did_you_mean(member, members) {
                Some(m) => diag.with_help(format!("did you mean `{module}.{m}`?")),
                None => diag.with_help(format!("name the dim with a symbol of its own (`{member}`)")),
            });
        }
        let dim = dim.substitute(&|s| s.contains('.').then(|| Poly::opaque(s)));
        if let Some(c) = dim.as_const().filter(|&c| c < 1) {
            self.diags.push(
                Diagnostic::error(Code::E0313, format!("a dim of {c}"))
                    .with_primary(relative(e.span, 0), "a dim is at least 1")
                    .with_help("name the dim (`N`) for a size known only at the call"),
            );
        }
        dim
    }

    /// A dim as written, with the integer constants in scope put in.
    fn dim(&self, e: &Expr) -> Poly {
        crate::constants::substitute(self.db, self.file, &dim_poly(e))
    }

    /// An integer literal or integer module constant.
    fn int(&self, e: &Expr) -> Option<i64> {
        int(e).or_else(|| match &e.unparen().kind {
            ExprKind::Name(_) | ExprKind::Attr { .. } => {
                crate::constants::scoped(self.db, self.file, &dotted_name(e)?)?.as_int()
            }
            _ => None,
        })
    }

    fn constraint(&mut self, c: &Expr) -> Option<ConstraintKind> {
        let kind = match &c.unparen().kind {
            ExprKind::Binary {
                op: BinOp::Eq,
                lhs,
                rhs,
            } if is_mod(lhs) && int(rhs) == Some(0) => {
                let ExprKind::Binary { lhs: dim, rhs: by, .. } = &lhs.unparen().kind else {
                    unreachable!()
                };
                self.int(by)
                    .filter(|&k| k > 0)
                    .map(|by| ConstraintKind::Divisible { dim: self.dim(dim), by })
            }
            ExprKind::Binary {
                op: BinOp::In,
                lhs,
                rhs,
            } => match &rhs.unparen().kind {
                ExprKind::Range { start, end, inclusive } => Some(ConstraintKind::InRange {
                    dim: self.dim(lhs),
                    lo: self.dim(start),
                    hi: self.dim(end),
                    inclusive: *inclusive,
                }),
                _ => None,
            },
            // Only `% k == 0` is a divisibility constraint; other remainders are not supported.
            ExprKind::Binary { lhs, .. } if is_mod(lhs) => None,
            ExprKind::Binary { op, lhs, rhs } => op.as_cmp().map(|op| ConstraintKind::Compare {
                lhs: self.dim(lhs),
                op,
                rhs: self.dim(rhs),
            }),
            _ => None,
        };
        if kind.is_none() {
            let diag = Diagnostic::error(Code::E0301, "unsupported shape constraint")
                .with_primary(relative(c.span, 0), "not a constraint on dims");
            // `N % 8` alone: the divisibility constraint it starts.
            let diag = if is_mod(c) {
                let text = crate::pretty::expr(c);
                diag.with_help(format!("a divisibility constraint is `{text} == 0`"))
                    .with_fix(
                        Fix::new("compare the remainder with 0", Applicability::MachineApplicable)
                            .with_edit(relative(Span::empty(c.span.end), 0), " == 0"),
                    )
            } else {
                diag.with_help(
                    "write `D % 8 == 0`, a comparison such as `S <= 8192` or `D == H * Dh`, or `B in 1..=4096`",
                )
            };
            self.diags.push(diag);
        }
        kind
    }
}

/// Whether `e` is a product of two or more names and numbers.
fn is_product(e: &Expr) -> bool {
    fn factors(e: &Expr) -> Option<usize> {
        match &e.unparen().kind {
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } => Some(factors(lhs)? + factors(rhs)?),
            ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Size(_) => Some(1),
            ExprKind::Attr { .. } => dotted_name(e).map(|_| 1),
            _ => None,
        }
    }
    factors(e).is_some_and(|n| n >= 2)
}

/// The names in expression `e`, in order.
/// The names in the dims of `ty` (and of a tuple's items).
fn dims_named_in(ty: &Type, out: &mut Vec<String>) {
    match &ty.kind {
        TypeKind::Named { dims: Some(dims), .. } => dims.iter().for_each(|d| names_in(d, out)),
        TypeKind::Tuple(items) => items.iter().for_each(|t| dims_named_in(t, out)),
        _ => {}
    }
}

/// The dotted name an attribute of names writes (`ops.WIDTH`,
/// `pkg.sizes.N`): how a dim names a constant of an imported module.
pub fn dotted_name(e: &Expr) -> Option<String> {
    match &e.unparen().kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Attr { base, name } => Some(format!("{}.{}", dotted_name(base)?, name.name)),
        _ => None,
    }
}

fn names_in(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Name(_) | ExprKind::Attr { .. } => out.extend(dotted_name(e)),
        ExprKind::Paren(inner) => names_in(inner, out),
        ExprKind::Unary { operand, .. } => names_in(operand, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            names_in(lhs, out);
            names_in(rhs, out);
        }
        _ => {}
    }
}

fn is_mod(e: &Expr) -> bool {
    matches!(&e.unparen().kind, ExprKind::Binary { op: BinOp::Mod, .. })
}

pub(crate) fn int(e: &Expr) -> Option<i64> {
    match &e.unparen().kind {
        ExprKind::Int(v) => i64::try_from(*v).ok(),
        ExprKind::Unary {
            op: tessera_syntax::ast::UnaryOp::Neg,
            operand,
        } => int(operand).map(|v| -v),
        _ => None,
    }
}

/// A dim expression as a polynomial; what is not polynomial is opaque.
pub fn dim_poly(e: &Expr) -> Poly {
    match &e.kind {
        ExprKind::Name(n) => Poly::sym(n),
        ExprKind::Int(v) => Poly::constant(i64::try_from(*v).unwrap_or(i64::MAX)),
        ExprKind::Paren(inner) => dim_poly(inner),
        ExprKind::Attr { .. } => {
            dotted_name(e).map_or_else(|| Poly::opaque(&crate::pretty::expr(e)), |n| Poly::sym(&n))
        }
        ExprKind::Unary {
            op: tessera_syntax::ast::UnaryOp::Neg,
            operand,
        } => dim_poly(operand).neg(),
        ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } => dim_poly(lhs).add(&dim_poly(rhs)),
        ExprKind::Binary {
            op: BinOp::Sub,
            lhs,
            rhs,
        } => dim_poly(lhs).sub(&dim_poly(rhs)),
        ExprKind::Binary {
            op: BinOp::Mul,
            lhs,
            rhs,
        } => dim_poly(lhs).mul(&dim_poly(rhs)),
        ExprKind::Binary {
            op: BinOp::Shl,
            lhs,
            rhs,
        } => match int(rhs) {
            Some(k) if (0..62).contains(&k) => dim_poly(lhs).mul(&Poly::constant(1 << k)),
            _ => Poly::opaque(&crate::pretty::expr(e)),
        },
        _ => Poly::opaque(&crate::pretty::expr(e)),
    }
}
