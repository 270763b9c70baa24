//! `@kernel` functions to Tile IR: one thread's program over the block's
//! shared memory, as the source writes it. Tensor parameters are global
//! memrefs; dims are trailing `index` parameters (`dims`); locals that are
//! reassigned live in `tile.local` slots (LLVM's mem2reg removes them);
//! whole-tile operations (`tile.dot`, `tile.softmax`) work on register
//! tiles (`tensor` values) loaded with `tile.load_tile`.

use std::collections::HashMap;

use tessera_base::Span;
use tessera_hir::body::CallTarget;
use tessera_hir::db::{self, FnId, SourceFile};
use tessera_hir::ty::Ty;
use tessera_ir::{Attr, Builder, Dim, Loc, MemSpace, Module, RegionId, ScalarType, Type, ValueId};
use tessera_syntax::ast::{Arg, BinOp, Block, Expr, ExprKind, Stmt, StmtKind, UnaryOp};

use crate::cx::{arg, keyword, positional, saturates};
use crate::cx::{dim_of, ir_type, scalar_of, FnCx, TensorAs};
use crate::operator::literal_attr;

/// Where a subscript stores or loads: the memref, its index values,
/// whether some index is a slice (then the place is a tile), and which of
/// the memref's dims are sliced (kept in the tile).
type Place = (ValueId, Vec<ValueId>, bool, Vec<bool>);

#[derive(Clone)]
enum Binding {
    /// An SSA value (parameters, tiles, shared buffers, loop variables).
    Value(ValueId),
    /// A `tile.local` slot holding a scalar that is reassigned.
    Slot(ValueId, Type),
    /// A compile-time value: a cooperative group of this size.
    Group(i64),
    /// A compile-time value: the random stream `rng.stream("name")`.
    Stream(String),
}

struct Lower<'c, 'a, 'm> {
    cx: &'c mut FnCx<'a>,
    m: &'m mut Module,
    env: HashMap<String, Binding>,
    /// Stages handed out to the seed's `tile.cp_async`, which names none.
    stage: i64,
    /// The literal stages of the async copies of the bodies being lowered
    /// (offset as their own): what a wait for a computed stage waits for.
    copy_stages: std::collections::BTreeSet<i64>,
    /// The location of the statement being lowered: ops made for it
    /// without a span of their own (index constants, casts) get it.
    loc: Loc,
    /// The axes of the kernel's block (see [`Lower::geometry`]).
    block_axes: i64,
    /// The device function being inlined, when this lowers one.
    inlined: Option<Inlined>,
    /// Draws without a stream so far: the n-th one's (from 0) stream is
    /// `<kernel>.rng<n>`, as an operator function's are.
    draws: i64,
    /// The kernel's name.
    kernel: String,
    /// The kernel's `@deterministic` seed, which keys its draws (those of
    /// the device functions inlined into it too).
    seed: Option<i64>,
    /// The reason of the `with nondeterministic(...)` around the code being
    /// lowered.
    waiver: Option<String>,
    /// Device functions inlined so far into the kernel: the n-th one's
    /// stages are offset by `n * STAGES_PER_INLINE`, so that they differ
    /// from its caller's.
    inlines: i64,
}

/// How deep device functions may call each other (the checker rejects
/// recursion; this bounds what it might miss).
const MAX_INLINE_DEPTH: usize = 64;

/// How many device-function calls one kernel may inline: each is a copy of
/// its function's body, so calls that call each other several times grow
/// the kernel exponentially (six calls a level, eight levels deep, is
/// 1.7 million copies) — an error, not a build that never ends.
const MAX_INLINES: i64 = 20_000;

/// The stages an inlined device function's own stage numbers are offset by.
const STAGES_PER_INLINE: i64 = 1000;

/// A device function being inlined: where its `return`s go.
struct Inlined {
    /// How many device functions deep it is (1 when a kernel calls it).
    depth: usize,
    /// Its stage numbers are offset by this.
    stage_offset: i64,
    /// The results' types: one, or one per element of a returned tuple.
    results: Vec<Type>,
    /// The results' slots, when a `return` with a value is not the body's
    /// last statement.
    slots: Vec<ValueId>,
    /// The results, when the body's last statement returns them.
    values: Vec<ValueId>,
    /// Set by a `return` that is not the body's last statement.
    returned: Option<ValueId>,
    /// The callee's loops around the point being lowered: a `return` in
    /// one sets the flag and leaves the loop.
    loops: usize,
    /// The callee's dims, by name, as dims of the kernel's (the types that
    /// inference gave the callee are in its own dims).
    dims: HashMap<String, Dim>,
}

pub(crate) fn lower(cx: &mut FnCx<'_>, m: &mut Module) {
    let dims = cx.sig.dim_symbols();
    let mut inputs = Vec::new();
    for p in &cx.sig.params {
        match ir_type(&p.ty, TensorAs::Memory) {
            // A launch passes global memory: a kernel parameter cannot be a
            // block's shared memory or a thread's registers.
            Some(Type::MemRef { space, .. }) if matches!(space, MemSpace::Shared | MemSpace::Local) => {
                let name = if space == MemSpace::Shared {
                    "shared"
                } else {
                    "register or local"
                };
                cx.unsupported(
                    p.span,
                    format!(
                        "parameter `{}` of a kernel in {name} memory (a launch passes global memory: declare it `global`, or leave the space out)",
                        p.name
                    ),
                );
                return;
            }
            Some(t) => inputs.push(t),
            None => {
                cx.unsupported_type(p.span, Some(&p.name), &p.ty);
                return;
            }
        }
    }
    inputs.extend(dims.iter().map(|_| Type::INDEX));
    let func = m.add_function(&cx.sig.name, &inputs, &[], cx.loc(cx.def.span));
    cx.set_common_attrs(m, func, "kernel");
    cx.set_kernel_guards(m, func);
    m.set_attr(
        func,
        "dims",
        Attr::Array(dims.iter().map(|d| Attr::str(d.as_str())).collect()),
    );
    let mutable: Vec<i64> = (0..cx.sig.params.len() as i64)
        .filter(|&i| cx.sig.params[i as usize].mutable)
        .collect();
    m.set_attr(func, "mutable", Attr::ints(mutable));
    if let Some(budget) = cx.sig.shared_budget {
        m.set_attr(func, "shared_budget", Attr::Int(budget as i64));
    }
    let entry = m.entry_block(func).expect("a function has a body");
    let args = m.block_args(entry).to_vec();
    let mut env: HashMap<String, Binding> = HashMap::new();
    for (name, v) in cx
        .sig
        .params
        .iter()
        .map(|p| p.name.clone())
        .chain(dims.iter().cloned())
        .zip(args)
    {
        env.insert(name, Binding::Value(v));
    }
    let loc = cx.loc(cx.def.span);
    let declared = cx.sig.block.clone();
    // A kernel that declares no block but names the y or z axis of its
    // block (`launch.local_id(1)`) is written for blocks of any shape:
    // its linear indices take every axis, and any block may launch it.
    let any_block = declared.is_none() && names_block_axes(cx.db, cx.file, &cx.def.body, &mut Vec::new());
    let block_axes = if any_block {
        3
    } else {
        declared
            .unwrap_or_default()
            .iter()
            .rposition(|&d| d > 1)
            .map_or(1, |last| last as i64 + 1)
    };
    let mut l = Lower {
        cx,
        m,
        env,
        stage: 0,
        copy_stages: std::collections::BTreeSet::new(),
        loc,
        block_axes,
        inlined: None,
        inlines: 0,
        draws: 0,
        kernel: String::new(),
        seed: None,
        waiver: None,
    };
    l.kernel = l.cx.sig.name.clone();
    l.seed = l.cx.sig.deterministic.flatten();
    let body = &l.cx.def.body;
    l.allocate_slots(entry, body);
    l.block(entry, body);
    let block = l.cx.sig.block.clone().unwrap_or_else(|| default_block(l.m, func));
    l.m.set_attr(func, "block", Attr::ints(block));
    if any_block {
        l.m.set_attr(func, "any_block", Attr::Unit);
    }
    l.loc = l.cx.loc(l.cx.def.span);
    l.builder(entry).op("tile.return").build();
    crate::visibility::insert_barriers(l.m, func);
}

/// Whether `body`, or a function of `file` it calls (through any
/// number of calls; `seen` holds those already looked at), asks for the
/// y or z axis of the block: `launch.local_id(1)`, `launch.thread_id(axis=2)`,
/// `launch.block_dim(1)`.
fn names_block_axes(db: &dyn tessera_hir::db::Db, file: SourceFile, body: &Block, seen: &mut Vec<String>) -> bool {
    let mut found = false;
    let mut callees = Vec::new();
    body.each_expr(&mut |e| visit_block_axes(e, &mut found, &mut callees));
    found
        || callees.into_iter().any(|name| {
            if seen.contains(&name) {
                return false;
            }
            seen.push(name.clone());
            let func = FnId::new(db, file, name);
            db::fn_ast(db, func)
                .as_ref()
                .is_some_and(|def| names_block_axes(db, file, &def.body, seen))
        })
}

fn visit_block_axes(e: &Expr, found: &mut bool, callees: &mut Vec<String>) {
    if let ExprKind::Call { callee, args } = &e.kind {
        match &callee.kind {
            ExprKind::Attr { base, name } if matches!(&base.kind, ExprKind::Name(n) if n == "launch") => {
                let per_block = matches!(name.name.as_str(), "thread_id" | "local_id" | "block_dim");
                let axis = arg(args, 0, "axis").and_then(literal_attr).and_then(|a| a.as_int());
                if per_block && axis.is_some_and(|a| a >= 1) {
                    *found = true;
                }
            }
            ExprKind::Name(n) => callees.push(n.clone()),
            _ => {}
        }
    }
    e.kind.for_each_child(|c| visit_block_axes(c, found, callees));
}

/// Threads per block when the header names none: 128, or 256 when the
/// kernel computes a register tile of more than 8192 elements, so that a
/// thread holds at most 64 elements of a 128×128 accumulator (which then
/// stays in registers on a GPU; spec/codegen.md). The rule is the same on
/// every target, so a kernel launched without `block=` takes the same
/// block shape on the CPU as on a GPU.
fn default_block(m: &Module, func: tessera_ir::OpId) -> Vec<i64> {
    let largest = m
        .walk_op(func)
        .into_iter()
        .flat_map(|op| m.results(op).to_vec())
        .filter_map(|v| match m.value_type(v) {
            Type::Tensor { dims, .. } => dims.iter().map(|d| d.as_const()).product::<Option<i64>>(),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    vec![if largest > 8192 { 256 } else { 128 }]
}

pub(crate) fn binary_fn(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::FloorDiv => "floordiv",
        BinOp::Mod => "rem",
        BinOp::Pow => "pow",
        BinOp::BitAnd | BinOp::And => "and",
        BinOp::BitOr | BinOp::Or => "or",
        BinOp::BitXor => "xor",
        BinOp::Shl => "shl",
        BinOp::Shr => "shr",
        _ => return None,
    })
}

pub(crate) fn cmp_pred(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
        BinOp::Eq => "eq",
        BinOp::Ne => "ne",
        _ => return None,
    })
}

/// Whether a `return` in `stmt` is inside a loop of `stmt`'s own.
fn returns_from_inner_loop(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => body.stmts.iter().any(may_return),
        kind => kind
            .blocks()
            .iter()
            .any(|b| b.stmts.iter().any(returns_from_inner_loop)),
    }
}

/// The `return` statements in `stmts`, at any depth.
fn count_returns(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|stmt| match &stmt.kind {
            StmtKind::Return(_) => 1,
            kind => kind.blocks().iter().map(|b| count_returns(&b.stmts)).sum(),
        })
        .sum()
}

/// Whether a `return` is in `stmt`, at any depth.
fn may_return(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Return(_) => true,
        kind => kind.blocks().iter().any(|b| b.stmts.iter().any(may_return)),
    }
}

/// Names the statements of `block` itself assign (not nested blocks).
fn assigned_here<'e>(block: &'e Block, out: &mut Vec<(&'e str, &'e Expr)>) {
    for stmt in &block.stmts {
        if let StmtKind::Assign { targets, .. } = &stmt.kind {
            for t in targets {
                match &t.kind {
                    ExprKind::Name(n) => out.push((n, t)),
                    ExprKind::Tuple(items) => {
                        for item in items {
                            if let ExprKind::Name(n) = &item.kind {
                                out.push((n, item));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The `for` loops of a block that bind a name, nested ones included: the
/// name, the target and the loop statement's span.
fn loop_targets<'e>(block: &'e Block, out: &mut Vec<(&'e str, &'e Expr, Span)>) {
    for stmt in &block.stmts {
        if let StmtKind::For { target, .. } = &stmt.kind {
            if let ExprKind::Name(n) = &target.kind {
                out.push((n, target, stmt.span));
            }
        }
        for b in stmt.kind.blocks() {
            loop_targets(b, out);
        }
    }
}

/// The targets of `loops` that are named outside their loop in `body`
/// (read after it: a loop over a non-empty literal range or list surely
/// binds them).
fn named_outside<'e>(body: &Block, loops: &[(&'e str, &'e Expr, Span)]) -> Vec<(&'e str, &'e Expr)> {
    fn names(e: &Expr, out: &mut Vec<(String, Span)>) {
        if let ExprKind::Name(n) = &e.kind {
            out.push((n.clone(), e.span));
        }
        e.kind.for_each_child(|c| names(c, out));
    }
    let mut named = Vec::new();
    body.each_expr(&mut |e| names(e, &mut named));
    loops
        .iter()
        .filter(|(n, _, at)| {
            named
                .iter()
                .any(|(m, span)| m == n && (span.start < at.start || span.end > at.end))
        })
        .map(|&(n, target, _)| (n, target))
        .collect()
}

/// Names a block assigns, in order (not those bound by `for`).
/// The literal `stage=` of every async copy in `block` and its nested
/// blocks.
fn copy_stages(block: &Block, out: &mut Vec<i64>) {
    fn visit(e: &Expr, out: &mut Vec<i64>) {
        if let ExprKind::Call { callee, args } = &e.kind {
            let copy = matches!(&callee.kind, ExprKind::Attr { name, .. } if name.name == "async_copy" || name.name == "cp_async");
            if let Some(stage) = keyword(args, "stage").filter(|_| copy).and_then(Expr::int_value) {
                out.push(stage);
            }
        }
        e.kind.for_each_child(|child| visit(child, out));
    }
    block.each_expr(&mut |e| visit(e, out));
}

fn assigned<'e>(block: &'e Block, out: &mut Vec<(&'e str, &'e Expr)>) {
    for stmt in &block.stmts {
        match &stmt.kind {
            StmtKind::Assign { targets, .. } => {
                for t in targets {
                    match &t.kind {
                        ExprKind::Name(n) => out.push((n, t)),
                        ExprKind::Tuple(names) => {
                            for n in names {
                                if let ExprKind::Name(name) = &n.kind {
                                    out.push((name, n));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            StmtKind::AugAssign { target, .. } => {
                if let ExprKind::Name(n) = &target.kind {
                    out.push((n, target));
                }
            }
            kind => {
                for b in kind.blocks() {
                    assigned(b, out);
                }
            }
        }
    }
}

impl<'a> Lower<'_, 'a, '_> {
    fn builder(&mut self, block: tessera_ir::BlockId) -> Builder<'_> {
        let mut b = Builder::at_end(self.m, block);
        b.set_loc(self.loc.clone());
        b
    }

    /// Scalars that are assigned get a `tile.local` slot at the entry;
    /// tiles and buffers stay SSA values.
    fn allocate_slots(&mut self, entry: tessera_ir::BlockId, body: &'a Block) {
        let mut stages = Vec::new();
        copy_stages(body, &mut stages);
        let offset = self.stage_offset();
        self.copy_stages.extend(stages.into_iter().map(|s| s + offset));
        let mut names = Vec::new();
        assigned(body, &mut names);
        let mut once = Vec::new();
        assigned_here(body, &mut once);
        // A name a loop binds and that is assigned too keeps a slot that the
        // loop stores each value in: an assignment in the body, and the
        // value after the loop, are Python's (the last one the loop gave).
        let mut looped = Vec::new();
        loop_targets(body, &mut looped);
        // A loop variable read after its loop keeps a slot too, which holds
        // the last value the loop gave it.
        names.extend(named_outside(body, &looped));
        for &(name, at) in &names {
            if let Some(Binding::Value(param)) = self.env.get(name).cloned() {
                self.param_slot(entry, name, param, at);
                continue;
            }
            let single = names.iter().filter(|(n, _)| *n == name).count() == 1
                && once.iter().any(|(n, _)| *n == name)
                && !looped.iter().any(|(n, ..)| *n == name);
            if self.env.contains_key(name) || single {
                continue;
            }
            // Scalars, and register tiles of constant shape (an accumulator
            // `acc = acc + …` in a loop): a tile's slot is a whole-tile local,
            // which the code generator keeps in registers.
            let ty = match self.cx.ty(at) {
                // A local only float literals are assigned to holds them as
                // Python does, in f64, and each is rounded once where it is
                // used, as a literal is (`a = 1e300` had been inf in f32,
                // and `c = 1.0 / 3.0` lost digits).
                Some(t @ (Ty::Scalar(_) | Ty::Int | Ty::Float | Ty::Bool)) => {
                    let local = self.literal_local(name, t, &names);
                    match local {
                        Ty::Float => Some(Type::Scalar(ScalarType::F64)),
                        _ => ir_type(&local, TensorAs::Value),
                    }
                }
                Some(t @ Ty::Tensor(tt)) if tt.space.is_none() => ir_type(t, TensorAs::Value)
                    .map(|t| self.kernel_dims(&t))
                    .filter(|t| t.dims().is_some_and(|d| d.iter().all(|d| d.as_const().is_some()))),
                _ => None,
            };
            if let Some(ty) = ty {
                let loc = self.cx.loc(at.span);
                let dims = ty.dims().map(<[Dim]>::to_vec).unwrap_or_default();
                let slot_ty = Type::memref(dims, ty.elem().unwrap_or(ScalarType::F32), MemSpace::Local);
                let mut b = self.builder(entry);
                b.set_loc(loc);
                let slot = b.op("tile.local").result(slot_ty).build_value();
                self.env.insert(name.to_string(), Binding::Slot(slot, ty));
            }
        }
    }

    /// The type of local `name` whose first binding has type `first`: a
    /// literal's (`acc = 0.0`, `z = 0`) has no fixed width, so the local
    /// takes the type its later assignments (`names`, in source order)
    /// give it, as the checker's local does: `acc += a[j]` with `a: f64`
    /// makes `acc` an f64, `z = f[0]` with `f: f32` makes `z` an f32 (a
    /// float literal's local with an integer value, as in arithmetic, an
    /// f32). It was the literal's default, f32 or i32, and narrowed every
    /// later value stored into it.
    fn literal_local(&self, name: &str, first: &Ty, names: &[(&str, &Expr)]) -> Ty {
        let mut ty = first.clone();
        for (_, at) in names.iter().filter(|(n, _)| *n == name) {
            let (Ty::Int | Ty::Float) = ty else { break };
            ty = match (&ty, self.cx.ty(at)) {
                (Ty::Int, Some(Ty::Float)) => Ty::Float,
                (Ty::Float, Some(Ty::Scalar(d))) if !d.is_float() => Ty::Scalar(tessera_hir::ty::DType::F32),
                (_, Some(Ty::Scalar(d))) => Ty::Scalar(*d),
                _ => ty,
            };
        }
        ty
    }

    /// Binds loop variable `name` to `value` for one iteration: stored in
    /// the name's slot when it has one, else the name is the value.
    fn bind_loop_var(&mut self, block: tessera_ir::BlockId, name: &str, value: ValueId) {
        match self.env.get(name).cloned() {
            Some(Binding::Slot(slot, ty)) if ty.dims().is_none() => {
                let v = self.convert(block, value, &ty);
                let mut b = self.builder(block);
                b.op("tile.store").operands(&[v, slot]).build();
            }
            _ => {
                self.env.insert(name.to_string(), Binding::Value(value));
            }
        }
    }

    /// The body of one of an inlined device function's loops (or a kernel's).
    fn loop_body(&mut self, block: tessera_ir::BlockId, body: &'a Block) {
        if let Some(i) = self.inlined.as_mut() {
            i.loops += 1;
        }
        self.block(block, body);
        if let Some(i) = self.inlined.as_mut() {
            i.loops -= 1;
        }
    }

    /// `return` in an inlined device function: its value is the call's
    /// result (kept as it is when this is the body's last statement, else
    /// stored into the result's slot); the flag says that it returned, and
    /// inside one of its loops, the loop is left.
    fn inline_return(&mut self, block: tessera_ir::BlockId, stmt: &'a Stmt, value: Option<&'a Expr>) {
        let Some(inlined) = &self.inlined else { return };
        let (results, slots) = (inlined.results.clone(), inlined.slots.clone());
        let (flag, in_loop) = (inlined.returned, inlined.loops > 0);
        if let Some(value) = value {
            // A tuple of results is returned as a tuple of values.
            let parts: Vec<&'a Expr> = match &value.unparen().kind {
                ExprKind::Tuple(items) if results.len() > 1 => items.iter().collect(),
                _ => vec![value],
            };
            if results.is_empty() {
                // Inlined code is typed by what the function declares.
                self.cx.unsupported_because(
                    value.span,
                    format!("a value returned from `{}`, which declares no result type", self.cx.sig.name),
                    "a function that device code calls is inlined with its declared types: declare the result, as `-> f32`, and the parameters",
                );
                return;
            }
            if parts.len() != results.len() {
                self.cx
                    .unsupported(value.span, "a return of something other than a tuple of the results");
                return;
            }
            let mut values = Vec::new();
            for (part, ty) in parts.into_iter().zip(&results) {
                let Some(v) = self.expr(block, part) else { return };
                values.push(self.convert(block, v, ty));
            }
            if slots.is_empty() {
                if let Some(i) = self.inlined.as_mut() {
                    i.values = values;
                }
            } else {
                for (v, slot) in values.into_iter().zip(slots) {
                    self.op0(block, stmt.span, "tile.store", &[v, slot], vec![]);
                }
            }
        }
        if let Some(flag) = flag {
            self.set_flag(block, stmt.span, flag, true);
        }
        if in_loop {
            self.op0(block, stmt.span, "tile.break", &[], vec![]);
        }
    }

    /// Stores `value` into the `i1` slot `flag`.
    fn set_flag(&mut self, block: tessera_ir::BlockId, at: Span, flag: ValueId, value: bool) {
        let v = self.op1(
            block,
            at,
            "tile.const",
            &[],
            vec![("value", Attr::Int(i64::from(value)))],
            Type::I1,
        );
        self.op0(block, at, "tile.store", &[v, flag], vec![]);
    }

    /// A call of a device function (or of a plain function from a kernel):
    /// its body lowered here, with its parameters bound to the arguments'
    /// values (tensors by reference, scalars by value), its dims to the
    /// dims of the arguments, and its `return`s giving the call's value.
    fn inline(
        &mut self,
        block: tessera_ir::BlockId,
        e: &'a Expr,
        file: SourceFile,
        name: &str,
        args: &'a [Arg],
    ) -> Option<Vec<ValueId>> {
        let db = self.cx.db;
        let depth = self.inlined.as_ref().map_or(0, |i| i.depth) + 1;
        if self.inlines >= MAX_INLINES {
            // Reported once, at the call that reached the limit.
            if self.inlines == MAX_INLINES {
                self.cx.unsupported(
                    e.span,
                    format!(
                        "`{}`, which inlines more than {MAX_INLINES} device-function calls (this call of `{name}` is one too many; each call is a copy of the function's body)",
                        self.kernel
                    ),
                );
                self.inlines += 1;
            }
            return None;
        }
        if depth > MAX_INLINE_DEPTH {
            self.cx.unsupported(
                e.span,
                format!("a call of `{name}` nested more than {MAX_INLINE_DEPTH} device functions deep"),
            );
            return None;
        }
        let func = FnId::new(db, file, name.to_string());
        let Some(def) = db::fn_ast(db, func).as_ref() else {
            self.cx
                .unsupported(e.span, format!("a call of `{name}`, whose definition is broken"));
            return None;
        };
        let mut callee = FnCx::new(db, func, def, Default::default());
        // The arguments, in the caller; then the callee's dims as the
        // caller's, from the tensors passed for its parameters.
        let mut env = HashMap::new();
        let mut dims: HashMap<String, Dim> = HashMap::new();
        let mut pending_defaults = Vec::new();
        for (i, param) in callee.sig.params.iter().enumerate() {
            let Some(arg) = keyword(args, &param.name).or_else(|| positional(args, i)) else {
                pending_defaults.push(i);
                continue;
            };
            // A row of memory (`out[r]`, `bufs[s, :]`) is passed by
            // reference, as a view, as a whole tensor is: the callee
            // writes into it (CUDA's pointer to a row).
            let row = match (&arg.unparen().kind, &param.ty) {
                (ExprKind::Subscript { base, args }, Ty::Tensor(_))
                    if tessera_hir::is_row(args) && self.cx.ty(arg).is_some_and(|t| matches!(t, Ty::Tensor(_))) =>
                {
                    let what = format!("passing part of a tensor to `{name}` other than a row");
                    let help = "a device function takes a whole tensor or a row of one (`x[r]`, `bufs[s, :]`), which it reads and writes in place: pass the whole tensor and an offset for another part";
                    Some(self.view_or_unsupported(block, arg, base, args, what, Some(help.to_string()))?)
                }
                _ => None,
            };
            let v = match row {
                Some(view) => view,
                None => self.expr(block, arg)?,
            };
            let v = match ir_type(&param.ty, TensorAs::Memory) {
                Some(ty @ Type::Scalar(_)) => self.convert(block, v, &ty),
                _ => v,
            };
            if let (Ty::Tensor(t), Some(have)) = (&param.ty, self.m.value_type(v).dims()) {
                for (d, arg_dim) in t.dims.iter().flatten().zip(have) {
                    if let Some(sym) = dim_of(d).as_ref().and_then(Dim::as_sym) {
                        dims.entry(sym.to_string()).or_insert_with(|| arg_dim.clone());
                    }
                }
            }
            env.insert(param.name.clone(), Binding::Value(v));
        }
        for (sym, dim) in &dims {
            let v = self.dim_value(block, dim, e.span)?;
            env.insert(sym.clone(), Binding::Value(v));
        }
        let returns = count_returns(&def.body.stmts);
        let tail = matches!(def.body.stmts.last().map(|s| &s.kind), Some(StmtKind::Return(_)));
        let needs_flag = returns > usize::from(tail);
        self.inlines += 1;
        // The call's results: none, one, or one per element of a tuple.
        let results: Vec<Type> = match self.cx.ty(e) {
            Some(Ty::None) | None => Vec::new(),
            Some(Ty::Tuple(items)) => {
                let types: Option<Vec<Type>> = items.iter().map(|t| ir_type(t, TensorAs::Value)).collect();
                let Some(types) = types else {
                    self.cx
                        .unsupported(e.span, "a tuple result whose types are not known precisely");
                    return None;
                };
                types
            }
            Some(_) => vec![self.result_type(e)?],
        };
        let mut inlined = Inlined {
            depth,
            stage_offset: self.inlines * STAGES_PER_INLINE,
            results: results.clone(),
            slots: Vec::new(),
            values: Vec::new(),
            returned: None,
            loops: 0,
            dims,
        };
        if needs_flag {
            let flag_ty = Type::memref(Vec::<Dim>::new(), ScalarType::I1, MemSpace::Local);
            let flag = self.op1(block, e.span, "tile.local", &[], vec![], flag_ty);
            self.set_flag(block, e.span, flag, false);
            inlined.returned = Some(flag);
            for ty in &results {
                let Type::Scalar(elem) = ty else {
                    self.cx.unsupported(
                        e.span,
                        format!("a call of `{name}`, which returns a tile before its last statement"),
                    );
                    return None;
                };
                let slot_ty = Type::memref(Vec::<Dim>::new(), *elem, MemSpace::Local);
                inlined
                    .slots
                    .push(self.op1(block, e.span, "tile.local", &[], vec![], slot_ty));
            }
        }
        let mut sub = Lower {
            cx: &mut callee,
            m: &mut *self.m,
            env,
            stage: self.stage,
            copy_stages: self.copy_stages.clone(),
            loc: self.loc.clone(),
            block_axes: self.block_axes,
            inlined: Some(inlined),
            inlines: self.inlines,
            draws: self.draws,
            kernel: self.kernel.clone(),
            seed: self.seed,
            waiver: self.waiver.clone(),
        };
        for i in pending_defaults {
            let param = &sub.cx.sig.params[i];
            let value = def
                .params
                .get(i)
                .and_then(|p| p.default.as_ref())
                .and_then(literal_attr);
            let (Some(value), Some(ty)) = (value, ir_type(&param.ty, TensorAs::Value)) else {
                sub.cx
                    .unsupported(e.span, format!("a call of `{name}` that leaves out `{}`", param.name));
                break;
            };
            let value = match (value, ty.elem().is_some_and(ScalarType::is_float)) {
                (Attr::Int(v), true) => Attr::Float(v as f64),
                (v, _) => v,
            };
            let v = sub.op1(block, e.span, "tile.const", &[], vec![("value", value)], ty);
            sub.env.insert(param.name.clone(), Binding::Value(v));
        }
        let body = &def.body;
        sub.allocate_slots(block, body);
        sub.block(block, body);
        let (stage, inlines, draws, inlined) = (sub.stage, sub.inlines, sub.draws, sub.inlined.take());
        self.stage = stage;
        self.inlines = inlines;
        self.draws = draws;
        for diag in std::mem::take(&mut callee.errors) {
            if !self.cx.errors.iter().any(|d| d.primary_span() == diag.primary_span()) {
                self.cx
                    .errors
                    .push(diag.with_note(format!("inlined into `{}`", self.cx.sig.name)));
            }
        }
        let inlined = inlined?;
        if inlined.slots.is_empty() {
            return Some(inlined.values);
        }
        let loaded = inlined
            .slots
            .iter()
            .zip(&inlined.results)
            .map(|(&slot, ty)| self.op1(block, e.span, "tile.load", &[slot], vec![], ty.clone()))
            .collect();
        Some(loaded)
    }

    /// Dim `axis` (from the end when negative) of the tensor `x` as an
    /// `index` value: `len(x)` and `x.shape[axis]`.
    fn dim_of_tensor(
        &mut self,
        block: tessera_ir::BlockId,
        e: &Expr,
        x: &'a Expr,
        axis: Option<i64>,
    ) -> Option<ValueId> {
        let v = self.expr(block, x)?;
        let dims = self.m.value_type(v).dims().map(<[Dim]>::to_vec).unwrap_or_default();
        let at = axis.and_then(|a| usize::try_from(if a < 0 { a + dims.len() as i64 } else { a }).ok());
        let Some(dim) = at.and_then(|a| dims.get(a)) else {
            self.cx
                .unsupported(e.span, "a dim that is not a constant axis of a tensor");
            return None;
        };
        self.dim_value(block, &dim.clone(), e.span)
    }

    /// What an inlined device function's stage numbers are offset by.
    fn stage_offset(&self) -> i64 {
        self.inlined.as_ref().map_or(0, |i| i.stage_offset)
    }

    /// A type of the function being lowered in the kernel's dims: an
    /// inlined device function's dims are the caller's dims its arguments have.
    fn kernel_dims(&self, ty: &Type) -> Type {
        match &self.inlined {
            Some(i) if !i.dims.is_empty() => ty.map_dims(&|d: &Dim| d.substitute(|s| i.dims.get(s).cloned())),
            _ => ty.clone(),
        }
    }

    /// A scalar parameter the body assigns gets a slot that starts with its
    /// value: an assignment in a loop or a branch must outlive the region
    /// it is made in.
    fn param_slot(&mut self, entry: tessera_ir::BlockId, name: &str, param: ValueId, at: &Expr) {
        let ty = self.m.value_type(param).clone();
        let Type::Scalar(elem) = ty else { return };
        let loc = self.cx.loc(at.span);
        let mut b = self.builder(entry);
        b.set_loc(loc);
        let slot = b
            .op("tile.local")
            .result(Type::memref(Vec::<Dim>::new(), elem, MemSpace::Local))
            .build_value();
        b.op("tile.store").operands(&[param, slot]).build();
        self.env.insert(name.to_string(), Binding::Slot(slot, ty));
    }

    fn block(&mut self, block: tessera_ir::BlockId, body: &'a Block) {
        self.stmts(block, &body.stmts);
    }

    /// Lowers `stmts` in order. In an inlined device function, what follows
    /// a `return` is not lowered, and what follows a statement that may
    /// return runs only when it did not: the statements after it are
    /// guarded by the `returned` flag, or inside one of the function's
    /// loops, the loop is left when the flag is set.
    fn stmts(&mut self, block: tessera_ir::BlockId, stmts: &'a [Stmt]) {
        for (i, stmt) in stmts.iter().enumerate() {
            self.stmt(block, stmt);
            let Some(inlined) = &self.inlined else { continue };
            if matches!(stmt.kind, StmtKind::Return(_)) {
                return;
            }
            // Inside one of the function's loops, a `return` leaves that loop
            // itself; one in an inner loop leaves only the inner loop, so
            // after it this loop is left too (even after its last statement).
            let in_loop = inlined.loops > 0;
            let needed = if in_loop {
                returns_from_inner_loop(stmt)
            } else {
                i + 1 < stmts.len() && may_return(stmt)
            };
            let (Some(flag), true) = (inlined.returned, needed) else {
                continue;
            };
            let returned = self.op1(block, stmt.span, "tile.load", &[flag], vec![], Type::I1);
            if in_loop {
                let leave = self.region(&[], |l, blk, _| l.op0(blk, stmt.span, "tile.break", &[], vec![]));
                let stay = self.region(&[], |_, _, _| {});
                let mut b = self.builder(block);
                b.op("tile.if").operand(returned).region(leave).region(stay).build();
            } else {
                let rest = &stmts[i + 1..];
                let done = self.region(&[], |_, _, _| {});
                let go_on = self.region(&[], |l, blk, _| l.stmts(blk, rest));
                let mut b = self.builder(block);
                b.op("tile.if").operand(returned).region(done).region(go_on).build();
                return;
            }
        }
    }

    /// Lowers `body` into a new region; SSA names bound inside it do not
    /// outlive it.
    fn region(&mut self, args: &[Type], body: impl FnOnce(&mut Self, tessera_ir::BlockId, &[ValueId])) -> RegionId {
        let region = self.m.new_region(args);
        let block = self.m.region_block(region);
        let values = self.m.block_args(block).to_vec();
        let saved = (self.env.clone(), self.loc.clone());
        body(self, block, &values);
        self.loc = saved.1.clone();
        let mut b = self.builder(block);
        b.op("tile.yield").build();
        self.env = saved.0;
        region
    }

    fn stmt(&mut self, block: tessera_ir::BlockId, stmt: &'a Stmt) {
        let loc = self.cx.loc(stmt.span);
        self.loc = loc.clone();
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                for target in targets {
                    self.assign(block, target, value);
                }
            }
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } => match (
                &target.kind,
                self.cx.ty(target).and_then(|t| ir_type(t, TensorAs::Value)),
            ) {
                // `a: i32 = 2.5` is an i32: the value converted to the
                // declared dtype (it kept the value's own type).
                (ExprKind::Name(_), Some(ty @ Type::Scalar(_))) => {
                    if let Some(v) = self.expr(block, value) {
                        let v = self.convert(block, v, &ty);
                        self.store(block, target, v);
                    }
                }
                _ => self.assign(block, target, value),
            },
            StmtKind::AugAssign { target, op, value } => {
                let Some(f) = binary_fn(*op) else {
                    self.cx.unsupported(stmt.span, format!("`{}=`", op.symbol()));
                    return;
                };
                // `t[i] += v` evaluates `t` and `i` once, as Python does
                // (an index with a side effect, `atomic_add`, ran twice).
                let place = match &target.kind {
                    ExprKind::Subscript { base, args } => match self.place(block, base, args) {
                        Some(place) => Some(place),
                        None => return,
                    },
                    _ => None,
                };
                let current = match &place {
                    Some(place) => self.load_place(block, target, place.clone()),
                    None => self.expr(block, target),
                };
                let Some(current) = current else {
                    return;
                };
                let current = self.as_tile(block, target, current);
                let ty = self.m.value_type(current).clone();
                let Some(rhs) = self.expr(block, value) else { return };
                let rhs = self.convert(block, rhs, &ty);
                let mut b = self.builder(block);
                b.set_loc(loc);
                let result = b
                    .op("tile.binary")
                    .operands(&[current, rhs])
                    .attr("fn", f)
                    .result(ty)
                    .build_value();
                match place {
                    Some(place) => self.store_place(block, target, place, result),
                    None => self.store(block, target, result),
                }
            }
            StmtKind::If { branches, orelse } => self.if_chain(block, branches, orelse.as_ref()),
            StmtKind::For { target, iter, body } => self.for_loop(block, target, iter, body, stmt),
            StmtKind::While { cond, body } => {
                let cond_region = self.m.new_region(&[]);
                let cond_block = self.m.region_block(cond_region);
                let c = self.expr(cond_block, cond);
                let mut b = self.builder(cond_block);
                b.set_loc(loc.clone());
                b.op("tile.condition")
                    .operands(&c.into_iter().collect::<Vec<_>>())
                    .build();
                let body_region = self.region(&[], |l, blk, _| l.loop_body(blk, body));
                let mut b = self.builder(block);
                b.set_loc(loc);
                b.op("tile.while").region(cond_region).region(body_region).build();
            }
            StmtKind::With { items, body } => {
                // `with nondeterministic("why"):` waives the determinism
                // contract for the atomics in its body (the checker allowed
                // them; the IR's rule must too); `with deterministic(...)`
                // restores it.
                let saved = self.waiver.clone();
                for item in items {
                    if self.is_builtin(&item.expr, "nondeterministic") {
                        let why = match &item.expr.kind {
                            ExprKind::Call { args, .. } => arg(args, 0, "reason").and_then(literal_attr),
                            _ => None,
                        };
                        self.waiver = Some(match why {
                            Some(Attr::Str(why)) => why,
                            _ => "waived".to_string(),
                        });
                    } else if self.is_builtin(&item.expr, "deterministic") {
                        self.waiver = None;
                    }
                }
                self.block(block, body);
                self.waiver = saved;
            }
            StmtKind::Return(value) if self.inlined.is_some() => self.inline_return(block, stmt, value.as_ref()),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {
                let name = match &stmt.kind {
                    StmtKind::Break => "tile.break",
                    StmtKind::Continue => "tile.continue",
                    _ => "tile.return",
                };
                let mut b = self.builder(block);
                b.set_loc(loc);
                b.op(name).build();
            }
            StmtKind::Expr(e) => {
                self.expr(block, e);
            }
            StmtKind::Pass => {}
            _ => self.cx.unsupported(stmt.span, "this statement in a kernel"),
        }
    }

    fn assign(&mut self, block: tessera_ir::BlockId, target: &'a Expr, value: &'a Expr) {
        match (&target.kind, &value.kind) {
            (ExprKind::Tuple(ts), ExprKind::Call { args, .. })
                if matches!(
                    self.cx.body.calls.get(&value.span).map(|c| &c.target),
                    Some(CallTarget::Function { .. })
                ) =>
            {
                // `q, r = divmod2(a, b)`: a device function returning a tuple.
                let Some(CallTarget::Function { file, name }) =
                    self.cx.body.calls.get(&value.span).map(|c| c.target.clone())
                else {
                    return;
                };
                let Some(results) = self.inline(block, value, file, &name, args) else {
                    return;
                };
                if results.len() != ts.len() {
                    self.cx.unsupported(
                        value.span,
                        format!("unpacking {} results into {} names", results.len(), ts.len()),
                    );
                    return;
                }
                for (t, v) in ts.iter().zip(results) {
                    self.store(block, t, v);
                }
            }
            (ExprKind::Tuple(ts), ExprKind::Tuple(vs)) if ts.len() == vs.len() => {
                // `a, b = b, a + b`: every value is read before any is stored.
                let values: Vec<Option<ValueId>> = vs.iter().map(|v| self.expr(block, v)).collect();
                for (t, v) in ts.iter().zip(values) {
                    if let Some(v) = v {
                        self.store(block, t, v);
                    }
                }
            }
            (ExprKind::Name(n), _) if self.is_builtin(value, "rng.stream") => {
                if let Some(name) = self.stream_name(value) {
                    self.env.insert(n.clone(), Binding::Stream(name));
                }
            }
            (ExprKind::Name(n), _) if self.is_builtin(value, "tile.cooperative_group") => {
                let size = match &value.kind {
                    ExprKind::Call { args, .. } => arg(args, 0, "size").and_then(literal_attr).and_then(|a| a.as_int()),
                    _ => None,
                };
                match size {
                    Some(size) => {
                        self.env.insert(n.clone(), Binding::Group(size));
                    }
                    None => self
                        .cx
                        .unsupported(value.span, "a cooperative group without a constant size"),
                }
            }
            _ => {
                if let Some(v) = self.expr(block, value) {
                    self.store(block, target, v);
                }
            }
        }
    }

    /// Whether `e` is a call of the builtin `path`.
    fn is_builtin(&self, e: &Expr, path: &str) -> bool {
        matches!(self.cx.body.calls.get(&e.span).map(|c| &c.target),
            Some(CallTarget::Builtin(b)) if b.path == path)
    }

    /// The name of the stream `e` is: `rng.stream("name")`, or a local
    /// bound to one.
    fn stream_name(&mut self, e: &Expr) -> Option<String> {
        if let ExprKind::Name(n) = &e.kind {
            if let Some(Binding::Stream(name)) = self.env.get(n) {
                return Some(name.clone());
            }
        }
        if let ExprKind::Call { args, .. } = &e.kind {
            if self.is_builtin(e, "rng.stream") {
                if let Some(Attr::Str(name)) = arg(args, 0, "name").and_then(literal_attr) {
                    return Some(name);
                }
            }
        }
        self.cx.unsupported(
            e.span,
            "a stream other than `rng.stream(\"name\")` with a string literal",
        );
        None
    }

    /// Writes `v` to what `target` names.
    fn store(&mut self, block: tessera_ir::BlockId, target: &'a Expr, v: ValueId) {
        let loc = self.cx.loc(target.span);
        match &target.kind {
            ExprKind::Name(n) => match self.env.get(n).cloned() {
                Some(Binding::Slot(slot, ty)) => {
                    let v = self.as_tile(block, target, v);
                    let v = self.convert(block, v, &ty);
                    let mut operands = vec![v, slot];
                    operands.extend(self.zeros_index(block, slot));
                    let name = if ty.dims().is_some() {
                        "tile.store_tile"
                    } else {
                        "tile.store"
                    };
                    let mut b = self.builder(block);
                    b.set_loc(loc);
                    b.op(name).operands(&operands).build();
                }
                Some(Binding::Value(p))
                    if matches!(self.m.value_type(p), Type::MemRef { .. })
                        && matches!(self.m.value_type(v), Type::MemRef { .. })
                        && self.m.defining_op(p).and_then(|d| self.m.parent_block(d)) == Some(block) =>
                {
                    // A name of a buffer made in this block (`buf =
                    // tshared.alloc[…](…)` again, a loop over a literal
                    // list unrolled) names the new one from here on.
                    self.env.insert(n.clone(), Binding::Value(v));
                }
                Some(Binding::Value(p))
                    if matches!(self.m.value_type(p), Type::MemRef { .. })
                        && matches!(self.m.value_type(v), Type::MemRef { .. }) =>
                {
                    self.cx.unsupported(
                        target.span,
                        format!(
                            "`{n} = …` of a tensor in memory: in a kernel, assigning to a tensor \
                             parameter writes all of it (a tile); to name another tensor, use a new name"
                        ),
                    );
                }
                Some(Binding::Value(p)) if matches!(self.m.value_type(p), Type::MemRef { .. }) => {
                    // A whole tensor parameter: `C = …` writes the whole tile.
                    let zeros = self.zeros_index(block, p);
                    let mut operands = vec![v, p];
                    operands.extend(zeros);
                    let mut b = self.builder(block);
                    b.set_loc(loc);
                    b.op("tile.store_tile").operands(&operands).build();
                }
                _ => {
                    self.env.insert(n.clone(), Binding::Value(v));
                }
            },
            ExprKind::Subscript { base, args } => {
                if let Some(place) = self.place(block, base, args) {
                    self.store_place(block, target, place, v);
                }
            }
            _ => self.cx.unsupported(target.span, "an assignment to this target"),
        }
    }

    /// Stores `v` at `place` (as [`Self::place`] gives it).
    fn store_place(&mut self, block: tessera_ir::BlockId, target: &Expr, place: Place, v: ValueId) {
        let loc = self.cx.loc(target.span);
        let (mem, index, sliced, kept) = place;
        let Some(elem_ty) = self.m.value_type(mem).elem() else {
            return;
        };
        let v = if sliced {
            // A tile stored with some dims indexed (`w[1, :] = row`, `w[:,
            // 1] = col`) takes those dims back as unit dims: leading ones by
            // broadcasting, then moved where the indices are.
            let dims = self.m.value_type(v).dims().unwrap_or_default().to_vec();
            let unit = kept.len() - dims.len().min(kept.len());
            if dims.len() != kept.iter().filter(|k| **k).count() {
                self.cx.unsupported(
                    target.span,
                    format!(
                        "storing a tile of rank {} into {} slices",
                        dims.len(),
                        kept.iter().filter(|k| **k).count()
                    ),
                );
                return;
            }
            let mut leading: Vec<Dim> = vec![Dim::constant(1); unit];
            leading.extend(dims);
            // A narrower tile widens to the buffer's dtype, as the checker allows.
            let v = self.convert(
                block,
                v,
                &Type::tensor(self.m.value_type(v).dims().unwrap_or_default().to_vec(), elem_ty),
            );
            let v = self.broadcast(block, target, v, &leading);
            let (mut units, mut slices) = (0..unit, unit..kept.len());
            let perm: Vec<i64> = kept
                .iter()
                .map(|&k| if k { slices.next() } else { units.next() }.unwrap_or(0) as i64)
                .collect();
            if perm.iter().enumerate().all(|(j, &p)| p == j as i64) {
                v
            } else {
                let moved = Type::tensor(perm.iter().map(|&p| leading[p as usize].clone()), elem_ty);
                self.op1(
                    block,
                    target.span,
                    "tile.transpose",
                    &[v],
                    vec![("perm", Attr::ints(perm))],
                    moved,
                )
            }
        } else {
            self.convert(block, v, &Type::Scalar(elem_ty))
        };
        let mut operands = vec![v, mem];
        operands.extend(index);
        let mut b = self.builder(block);
        b.set_loc(loc);
        b.op(if sliced { "tile.store_tile" } else { "tile.store" })
            .operands(&operands)
            .build();
    }

    /// Loads the element or tile at `place`, `e` the subscript it came from.
    fn load_place(&mut self, block: tessera_ir::BlockId, e: &'a Expr, place: Place) -> Option<ValueId> {
        let (mem, index, sliced, kept) = place;
        if sliced {
            let ty = self.result_type(e)?;
            // Leading dims given by numbers (`x[r, :]`, `x[b, h, 0:64]`) are
            // fixed by a view, whose rank the tile then has.
            let fixed = kept.iter().take_while(|k| !**k).count();
            let mem = self.leading_view(block, e.span, mem, &index[..fixed])?;
            let mut operands = vec![mem];
            operands.extend(&index[fixed..]);
            if kept[fixed..].iter().all(|k| *k) {
                return Some(self.op1(block, e.span, "tile.load_tile", &operands, vec![], ty));
            }
            // A number after a slice (`x[0:4, c]`, a column): the tile is
            // loaded with a unit dim there, `[4, 1]`, and reshaped.
            let Type::Tensor { dims, elem } = ty.clone() else {
                return None;
            };
            let mut sliced = dims.into_iter();
            let with_units: Vec<Dim> = kept[fixed..]
                .iter()
                .map(|&k| if k { sliced.next() } else { Some(Dim::constant(1)) })
                .collect::<Option<_>>()?;
            let loaded = self.op1(
                block,
                e.span,
                "tile.load_tile",
                &operands,
                vec![],
                Type::tensor(with_units, elem),
            );
            Some(self.op1(block, e.span, "tile.reshape", &[loaded], vec![], ty))
        } else {
            let ty = Type::Scalar(self.m.value_type(mem).elem()?);
            let mut operands = vec![mem];
            operands.extend(index);
            Some(self.op1(block, e.span, "tile.load", &operands, vec![], ty))
        }
    }

    /// `mem` with its leading dims fixed at `index` (a `tile.view`), or
    /// `mem` itself when `index` is empty.
    fn leading_view(
        &mut self,
        block: tessera_ir::BlockId,
        span: Span,
        mem: ValueId,
        index: &[ValueId],
    ) -> Option<ValueId> {
        if index.is_empty() {
            return Some(mem);
        }
        let Type::MemRef { dims, elem, space, .. } = self.m.value_type(mem).clone() else {
            return None;
        };
        let mut operands = vec![mem];
        operands.extend(index);
        let view = Type::memref(dims[index.len()..].to_vec(), elem, space);
        Some(self.op1(block, span, "tile.view", &operands, vec![], view))
    }

    /// The memref an async copy writes, from its destination `d`: a
    /// shared buffer, or one with leading dims fixed (`bufs[s]`,
    /// `bufs[s, :]`), which is a view. A part of a dim (`buf[0:128]` of
    /// 256) is not a buffer of its own; it is E0903.
    fn copy_destination(&mut self, block: tessera_ir::BlockId, d: &'a Expr) -> Option<ValueId> {
        let ExprKind::Subscript { base, args } = &d.kind else {
            return self.expr(block, d);
        };
        let what = "an async copy into part of a shared buffer: copy into a whole buffer, or into `bufs[s]` of a buffer allocated with a leading dim of slots";
        self.view_or_unsupported(block, d, base, args, what.to_string(), None)
    }

    /// `base[args]` (the expression `d`) as a view of memory
    /// ([`Self::leading_part`]), or E0903 saying `what` (and `help`) when it
    /// is another part and nothing was reported about it yet.
    fn view_or_unsupported(
        &mut self,
        block: tessera_ir::BlockId,
        d: &'a Expr,
        base: &'a Expr,
        args: &'a [Arg],
        what: String,
        help: Option<String>,
    ) -> Option<ValueId> {
        let errors = self.cx.errors.len();
        let view = self.leading_part(block, d, base, args);
        if view.is_none() && self.cx.errors.len() == errors {
            self.cx.unsupported_with(d.span, what, help);
        }
        view
    }

    /// `base[args]` (the expression `d`) as a view of memory, when it
    /// fixes leading dims and takes the rest whole (`bufs[s]`, `x[r, :]`);
    /// None for another part (`buf[0:128]` of 256, `x[:, c]`).
    fn leading_part(
        &mut self,
        block: tessera_ir::BlockId,
        d: &'a Expr,
        base: &'a Expr,
        args: &'a [Arg],
    ) -> Option<ValueId> {
        let (mem, index, _, kept) = self.place(block, base, args)?;
        let fixed = kept.iter().take_while(|k| !**k).count();
        let dims = self.m.value_type(mem).dims().map(<[_]>::to_vec).unwrap_or_default();
        let whole_from_zero = |a: &Arg| match &a.value.kind {
            ExprKind::Slice { lower, step: None, .. } => {
                lower.as_ref().is_none_or(|lo| matches!(lo.kind, ExprKind::Int(0)))
            }
            _ => false,
        };
        let sliced_dims = match self.cx.ty(d) {
            Some(Ty::Tensor(t)) => t
                .dims
                .as_ref()
                .and_then(|ds| ds.iter().map(dim_of).collect::<Option<Vec<_>>>()),
            _ => None,
        };
        let whole = fixed < dims.len()
            && args[fixed..].iter().all(whole_from_zero)
            && sliced_dims.is_some_and(|s| s[..] == dims[fixed..]);
        if !whole {
            return None;
        }
        self.leading_view(block, d.span, mem, &index[..fixed])
    }

    fn zeros_index(&mut self, block: tessera_ir::BlockId, mem: ValueId) -> Vec<ValueId> {
        let rank = self.m.value_type(mem).dims().map_or(0, <[_]>::len);
        (0..rank).map(|_| self.index_const(block, 0)).collect()
    }

    fn index_const(&mut self, block: tessera_ir::BlockId, value: i64) -> ValueId {
        let mut b = self.builder(block);
        b.op("tile.const")
            .attr("value", Attr::Int(value))
            .result(Type::INDEX)
            .build_value()
    }

    /// The memref and index values of `base[args]`; `true` when some index
    /// is a slice (the place is a tile, its offsets the slices' starts).
    fn place(&mut self, block: tessera_ir::BlockId, base: &'a Expr, args: &'a [Arg]) -> Option<Place> {
        let mem = self.expr(block, base)?;
        if !matches!(self.m.value_type(mem), Type::MemRef { .. }) {
            self.cx.unsupported_because(
                base.span,
                "indexing a tile (a value in the threads' registers), not memory",
                "index a tensor, a shared buffer, or a row of one passed to a device function (`f(x[r])`, `f(bufs[s, :])`); a part such as `x[8:40]` or a local holding one is a tile: pass the whole tensor and an offset",
            );
            return None;
        }
        let mut index = Vec::new();
        let mut sliced = false;
        let mut kept = Vec::new();
        for a in args {
            kept.push(matches!(a.value.kind, ExprKind::Slice { .. }));
            match &a.value.kind {
                ExprKind::Slice { lower, .. } => {
                    sliced = true;
                    match lower {
                        Some(lo) => {
                            let v = self.expr(block, lo)?;
                            index.push(self.convert(block, v, &Type::INDEX));
                        }
                        None => index.push(self.index_const(block, 0)),
                    }
                }
                _ => {
                    let v = self.expr(block, &a.value)?;
                    index.push(self.convert(block, v, &Type::INDEX));
                }
            }
        }
        // `x[:]` on a rank-2 tensor is the whole tensor, `x[1]` its row 1
        // (as `x[1, :]`, NumPy's): missing trailing indices start at 0.
        let rank = self.m.value_type(mem).dims().map_or(0, <[_]>::len);
        sliced |= index.len() < rank;
        if sliced {
            while index.len() < rank {
                index.push(self.index_const(block, 0));
                kept.push(true);
            }
        }
        Some((mem, index, sliced, kept))
    }

    /// `tile.dot`'s operand tiles `a` and `b` in element types `tile.mma`
    /// multiplies together ([`FnCx::product_elem`]: `bf16` by `fp8_e4m3`
    /// in bf16).
    fn dot_operands(&mut self, block: tessera_ir::BlockId, args: &[Arg], a: ValueId, b: ValueId) -> (ValueId, ValueId) {
        let elems = (self.m.value_type(a).elem(), self.m.value_type(b).elem());
        let Some(elem) = self.cx.product_elem(elems, arg(args, 0, "a"), arg(args, 1, "b")) else {
            return (a, b);
        };
        let mut widen = |v: ValueId| match self.m.value_type(v).dims() {
            Some(dims) => {
                let ty = Type::tensor(dims.to_vec(), elem);
                self.convert(block, v, &ty)
            }
            None => v,
        };
        (widen(a), widen(b))
    }

    /// Converts a scalar or tile to `ty`'s element type when it differs.
    fn convert(&mut self, block: tessera_ir::BlockId, v: ValueId, ty: &Type) -> ValueId {
        let from = self.m.value_type(v).clone();
        // A one-element buffer (an `f32[]` parameter) used as a number.
        if let (Type::MemRef { dims, elem, .. }, Type::Scalar(_)) = (&from, ty) {
            if dims.iter().all(|d| d.as_const() == Some(1)) {
                let zeros: Vec<ValueId> = dims.iter().map(|_| self.index_const(block, 0)).collect();
                let mut b = self.builder(block);
                let loaded = b
                    .op("tile.load")
                    .operand(v)
                    .operands(&zeros)
                    .result(Type::Scalar(*elem))
                    .build_value();
                return self.convert(block, loaded, ty);
            }
        }
        let (Some(have), Some(want)) = (from.elem(), ty.elem()) else {
            return v;
        };
        if have == want {
            return v;
        }
        let to = match from {
            Type::Tensor { dims, .. } => Type::tensor(dims, want),
            _ => Type::Scalar(want),
        };
        let mut b = self.builder(block);
        b.op("tile.cast").operand(v).result(to).build_value()
    }

    fn if_chain(
        &mut self,
        block: tessera_ir::BlockId,
        branches: &'a [tessera_syntax::ast::IfBranch],
        orelse: Option<&'a Block>,
    ) {
        let Some((first, rest)) = branches.split_first() else {
            return;
        };
        let Some(cond) = self.expr(block, &first.cond) else {
            return;
        };
        let cond = self.truth(block, cond);
        let then = self.region(&[], |l, blk, _| l.block(blk, &first.body));
        let otherwise = self.region(&[], |l, blk, _| {
            if rest.is_empty() {
                if let Some(o) = orelse {
                    l.block(blk, o);
                }
            } else {
                l.if_chain(blk, rest, orelse);
            }
        });
        let loc = self.cx.loc(first.cond.span);
        let mut b = self.builder(block);
        b.set_loc(loc);
        b.op("tile.if").operand(cond).region(then).region(otherwise).build();
    }

    /// An `i1` from a condition value.
    fn truth(&mut self, block: tessera_ir::BlockId, v: ValueId) -> ValueId {
        let ty = self.m.value_type(v).clone();
        if ty == Type::I1 {
            return v;
        }
        let zero = {
            let mut b = self.builder(block);
            let value = if ty.elem().is_some_and(ScalarType::is_float) {
                Attr::Float(0.0)
            } else {
                Attr::Int(0)
            };
            b.op("tile.const").attr("value", value).result(ty).build_value()
        };
        let mut b = self.builder(block);
        b.op("tile.cmp")
            .operands(&[v, zero])
            .attr("pred", "ne")
            .result(Type::I1)
            .build_value()
    }

    fn for_loop(
        &mut self,
        block: tessera_ir::BlockId,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a Block,
        stmt: &'a Stmt,
    ) {
        let loc = self.cx.loc(stmt.span);
        match &iter.kind {
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                // A loop over a literal list is unrolled.
                let ExprKind::Name(name) = &target.kind else {
                    self.cx.unsupported(target.span, "a loop over a list with this target");
                    return;
                };
                // In an inlined device function, an iteration after one that
                // may have returned runs only when it did not.
                let flag = self
                    .inlined
                    .as_ref()
                    .and_then(|i| i.returned)
                    .filter(|_| body.stmts.iter().any(may_return));
                let slotted = matches!(self.env.get(name), Some(Binding::Slot(_, ty)) if ty.dims().is_none());
                for (k, item) in items.iter().enumerate() {
                    let Some(v) = self.expr(block, item) else { return };
                    let saved = if slotted {
                        self.bind_loop_var(block, name, v);
                        None
                    } else {
                        self.env.insert(name.clone(), Binding::Value(v))
                    };
                    match flag.filter(|_| k > 0) {
                        Some(flag) => {
                            let returned = self.op1(block, stmt.span, "tile.load", &[flag], vec![], Type::I1);
                            let done = self.region(&[], |_, _, _| {});
                            let go_on = self.region(&[], |l, blk, _| l.block(blk, body));
                            let mut b = self.builder(block);
                            b.op("tile.if").operand(returned).region(done).region(go_on).build();
                        }
                        None => self.block(block, body),
                    }
                    if !slotted {
                        match saved {
                            Some(s) => self.env.insert(name.clone(), s),
                            None => self.env.remove(name),
                        };
                    }
                }
            }
            ExprKind::Call { callee, args } => {
                let path = match self.cx.body.calls.get(&iter.span).map(|c| &c.target) {
                    Some(CallTarget::Builtin(b)) => b.path,
                    _ => "",
                };
                match path {
                    "range" => {
                        let count = args.iter().filter(|a| a.name.is_none()).count();
                        let mut bounds = Vec::new();
                        for a in args.iter().filter(|a| a.name.is_none()) {
                            let Some(v) = self.expr(block, &a.value) else { return };
                            bounds.push(self.convert(block, v, &Type::INDEX));
                        }
                        let (lb, ub, step) = match count {
                            1 => (self.index_const(block, 0), bounds[0], self.index_const(block, 1)),
                            2 => (bounds[0], bounds[1], self.index_const(block, 1)),
                            3 => (bounds[0], bounds[1], bounds[2]),
                            _ => {
                                self.cx.unsupported(iter.span, "`range` with these arguments");
                                return;
                            }
                        };
                        self.counted_loop(block, target, iter, body, loc, [lb, ub, step]);
                    }
                    "tile.mma" => self.mma_loop(block, args, body, stmt),
                    _ => self
                        .cx
                        .unsupported(callee.span, "a loop over this iterator in a kernel"),
                }
            }
            // `a..b` and `a..=b` step by 1, as `range(a, b)` and `range(a, b + 1)`.
            ExprKind::Range { start, end, inclusive } => {
                let Some(lb) = self.expr(block, start) else { return };
                let Some(ub) = self.expr(block, end) else { return };
                let lb = self.convert(block, lb, &Type::INDEX);
                let mut ub = self.convert(block, ub, &Type::INDEX);
                let one = self.index_const(block, 1);
                if *inclusive {
                    ub = self.index_op(block, iter, "add", ub, one);
                }
                self.counted_loop(block, target, iter, body, loc, [lb, ub, one]);
            }
            _ => self.cx.unsupported(iter.span, "a loop over this iterator in a kernel"),
        }
    }

    /// A loop of `target` from `lb` below `ub` (above it for a negative
    /// step) by `step`, as `range(lb, ub, step)` counts.
    fn counted_loop(
        &mut self,
        block: tessera_ir::BlockId,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a Block,
        loc: Loc,
        [lb, ub, step]: [ValueId; 3],
    ) {
        let ExprKind::Name(name) = &target.kind else {
            self.cx.unsupported(target.span, "a `range` loop with this target");
            return;
        };
        let name = name.clone();
        if self.positive_const(step) {
            let region = self.region(&[Type::INDEX], |l, blk, args| {
                l.bind_loop_var(blk, &name, args[0]);
                l.loop_body(blk, body);
            });
            let mut b = self.builder(block);
            b.set_loc(loc);
            b.op("tile.for").operands(&[lb, ub, step]).region(region).build();
        } else {
            // A step that may be negative (`range(7, -1, -1)`):
            // count the iterations as Python does, and walk them.
            let count = self.trip_count(block, iter, lb, ub, step);
            let zero = self.index_const(block, 0);
            let one = self.index_const(block, 1);
            let region = self.region(&[Type::INDEX], |l, blk, args| {
                let scaled = l.index_op(blk, iter, "mul", args[0], step);
                let j = l.index_op(blk, iter, "add", lb, scaled);
                l.bind_loop_var(blk, &name, j);
                l.loop_body(blk, body);
            });
            let mut b = self.builder(block);
            b.set_loc(loc);
            b.op("tile.for").operands(&[zero, count, one]).region(region).build();
        }
    }

    /// Whether `v` is a constant above 0.
    fn positive_const(&self, v: ValueId) -> bool {
        self.m
            .defining_op(v)
            .filter(|&op| self.m.op(op).name == "tile.const")
            .and_then(|op| self.m.attr(op, "value").and_then(Attr::as_int))
            .is_some_and(|c| c > 0)
    }

    /// The iterations of `range(lb, ub, step)` for a step of either sign:
    /// `max(0, ceil((ub - lb) / step))`, 0 for a step of 0.
    fn trip_count(
        &mut self,
        block: tessera_ir::BlockId,
        at: &Expr,
        lb: ValueId,
        ub: ValueId,
        step: ValueId,
    ) -> ValueId {
        let zero = self.index_const(block, 0);
        let one = self.index_const(block, 1);
        let up = self.op1(
            block,
            at.span,
            "tile.cmp",
            &[step, zero],
            vec![("pred", Attr::str("gt"))],
            Type::I1,
        );
        // Distance and stride in the direction of the step, both ≥ 0 when
        // the range is not empty.
        let rise = self.index_op(block, at, "sub", ub, lb);
        let fall = self.index_op(block, at, "sub", lb, ub);
        let back = self.index_op(block, at, "sub", zero, step);
        let distance = self.op1(block, at.span, "tile.select", &[up, rise, fall], vec![], Type::INDEX);
        let stride = self.op1(block, at.span, "tile.select", &[up, step, back], vec![], Type::INDEX);
        let stride = self.index_op(block, at, "max", stride, one);
        let span = self.index_op(block, at, "add", distance, stride);
        let span = self.index_op(block, at, "sub", span, one);
        let count = self.index_op(block, at, "floordiv", span, stride);
        let count = self.index_op(block, at, "max", count, zero);
        let still = self.op1(
            block,
            at.span,
            "tile.cmp",
            &[step, zero],
            vec![("pred", Attr::str("ne"))],
            Type::I1,
        );
        self.op1(
            block,
            at.span,
            "tile.select",
            &[still, count, zero],
            vec![],
            Type::INDEX,
        )
    }

    /// `for m, n, k in tile.mma(A, B, C, BM=…, BN=…, BK=…): tile.mma_sync(m, n, k)`:
    /// the block at grid position (m, n) accumulates its BM×BN tile of
    /// `C += A @ B` over K in BK steps, in a register tile.
    fn mma_loop(&mut self, block: tessera_ir::BlockId, args: &'a [Arg], body: &'a Block, stmt: &'a Stmt) {
        let only_sync = body.stmts.iter().all(|s| match &s.kind {
            StmtKind::Expr(e) => matches!(self.cx.body.calls.get(&e.span).map(|c| &c.target),
                Some(CallTarget::Builtin(b)) if b.path == "tile.mma_sync"),
            _ => false,
        });
        let tile = |name: &str| keyword(args, name).and_then(literal_attr).and_then(|a| a.as_int());
        let (Some(bm), Some(bn), Some(bk), true) = (tile("BM"), tile("BN"), tile("BK"), only_sync) else {
            self.cx.unsupported(
                stmt.span,
                "a `tile.mma` loop other than `tile.mma_sync(m, n, k)` with constant BM, BN, BK",
            );
            return;
        };
        let operands: Option<Vec<ValueId>> = (0..3)
            .map(|i| positional(args, i).and_then(|e| self.expr(block, e)))
            .collect();
        let Some(operands) = operands else { return };
        let (a, b_mem, c) = (operands[0], operands[1], operands[2]);
        let (Some(a_elem), Some(b_elem), Some(c_elem)) = (
            self.m.value_type(a).elem(),
            self.m.value_type(b_mem).elem(),
            self.m.value_type(c).elem(),
        ) else {
            return;
        };
        let k_dim = self.m.value_type(a).dims().and_then(|d| d.get(1).cloned());
        let Some(k_dim) = k_dim else { return };
        let k = self.dim_value(block, &k_dim, stmt.span);
        let Some(k) = k else { return };
        let at = stmt.span;
        let tile2 = |r: i64, c: i64, elem: ScalarType| Type::tensor([Dim::constant(r), Dim::constant(c)], elem);
        let acc_ty = tile2(bm, bn, c_elem);
        let row_block = self.op1(
            block,
            at,
            "tile.block_id",
            &[],
            vec![("dim", Attr::Int(0))],
            Type::INDEX,
        );
        let col_block = self.op1(
            block,
            at,
            "tile.block_id",
            &[],
            vec![("dim", Attr::Int(1))],
            Type::INDEX,
        );
        let bm_v = self.index_const(block, bm);
        let bn_v = self.index_const(block, bn);
        let mul = vec![("fn", Attr::str("mul"))];
        let row = self.op1(block, at, "tile.binary", &[row_block, bm_v], mul.clone(), Type::INDEX);
        let col = self.op1(block, at, "tile.binary", &[col_block, bn_v], mul, Type::INDEX);
        let slot_ty = Type::memref([Dim::constant(bm), Dim::constant(bn)], c_elem, MemSpace::Local);
        let acc_slot = self.op1(block, at, "tile.local", &[], vec![], slot_ty);
        let zero = self.op1(
            block,
            at,
            "tile.const",
            &[],
            vec![("value", Attr::Float(0.0))],
            acc_ty.clone(),
        );
        let z0 = self.index_const(block, 0);
        self.op0(block, at, "tile.store_tile", &[zero, acc_slot, z0, z0], vec![]);
        let step = self.index_const(block, bk);
        let acc_elem = self.cx.accumulate(keyword(args, "accumulate"));
        let region = self.region(&[Type::INDEX], |l, inner, kk| {
            let kk = kk[0];
            let a_tile = l.op1(
                inner,
                at,
                "tile.load_tile",
                &[a, row, kk],
                vec![],
                tile2(bm, bk, a_elem),
            );
            let b_tile = l.op1(
                inner,
                at,
                "tile.load_tile",
                &[b_mem, kk, col],
                vec![],
                tile2(bk, bn, b_elem),
            );
            let acc = l.op1(inner, at, "tile.load_tile", &[acc_slot, z0, z0], vec![], acc_ty.clone());
            let mma = vec![("accumulate", Attr::Type(Type::Scalar(acc_elem)))];
            let next = l.op1(inner, at, "tile.mma", &[a_tile, b_tile, acc], mma, acc_ty.clone());
            l.op0(inner, at, "tile.store_tile", &[next, acc_slot, z0, z0], vec![]);
        });
        let loc = self.cx.loc(at);
        let mut b = self.builder(block);
        b.set_loc(loc);
        b.op("tile.for").operands(&[z0, k, step]).region(region).build();
        let acc = self.op1(block, at, "tile.load_tile", &[acc_slot, z0, z0], vec![], acc_ty.clone());
        let old = self.op1(block, at, "tile.load_tile", &[c, row, col], vec![], acc_ty.clone());
        let sum = self.op1(
            block,
            at,
            "tile.binary",
            &[old, acc],
            vec![("fn", Attr::str("add"))],
            acc_ty,
        );
        self.op0(block, at, "tile.store_tile", &[sum, c, row, col], vec![]);
    }

    /// The run-time value of a dim expression (a dim parameter, or a
    /// polynomial of them).
    fn dim_value(&mut self, block: tessera_ir::BlockId, dim: &Dim, at: Span) -> Option<ValueId> {
        if let Some(c) = dim.as_const() {
            return Some(self.index_const(block, c));
        }
        if let Some(Binding::Value(v)) = dim.as_sym().and_then(|s| self.env.get(s)).cloned() {
            return Some(v);
        }
        let mut total: Option<ValueId> = None;
        for (monomial, coeff) in dim.terms() {
            let mut term = self.index_const(block, coeff);
            for sym in monomial {
                let Some(Binding::Value(v)) = self.env.get(sym.as_str()).cloned() else {
                    self.cx
                        .unsupported(at, format!("the dim `{sym}`, which no parameter carries"));
                    return None;
                };
                let mut b = self.builder(block);
                term = b
                    .op("tile.binary")
                    .operands(&[term, v])
                    .attr("fn", "mul")
                    .result(Type::INDEX)
                    .build_value();
            }
            total = Some(match total {
                None => term,
                Some(t) => {
                    let mut b = self.builder(block);
                    b.op("tile.binary")
                        .operands(&[t, term])
                        .attr("fn", "add")
                        .result(Type::INDEX)
                        .build_value()
                }
            });
        }
        total.or_else(|| Some(self.index_const(block, 0)))
    }
}

impl<'a> Lower<'_, 'a, '_> {
    fn result_type(&mut self, e: &Expr) -> Option<Type> {
        match self.cx.ty(e).and_then(|t| ir_type(t, TensorAs::Value)) {
            Some(t) => Some(self.kernel_dims(&t)),
            None => {
                self.cx
                    .unsupported(e.span, "an expression whose type is not known precisely");
                None
            }
        }
    }

    /// Adds op `name` at the end of `block`, located at `at`.
    fn emit(
        &mut self,
        block: tessera_ir::BlockId,
        at: Span,
        name: &str,
        operands: &[ValueId],
        attrs: Vec<(&str, Attr)>,
        result: Option<Type>,
    ) -> tessera_ir::OpId {
        let loc = self.cx.loc(at);
        let mut b = self.builder(block);
        b.set_loc(loc);
        let mut op = b.op(name).operands(operands);
        for (k, v) in attrs {
            op = op.attr(k, v);
        }
        op.results(result).build()
    }

    fn op1(
        &mut self,
        block: tessera_ir::BlockId,
        at: Span,
        name: &str,
        operands: &[ValueId],
        attrs: Vec<(&str, Attr)>,
        ty: Type,
    ) -> ValueId {
        let op = self.emit(block, at, name, operands, attrs, Some(ty));
        self.m.result(op, 0)
    }

    fn op0(
        &mut self,
        block: tessera_ir::BlockId,
        at: Span,
        name: &str,
        operands: &[ValueId],
        attrs: Vec<(&str, Attr)>,
    ) {
        self.emit(block, at, name, operands, attrs, None);
    }

    /// A register tile of a value: memrefs (whole parameters, shared
    /// buffers) are loaded, tiles pass through.
    fn as_tile(&mut self, block: tessera_ir::BlockId, e: &Expr, v: ValueId) -> ValueId {
        match self.m.value_type(v).clone() {
            Type::MemRef { dims, elem, .. } => {
                let zeros = self.zeros_index(block, v);
                let mut operands = vec![v];
                operands.extend(zeros);
                self.op1(
                    block,
                    e.span,
                    "tile.load_tile",
                    &operands,
                    vec![],
                    Type::tensor(dims, elem),
                )
            }
            _ => v,
        }
    }

    fn expr(&mut self, block: tessera_ir::BlockId, e: &'a Expr) -> Option<ValueId> {
        match &e.kind {
            ExprKind::Paren(inner) => self.expr(block, inner),
            ExprKind::Name(n) => match self.env.get(n).cloned() {
                Some(Binding::Value(v)) => Some(v),
                Some(Binding::Slot(slot, ty)) => {
                    let mut operands = vec![slot];
                    operands.extend(self.zeros_index(block, slot));
                    let name = if ty.dims().is_some() {
                        "tile.load_tile"
                    } else {
                        "tile.load"
                    };
                    Some(self.op1(block, e.span, name, &operands, vec![], ty))
                }
                _ => match self.cx.constant(e) {
                    Some(value) => {
                        let ty = self.result_type(e)?;
                        Some(self.op1(block, e.span, "tile.const", &[], vec![("value", value)], ty))
                    }
                    None => {
                        self.cx.unsupported(e.span, format!("the name `{n}` here"));
                        None
                    }
                },
            },
            // Arithmetic of literals only, of no fixed width (`1.0 / 3.0`,
            // `1e-300 * 1e-10`), is computed as Python computes it, in
            // f64, and is then one literal: rounded once, where it is used
            // (it had been computed in f32).
            ExprKind::Binary { .. } | ExprKind::Unary { .. } if self.cx.float_literal_value(e).is_some() => {
                let f = self.cx.float_literal_value(e)?;
                let ty = self.float_literal_type(e, f)?;
                Some(self.op1(block, e.span, "tile.const", &[], vec![("value", Attr::Float(f))], ty))
            }
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {
                let ty = match &e.kind {
                    ExprKind::Float(f) => self.float_literal_type(e, f.get())?,
                    _ => self.result_type(e)?,
                };
                let value = match (&e.kind, ScalarType::is_float(ty.elem()?)) {
                    (ExprKind::Bool(b), _) => Attr::Int(*b as i64),
                    (ExprKind::Int(i), true) => Attr::Float(*i as f64),
                    // Literals from 2^63 on are the bits of a `u64` (the
                    // FNV-64 offset basis, `0xCBF29CE484222325`).
                    (ExprKind::Int(i), false) => Attr::Int(*i as i64),
                    (ExprKind::Float(f), _) => Attr::Float(f.get()),
                    _ => return None,
                };
                Some(self.op1(block, e.span, "tile.const", &[], vec![("value", value)], ty))
            }
            ExprKind::Unary { op, operand } => {
                let x = self.expr(block, operand)?;
                let x = self.element_of_0d(block, x);
                let ty = self.m.value_type(x).clone();
                let f = match op {
                    UnaryOp::Neg => "neg",
                    UnaryOp::Not | UnaryOp::Invert => "not",
                    UnaryOp::Pos => return Some(x),
                };
                Some(self.op1(block, e.span, "tile.unary", &[x], vec![("fn", Attr::str(f))], ty))
            }
            ExprKind::IfElse { cond, then, orelse } => {
                let c = self.expr(block, cond)?;
                let c = self.truth(block, c);
                let ty = self.result_type(e)?;
                if !matches!(ty, Type::Scalar(_)) {
                    // Buffers and tiles: both are at hand, the condition picks one.
                    let a = self.expr(block, then)?;
                    let b = self.expr(block, orelse)?;
                    let ty = self.m.value_type(a).clone();
                    return Some(self.op1(block, e.span, "tile.select", &[c, a, b], vec![], ty));
                }
                // Only the side the condition picks is evaluated, as in Python.
                Some(self.branch_value(block, e, c, ty, Some(then), Some(orelse)))
            }
            ExprKind::Binary {
                op: op @ (BinOp::And | BinOp::Or),
                lhs,
                rhs,
            } => {
                // `a and b` evaluates `b` only when `a` holds, `a or b` only
                // when it does not (the bounds check `i < N and x[i] > 0`).
                let a = self.expr(block, lhs)?;
                if !matches!(self.m.value_type(a), Type::Scalar(_)) {
                    return self.elementwise_binary(block, e, *op, a, rhs);
                }
                let a = self.truth(block, a);
                let (then, otherwise) = match op {
                    BinOp::And => (Some(&**rhs), None),
                    _ => (None, Some(&**rhs)),
                };
                Some(self.branch_value(block, e, a, Type::I1, then, otherwise))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(block, lhs)?;
                self.elementwise_binary(block, e, *op, a, rhs)
            }
            ExprKind::Subscript { base, args } if matches!(&base.kind, ExprKind::Attr { name, .. } if name.name == "shape") =>
            {
                let ExprKind::Attr { base: tensor, .. } = &base.kind else {
                    return None;
                };
                let axis = args
                    .first()
                    .and_then(|a| literal_attr(&a.value))
                    .and_then(|a| a.as_int());
                self.dim_of_tensor(block, e, tensor, axis)
            }
            ExprKind::Subscript { base, args } => {
                let place = self.place(block, base, args)?;
                self.load_place(block, e, place)
            }
            // A constant of an imported module: `sizes.N`.
            ExprKind::Attr { .. } if self.cx.constant(e).is_some() => {
                let value = self.cx.constant(e)?;
                let ty = self.result_type(e)?;
                Some(self.op1(block, e.span, "tile.const", &[], vec![("value", value)], ty))
            }
            ExprKind::Attr { base, name } if name.name == "T" => {
                let x = self.expr(block, base)?;
                let x = self.as_tile(block, base, x);
                let ty = self.result_type(e)?;
                Some(self.op1(
                    block,
                    e.span,
                    "tile.transpose",
                    &[x],
                    vec![("perm", Attr::ints([1, 0]))],
                    ty,
                ))
            }
            ExprKind::Call { callee, args } => self.call(block, e, callee, args),
            _ => {
                self.cx.unsupported(e.span, "this expression in a kernel");
                None
            }
        }
    }

    /// The type of the constant a float literal `e` of value `v` is: its
    /// result type, but f64 for one of no fixed width that f32 does not
    /// hold exactly (`0.1`, `1e300`), so that, converted where it is used,
    /// it is rounded once, to that place's type (an f64 operand keeps every
    /// digit; `1e300` had been inf).
    fn float_literal_type(&mut self, e: &'a Expr, v: f64) -> Option<Type> {
        let exact = f64::from(v as f32) == v || v.is_nan();
        if matches!(self.cx.ty(e), Some(Ty::Float)) && !exact {
            return Some(Type::Scalar(ScalarType::F64));
        }
        self.result_type(e)
    }

    /// A buffer of no dims (an `f32[]` parameter) in arithmetic is its one
    /// element, read here (the checker types it so); anything else stays.
    fn element_of_0d(&mut self, block: tessera_ir::BlockId, v: ValueId) -> ValueId {
        match self.m.value_type(v).clone() {
            Type::MemRef { dims, elem, .. } if dims.is_empty() => self.convert(block, v, &Type::Scalar(elem)),
            _ => v,
        }
    }

    /// `a op rhs` elementwise, `a` already lowered: a comparison, or
    /// `tile.binary` in the result's type (tiles broadcast to its shape).
    fn elementwise_binary(
        &mut self,
        block: tessera_ir::BlockId,
        e: &'a Expr,
        op: BinOp,
        a: ValueId,
        rhs: &'a Expr,
    ) -> Option<ValueId> {
        let b = self.expr(block, rhs)?;
        let (a, b) = (self.element_of_0d(block, a), self.element_of_0d(block, b));
        if let Some(pred) = cmp_pred(op) {
            // Both sides in the type that compares them (converting the
            // right to the left's type truncated `i < x` with x = 0.5 to
            // `i < 0`, and compared u32 with i32 by their bits).
            let (ta, tb) = (self.m.value_type(a).clone(), self.m.value_type(b).clone());
            let (a, b) = match (ta.elem(), tb.elem()) {
                (Some(ea), Some(eb)) if ea != eb => {
                    let common = compared_as(ea, eb);
                    let a_ty = with_elem(&ta, common);
                    let b_ty = with_elem(&tb, common);
                    (self.convert(block, a, &a_ty), self.convert(block, b, &b_ty))
                }
                _ => (a, self.convert(block, b, &ta)),
            };
            return Some(self.op1(
                block,
                e.span,
                "tile.cmp",
                &[a, b],
                vec![("pred", Attr::str(pred))],
                Type::I1,
            ));
        }
        let Some(f) = binary_fn(op) else {
            self.cx
                .unsupported(e.span, format!("the operator `{}` in a kernel", op.symbol()));
            return None;
        };
        let ty = self.result_type(e)?;
        let (a, b) = if let Type::Tensor { dims, .. } = &ty {
            let a = self.as_tile(block, e, a);
            let b = self.as_tile(block, rhs, b);
            (self.broadcast(block, e, a, dims), self.broadcast(block, e, b, dims))
        } else {
            (a, b)
        };
        let a = self.convert(block, a, &ty);
        let b = self.convert(block, b, &ty);
        Some(self.op1(block, e.span, "tile.binary", &[a, b], vec![("fn", Attr::str(f))], ty))
    }

    /// A scalar of type `ty` computed by one of two branches on `c`: the
    /// value of `then` where `c` holds, of `otherwise` where it does not; a
    /// missing side gives `c` itself (`a and b`, `a or b`). Only the side
    /// taken is evaluated.
    fn branch_value(
        &mut self,
        block: tessera_ir::BlockId,
        e: &Expr,
        c: ValueId,
        ty: Type,
        then: Option<&'a Expr>,
        otherwise: Option<&'a Expr>,
    ) -> ValueId {
        let elem = ty.elem().unwrap_or(ScalarType::I1);
        let slot_ty = Type::memref(Vec::<Dim>::new(), elem, MemSpace::Local);
        let slot = self.op1(block, e.span, "tile.local", &[], vec![], slot_ty);
        let side = |l: &mut Self, blk: tessera_ir::BlockId, x: Option<&'a Expr>| {
            let v = match x {
                Some(x) => match l.expr(blk, x) {
                    Some(v) if ty == Type::I1 => l.truth(blk, v),
                    Some(v) => l.convert(blk, v, &ty),
                    None => return,
                },
                None => l.convert(blk, c, &ty),
            };
            l.op0(blk, e.span, "tile.store", &[v, slot], vec![]);
        };
        let yes = self.region(&[], |l, blk, _| side(l, blk, then));
        let no = self.region(&[], |l, blk, _| side(l, blk, otherwise));
        let loc = self.cx.loc(e.span);
        let mut b = self.builder(block);
        b.set_loc(loc);
        b.op("tile.if").operand(c).region(yes).region(no).build();
        self.op1(block, e.span, "tile.load", &[slot], vec![], ty)
    }

    /// `v` broadcast to a tile of `dims` (NumPy rules), when its shape differs.
    fn broadcast(&mut self, block: tessera_ir::BlockId, e: &Expr, v: ValueId, dims: &[Dim]) -> ValueId {
        let ty = self.m.value_type(v).clone();
        if ty.dims() == Some(dims) {
            return v;
        }
        let Some(elem_ty) = ty.elem() else { return v };
        self.op1(
            block,
            e.span,
            "tile.broadcast",
            &[v],
            vec![],
            Type::tensor(dims.to_vec(), elem_ty),
        )
    }

    fn arg_value(
        &mut self,
        block: tessera_ir::BlockId,
        args: &'a [Arg],
        index: usize,
        name: &str,
        at: &Expr,
    ) -> Option<ValueId> {
        match arg(args, index, name) {
            Some(x) => self.expr(block, x),
            None => {
                self.cx
                    .unsupported(at.span, format!("a call without its `{name}` argument"));
                None
            }
        }
    }

    /// `tile.lane_id` or `tile.warp_id`.
    fn id(&mut self, block: tessera_ir::BlockId, e: &Expr, name: &str) -> ValueId {
        self.op1(block, e.span, name, &[], vec![], Type::INDEX)
    }

    /// `tile.thread_id`, `block_id`, `block_dim` or `grid_dim` along `axis`.
    fn axis_id(&mut self, block: tessera_ir::BlockId, e: &Expr, name: &str, axis: i64) -> ValueId {
        self.op1(block, e.span, name, &[], vec![("dim", Attr::Int(axis))], Type::INDEX)
    }

    fn index_op(&mut self, block: tessera_ir::BlockId, e: &Expr, f: &str, a: ValueId, b: ValueId) -> ValueId {
        self.op1(
            block,
            e.span,
            "tile.binary",
            &[a, b],
            vec![("fn", Attr::str(f))],
            Type::INDEX,
        )
    }

    /// The linear index of `name` (`tile.thread_id` in its block,
    /// `tile.block_id` in the grid) over `axes` axes, x fastest, with
    /// `extent` (`tile.block_dim`, `tile.grid_dim`) the size of each.
    fn linear(&mut self, block: tessera_ir::BlockId, e: &Expr, name: &str, extent: &str, axes: i64) -> ValueId {
        let mut linear = self.axis_id(block, e, name, axes - 1);
        for axis in (0..axes - 1).rev() {
            let size = self.axis_id(block, e, extent, axis);
            let scaled = self.index_op(block, e, "mul", linear, size);
            let at = self.axis_id(block, e, name, axis);
            linear = self.index_op(block, e, "add", scaled, at);
        }
        linear
    }

    /// The product of `extent` (`tile.block_dim`, `tile.grid_dim`) over `axes` axes.
    fn extent(&mut self, block: tessera_ir::BlockId, e: &Expr, extent: &str, axes: i64) -> ValueId {
        let mut total = self.axis_id(block, e, extent, 0);
        for axis in 1..axes {
            let size = self.axis_id(block, e, extent, axis);
            total = self.index_op(block, e, "mul", total, size);
        }
        total
    }

    /// A launch-geometry builtin (`launch.thread_id(axis)` and the rest,
    /// `tile_linear_id()`…): along its constant `axis` when it has one,
    /// else linear, x fastest; the grid may have up to three axes.
    fn geometry(&mut self, block: tessera_ir::BlockId, e: &Expr, path: &str, args: &[Arg]) -> ValueId {
        let axis = arg(args, 0, "axis").and_then(literal_attr).and_then(|a| a.as_int());
        // The axes of the header's `tile[(…)]` up to the last one above 1,
        // else one: the executor launches a kernel compiled for a 1-D block
        // only with 1-D blocks, so the linear index needs no y or z term there.
        let block_axes = self.block_axes;
        match (path, axis) {
            ("launch.thread_id", Some(axis)) => {
                let bid = self.axis_id(block, e, "tile.block_id", axis);
                let bdim = self.axis_id(block, e, "tile.block_dim", axis);
                let t = self.axis_id(block, e, "tile.thread_id", axis);
                let base = self.index_op(block, e, "mul", bid, bdim);
                self.index_op(block, e, "add", base, t)
            }
            ("launch.thread_id", None) => {
                let bid = self.linear(block, e, "tile.block_id", "tile.grid_dim", 3);
                let threads = self.extent(block, e, "tile.block_dim", block_axes);
                let t = self.linear(block, e, "tile.thread_id", "tile.block_dim", block_axes);
                let base = self.index_op(block, e, "mul", bid, threads);
                self.index_op(block, e, "add", base, t)
            }
            (_, Some(axis)) => {
                let name = match path {
                    "launch.local_id" => "tile.thread_id",
                    "launch.block_id" => "tile.block_id",
                    "launch.block_dim" => "tile.block_dim",
                    _ => "tile.grid_dim",
                };
                self.axis_id(block, e, name, axis)
            }
            ("launch.local_id" | "tile_linear_id", None) => {
                self.linear(block, e, "tile.thread_id", "tile.block_dim", block_axes)
            }
            ("launch.block_id" | "group_linear_id", None) => self.linear(block, e, "tile.block_id", "tile.grid_dim", 3),
            ("launch.block_dim" | "group_tile_count", None) => self.extent(block, e, "tile.block_dim", block_axes),
            (_, None) => self.extent(block, e, "tile.grid_dim", 3),
        }
    }

    /// A kernel's `print`: one `tile.print` whose text holds the string
    /// literals and the separators, with a `{}` where each value goes
    /// (braces of the literals doubled), and the block's and the thread's
    /// linear index before the values, to order the output.
    fn print(&mut self, block: tessera_ir::BlockId, e: &'a Expr, args: &'a [Arg]) {
        let sep = match keyword(args, "sep").map(|s| &s.unparen().kind) {
            Some(ExprKind::Str(s)) => s.clone(),
            _ => " ".to_string(),
        };
        let mut pieces = Vec::new();
        let mut operands = vec![
            self.geometry(block, e, "group_linear_id", &[]),
            self.geometry(block, e, "tile_linear_id", &[]),
        ];
        for a in args.iter().filter(|a| a.name.is_none()) {
            if let ExprKind::Str(s) = &a.value.unparen().kind {
                pieces.push(s.replace('{', "{{").replace('}', "}}"));
                continue;
            }
            let Some(v) = self.expr(block, &a.value) else { return };
            operands.push(v);
            pieces.push("{}".to_string());
        }
        let text = pieces.join(&sep.replace('{', "{{").replace('}', "}}"));
        self.op0(block, e.span, "tile.print", &operands, vec![("text", Attr::str(text))]);
    }

    fn call(&mut self, block: tessera_ir::BlockId, e: &'a Expr, callee: &'a Expr, args: &'a [Arg]) -> Option<ValueId> {
        // Methods of compile-time values: `g.sync()`, `g.thread_rank()`.
        if let ExprKind::Attr { base, name } = &callee.kind {
            if let ExprKind::Name(n) = &base.kind {
                if let Some(Binding::Group(size)) = self.env.get(n).cloned() {
                    return match name.name.as_str() {
                        "sync" => {
                            self.op0(
                                block,
                                e.span,
                                "tile.barrier",
                                &[],
                                vec![("scope", Attr::str("group")), ("size", Attr::Int(size))],
                            );
                            None
                        }
                        "thread_rank" => {
                            let t = self.geometry(block, e, "tile_linear_id", &[]);
                            let s = self.op1(
                                block,
                                e.span,
                                "tile.const",
                                &[],
                                vec![("value", Attr::Int(size))],
                                Type::INDEX,
                            );
                            Some(self.op1(
                                block,
                                e.span,
                                "tile.binary",
                                &[t, s],
                                vec![("fn", Attr::str("rem"))],
                                Type::INDEX,
                            ))
                        }
                        _ => {
                            self.cx.unsupported(e.span, format!("the group method `{}`", name.name));
                            None
                        }
                    };
                }
            }
        }
        let path = match self.cx.body.calls.get(&e.span).map(|c| c.target.clone()) {
            Some(CallTarget::Builtin(b)) => b.path,
            Some(CallTarget::Function { file, name }) => {
                let mut results = self.inline(block, e, file, &name, args)?;
                return match results.len() {
                    1 => results.pop(),
                    0 => None,
                    _ => {
                        self.cx.unsupported(
                            e.span,
                            format!("the tuple `{name}` returns, other than unpacked (`a, b = {name}(…)`)"),
                        );
                        None
                    }
                };
            }
            // A dtype called as a function, `f32(x)`, is a cast.
            None if matches!(self.cx.ty(callee), Some(Ty::DTypeValue(_))) => "cast",
            None => {
                self.cx
                    .unsupported(callee.span, "a call of something that is not a function");
                return None;
            }
        };
        match path {
            "launch.thread_id" | "launch.local_id" | "launch.block_id" | "launch.block_dim" | "launch.grid_dim"
            | "tile_linear_id" | "group_linear_id" | "group_tile_count" => Some(self.geometry(block, e, path, args)),
            "tile.lane_id" => Some(self.id(block, e, "tile.lane_id")),
            "tile.warp_id" => Some(self.id(block, e, "tile.warp_id")),
            "tbarrier" | "tile.barrier" => {
                self.op0(block, e.span, "tile.barrier", &[], vec![("scope", Attr::str("block"))]);
                None
            }
            "tile.fence" => {
                let scope = match keyword(args, "scope")
                    .or_else(|| arg(args, 0, "scope"))
                    .map(|e| &e.unparen().kind)
                {
                    Some(ExprKind::Str(s)) => s.clone(),
                    _ => "device".to_string(),
                };
                self.op0(block, e.span, "tile.fence", &[], vec![("scope", Attr::str(scope))]);
                None
            }
            "print" => {
                self.print(block, e, args);
                None
            }
            "tshared.alloc" | "tile.alloc_shared" => {
                let Some(Ty::Tensor(t)) = self.cx.ty(e) else {
                    self.cx.unsupported(e.span, "a shared buffer without a known shape");
                    return None;
                };
                let dims = t
                    .dims
                    .as_ref()
                    .and_then(|d| d.iter().map(dim_of).collect::<Option<Vec<_>>>());
                let (Some(dims), Some(dtype)) = (dims, t.dtype) else {
                    self.cx.unsupported(e.span, "a shared buffer without a known shape");
                    return None;
                };
                let mut attrs = Vec::new();
                if let Some(Attr::Int(s)) = keyword(args, "swizzle").and_then(literal_attr) {
                    attrs.push(("swizzle", Attr::Int(s)));
                }
                if let Some(Attr::Int(p)) = keyword(args, "bank_pad").and_then(literal_attr) {
                    attrs.push(("bank_pad", Attr::Int(p)));
                }
                Some(self.op1(
                    block,
                    e.span,
                    "tile.alloc_shared",
                    &[],
                    attrs,
                    Type::memref(dims, scalar_of(dtype), MemSpace::Shared),
                ))
            }
            "len" => {
                let x = arg(args, 0, "x")?;
                self.dim_of_tensor(block, e, x, Some(0))
            }
            "tile.zeros" => {
                let ty = self.result_type(e)?;
                Some(self.op1(block, e.span, "tile.const", &[], vec![("value", Attr::Float(0.0))], ty))
            }
            "atomic_add" | "tile.atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or"
            | "atomic_xor" | "atomic_exch" | "atomic_cas" => self.atomic(block, e, path, args),
            "tile.warp_shuffle_down" | "tile.warp_shuffle_xor" | "tile.warp_shuffle_up" | "tile.warp_shuffle" => {
                let (mode, lane) = match path {
                    "tile.warp_shuffle_down" => ("down", "offset"),
                    "tile.warp_shuffle_up" => ("up", "offset"),
                    "tile.warp_shuffle_xor" => ("xor", "mask"),
                    _ => ("idx", "lane"),
                };
                let v = self.arg_value(block, args, 0, "value", e)?;
                let delta = self.arg_value(block, args, 1, lane, e)?;
                let delta = self.convert(block, delta, &Type::I32);
                let ty = self.m.value_type(v).clone();
                Some(self.op1(
                    block,
                    e.span,
                    "tile.shuffle",
                    &[v, delta],
                    vec![("mode", Attr::str(mode)), ("width", Attr::Int(32))],
                    ty,
                ))
            }
            "tile.vote_any" | "tile.vote_all" | "tile.vote_ballot" => {
                let p = self.arg_value(block, args, 0, "predicate", e)?;
                let p = self.truth(block, p);
                let (mode, ty) = match path {
                    "tile.vote_any" => ("any", Type::I1),
                    "tile.vote_all" => ("all", Type::I1),
                    _ => ("ballot", Type::Scalar(ScalarType::U64)),
                };
                Some(self.op1(block, e.span, "tile.vote", &[p], vec![("mode", Attr::str(mode))], ty))
            }
            "tile.popcount" => {
                let x = self.arg_value(block, args, 0, "x", e)?;
                let ty = self.m.value_type(x).clone();
                Some(self.op1(
                    block,
                    e.span,
                    "tile.unary",
                    &[x],
                    vec![("fn", Attr::str("popcount"))],
                    ty,
                ))
            }
            "tile.dot" => {
                let a = self.arg_value(block, args, 0, "a", e)?;
                let a = self.as_tile(block, e, a);
                let b = self.arg_value(block, args, 1, "b", e)?;
                let b = self.as_tile(block, e, b);
                let (a, b) = self.dot_operands(block, args, a, b);
                let ty = self.result_type(e)?;
                let acc_elem = self.cx.accumulate(keyword(args, "accumulate"));
                let acc_ty = match &ty {
                    Type::Tensor { dims, .. } => Type::tensor(dims.clone(), acc_elem),
                    other => other.clone(),
                };
                let zero = if acc_elem.is_float() {
                    Attr::Float(0.0)
                } else {
                    Attr::Int(0)
                };
                let zero = self.op1(block, e.span, "tile.const", &[], vec![("value", zero)], acc_ty.clone());
                let product = self.op1(
                    block,
                    e.span,
                    "tile.mma",
                    &[a, b, zero],
                    vec![("accumulate", Attr::Type(Type::Scalar(acc_elem)))],
                    acc_ty,
                );
                Some(self.convert(block, product, &ty))
            }
            "tile.relu" | "tile.exp" | "exp" | "exp2" | "erf" | "sqrt" | "rsqrt" | "log" | "tanh" | "abs" | "sin"
            | "cos" | "floor" | "ceil" => {
                let x = self.arg_value(block, args, 0, "x", e)?;
                let ty = self.result_type(e)?;
                let x = if matches!(ty, Type::Tensor { .. }) {
                    self.as_tile(block, e, x)
                } else {
                    x
                };
                // An integer argument of a float function (`exp(i)`) is
                // converted to the result's float type first.
                let x = self.convert(block, x, &ty);
                let f = path.trim_start_matches("tile.");
                Some(self.op1(block, e.span, "tile.unary", &[x], vec![("fn", Attr::str(f))], ty))
            }
            "min" | "max" => {
                // Of every value, left to right; a key function is host
                // code's.
                if self.cx.host_only_key(path, args) {
                    return None;
                }
                let ty = self.result_type(e)?;
                let a = self.arg_value(block, args, 0, "a", e)?;
                let mut acc = self.convert(block, a, &ty);
                for i in 1..args.iter().filter(|a| a.name.is_none()).count().max(2) {
                    let v = self.arg_value(block, args, i, "b", e)?;
                    let v = self.convert(block, v, &ty);
                    acc = self.op1(
                        block,
                        e.span,
                        "tile.binary",
                        &[acc, v],
                        vec![("fn", Attr::str(path))],
                        ty.clone(),
                    );
                }
                Some(acc)
            }
            "ceil_div" => {
                let a = self.arg_value(block, args, 0, "a", e)?;
                let b = self.arg_value(block, args, 1, "b", e)?;
                let ty = self.m.value_type(a).clone();
                let b = self.convert(block, b, &ty);
                let one = self.op1(
                    block,
                    e.span,
                    "tile.const",
                    &[],
                    vec![("value", Attr::Int(1))],
                    ty.clone(),
                );
                let sum = self.op1(
                    block,
                    e.span,
                    "tile.binary",
                    &[a, b],
                    vec![("fn", Attr::str("add"))],
                    ty.clone(),
                );
                let top = self.op1(
                    block,
                    e.span,
                    "tile.binary",
                    &[sum, one],
                    vec![("fn", Attr::str("sub"))],
                    ty.clone(),
                );
                Some(self.op1(
                    block,
                    e.span,
                    "tile.binary",
                    &[top, b],
                    vec![("fn", Attr::str("floordiv"))],
                    ty,
                ))
            }
            "bitcast" => {
                let x = self.arg_value(block, args, 0, "x", e)?;
                let x = self.element_of_0d(block, x);
                let ty = self.result_type(e)?;
                // A literal is first a value of the result's width.
                let bits = ty.elem().map_or(32, ScalarType::bits);
                let literal = match arg(args, 0, "x").and_then(|a| self.cx.ty(a)) {
                    Some(Ty::Float) => Some(if bits == 64 { ScalarType::F64 } else { ScalarType::F32 }),
                    Some(Ty::Int) => Some(if bits == 64 { ScalarType::I64 } else { ScalarType::I32 }),
                    _ => None,
                };
                let x = match literal {
                    Some(s) => self.convert(block, x, &Type::Scalar(s)),
                    None => x,
                };
                Some(self.op1(block, e.span, "tile.cast", &[x], vec![("bitcast", Attr::Unit)], ty))
            }
            "cast" => {
                // `float("-inf")`: a string literal spells the constant.
                if let Some(ExprKind::Str(text)) = arg(args, 0, "x").map(|a| &a.unparen().kind) {
                    let ty = self.result_type(e)?;
                    let float = ty.elem().is_none_or(ScalarType::is_float);
                    let Some(value) = number_of_text(text, float) else {
                        let kind = if float { "a float" } else { "an integer" };
                        self.cx.unsupported_because(
                            e.span,
                            format!("{text:?} as {kind}"),
                            "write a number Python's `float()` or `int()` reads: `\"-inf\"`, `\"nan\"`, `\"2.5e-3\"`, `\"42\"`",
                        );
                        return None;
                    };
                    return Some(self.op1(block, e.span, "tile.const", &[], vec![("value", value)], ty));
                }
                let x = self.arg_value(block, args, 0, "x", e)?;
                let x = self.element_of_0d(block, x);
                let ty = self.result_type(e)?;
                let rounding = keyword(args, "rounding")
                    .and_then(literal_attr)
                    .unwrap_or(Attr::str("nearest_even"));
                // Only round-to-nearest-even is generated (as on the host):
                // another mode is refused, not ignored (`toward_zero` of
                // 70000.0 to f16 gave inf).
                if rounding.as_str() != Some("nearest_even") {
                    let at = keyword(args, "rounding").map_or(e.span, |r| r.span);
                    self.cx.unsupported(
                        at,
                        format!("`cast` with rounding {rounding}: kernels round to nearest even only"),
                    );
                    return None;
                }
                let mut attrs = vec![("rounding", rounding)];
                if saturates(args) {
                    attrs.push(("saturate", Attr::Unit));
                }
                Some(self.op1(block, e.span, "tile.cast", &[x], attrs, ty))
            }
            "tile.softmax" => {
                let x = self.arg_value(block, args, 0, "x", e)?;
                let x = self.as_tile(block, e, x);
                let ty = self.result_type(e)?;
                let axis = keyword(args, "axis").and_then(literal_attr).unwrap_or(Attr::Int(-1));
                let acc = self.cx.accumulate(keyword(args, "accumulate"));
                let mut attrs = vec![("axis", axis), ("accumulate", Attr::Type(Type::Scalar(acc)))];
                if self.cx.sig.deterministic.is_some() {
                    attrs.push(("order", Attr::str("tree")));
                }
                Some(self.op1(block, e.span, "tile.softmax", &[x], attrs, ty))
            }
            "tile.sum" | "tile.reduce" => {
                let x = self.arg_value(block, args, 0, "x", e)?;
                let x = self.as_tile(block, e, x);
                let ty = self.result_type(e)?;
                let kind = match keyword(args, "op").and_then(literal_attr) {
                    Some(Attr::Str(k)) => k,
                    _ => "sum".to_string(),
                };
                let ordered = self.cx.info.tree_reductions.contains(&e.span)
                    || keyword(args, "order").and_then(literal_attr) == Some(Attr::str("tree"));
                let order = if ordered { "tree" } else { "any" };
                let attrs = |axis: Attr| {
                    vec![
                        ("kind", Attr::Str(kind.clone())),
                        ("axis", axis),
                        ("order", Attr::str(order)),
                    ]
                };
                if let Some(axis) = keyword(args, "axis").and_then(literal_attr) {
                    return Some(self.op1(block, e.span, "tile.reduce", &[x], attrs(axis), ty));
                }
                // The whole tile: its last axis first, down to one value (a
                // fixed order, the same on every target).
                let mut value = x;
                while let Type::Tensor { dims, elem } = self.m.value_type(value).clone() {
                    let Some((_, lead)) = dims.split_last() else { break };
                    let reduced = if lead.is_empty() {
                        ty.clone()
                    } else {
                        Type::tensor(lead.to_vec(), elem)
                    };
                    let axis = Attr::Int(lead.len() as i64);
                    value = self.op1(block, e.span, "tile.reduce", &[value], attrs(axis), reduced);
                }
                Some(value)
            }
            "tile.cp_async" | "tile.async_copy" => self.async_copy(block, e, path, args),
            "tile.wait_async" => {
                let stage = arg(args, 0, "stage").and_then(literal_attr).and_then(|a| a.as_int());
                // A wait for a computed stage, or for none, completes every
                // copy in flight (`spec/memory.md`, "Computed stages"): a
                // wait for each literal stage the copies use (a copy into a
                // computed stage completes as it is made).
                let stages: Vec<i64> = match stage {
                    Some(s) => vec![s + self.stage_offset()],
                    None => self.copy_stages.iter().copied().collect(),
                };
                for stage in stages {
                    self.op0(block, e.span, "tile.wait_async", &[], vec![("stage", Attr::Int(stage))]);
                }
                None
            }
            "rng.uniform" | "rng.normal" => self.draw(block, e, path, args),
            _ => {
                self.cx.unsupported(e.span, format!("`{path}` in a kernel"));
                None
            }
        }
    }

    /// `rng.uniform(stream=…, counter=…)` and `rng.normal(…)` in a kernel:
    /// one value per thread, `tile.rng` with the counter (by default the
    /// thread's linear index in the grid) from the stream (by default one of
    /// its own per draw), keyed by the kernel and its `@deterministic` seed.
    fn draw(&mut self, block: tessera_ir::BlockId, e: &'a Expr, path: &str, args: &'a [Arg]) -> Option<ValueId> {
        let ty = self.result_type(e)?;
        if !matches!(ty, Type::Scalar(_)) {
            self.cx.unsupported(
                e.span,
                "a tile of random numbers in a kernel (draw one value per thread: `rng.uniform(stream=…)`)",
            );
            return None;
        }
        let dist = if path.ends_with("uniform") { "uniform" } else { "normal" };
        let stream = match keyword(args, "stream").filter(|s| !matches!(s.kind, ExprKind::None)) {
            Some(s) => self.stream_name(s)?,
            None => {
                let name = format!("{}.rng{}", self.kernel, self.draws);
                self.draws += 1;
                name
            }
        };
        let counter = match keyword(args, "counter") {
            Some(c) => {
                let v = self.expr(block, c)?;
                self.convert(block, v, &Type::INDEX)
            }
            None => self.geometry(block, e, "launch.thread_id", &[]),
        };
        let mut attrs = vec![("dist", Attr::str(dist)), ("stream", Attr::Str(stream))];
        if let Some(seed) = self.seed {
            attrs.push(("seed", Attr::Int(seed)));
        }
        Some(self.op1(block, e.span, "tile.rng", &[counter], attrs, ty))
    }

    /// `atomic_add(x[i], v)` and its kin: `tile.atomic` of the kind the
    /// name says on the element, giving the old value; `atomic_cas(x[i],
    /// expected, v)` takes the expected value before the new one.
    fn atomic(&mut self, block: tessera_ir::BlockId, e: &'a Expr, path: &str, args: &'a [Arg]) -> Option<ValueId> {
        let kind = path.trim_start_matches("tile.").trim_start_matches("atomic_");
        let target = arg(args, 0, "target")?;
        let ExprKind::Subscript { base, args: index_args } = &target.kind else {
            self.cx
                .unsupported(target.span, "an atomic on something other than an element");
            return None;
        };
        let (mem, index, sliced, _) = self.place(block, base, index_args)?;
        if sliced {
            self.cx.unsupported(target.span, "an atomic on a slice");
            return None;
        }
        let elem_ty = Type::Scalar(self.m.value_type(mem).elem()?);
        let mut operands = vec![mem];
        operands.extend(index);
        let values: &[&str] = if kind == "cas" {
            &["expected", "value"]
        } else {
            &["value"]
        };
        for (i, name) in values.iter().enumerate() {
            let v = self.arg_value(block, args, i + 1, name, e)?;
            operands.push(self.convert(block, v, &elem_ty));
        }
        let mut attrs = vec![("kind", Attr::str(kind))];
        if let Some(why) = &self.waiver {
            attrs.push(("nondeterministic", Attr::Str(why.clone())));
        }
        Some(self.op1(block, e.span, "tile.atomic", &operands, attrs, elem_ty))
    }

    /// `tile.cp_async(src)` (a fresh shared buffer), `tile.cp_async(dst,
    /// src)` and `tile.async_copy(dst, src, stage=s)`: an asynchronous copy
    /// of the source tile into shared memory. The seed forms complete by
    /// the next barrier; they are waited for at once, which is the same
    /// for the program and keeps each stage unique.
    fn async_copy(&mut self, block: tessera_ir::BlockId, e: &'a Expr, path: &str, args: &'a [Arg]) -> Option<ValueId> {
        let positional_count = args.iter().filter(|a| a.name.is_none()).count();
        let (dst_expr, src_expr) = match (path, positional_count) {
            ("tile.cp_async", 1) => (None, positional(args, 0)?),
            _ => (Some(arg(args, 0, "dst")?), arg(args, 1, "src")?),
        };
        let (src, offsets) = match &src_expr.kind {
            ExprKind::Subscript { base, args: index } => {
                let (mem, offsets, _, kept) = self.place(block, base, index)?;
                // Leading dims fixed by numbers (`x[b, 0:128]`, `x[b]`) are a view.
                let fixed = kept.iter().take_while(|k| !**k).count();
                let rank = self.m.value_type(mem).dims().map_or(0, <[_]>::len);
                if fixed >= rank || kept[fixed..].iter().any(|k| !*k) {
                    self.cx.unsupported(
                        src_expr.span,
                        "an async copy from a number after a slice or of one element: keep the dim, `x[0:4, c:c+1]`",
                    );
                    return None;
                }
                let mem = self.leading_view(block, src_expr.span, mem, &offsets[..fixed])?;
                let mut rest = offsets[fixed..].to_vec();
                while rest.len() < rank - fixed {
                    rest.push(self.index_const(block, 0));
                }
                (mem, rest)
            }
            _ => {
                let mem = self.expr(block, src_expr)?;
                let zeros = self.zeros_index(block, mem);
                (mem, zeros)
            }
        };
        let dst = match dst_expr {
            Some(d) => {
                let dst = self.copy_destination(block, d)?;
                let sized_at_launch = self
                    .m
                    .value_type(dst)
                    .dims()
                    .is_some_and(|dims| dims.iter().any(|d| d.as_const().is_none()));
                if sized_at_launch {
                    self.cx.unsupported(
                        d.span,
                        "an async copy into a shared buffer sized by the kernel's dims (copy it with a loop, each thread its elements, then `tbarrier()`)",
                    );
                    return None;
                }
                dst
            }
            None => {
                let Some(Ty::Tensor(t)) = self.cx.ty(src_expr) else {
                    self.cx
                        .unsupported(src_expr.span, "a copy of a tile without a known shape");
                    return None;
                };
                let dims = t
                    .dims
                    .as_ref()
                    .and_then(|d| d.iter().map(dim_of).collect::<Option<Vec<_>>>())?;
                let ty = Type::memref(dims, scalar_of(t.dtype?), MemSpace::Shared);
                self.op1(block, e.span, "tile.alloc_shared", &[], vec![], ty)
            }
        };
        let explicit_stage = keyword(args, "stage")
            .and_then(literal_attr)
            .and_then(|a| a.as_int())
            .map(|s| s + self.stage_offset());
        let stage = explicit_stage.unwrap_or_else(|| {
            self.stage += 1;
            self.stage + 99
        });
        let mut operands = vec![dst, src];
        operands.extend(offsets);
        self.op0(
            block,
            e.span,
            "tile.async_copy",
            &operands,
            vec![("stage", Attr::Int(stage))],
        );
        if explicit_stage.is_none() {
            self.op0(block, e.span, "tile.wait_async", &[], vec![("stage", Attr::Int(stage))]);
        }
        Some(dst)
    }
}

/// The type two scalars of types `a` and `b` are compared in: the wider
/// float when one is a float (f32 for f16 with bf16), the wider integer
/// when it holds both, else `i64` (`u32` with `i32`: exact, as the host
/// compares) or, with a `u64` and a signed integer, `f64`.
fn compared_as(a: ScalarType, b: ScalarType) -> ScalarType {
    use ScalarType as S;
    let holds = |wide: S, narrow: S| {
        narrow == S::I1
            || (wide.is_unsigned() == narrow.is_unsigned() && wide.bits() >= narrow.bits())
            || (!wide.is_unsigned() && narrow.is_unsigned() && wide.bits() > narrow.bits())
    };
    match (a.is_float(), b.is_float()) {
        (true, false) => a,
        (false, true) => b,
        (true, true) if a.bits() == b.bits() => S::F32,
        (true, true) => {
            if a.bits() > b.bits() {
                a
            } else {
                b
            }
        }
        (false, false) if holds(a, b) => a,
        (false, false) if holds(b, a) => b,
        (false, false) if a.bits().max(b.bits()) <= 32 => S::I64,
        (false, false) => S::F64,
    }
}

/// `ty` (a scalar or a tile) with elements of type `elem`.
fn with_elem(ty: &Type, elem: ScalarType) -> Type {
    match ty {
        Type::Tensor { dims, .. } => Type::Tensor {
            dims: dims.clone(),
            elem,
        },
        _ => Type::Scalar(elem),
    }
}

/// The number a string spells as Python's `float(s)` (`float`) or
/// `int(s)` reads it: surrounding whitespace, a sign, `_` between digits,
/// an exponent, and for floats `inf`, `infinity` and `nan` in any case.
fn number_of_text(text: &str, float: bool) -> Option<Attr> {
    let t = text.trim();
    let b = t.as_bytes();
    let between_digits = |i: usize| i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit();
    if (0..b.len()).any(|i| b[i] == b'_' && !between_digits(i)) {
        return None;
    }
    let t = t.replace('_', "");
    if !float {
        return t.parse::<i64>().ok().map(Attr::Int);
    }
    let (sign, magnitude) = match t.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, t.strip_prefix('+').unwrap_or(&t)),
    };
    let value = match magnitude.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        m if m.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.') => m.parse::<f64>().ok()?,
        _ => return None,
    };
    Some(Attr::Float(sign * value))
}
