//! Barrier safety: a block-collective operation (`tbarrier()`,
//! `tile.barrier()`) must be reached by every thread of the block, or the
//! block hangs. This finds barriers under control flow that depends on the
//! thread (conditions, loop trip counts, conditional expressions) and
//! barriers after an early exit that only some threads take.
//!
//! Thread dependence starts at the builtins the op table marks
//! `thread_dependent` and flows into locals through assignments and through
//! the conditions they are assigned under. Parameters, dims and shared
//! buffers are uniform: an element store (`smem[i] = x`) does not make the
//! buffer thread-dependent, since its elements are read back after a barrier.
//!
//! A device function's barriers are its callers' too. The per-body check
//! ([`check`]) covers the barriers a kernel or device function writes;
//! across calls ([`check_calls`], from the file-level pass in `device.rs`),
//! a call of a device function that waits at a barrier ([`Summary`]) is a
//! barrier of the caller, and an argument that differs between threads must
//! not decide whether the callee reaches one (its *governing* parameters:
//! found by a walk that takes each parameter as a source, [`summarize`]).

use std::collections::{HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_syntax::ast::{Arg, BinOp, Block, Expr, ExprKind, Stmt, StmtKind};

use crate::body::{BodyCtx, CallTarget};
use crate::builtins::{Builtin, Shape};
use crate::db::{self, relative, FnId};
use crate::ty::Ty;

/// The barriers a kernel or device function writes itself.
pub(crate) fn check(ctx: &BodyCtx) -> Vec<Diagnostic> {
    if !ctx.sig.kind.is_device_code() {
        return Vec::new();
    }
    Walker::run(ctx, Mode::Builtins).diagnostics
}

/// What a device function does with barriers, as its callers see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// It waits at a barrier, itself or through a call.
    pub collective: bool,
    /// The parameters that decide whether, or how often, it reaches one.
    pub governing: Vec<usize>,
}

/// The summary a callee has so far: `None` when it is not a device function.
pub(crate) type Summaries<'s> = &'s dyn Fn(&CallTarget) -> Option<Summary>;

/// The calls of a kernel or device function that wait at a barrier through
/// a device function, and the arguments that decide whether they do.
pub(crate) fn check_calls(ctx: &BodyCtx, summaries: Summaries) -> Vec<Diagnostic> {
    Walker::run(ctx, Mode::Calls(summaries)).diagnostics
}

/// A device function's summary, given its callees' summaries so far.
pub(crate) fn summarize(ctx: &BodyCtx, summaries: Summaries) -> Summary {
    let walker = Walker::run(ctx, Mode::Summarize(summaries));
    let mut governing: Vec<usize> = walker.governing.into_iter().collect();
    governing.sort_unstable();
    Summary {
        collective: walker.collective,
        governing,
    }
}

/// What a walk looks for.
#[derive(Clone, Copy)]
enum Mode<'s> {
    /// Reports block-collective builtins under thread-dependent control.
    Builtins,
    /// Reports calls of device functions that wait at barriers, and
    /// thread-dependent arguments to their governing parameters.
    Calls(Summaries<'s>),
    /// Takes the parameters as sources and records what a caller must know.
    Summarize(Summaries<'s>),
}

/// Where a thread-dependent value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Origin {
    Builtin(&'static Builtin),
    /// A device function's parameter (only when summarizing it).
    Param(usize),
}

/// Where a thread-dependent local gets its value from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Source {
    origin: Origin,
    /// Assigned straight from the builtin's call (`i = tile_linear_id()`).
    direct: bool,
}

/// What makes an expression thread-dependent: the first thread-dependent
/// local or builtin call it mentions.
enum Dependence {
    Local(String, Source),
    Call(&'static Builtin),
}

impl Dependence {
    fn source(&self, value: &Expr, ctx: &BodyCtx) -> Source {
        match self {
            Dependence::Local(_, source) => Source {
                direct: false,
                ..*source
            },
            Dependence::Call(b) => {
                let direct = ctx
                    .builtin(value.unparen().span)
                    .is_some_and(|called| called.path == b.path);
                Source {
                    origin: Origin::Builtin(b),
                    direct,
                }
            }
        }
    }

    fn origin(&self) -> Origin {
        match self {
            Dependence::Local(_, source) => source.origin,
            Dependence::Call(b) => Origin::Builtin(b),
        }
    }

    /// Names the value for a label: "the thread index `i`".
    fn describe(&self) -> String {
        match self {
            Dependence::Local(
                name,
                Source {
                    origin: Origin::Param(_),
                    direct: true,
                },
            ) => format!("the parameter `{name}`"),
            Dependence::Local(
                name,
                Source {
                    origin: Origin::Param(_),
                    ..
                },
            ) => format!("`{name}`"),
            Dependence::Local(
                name,
                Source {
                    origin: Origin::Builtin(builtin),
                    direct: true,
                },
            ) if builtin.shape == Shape::Index => {
                format!("the {} `{name}`", index_kind(builtin))
            }
            Dependence::Local(
                name,
                Source {
                    origin: Origin::Builtin(builtin),
                    ..
                },
            ) => format!("`{name}`, which varies with `{}()`", builtin.path),
            Dependence::Call(b) if b.shape == Shape::Index => format!("the {} `{}()`", index_kind(b), b.path),
            Dependence::Call(b) => format!("`{}(...)`, which differs between threads", b.path),
        }
    }
}

fn index_kind(b: &Builtin) -> &'static str {
    match b.name() {
        "lane_id" => "lane index",
        "warp_id" => "warp index",
        _ => "thread index",
    }
}

fn dependence(ctx: &BodyCtx, locals: &HashMap<String, Source>, e: &Expr) -> Option<Dependence> {
    match &e.kind {
        ExprKind::Name(n) => return locals.get(n).map(|s| Dependence::Local(n.clone(), *s)),
        ExprKind::Call { args, .. } => {
            if let Some(b) = ctx.builtin(e.span).filter(|b| b.thread_dependent) {
                return Some(Dependence::Call(b));
            }
            // A draw without `counter=` is at the thread's linear index
            // (`spec/kernels.md`, "Random numbers"): a value each thread.
            let drawn_per_thread = ctx
                .builtin(e.span)
                .is_some_and(|b| matches!(b.path, "rng.uniform" | "rng.normal"))
                && !args
                    .iter()
                    .any(|a| a.name.as_ref().is_some_and(|n| n.name == "counter"));
            if let Some(b) = ctx.builtin(e.span).filter(|_| drawn_per_thread) {
                return Some(Dependence::Call(b));
            }
            if let Some(CallTarget::Function { file, name }) = ctx.calls.get(&e.span).map(|c| &c.target) {
                if let Some(d) = returned_dependence(ctx, locals, *file, name, args, None) {
                    return Some(d);
                }
            }
        }
        _ => {}
    }
    let mut found = None;
    e.kind.for_each_child(|child| {
        if found.is_none() {
            found = dependence(ctx, locals, child);
        }
    });
    found
}

/// A call's result in the memo of [`returned_dependence`]: the function,
/// the tuple element, and the thread dependence of each argument.
type CallKey = (crate::db::SourceFile, String, Option<usize>, Vec<Option<Source>>);

thread_local! {
    /// How many calls deep [`returned_dependence`] is looking.
    static CALL_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// What the calls looked into below the outermost one gave: a call
    /// repeated with arguments of the same dependence gives the same, so
    /// nested calls cost once each (a chain of functions that each call the
    /// one below four times took seconds). Emptied when the outermost call
    /// returns, so nothing outlives one query.
    static CALL_MEMO: std::cell::RefCell<HashMap<CallKey, Option<Source>>> = std::cell::RefCell::new(HashMap::new());
    /// The functions whose `infer` query runs on this thread, innermost
    /// last. A call of one of them is recursion (E0216, reported by the
    /// device-function check), which [`returned_dependence`] must not
    /// look into: the callee's `infer` would be a cycle of queries.
    static INFERRING: std::cell::RefCell<Vec<(crate::db::SourceFile, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Marks a function's `infer` query as running on this thread until it is
/// dropped (also when salsa cancels the query and unwinds).
pub(crate) struct Inferring;

impl Inferring {
    pub(crate) fn enter(file: crate::db::SourceFile, name: &str) -> Inferring {
        INFERRING.with(|s| s.borrow_mut().push((file, name.to_string())));
        Inferring
    }
}

impl Drop for Inferring {
    fn drop(&mut self) {
        INFERRING.with(|s| s.borrow_mut().pop());
    }
}

/// How deep [`returned_dependence`] follows calls (recursion is an error
/// of its own, E0216, and must not make this one loop).
const MAX_CALL_DEPTH: usize = 8;

/// Puts [`CALL_DEPTH`] back when a look into a call ends, and empties the
/// memo when the outermost one does — also when a query is cancelled
/// (salsa unwinds), so that neither outlives it.
struct DepthGuard(usize);

impl Drop for DepthGuard {
    fn drop(&mut self) {
        CALL_DEPTH.with(|d| d.set(self.0));
        if self.0 == 0 {
            CALL_MEMO.with(|m| m.borrow_mut().clear());
        }
    }
}

/// What makes the value of a call of function `name` (in `file`) with
/// `args` thread-dependent: the callee's body is looked at with each
/// parameter as thread-dependent as its argument, and the value depends on
/// the thread when a returned expression does, or a condition that decides
/// which `return` runs (`if launch.local_id() < 16: return 1`). With
/// `element`, only that element of a returned tuple (`return i, 0`) counts
/// among the expressions.
fn returned_dependence(
    ctx: &BodyCtx,
    locals: &HashMap<String, Source>,
    file: crate::db::SourceFile,
    name: &str,
    args: &[Arg],
    element: Option<usize>,
) -> Option<Dependence> {
    let depth = CALL_DEPTH.with(std::cell::Cell::get);
    let recursive = INFERRING.with(|s| s.borrow().iter().any(|(f, n)| *f == file && n == name));
    if depth >= MAX_CALL_DEPTH || recursive {
        return None;
    }
    let db = ctx.db;
    let func = FnId::new(db, file, name.to_string());
    let sig = db::signature(db, func);
    if sig.kind == crate::signature::FnKind::Kernel {
        return None;
    }
    let arg_sources: Vec<Option<Source>> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let arg = args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.name == p.name))
                .or_else(|| args.iter().filter(|a| a.name.is_none()).nth(i))?;
            dependence(ctx, locals, &arg.value).map(|d| d.source(&arg.value, ctx))
        })
        .collect();
    let key: CallKey = (file, name.to_string(), element, arg_sources.clone());
    let memo = CALL_MEMO.with(|m| m.borrow().get(&key).copied());
    let found = match memo {
        Some(found) => found,
        None => {
            let _restore = DepthGuard(depth);
            CALL_DEPTH.with(|d| d.set(depth + 1));
            let found = db::fn_ast(db, func).as_deref().and_then(|def| {
                let info = db::infer(db, func);
                let callee = BodyCtx::new(db, file, def, sig, info);
                let callee_locals = Taint::compute(&callee, &arg_sources);
                let mut returns = Returns::default();
                returns.block(&def.body, &mut Vec::new());
                let values = returns.values.iter().map(|v| match (&v.unparen().kind, element) {
                    (ExprKind::Tuple(items), Some(k)) if k < items.len() => &items[k],
                    _ => *v,
                });
                values
                    .chain(returns.conditions.iter().copied())
                    .find_map(|e| dependence(&callee, &callee_locals, e).map(|d| d.source(e, &callee)))
            });
            if depth > 0 {
                CALL_MEMO.with(|m| m.borrow_mut().insert(key, found));
            }
            found
        }
    };
    // The caller's terms: a builtin, or (when the caller is summarized) one
    // of its own parameters.
    found.map(|s| match s.origin {
        Origin::Builtin(b) => Dependence::Call(b),
        Origin::Param(i) => Dependence::Local(
            ctx.sig.params.get(i).map_or_else(String::new, |p| p.name.clone()),
            Source { direct: false, ..s },
        ),
    })
}

/// What a function's `return` statements give and what decides which one
/// runs.
#[derive(Default)]
struct Returns<'e> {
    values: Vec<&'e Expr>,
    /// The conditions of the branches and loops that hold a `return`: with
    /// more than one way out, they pick the value (a function with one
    /// `return`, its last statement, has none).
    conditions: Vec<&'e Expr>,
}

impl<'e> Returns<'e> {
    fn block(&mut self, block: &'e Block, enclosing: &mut Vec<&'e Expr>) {
        for stmt in &block.stmts {
            if let StmtKind::Return(value) = &stmt.kind {
                self.values.extend(value);
                for c in enclosing.iter() {
                    if !self.conditions.iter().any(|k| std::ptr::eq(*k, *c)) {
                        self.conditions.push(c);
                    }
                }
            }
            let conditions: Vec<&'e Expr> = match &stmt.kind {
                StmtKind::If { branches, .. } => branches.iter().map(|b| &b.cond).collect(),
                StmtKind::While { cond, .. } => vec![cond],
                StmtKind::For { iter, .. } => vec![iter],
                _ => Vec::new(),
            };
            let depth = enclosing.len();
            enclosing.extend(conditions);
            for b in stmt.kind.blocks() {
                self.block(b, enclosing);
            }
            enclosing.truncate(depth);
        }
    }
}

/// Finds the thread-dependent locals, iterating to a fixpoint because a
/// loop can carry a value back to an assignment above it.
struct Taint<'a> {
    ctx: &'a BodyCtx<'a>,
    locals: HashMap<String, Source>,
    /// How often each local is assigned, counted in the first round.
    assignments: HashMap<String, u32>,
    first_round: bool,
    changed: bool,
}

impl<'a> Taint<'a> {
    /// The thread-dependent locals, the parameters with the sources of
    /// `params` (by position; none for those past its end).
    fn compute(ctx: &'a BodyCtx<'a>, params: &[Option<Source>]) -> HashMap<String, Source> {
        let mut locals = HashMap::new();
        for (p, source) in ctx.sig.params.iter().zip(params) {
            if let Some(source) = source {
                locals.insert(p.name.clone(), *source);
            }
        }
        let mut taint = Taint {
            ctx,
            locals,
            assignments: HashMap::new(),
            first_round: true,
            changed: true,
        };
        while taint.changed {
            taint.changed = false;
            taint.block(&ctx.def.body, None);
            taint.first_round = false;
        }
        // A local assigned again (`j //= 2`) is no longer the index itself.
        let mut locals = taint.locals;
        for (name, source) in &mut locals {
            if taint.assignments.get(name).is_some_and(|&n| n > 1) {
                source.direct = false;
            }
        }
        locals
    }

    fn source(&self, e: &Expr) -> Option<Source> {
        dependence(self.ctx, &self.locals, e).map(|d| d.source(e, self.ctx))
    }

    /// The source of a condition, as the control dependence of what it guards.
    fn control(&self, e: &Expr) -> Option<Source> {
        self.source(e).map(|s| Source { direct: false, ..s })
    }

    fn bind(&mut self, target: &Expr, source: Option<Source>) {
        match &target.kind {
            ExprKind::Name(n) => {
                if self.first_round {
                    *self.assignments.entry(n.clone()).or_default() += 1;
                }
                if let (Some(source), false) = (source, self.locals.contains_key(n)) {
                    self.locals.insert(n.clone(), source);
                    self.changed = true;
                }
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let part = source.map(|s| Source { direct: false, ..s });
                for item in items {
                    self.bind(item, part);
                }
            }
            ExprKind::Paren(inner) => self.bind(inner, source),
            _ => {}
        }
    }

    /// `target = value` under `control`; tuples are matched element-wise,
    /// those a function returns too (`i, n = split()`).
    fn assign(&mut self, target: &Expr, value: &Expr, control: Option<Source>) {
        if let (ExprKind::Tuple(targets), ExprKind::Tuple(values)) = (&target.unparen().kind, &value.unparen().kind) {
            if targets.len() == values.len() {
                for (t, v) in targets.iter().zip(values) {
                    self.assign(t, v, control);
                }
                return;
            }
        }
        if let (ExprKind::Tuple(targets), ExprKind::Call { args, .. }) = (&target.unparen().kind, &value.unparen().kind)
        {
            let callee = self.ctx.calls.get(&value.unparen().span).map(|c| &c.target);
            if let Some(CallTarget::Function { file, name }) = callee {
                for (k, t) in targets.iter().enumerate() {
                    let source = returned_dependence(self.ctx, &self.locals, *file, name, args, Some(k))
                        .map(|d| Source {
                            direct: false,
                            ..d.source(value, self.ctx)
                        })
                        .or(control);
                    self.bind(t, source);
                }
                return;
            }
        }
        let source = self.source(value).or(control);
        self.bind(target, source);
    }

    fn block(&mut self, block: &Block, control: Option<Source>) {
        for stmt in &block.stmts {
            self.stmt(stmt, control);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, control: Option<Source>) {
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                for target in targets {
                    self.assign(target, value, control);
                }
            }
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } => self.assign(target, value, control),
            StmtKind::AugAssign { target, value, .. } => self.assign(target, value, control),
            StmtKind::If { branches, orelse } => {
                // A branch runs only where every earlier condition failed.
                let mut control = control;
                for branch in branches {
                    control = control.or_else(|| self.control(&branch.cond));
                    self.block(&branch.body, control);
                }
                if let Some(orelse) = orelse {
                    self.block(orelse, control);
                }
            }
            StmtKind::While { cond, body } => {
                let control = control
                    .or_else(|| self.control(cond))
                    .or_else(|| self.divergent_exit(body, None, false));
                self.block(body, control);
            }
            StmtKind::For { target, iter, body } => {
                let control = control
                    .or_else(|| self.control(iter))
                    .or_else(|| self.divergent_exit(body, None, false));
                let source = self.source(iter).or(control);
                self.bind(target, source);
                self.block(body, control);
            }
            StmtKind::With { body, .. } => self.block(body, control),
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s, control)),
            _ => {}
        }
    }

    /// A loop's `break`, `continue` or `return` taken under a thread-dependent
    /// condition: after it, threads have run different numbers of
    /// iterations, so whatever the loop assigns differs between them.
    fn divergent_exit(&self, block: &Block, control: Option<Source>, nested: bool) -> Option<Source> {
        block
            .stmts
            .iter()
            .find_map(|stmt| self.divergent_exit_in(stmt, control, nested))
    }

    fn divergent_exit_in(&self, stmt: &Stmt, control: Option<Source>, nested: bool) -> Option<Source> {
        match &stmt.kind {
            StmtKind::Break | StmtKind::Continue if !nested => control,
            StmtKind::Return(_) => control,
            StmtKind::If { branches, orelse } => {
                let mut control = control;
                for branch in branches {
                    control = control.or_else(|| self.control(&branch.cond));
                    if let Some(found) = self.divergent_exit(&branch.body, control, nested) {
                        return Some(found);
                    }
                }
                orelse.as_ref().and_then(|b| self.divergent_exit(b, control, nested))
            }
            StmtKind::While { cond, body } => self.divergent_exit(body, control.or_else(|| self.control(cond)), true),
            StmtKind::For { iter, body, .. } => self.divergent_exit(body, control.or_else(|| self.control(iter)), true),
            StmtKind::With { body, .. } => self.divergent_exit(body, control, nested),
            StmtKind::Error(children) => children.iter().find_map(|s| self.divergent_exit_in(s, control, nested)),
            _ => None,
        }
    }
}

/// Why some threads take a path that others do not.
#[derive(Clone)]
struct Cause {
    span: Span,
    label: String,
    kind: CauseKind,
    origin: Origin,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CauseKind {
    /// An `if`/`elif` condition, the condition of `x if c else y`, or the
    /// left side of `and`/`or`.
    Branch,
    /// A loop whose trip count differs between threads.
    Loop,
}

/// A `return`, `break` or `continue` that only some threads take.
#[derive(Clone)]
struct Exit {
    span: Span,
    kind: ExitKind,
    cause: Cause,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ExitKind {
    Return,
    Break,
    Continue,
}

impl ExitKind {
    fn keyword(self) -> &'static str {
        match self {
            ExitKind::Return => "return",
            ExitKind::Break => "break",
            ExitKind::Continue => "continue",
        }
    }
}

/// A point every thread of the block must reach: a block-collective
/// builtin, or a call of a device function that waits at one.
struct Point {
    span: Span,
    /// `tbarrier()`, or `` `f`, which waits at a barrier, ``.
    what: String,
    /// A register tile rather than a barrier.
    tile: bool,
}

struct Walker<'a> {
    ctx: &'a BodyCtx<'a>,
    mode: Mode<'a>,
    locals: HashMap<String, Source>,
    /// The thread-dependent conditions around the current point, innermost last.
    causes: Vec<Cause>,
    /// Early exits taken by some threads that still affect the current
    /// point: returns until the end, `break`s until their loop ends,
    /// `continue`s until the end of the iteration.
    exits: Vec<Exit>,
    /// Barriers already reported (loop bodies are walked twice).
    reported: HashSet<Span>,
    /// The conditions and exits a tile has been reported under.
    tiles_reported: HashSet<Span>,
    diagnostics: Vec<Diagnostic>,
    /// When summarizing: whether a point was found, and the parameters
    /// that decide whether one is reached.
    collective: bool,
    governing: HashSet<usize>,
}

impl<'a> Walker<'a> {
    fn run(ctx: &'a BodyCtx<'a>, mode: Mode<'a>) -> Walker<'a> {
        // Summarizing a device function, each parameter is a source of its
        // own: the summary says which parameters decide its barriers.
        let params: Vec<Option<Source>> = match mode {
            Mode::Summarize(_) => (0..ctx.sig.params.len())
                .map(|i| {
                    Some(Source {
                        origin: Origin::Param(i),
                        direct: true,
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        let locals = Taint::compute(ctx, &params);
        let mut walker = Walker {
            ctx,
            mode,
            locals,
            causes: Vec::new(),
            exits: Vec::new(),
            reported: HashSet::new(),
            tiles_reported: HashSet::new(),
            diagnostics: Vec::new(),
            collective: false,
            governing: HashSet::new(),
        };
        walker.block(&ctx.def.body);
        walker
    }

    fn cause(&self, e: &Expr, kind: CauseKind, what: &str) -> Option<Cause> {
        let dep = dependence(self.ctx, &self.locals, e)?;
        Some(Cause {
            span: e.span,
            label: format!("{what} depends on {}", dep.describe()),
            kind,
            origin: dep.origin(),
        })
    }

    /// The summary of the device function a call expression calls.
    fn callee(&self, call: Span) -> Option<Summary> {
        let summaries = match self.mode {
            Mode::Builtins => return None,
            Mode::Calls(s) | Mode::Summarize(s) => s,
        };
        summaries(&self.ctx.calls.get(&call)?.target)
    }

    /// The barrier point at `e` for this walk's mode.
    fn point(&self, e: &Expr) -> Option<Point> {
        if let Some(b) = self.ctx.builtin(e.span).filter(|b| b.block_collective) {
            return match self.mode {
                Mode::Calls(_) => None,
                _ => Some(Point {
                    span: e.span,
                    what: format!("`{}()`", b.path),
                    tile: false,
                }),
            };
        }
        if !self.callee(e.span)?.collective {
            return None;
        }
        let name = match &self.ctx.calls.get(&e.span)?.target {
            CallTarget::Function { name, .. } => name.clone(),
            CallTarget::Builtin(b) => b.path.to_string(),
        };
        Some(Point {
            span: e.span,
            what: format!("`{name}()`, which waits at a barrier,"),
            tile: false,
        })
    }

    /// The arguments of a call of a device function that decide whether it
    /// reaches a barrier: each must be the same in every thread.
    fn governing_args(&mut self, call: &Expr, args: &[Arg]) {
        let Some(summary) = self.callee(call.span).filter(|s| !s.governing.is_empty()) else {
            return;
        };
        let Some(CallTarget::Function { file, name }) = self.ctx.calls.get(&call.span).map(|c| c.target.clone()) else {
            return;
        };
        let sig = db::signature(self.ctx.db, FnId::new(self.ctx.db, file, name.clone()));
        for &index in &summary.governing {
            let Some(param) = sig.params.get(index) else { continue };
            let arg = args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.name == param.name))
                .or_else(|| args.iter().filter(|a| a.name.is_none()).nth(index));
            let Some(arg) = arg else { continue };
            let Some(dep) = dependence(self.ctx, &self.locals, &arg.value) else {
                continue;
            };
            match dep.origin() {
                Origin::Param(i) => {
                    self.governing.insert(i);
                }
                Origin::Builtin(_) if matches!(self.mode, Mode::Calls(_)) => {
                    if self.reported.insert(arg.value.span) {
                        self.diagnostics
                            .push(governing_argument(&arg.value, &dep, &name, &param.name));
                    }
                }
                Origin::Builtin(_) => {}
            }
        }
    }

    fn block(&mut self, block: &Block) {
        for stmt in &block.stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Del(targets) => targets.iter().for_each(|t| self.expr(t)),
            StmtKind::Assign { targets, value } => {
                self.expr(value);
                targets.iter().for_each(|t| self.target(t));
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    self.expr(value);
                }
                self.target(target);
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
            }
            StmtKind::If { branches, orelse } => {
                // An `elif` or `else` is governed by every condition before it.
                let depth = self.causes.len();
                for branch in branches {
                    self.expr(&branch.cond);
                    if let Some(cause) = self.cause(&branch.cond, CauseKind::Branch, "this condition") {
                        self.causes.push(cause);
                    }
                    self.block(&branch.body);
                }
                if let Some(orelse) = orelse {
                    self.block(orelse);
                }
                self.causes.truncate(depth);
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                let cause = self.cause(cond, CauseKind::Loop, "this loop condition");
                self.loop_body(body, cause);
            }
            StmtKind::For { iter, body, .. } => {
                self.expr(iter);
                let cause = self.cause(iter, CauseKind::Loop, "the number of iterations");
                self.loop_body(body, cause);
            }
            StmtKind::With { items, body } => {
                items.iter().for_each(|item| self.expr(&item.expr));
                self.block(body);
            }
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    self.expr(value);
                }
                self.exit(stmt.span, ExitKind::Return);
            }
            StmtKind::Break => self.exit(stmt.span, ExitKind::Break),
            StmtKind::Continue => self.exit(stmt.span, ExitKind::Continue),
            StmtKind::Assert { cond, message } => {
                self.expr(cond);
                if let Some(message) = message {
                    self.expr(message);
                }
            }
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s)),
            StmtKind::Def(_) | StmtKind::Import(_) | StmtKind::FromImport { .. } | StmtKind::Pass => {}
        }
    }

    /// An assignment's target: a name it binds computes nothing.
    fn target(&mut self, t: &Expr) {
        match &t.kind {
            ExprKind::Name(_) => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| self.target(i)),
            _ => self.expr(t),
        }
    }

    fn exit(&mut self, span: Span, kind: ExitKind) {
        if let Some(cause) = self.causes.last() {
            self.exits.push(Exit {
                span,
                kind,
                cause: cause.clone(),
            });
        }
    }

    fn loop_body(&mut self, body: &Block, cause: Option<Cause>) {
        let pushed = cause.is_some();
        self.causes.extend(cause);
        let before = self.exits.len();
        self.block(body);
        // Threads that left the loop or the kernel during an iteration miss
        // every barrier of the later iterations, above the exit too. (A scan,
        // not a second walk: walking nested loops twice would take time
        // exponential in their depth.)
        let carried = self.exits[before..]
            .iter()
            .find(|e| e.kind != ExitKind::Continue)
            .cloned();
        if let Some(exit) = carried {
            let mut barriers = Vec::new();
            body.each_expr(&mut |e| self.collect_barriers(e, &mut barriers));
            for point in barriers {
                self.report(point, |p| barrier_after_exit(p, &exit), exit.cause.origin);
            }
        }
        // A loop's own `break`s and `continue`s end with it; returns last.
        let mut returns: Vec<Exit> = Vec::new();
        for exit in self.exits.drain(before..) {
            if exit.kind == ExitKind::Return && !returns.iter().any(|r| r.span == exit.span) {
                returns.push(exit);
            }
        }
        self.exits.extend(returns);
        if pushed {
            self.causes.pop();
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            // Only the threads that pick a side evaluate it.
            ExprKind::IfElse { cond, then, orelse } => {
                self.expr(cond);
                let cause = self.cause(cond, CauseKind::Branch, "this condition");
                self.guarded(cause, |w| {
                    w.expr(then);
                    w.expr(orelse);
                });
            }
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                rhs,
            } => {
                self.expr(lhs);
                let cause = self.cause(lhs, CauseKind::Branch, "this condition");
                self.guarded(cause, |w| w.expr(rhs));
            }
            _ if self.is_tile(e) => {
                // Every thread computes its part of a tile: the whole
                // expression is one point, its parts are not looked into
                // (but for the bounds of the slices in it), and one tile is
                // reported per divergent condition or exit.
                self.tile_bounds(e);
                let text = crate::pretty::expr(e);
                let what = if text.chars().count() <= 40 {
                    format!("`{text}`, a tile spread over the threads of the block,")
                } else {
                    "a tile operation, spread over the threads of the block,".to_string()
                };
                let why = self
                    .causes
                    .last()
                    .map(|c| c.span)
                    .or(self.exits.first().map(|x| x.span));
                if why.is_some_and(|w| self.tiles_reported.insert(w)) {
                    self.barrier(Point {
                        span: e.span,
                        what,
                        tile: true,
                    });
                }
            }
            _ => {
                if let Some(point) = self.point(e) {
                    self.barrier(point);
                }
                if let ExprKind::Call { callee, args } = &e.kind {
                    self.governing_args(e, args);
                    // A part of memory passed to a function is a view of it
                    // (`fill(out[r])`, a pointer to row `r`), not a tile:
                    // its indices may differ between threads.
                    if matches!(
                        self.ctx.calls.get(&e.span).map(|c| &c.target),
                        Some(CallTarget::Function { .. })
                    ) {
                        self.expr(callee);
                        for a in args {
                            match &a.value.unparen().kind {
                                ExprKind::Subscript { base, args: index }
                                    if self.is_tile(&a.value) && is_row(index) =>
                                {
                                    self.expr(base);
                                    index.iter().for_each(|i| self.expr(&i.value));
                                }
                                _ => self.expr(&a.value),
                            }
                        }
                        return;
                    }
                }
                e.kind.for_each_child(|child| self.expr(child));
            }
        }
    }

    /// The slices of memory in tile expression `e` (`x[base:base + 4]`):
    /// a tile is one region of the tensor, spread over the block's threads,
    /// so bounds that differ between threads name no region. Each thread
    /// would compute its part of a different tile, and most of every tile
    /// would be lost: reported with the value the bounds depend on.
    fn tile_bounds(&mut self, e: &Expr) {
        if let ExprKind::Subscript { args, .. } = &e.kind {
            if self.is_tile(e) {
                let cause = args
                    .iter()
                    .find_map(|a| self.cause(&a.value, CauseKind::Branch, "this index"));
                if let Some(cause) = cause {
                    let point = Point {
                        span: e.span,
                        what: format!("`{}`", crate::pretty::expr(e)),
                        tile: true,
                    };
                    self.report(point, |p| thread_dependent_tile(p, &cause), cause.origin);
                    return;
                }
            }
        }
        e.kind.for_each_child(|child| self.tile_bounds(child));
    }

    /// A register tile computed in the kernel (`x[0:64]`, `tile.dot(a, b)`,
    /// a local holding one): its elements are spread over the block's
    /// threads, which exchange them, so every thread must reach it as it
    /// reaches a barrier (and a device function that computes one is a
    /// collective call). Parameters and shared buffers are memory, not tiles.
    fn is_tile(&self, e: &Expr) -> bool {
        if matches!(self.mode, Mode::Calls(_)) {
            return false;
        }
        // A tensor of unknown rank (`tensor[float]` indexed) is not known
        // to be a tile.
        let Some(Ty::Tensor(t)) = self.ctx.type_of(e.span) else {
            return false;
        };
        if t.space.is_some() || t.dims.is_none() {
            return false;
        }
        match &e.kind {
            ExprKind::Name(n) => !self.ctx.sig.params.iter().any(|p| &p.name == n),
            ExprKind::Paren(_) | ExprKind::Attr { .. } => false,
            _ => true,
        }
    }

    fn collect_barriers(&self, e: &Expr, out: &mut Vec<Point>) {
        out.extend(self.point(e));
        e.kind.for_each_child(|child| self.collect_barriers(child, out));
    }

    fn guarded(&mut self, cause: Option<Cause>, walk: impl FnOnce(&mut Self)) {
        let pushed = cause.is_some();
        self.causes.extend(cause);
        walk(self);
        if pushed {
            self.causes.pop();
        }
    }

    fn barrier(&mut self, point: Point) {
        self.collective = true;
        if let Some(cause) = self.causes.last().cloned() {
            self.report(point, |p| divergent_barrier(p, &cause), cause.origin);
        } else if let Some(exit) = self.exits.first().cloned() {
            self.report(point, |p| barrier_after_exit(p, &exit), exit.cause.origin);
        }
    }

    /// A point some threads miss, because of a value from `origin`: an
    /// error, or when summarizing a device function whose parameter it is,
    /// a governing parameter its callers check.
    fn report(&mut self, point: Point, diagnose: impl FnOnce(&Point) -> Diagnostic, origin: Origin) {
        match (self.mode, origin) {
            (Mode::Summarize(_), Origin::Param(i)) => {
                self.governing.insert(i);
            }
            (Mode::Summarize(_), Origin::Builtin(_)) => {}
            _ => {
                if self.reported.insert(point.span) {
                    self.diagnostics.push(diagnose(&point));
                }
            }
        }
    }
}

/// E0601: an argument that differs between threads decides whether the
/// device function it is passed to reaches a barrier.
fn governing_argument(arg: &Expr, dep: &Dependence, callee: &str, param: &str) -> Diagnostic {
    Diagnostic::error(
        Code::E0601,
        format!("`{callee}()` waits at a barrier that not every thread of the block reaches"),
    )
    .with_primary(
        relative(arg.span, 0),
        format!("this argument depends on {}", dep.describe()),
    )
    .with_note(format!(
        "`{callee}` waits at a barrier under a condition on its parameter `{param}`, so threads that pass different values reach it differently"
    ))
    .with_help(format!("pass `{param}` a value that is the same in every thread of the block"))
}

fn divergent_barrier(point: &Point, cause: &Cause) -> Diagnostic {
    let (primary, help) = match (cause.kind, point.tile) {
        (CauseKind::Branch, false) => (
            "only the threads that take this branch reach this barrier",
            "move the barrier out of the condition so that every thread of the block reaches it",
        ),
        (CauseKind::Loop, false) => (
            "threads reach this barrier a different number of times",
            "move the barrier out of the loop, or give the loop the same trip count in every thread",
        ),
        (CauseKind::Branch, true) => (
            "only the threads that take this branch compute their part of it",
            "compute the tile in every thread, before the condition, and use its result under it",
        ),
        (CauseKind::Loop, true) => (
            "threads compute it a different number of times",
            "compute the tile outside the loop, or give the loop the same trip count in every thread",
        ),
    };
    Diagnostic::error(
        Code::E0601,
        format!("{} is not reached by every thread of the block", point.what),
    )
    .with_primary(relative(point.span, 0), primary)
    .with_secondary(relative(cause.span, 0), cause.label.clone())
    .with_help(help)
}

/// E0601: a slice taken as a tile whose bounds differ between threads.
fn thread_dependent_tile(point: &Point, cause: &Cause) -> Diagnostic {
    Diagnostic::error(
        Code::E0601,
        format!(
            "{} is a tile spread over the threads of the block, but its bounds differ between threads",
            point.what
        ),
    )
    .with_primary(
        relative(point.span, 0),
        "each thread would compute its part of a different tile",
    )
    .with_secondary(relative(cause.span, 0), cause.label.clone())
    .with_help(
        "give the slice bounds that are the same in every thread (from `launch.block_id()`, parameters and constants), \
         or have each thread handle its own elements one by one (`y[base + j] = x[base + j] + 1.0` in a loop)",
    )
}

fn barrier_after_exit(point: &Point, exit: &Exit) -> Diagnostic {
    let when = if point.span.start < exit.span.start {
        "in an earlier iteration"
    } else {
        "above"
    };
    let reach = if point.tile {
        "compute their part of this tile"
    } else {
        "reach this barrier"
    };
    let (primary, here, help) = match exit.kind {
        ExitKind::Return => (
            format!("threads that returned {when} never {reach}"),
            "some threads return here",
            "guard the work with the condition instead of returning early, so that every thread reaches the barrier",
        ),
        ExitKind::Break => (
            format!("threads that left the loop {when} never {reach}"),
            "some threads leave the loop here",
            "leave the loop on a condition that is the same in every thread, or move the barrier out of the loop",
        ),
        // A `continue` ends with its iteration, so it only affects what follows it.
        ExitKind::Continue => (
            format!(
                "threads that took the `continue` above skip {}",
                if point.tile { "this tile" } else { "this barrier" }
            ),
            "some threads skip the rest of the iteration here",
            "guard the rest of the iteration with the condition instead of `continue`",
        ),
    };
    Diagnostic::error(
        Code::E0601,
        format!("{} after a thread-dependent `{}`", point.what, exit.kind.keyword()),
    )
    .with_primary(relative(point.span, 0), primary)
    .with_secondary(relative(exit.span, 0), here)
    .with_secondary(relative(exit.cause.span, 0), exit.cause.label.clone())
    .with_help(help)
}

/// Whether the indices `args` name rows of memory: each fixes a dim or
/// takes it whole (`out[r]`, `bufs[s, :]`), so that a function they are
/// passed to gets a view (`x[0:4]`, `x[:, c]` are not).
pub fn is_row(args: &[Arg]) -> bool {
    let whole = |a: &Arg| match &a.value.kind {
        ExprKind::Slice { lower, upper, step } => {
            upper.is_none() && step.is_none() && lower.as_ref().is_none_or(|l| matches!(l.kind, ExprKind::Int(0)))
        }
        _ => true,
    };
    args.iter().all(whole) && args.iter().any(|a| !matches!(a.value.kind, ExprKind::Slice { .. }))
}
