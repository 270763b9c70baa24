//! Async copies and shared memory in kernels (seed 000 §1.2, DESIGN §2).
//!
//! `tile.async_copy(dst, src, stage=s)` starts a copy into the buffer `dst`
//! names; `tile.wait_async(stage=s)` completes every copy of stage `s`. A
//! forward walk over the structured control flow tracks which copies may be
//! in flight, over all paths: a read of a buffer with a copy in flight, a
//! second copy into a stage in flight, a wait with nothing to wait for and a
//! copy still in flight at the end are errors. A stage computed at run time
//! (`stage=k % 2`) may be any stage: a copy into it satisfies any wait, and a
//! wait for it may complete any copy.
//!
//! The shared-memory budget is checked here too: the constant-size
//! allocations of a kernel must fit its `shared(...)` budget and the target.

use std::collections::{BTreeSet, HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_syntax::ast::{Arg, Block, Expr, ExprKind, Stmt, StmtKind};

use crate::body::BodyCtx;
use crate::builtins::Shape;
use crate::db::relative;
use crate::ty::{Space, TensorTy, Ty};

pub(crate) fn check(ctx: &BodyCtx) -> Vec<Diagnostic> {
    if !ctx.sig.kind.is_device_code() {
        return Vec::new();
    }
    let mut diagnostics: Vec<Diagnostic> = variable_sizes(ctx);
    diagnostics.extend(shared_budget(ctx));
    let mut copies = Copies {
        ctx,
        loud: true,
        loops: Vec::new(),
        reported_uses: HashSet::new(),
        reported_unwaited: HashSet::new(),
        loop_exits: HashMap::new(),
        diagnostics: Vec::new(),
    };
    let mut flow = Flow::entry();
    copies.block(&ctx.def.body, &mut flow);
    copies.unwaited(&flow, None);
    diagnostics.extend(copies.diagnostics);
    diagnostics
}

/// A copy that may still be in flight.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct InFlight {
    copy: Span,
    stage: Stage,
    /// The root name of the destination (`buf` for `buf[0:64]`).
    buffer: Option<String>,
    /// The slot of a buffer of slots the copy fills: `1` for `bufs[1]`
    /// (a leading index given by a literal); `None` for the whole buffer.
    slot: Option<i64>,
}

/// A stage: an integer literal, or `None` when computed at run time.
type Stage = Option<i64>;

/// "in stage 0", for messages.
fn in_stage(stage: Stage) -> String {
    match stage {
        Some(s) => format!("in stage {s}"),
        None => "in a computed stage".to_string(),
    }
}

/// The wait that completes a stage, for help lines.
fn wait_for(stage: Stage) -> String {
    match stage {
        Some(s) => format!("`tile.wait_async(stage={s})`"),
        None => "`tile.wait_async` of its stage".to_string(),
    }
}

/// The copies that may be in flight at a point, over every path reaching it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Flow {
    /// False after a `return`, `break` or `continue`, until paths join.
    reachable: bool,
    copies: BTreeSet<InFlight>,
}

impl Flow {
    fn entry() -> Flow {
        Flow {
            reachable: true,
            copies: BTreeSet::new(),
        }
    }

    fn unreachable() -> Flow {
        Flow {
            reachable: false,
            copies: BTreeSet::new(),
        }
    }

    /// Where two paths meet, a copy in flight on either may be in flight.
    fn join(&mut self, other: &Flow) {
        if !other.reachable {
            return;
        }
        if !self.reachable {
            *self = other.clone();
            return;
        }
        self.copies.extend(other.copies.iter().cloned());
    }

    fn in_stage(&self, stage: i64) -> Option<&InFlight> {
        self.copies.iter().find(|c| c.stage == Some(stage))
    }
}

/// The states in which a loop body is left early.
struct LoopExits {
    breaks: Flow,
    continues: Flow,
}

#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

impl Access {
    fn noun(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

struct Copies<'a> {
    ctx: &'a BodyCtx<'a>,
    /// False while a loop is walked towards its fixpoint: only the final
    /// walk, from the loop head's complete state, reports.
    loud: bool,
    loops: Vec<LoopExits>,
    /// Copies whose early use was reported (one report per copy).
    reported_uses: HashSet<Span>,
    reported_unwaited: HashSet<Span>,
    /// The state after a loop (by the loop's span) for a state before it.
    /// Walking a loop has no other effect while quiet, and remembering it
    /// keeps nested loops from taking time exponential in their depth.
    loop_exits: HashMap<(Span, Flow), Flow>,
    diagnostics: Vec<Diagnostic>,
}

impl Copies<'_> {
    fn block(&mut self, block: &Block, flow: &mut Flow) {
        for stmt in &block.stmts {
            self.stmt(stmt, flow);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, flow: &mut Flow) {
        match &stmt.kind {
            StmtKind::Expr(e) => self.expr(e, flow),
            StmtKind::Del(targets) => targets.iter().for_each(|t| self.expr(t, flow)),
            StmtKind::Assign { targets, value } => {
                self.expr(value, flow);
                targets.iter().for_each(|t| self.store(t, flow));
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    self.expr(value, flow);
                }
                self.store(target, flow);
            }
            StmtKind::AugAssign { target, value, .. } => {
                // `buf[0] += x` reads the element before writing it.
                self.expr(target, flow);
                self.expr(value, flow);
            }
            StmtKind::If { branches, orelse } => {
                let mut out = Flow::unreachable();
                for branch in branches {
                    // Each condition is evaluated where the ones before it failed.
                    self.expr(&branch.cond, flow);
                    let mut taken = flow.clone();
                    self.block(&branch.body, &mut taken);
                    out.join(&taken);
                }
                match orelse {
                    Some(orelse) => {
                        let mut taken = flow.clone();
                        self.block(orelse, &mut taken);
                        out.join(&taken);
                    }
                    None => out.join(flow),
                }
                *flow = out;
            }
            StmtKind::While { cond, body } => self.loop_(stmt.span, Some(cond), body, flow),
            StmtKind::For { iter, body, .. } => {
                self.expr(iter, flow);
                self.loop_(stmt.span, None, body, flow);
            }
            StmtKind::With { items, body } => {
                items.iter().for_each(|item| self.expr(&item.expr, flow));
                self.block(body, flow);
            }
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    self.expr(value, flow);
                }
                self.unwaited(flow, Some(stmt.span));
                *flow = Flow::unreachable();
            }
            StmtKind::Break | StmtKind::Continue => {
                if let Some(exits) = self.loops.last_mut() {
                    let exit = if matches!(stmt.kind, StmtKind::Break) {
                        &mut exits.breaks
                    } else {
                        &mut exits.continues
                    };
                    exit.join(flow);
                }
                *flow = Flow::unreachable();
            }
            StmtKind::Assert { cond, message } => {
                self.expr(cond, flow);
                if let Some(message) = message {
                    self.expr(message, flow);
                }
            }
            StmtKind::Error(children) => children.iter().for_each(|s| self.stmt(s, flow)),
            StmtKind::Def(_) | StmtKind::Import(_) | StmtKind::FromImport { .. } | StmtKind::Pass => {}
        }
    }

    /// A loop: the head's state is the join of the entry and of every back
    /// edge, found by walking the body quietly until it stops growing (it
    /// only grows, over finitely many copies); then one walk reports.
    fn loop_(&mut self, span: Span, cond: Option<&Expr>, body: &Block, flow: &mut Flow) {
        let key = (span, flow.clone());
        if !self.loud {
            if let Some(exit) = self.loop_exits.get(&key) {
                *flow = exit.clone();
                return;
            }
        }
        let loud = self.loud;
        self.loud = false;
        let mut head = flow.clone();
        loop {
            let (back, _) = self.iteration(cond, body, &head);
            let mut joined = head.clone();
            joined.join(&back);
            if joined == head {
                break;
            }
            head = joined;
        }
        self.loud = loud;
        let (_, exit) = self.iteration(cond, body, &head);
        self.loop_exits.insert(key, exit.clone());
        *flow = exit;
    }

    /// One iteration from `head`: the state on the back edge, and the state
    /// after the loop (the condition failed, the iterable ran out, or a `break`).
    fn iteration(&mut self, cond: Option<&Expr>, body: &Block, head: &Flow) -> (Flow, Flow) {
        let mut state = head.clone();
        if let Some(cond) = cond {
            self.expr(cond, &mut state);
        }
        // `while True:` is left only by `break` or `return`.
        let mut exit = match cond.map(|c| &c.unparen().kind) {
            Some(ExprKind::Bool(true)) => Flow::unreachable(),
            _ => state.clone(),
        };
        self.loops.push(LoopExits {
            breaks: Flow::unreachable(),
            continues: Flow::unreachable(),
        });
        self.block(body, &mut state);
        if let Some(exits) = self.loops.pop() {
            state.join(&exits.continues);
            exit.join(&exits.breaks);
        }
        (state, exit)
    }

    fn expr(&mut self, e: &Expr, flow: &mut Flow) {
        match &e.kind {
            ExprKind::Name(n) => self.use_(n, e.span, None, Access::Read, flow),
            ExprKind::Subscript { base, .. } if matches!(base.kind, ExprKind::Name(_)) => {
                self.place(e, Some(Access::Read), flow);
            }
            ExprKind::Call { args, .. } => match self.ctx.builtin(e.span).map(|b| b.path) {
                Some("tile.async_copy") => self.async_copy(e.span, args, flow),
                Some("tile.wait_async") => {
                    args.iter().for_each(|a| self.expr(&a.value, flow));
                    self.wait(e.span, args, flow);
                }
                _ => e.kind.for_each_child(|child| self.expr(child, flow)),
            },
            _ => e.kind.for_each_child(|child| self.expr(child, flow)),
        }
    }

    /// An assignment target: binding a name uses no buffer; storing into an
    /// element writes its buffer.
    fn store(&mut self, target: &Expr, flow: &mut Flow) {
        match &target.kind {
            ExprKind::Name(_) => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|t| self.store(t, flow)),
            ExprKind::Paren(inner) => self.store(inner, flow),
            _ => self.place(target, Some(Access::Write), flow),
        }
    }

    /// A place (`buf[i, j:k]`): its indices are read and its root buffer is
    /// accessed as `access` (not at all for the destination of a copy).
    fn place(&mut self, e: &Expr, access: Option<Access>, flow: &mut Flow) {
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(access) = access {
                    self.use_(n, e.span, None, access, flow);
                }
            }
            ExprKind::Subscript { base, args } => {
                args.iter().for_each(|a| self.expr(&a.value, flow));
                match (&base.kind, access) {
                    (ExprKind::Name(n), Some(access)) => self.use_(n, base.span, slot(args), access, flow),
                    _ => self.place(base, access, flow),
                }
            }
            ExprKind::Attr { base, .. } => self.place(base, access, flow),
            ExprKind::Paren(inner) => self.place(inner, access, flow),
            _ => self.expr(e, flow),
        }
    }

    /// A use of buffer `name` (of its slot `slot`, `bufs[1, i]`) races
    /// with a copy in flight into it, unless both name different slots.
    fn use_(&mut self, name: &str, span: Span, slot: Option<i64>, access: Access, flow: &Flow) {
        if !self.loud || !flow.reachable {
            return;
        }
        let overlaps = |c: &&InFlight| match (c.slot, slot) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let Some(copy) = flow
            .copies
            .iter()
            .filter(overlaps)
            .find(|c| c.buffer.as_deref() == Some(name))
        else {
            return;
        };
        if !self.reported_uses.insert(copy.copy) {
            return;
        }
        let stage = in_stage(copy.stage);
        let started = if copy.copy.start > span.start {
            format!("the copy into `{name}` starts here, {stage}, in the previous iteration")
        } else {
            format!("the copy into `{name}` starts here, {stage}")
        };
        let wait = wait_for(copy.stage);
        let noun = access.noun();
        self.diagnostics.push(
            Diagnostic::error(Code::E0801, format!("`{name}` is used before its async copy completes"))
                .with_primary(
                    relative(span, 0),
                    format!("this {noun} races with the copy into `{name}`"),
                )
                .with_secondary(relative(copy.copy, 0), started)
                .with_help(format!("insert {wait} before this {noun}")),
        );
    }

    fn async_copy(&mut self, span: Span, args: &[Arg], flow: &mut Flow) {
        let positional: Vec<&Arg> = args.iter().filter(|a| a.name.is_none()).collect();
        let dst = keyword(args, "dst").or(positional.first().copied());
        for arg in args {
            if dst.is_some_and(|d| std::ptr::eq(d, arg)) {
                self.place(&arg.value, None, flow);
            } else {
                self.expr(&arg.value, flow);
            }
        }
        // A destination in global memory is refused as such (E0203); the
        // copy is not taken as one in flight.
        let types = &self.ctx.types;
        if dst.and_then(|d| types.get(&d.value.span)?.shared_tensor()) == Some(false) {
            return;
        }
        let stage = keyword(args, "stage")
            .or(positional.get(2).copied())
            .and_then(|a| int(&a.value));
        let buffer = dst.and_then(|d| root(&d.value)).map(str::to_string);
        let slot = dst.and_then(|d| match &d.value.kind {
            ExprKind::Subscript { base, args } if matches!(base.kind, ExprKind::Name(_)) => slot(args),
            _ => None,
        });
        if let (true, true, Some(stage)) = (self.loud, flow.reachable, stage) {
            if let Some(previous) = flow.in_stage(stage) {
                let diag = reused_stage(span, stage, previous);
                self.diagnostics.push(diag);
            }
        }
        flow.copies.insert(InFlight {
            copy: span,
            stage,
            buffer,
            slot,
        });
    }

    fn wait(&mut self, span: Span, args: &[Arg], flow: &mut Flow) {
        let positional = args.iter().find(|a| a.name.is_none());
        let Some(stage) = keyword(args, "stage").or(positional).and_then(|a| int(&a.value)) else {
            flow.copies.clear();
            return;
        };
        let computed = flow.copies.iter().any(|c| c.stage.is_none());
        if self.loud && flow.reachable && flow.in_stage(stage).is_none() && !computed {
            let others: BTreeSet<i64> = flow.copies.iter().filter_map(|c| c.stage).collect();
            let help = match others.first() {
                Some(other) if others.len() == 1 => {
                    format!(
                        "the copies in flight here are in stage {other}: wait for `stage={other}`, or remove this wait"
                    )
                }
                Some(_) => {
                    let list: Vec<String> = others.iter().map(i64::to_string).collect();
                    format!(
                        "the copies in flight here are in stages {}: wait for one of them, or remove this wait",
                        list.join(", ")
                    )
                }
                None => format!("remove this wait, or start a copy with `stage={stage}` before it"),
            };
            // One stage in flight: this wait was meant for it. Its copies'
            // reads before a wait and their missing wait are this mistake
            // again, not reported a second and third time; they stay in
            // flight, so a right wait after this one still finds them.
            if others.len() == 1 {
                for copy in &flow.copies {
                    self.reported_uses.insert(copy.copy);
                    self.reported_unwaited.insert(copy.copy);
                }
            }
            self.diagnostics.push(
                Diagnostic::error(Code::E0804, format!("no async copy is in flight in stage {stage}"))
                    .with_primary(
                        relative(span, 0),
                        format!("no copy in stage {stage} is in flight here, on any path"),
                    )
                    .with_help(help),
            );
        }
        flow.copies.retain(|c| c.stage.is_some_and(|s| s != stage));
    }

    /// Copies in flight where the kernel ends, at a `return` or at the end.
    fn unwaited(&mut self, flow: &Flow, at_return: Option<Span>) {
        if !self.loud || !flow.reachable {
            return;
        }
        for copy in &flow.copies {
            if !self.reported_unwaited.insert(copy.copy) {
                continue;
            }
            let wait = wait_for(copy.stage);
            let mut diag = Diagnostic::error(
                Code::E0802,
                format!("async copy {} is never waited for", in_stage(copy.stage)),
            );
            diag = match at_return {
                Some(ret) => diag
                    .with_primary(
                        relative(copy.copy, 0),
                        "this copy may still be in flight when the kernel returns",
                    )
                    .with_secondary(relative(ret, 0), "the kernel returns here")
                    .with_help(format!("wait for it with {wait} before returning")),
                None => diag
                    .with_primary(
                        relative(copy.copy, 0),
                        "this copy may still be in flight when the kernel ends",
                    )
                    .with_help(format!("wait for it with {wait} before the kernel ends")),
            };
            self.diagnostics.push(diag);
        }
    }
}

/// E0803: a copy into a stage whose earlier copy was not waited for.
fn reused_stage(span: Span, stage: i64, previous: &InFlight) -> Diagnostic {
    let diag = Diagnostic::error(
        Code::E0803,
        format!("stage {stage} already has an async copy in flight"),
    );
    let help = format!("wait first with `tile.wait_async(stage={stage})`, or give this copy a stage of its own");
    if previous.copy == span {
        return diag
            .with_primary(
                relative(span, 0),
                format!("the copy of the previous iteration is still in flight in stage {stage}"),
            )
            .with_help(help);
    }
    let started = match &previous.buffer {
        Some(buffer) => format!("the copy into `{buffer}` in stage {stage} starts here"),
        None => format!("a copy in stage {stage} starts here"),
    };
    diag.with_primary(
        relative(span, 0),
        format!("this copy reuses stage {stage} before it is waited for"),
    )
    .with_secondary(relative(previous.copy, 0), started)
    .with_help(help)
}

fn keyword<'a>(args: &'a [Arg], name: &str) -> Option<&'a Arg> {
    args.iter().find(|a| a.name.as_ref().is_some_and(|n| n.name == name))
}

fn int(e: &Expr) -> Option<i64> {
    match &e.unparen().kind {
        ExprKind::Int(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// The slot a subscript's leading literal index names: `1` for
/// `bufs[1, i]` and `bufs[1]`.
fn slot(args: &[Arg]) -> Option<i64> {
    args.first().filter(|a| a.name.is_none()).and_then(|a| int(&a.value))
}

/// The buffer a place names: `buf` for `buf[i][0:64]`.
fn root(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Name(n) => Some(n),
        ExprKind::Subscript { base, .. } | ExprKind::Attr { base, .. } => root(base),
        ExprKind::Paren(inner) => root(inner),
        _ => None,
    }
}

/// E0806: shared allocations whose size the launch cannot know. A dim is
/// a constant (a literal, a module constant, a local holding one, or
/// arithmetic of them) or a polynomial of the function's dims (`C`, `2 *
/// N`), which the launch binds: the buffer is then laid out when the
/// kernel is launched, after the constant ones (a buffer sized at run time
/// is neither swizzled nor padded: `Infer::check_swizzle`).
fn variable_sizes(ctx: &BodyCtx) -> Vec<Diagnostic> {
    let dims_of_function = ctx.sig.dim_symbols();
    let bound = |d: &crate::poly::Poly| !d.has_opaque() && d.symbols().all(|s| dims_of_function.iter().any(|f| f == s));
    let mut found: Vec<(Span, String)> = ctx
        .calls
        .values()
        .filter(|c| ctx.builtin(c.span).is_some_and(|b| b.shape == Shape::AllocShared))
        .filter_map(|c| match ctx.type_of(c.span)? {
            Ty::Tensor(TensorTy { dims: Some(dims), .. }) => {
                let variable = dims.iter().find(|d| d.as_const().is_none() && !bound(d))?;
                Some((c.span, variable.to_string()))
            }
            _ => None,
        })
        .collect();
    found.sort_by_key(|(span, _)| (span.start, span.end));
    found
        .into_iter()
        .map(|(span, dim)| {
            let mut diag =
                Diagnostic::error(Code::E0806, "a shared buffer's size must be known when the kernel is launched")
                    .with_primary(relative(span, 0), format!("`{dim}` is known only when the kernel runs"))
                    .with_note("shared memory is laid out at the launch, from constants and the dims the launch binds");
            // `TILE = 16` then `TILE = 32`: a module variable, not a constant.
            let times = crate::constants::top_level_assignments(ctx.db, ctx.file, &dim);
            if times > 1 {
                diag = diag.with_note(format!(
                    "`{dim}` is assigned {times} times at the top level, so it is a variable of the module, not a constant"
                ));
            }
            let local = crate::constants::local_assignments(ctx.def, &dim);
            if local > 1 {
                diag = diag.with_note(format!(
                    "`{dim}` is assigned {local} times in `{}`, so it is a variable, not a constant",
                    ctx.def.name.name
                ));
            }
            diag.with_help("size the buffer with constants (`BLOCK = 256`, assigned once, at the top level or in the kernel) or with the kernel's dims (`C`, `2 * N`)")
        })
        .collect()
}

/// E0805: the kernel's constant-size shared allocations, in source order,
/// against its declared budget (when it declares one within the target's
/// limit) or the target's limit. An allocation is counted once, wherever it
/// sits: shared buffers are laid out statically.
fn shared_budget(ctx: &BodyCtx) -> Option<Diagnostic> {
    let target = ctx.db.workspace().options(ctx.db).target;
    let target_limit = target.max_shared_bytes();
    let declared = ctx.sig.shared_budget.filter(|&b| b <= target_limit);
    let limit = declared.unwrap_or(target_limit);
    let mut allocations: Vec<(Span, u64)> = ctx
        .calls
        .values()
        .filter(|c| ctx.builtin(c.span).is_some_and(|b| b.shape == Shape::AllocShared))
        .filter_map(|c| Some((c.span, shared_bytes(ctx.type_of(c.span)?)?)))
        .collect();
    allocations.sort_by_key(|(span, _)| (span.start, span.end));
    let mut total: u64 = 0;
    for (i, &(span, bytes)) in allocations.iter().enumerate() {
        total = total.saturating_add(bytes);
        if total <= limit {
            continue;
        }
        let (message, help) = match declared {
            Some(_) => (
                format!(
                    "shared memory over budget: the kernel allocates {}, its budget is {}",
                    size(total),
                    size(limit)
                ),
                "use smaller tiles or fewer buffers, or raise the budget in `shared(...)`".to_string(),
            ),
            None => (
                format!(
                    "shared memory over the target's limit: the kernel allocates {}, {} provides {} per block",
                    size(total),
                    target.name(),
                    size(limit)
                ),
                "use smaller tiles or fewer buffers".to_string(),
            ),
        };
        let mut diag = Diagnostic::error(Code::E0805, message).with_primary(
            relative(span, 0),
            format!("this allocation of {} brings the total to {}", size(bytes), size(total)),
        );
        for &(earlier, bytes) in &allocations[..i] {
            diag = diag.with_secondary(relative(earlier, 0), format!("{} allocated here", size(bytes)));
        }
        if declared.is_some() {
            if let Some(clause) = shared_clause(ctx) {
                diag = diag.with_secondary(
                    relative(clause, 0),
                    format!("this declares a budget of {}", size(limit)),
                );
            }
        }
        return Some(diag.with_help(help));
    }
    None
}

/// The bytes of a shared buffer whose dims are all constants.
fn shared_bytes(ty: &Ty) -> Option<u64> {
    let Ty::Tensor(TensorTy {
        dtype: Some(dtype),
        dims: Some(dims),
        space: Some(Space::Shared),
    }) = ty
    else {
        return None;
    };
    let mut elements: u64 = 1;
    for dim in dims {
        elements = elements.saturating_mul(u64::try_from(dim.as_const()?).ok()?);
    }
    Some(elements.saturating_mul(u64::from(dtype.bits())).div_ceil(8))
}

/// The `shared(...)` clause of the `@kernel` decorator.
fn shared_clause(ctx: &BodyCtx) -> Option<Span> {
    ctx.def
        .decorators
        .iter()
        .flat_map(|d| d.clauses.iter().skip(1))
        .find_map(|clause| match &clause.kind {
            ExprKind::Call { callee, .. } if matches!(&callee.kind, ExprKind::Name(n) if n == "shared") => {
                Some(clause.span)
            }
            _ => None,
        })
}

/// A byte count as people write it: `16 KiB`, `1000 bytes`.
fn size(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(start: u32, stage: i64) -> InFlight {
        InFlight {
            copy: Span::new(start, start + 1),
            stage: Some(stage),
            buffer: Some("buf".into()),
            slot: None,
        }
    }

    #[test]
    fn joining_keeps_what_any_reachable_path_has_in_flight() {
        let mut a = Flow::entry();
        a.copies.insert(copy(1, 0));
        let mut b = Flow::entry();
        b.copies.insert(copy(2, 1));
        let mut joined = a.clone();
        joined.join(&b);
        assert_eq!(joined.copies.len(), 2);

        // A path that returned contributes nothing.
        let mut returned = Flow::unreachable();
        returned.join(&a);
        assert_eq!(returned, a);
        let mut kept = a.clone();
        kept.join(&Flow::unreachable());
        assert_eq!(kept, a);
    }

    #[test]
    fn shared_bytes_need_constant_dims() {
        let tensor = |dims: Vec<crate::poly::Poly>| {
            Ty::Tensor(TensorTy {
                dtype: Some(crate::ty::DType::F16),
                dims: Some(dims),
                space: Some(Space::Shared),
            })
        };
        use crate::poly::Poly;
        assert_eq!(
            shared_bytes(&tensor(vec![Poly::constant(64), Poly::constant(65)])),
            Some(64 * 65 * 2)
        );
        assert_eq!(shared_bytes(&tensor(vec![Poly::sym("BM")])), None);
        assert_eq!(
            shared_bytes(&Ty::tensor(crate::ty::DType::F16, vec![Poly::constant(4)])),
            None
        );
    }

    #[test]
    fn sizes_read_like_the_header() {
        assert_eq!(size(16 * 1024), "16 KiB");
        assert_eq!(size(1000), "1000 bytes");
        assert_eq!(size(512), "512 bytes");
    }
}
