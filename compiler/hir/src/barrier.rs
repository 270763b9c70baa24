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

use std::collections::{HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_syntax::ast::{BinOp, Block, Expr, ExprKind, Stmt, StmtKind};

use crate::body::BodyCtx;
use crate::builtins::{Builtin, Shape};
use crate::db::relative;
use crate::signature::FnKind;

pub(crate) fn check(ctx: &BodyCtx) -> Vec<Diagnostic> {
    if ctx.sig.kind != FnKind::Kernel {
        return Vec::new();
    }
    let locals = Taint::compute(ctx);
    let mut walker = Walker {
        ctx,
        locals: &locals,
        causes: Vec::new(),
        exits: Vec::new(),
        reported: HashSet::new(),
        diagnostics: Vec::new(),
    };
    walker.block(&ctx.def.body);
    walker.diagnostics
}

/// Where a thread-dependent local gets its value from.
#[derive(Clone, Copy, Debug)]
struct Source {
    builtin: &'static Builtin,
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
                Source { builtin: b, direct }
            }
        }
    }

    /// Names the value for a label: "the thread index `i`".
    fn describe(&self) -> String {
        match self {
            Dependence::Local(name, Source { builtin, direct: true }) if builtin.shape == Shape::Index => {
                format!("the {} `{name}`", index_kind(builtin))
            }
            Dependence::Local(name, source) => format!("`{name}`, which varies with `{}()`", source.builtin.path),
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
        ExprKind::Call { .. } => {
            if let Some(b) = ctx.builtin(e.span).filter(|b| b.thread_dependent) {
                return Some(Dependence::Call(b));
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
    fn compute(ctx: &'a BodyCtx<'a>) -> HashMap<String, Source> {
        let mut taint = Taint {
            ctx,
            locals: HashMap::new(),
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

    /// `target = value` under `control`; tuples are matched element-wise.
    fn assign(&mut self, target: &Expr, value: &Expr, control: Option<Source>) {
        if let (ExprKind::Tuple(targets), ExprKind::Tuple(values)) = (&target.unparen().kind, &value.unparen().kind) {
            if targets.len() == values.len() {
                for (t, v) in targets.iter().zip(values) {
                    self.assign(t, v, control);
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

struct Walker<'a> {
    ctx: &'a BodyCtx<'a>,
    locals: &'a HashMap<String, Source>,
    /// The thread-dependent conditions around the current point, innermost last.
    causes: Vec<Cause>,
    /// Early exits taken by some threads that still affect the current
    /// point: returns until the end, `break`s until their loop ends,
    /// `continue`s until the end of the iteration.
    exits: Vec<Exit>,
    /// Barriers already reported (loop bodies are walked twice).
    reported: HashSet<Span>,
    diagnostics: Vec<Diagnostic>,
}

impl Walker<'_> {
    fn cause(&self, e: &Expr, kind: CauseKind, what: &str) -> Option<Cause> {
        let dep = dependence(self.ctx, self.locals, e)?;
        Some(Cause {
            span: e.span,
            label: format!("{what} depends on {}", dep.describe()),
            kind,
        })
    }

    fn block(&mut self, block: &Block) {
        for stmt in &block.stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Assign { targets, value } => {
                self.expr(value);
                targets.iter().for_each(|t| self.expr(t));
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    self.expr(value);
                }
                self.expr(target);
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
            each_expr(body, &mut |e| self.collect_barriers(e, &mut barriers));
            for (call, b) in barriers {
                if self.reported.insert(call) {
                    self.diagnostics.push(barrier_after_exit(call, b, &exit));
                }
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
            _ => {
                if let Some(b) = self.ctx.builtin(e.span).filter(|b| b.block_collective) {
                    self.barrier(e.span, b);
                }
                e.kind.for_each_child(|child| self.expr(child));
            }
        }
    }

    fn collect_barriers(&self, e: &Expr, out: &mut Vec<(Span, &'static Builtin)>) {
        if let Some(b) = self.ctx.builtin(e.span).filter(|b| b.block_collective) {
            out.push((e.span, b));
        }
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

    fn barrier(&mut self, call: Span, b: &Builtin) {
        if self.reported.contains(&call) {
            return;
        }
        let diag = if let Some(cause) = self.causes.last() {
            divergent_barrier(call, b, cause)
        } else if let Some(exit) = self.exits.first() {
            barrier_after_exit(call, b, exit)
        } else {
            return;
        };
        self.reported.insert(call);
        self.diagnostics.push(diag);
    }
}

fn divergent_barrier(call: Span, b: &Builtin, cause: &Cause) -> Diagnostic {
    let (primary, help) = match cause.kind {
        CauseKind::Branch => (
            "only the threads that take this branch reach this barrier",
            "move the barrier out of the condition so that every thread of the block reaches it",
        ),
        CauseKind::Loop => (
            "threads reach this barrier a different number of times",
            "move the barrier out of the loop, or give the loop the same trip count in every thread",
        ),
    };
    Diagnostic::error(
        Code::E0601,
        format!("`{}()` is not reached by every thread of the block", b.path),
    )
    .with_primary(relative(call, 0), primary)
    .with_secondary(relative(cause.span, 0), cause.label.clone())
    .with_help(help)
}

fn barrier_after_exit(call: Span, b: &Builtin, exit: &Exit) -> Diagnostic {
    let when = if call.start < exit.span.start {
        "in an earlier iteration"
    } else {
        "above"
    };
    let (primary, here, help) = match exit.kind {
        ExitKind::Return => (
            format!("threads that returned {when} never reach this barrier"),
            "some threads return here",
            "guard the work with the condition instead of returning early, so that every thread reaches the barrier",
        ),
        ExitKind::Break => (
            format!("threads that left the loop {when} never reach this barrier"),
            "some threads leave the loop here",
            "leave the loop on a condition that is the same in every thread, or move the barrier out of the loop",
        ),
        // A `continue` ends with its iteration, so it only affects what follows it.
        ExitKind::Continue => (
            "threads that took the `continue` above skip this barrier".to_string(),
            "some threads skip the rest of the iteration here",
            "guard the rest of the iteration with the condition instead of `continue`",
        ),
    };
    Diagnostic::error(
        Code::E0601,
        format!("`{}()` after a thread-dependent `{}`", b.path, exit.kind.keyword()),
    )
    .with_primary(relative(call, 0), primary)
    .with_secondary(relative(exit.span, 0), here)
    .with_secondary(relative(exit.cause.span, 0), exit.cause.label.clone())
    .with_help(help)
}

/// Calls `f` on each expression of the statements of `block` (the outermost
/// ones: `f` looks into their children itself), nested blocks included.
fn each_expr(block: &Block, f: &mut dyn FnMut(&Expr)) {
    for stmt in &block.stmts {
        each_expr_in(stmt, f);
    }
}

fn each_expr_in(stmt: &Stmt, f: &mut dyn FnMut(&Expr)) {
    match &stmt.kind {
        StmtKind::Expr(e) => f(e),
        StmtKind::Assign { targets, value } => {
            f(value);
            for target in targets {
                f(target);
            }
        }
        StmtKind::AnnAssign { target, value, .. } => {
            if let Some(value) = value {
                f(value);
            }
            f(target);
        }
        StmtKind::AugAssign { target, value, .. } => {
            f(target);
            f(value);
        }
        StmtKind::If { branches, orelse } => {
            for branch in branches {
                f(&branch.cond);
                each_expr(&branch.body, f);
            }
            if let Some(orelse) = orelse {
                each_expr(orelse, f);
            }
        }
        StmtKind::For { target, iter, body } => {
            f(iter);
            f(target);
            each_expr(body, f);
        }
        StmtKind::While { cond, body } => {
            f(cond);
            each_expr(body, f);
        }
        StmtKind::With { items, body } => {
            items.iter().for_each(|item| f(&item.expr));
            each_expr(body, f);
        }
        StmtKind::Return(Some(value)) => f(value),
        StmtKind::Assert { cond, message } => {
            f(cond);
            if let Some(message) = message {
                f(message);
            }
        }
        StmtKind::Error(children) => children.iter().for_each(|s| each_expr_in(s, f)),
        StmtKind::Return(None)
        | StmtKind::Def(_)
        | StmtKind::Import(_)
        | StmtKind::FromImport { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Pass => {}
    }
}
