//! Definite assignment in device code. A kernel or device function reads a
//! local only where every path from its entry assigns it first, as Rust,
//! Java and Swift require: a local assigned under `if i < 2:` and read after
//! it would hold an unassigned register in the other threads (garbage on a
//! GPU, whatever its slot held on the CPU), so the read is an error (E0108)
//! instead. Host code keeps Python's rule and fails when it runs.
//!
//! A forward walk over the structured control flow tracks the locals that
//! are assigned on every path: an `if` assigns what all of its branches
//! assign (an `if` without `else` adds nothing), a loop's body may run zero
//! times (what it assigns is not assigned after it, except after `while
//! True:`, which only a `break` leaves, and a `for` over a non-empty
//! literal range or list, which runs at least once), and a `return`,
//! `break` or `continue` ends its path. Parameters, module constants and
//! builtins are not locals. The check runs per file (it needs the text, for
//! the indentation of its fix) over the functions' cached syntax trees.

use std::collections::{BTreeSet, HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Block, CompFor, Expr, ExprKind, FnDef, Stmt, StmtKind};

use crate::db::{self, Db, FnId, SourceFile};
use crate::ty::{DType, Ty};

/// The E0108 diagnostics of the kernels and device functions of `file`.
pub(crate) fn check(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for name in &db::item_tree(db, file).functions {
        let func = FnId::new(db, file, name.clone());
        if !db::signature(db, func).kind.is_device_code() {
            continue;
        }
        let Some(def) = db::fn_ast(db, func) else { continue };
        let offset = *db::fn_offset(db, func);
        let types = &db::infer(db, func).types;
        let mut walk = Walk {
            locals: locals(def),
            first_assigned: HashMap::new(),
            reported: HashSet::new(),
            reads: Vec::new(),
            loops: Vec::new(),
            top: None,
        };
        walk.block(&def.body, &mut Some(BTreeSet::new()), true);
        for read in walk.reads {
            let ty = types.iter().find(|(s, _)| *s == read.span).map(|(_, t)| t);
            diagnostics.push(diagnostic(db, offset, file, &read, ty));
        }
    }
    diagnostics
}

/// Every name a function assigns (its locals), less its parameters.
/// Whether the end of `def`'s body can be reached — some path falls off
/// its last statement — as the definite-assignment walk sees the control
/// flow (a `while True:` without a `break` never falls through). A body
/// with a statement that did not parse is taken to return (its error is
/// enough).
pub(crate) fn end_reachable(def: &FnDef) -> bool {
    let mut walk = Walk {
        locals: HashSet::new(),
        first_assigned: HashMap::new(),
        reported: HashSet::new(),
        reads: Vec::new(),
        loops: Vec::new(),
        top: None,
    };
    let mut state = Some(BTreeSet::new());
    walk.block(&def.body, &mut state, true);
    state.is_some() && !has_errors(&def.body)
}

fn has_errors(block: &Block) -> bool {
    block
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Error(_)) || s.kind.blocks().into_iter().any(has_errors))
}

fn locals(def: &FnDef) -> HashSet<String> {
    let mut out: HashSet<String> = def.body.bound_names().into_iter().map(str::to_string).collect();
    for p in &def.params {
        out.remove(&p.name.name);
    }
    out
}

/// The locals assigned on every path to a point; None where no path
/// reaches (after a `return`, `break` or `continue`).
type State = Option<BTreeSet<String>>;

/// What paths that meet give: the locals every reachable one assigned.
fn join(a: State, b: State) -> State {
    match (a, b) {
        (None, s) | (s, None) => s,
        (Some(a), Some(b)) => Some(a.intersection(&b).cloned().collect()),
    }
}

/// Where a local is first bound in the walk.
#[derive(Clone, Copy)]
struct First {
    span: Span,
    /// The start of the top-level statement holding it.
    top: u32,
    /// Bound by a declaration without a value (`v: f32`): the statement.
    declared: Option<Span>,
}

/// Whether a `for` loop over `iter` runs its body at least once: a
/// `range` of integer literals that is not empty, or a literal list or
/// tuple with an element.
fn surely_runs(iter: &Expr) -> bool {
    match &iter.unparen().kind {
        ExprKind::List(items) | ExprKind::Tuple(items) => !items.is_empty(),
        ExprKind::Call { callee, args }
            if matches!(&callee.kind, ExprKind::Name(n) if n == "range") && args.iter().all(|a| a.name.is_none()) =>
        {
            let values: Option<Vec<i64>> = args.iter().map(|a| a.value.int_value()).collect();
            match values.as_deref() {
                Some([stop]) => *stop > 0,
                Some([start, stop]) => stop > start,
                Some([start, stop, step]) => (*step > 0 && stop > start) || (*step < 0 && stop < start),
                _ => false,
            }
        }
        _ => false,
    }
}

/// A read of a local that not every path assigns.
struct Read {
    name: String,
    span: Span,
    first: First,
    /// Where the fix assigns it: the start of the top-level statement that
    /// holds its first binding or the read, whichever comes first.
    insert_at: u32,
}

struct Walk {
    locals: HashSet<String>,
    /// The first binding of each local in walk order.
    first_assigned: HashMap<String, First>,
    reported: HashSet<String>,
    reads: Vec<Read>,
    /// The states at the `break`s and the `continue`s of each enclosing
    /// loop.
    loops: Vec<(State, State)>,
    /// The top-level statement being walked.
    top: Option<Span>,
}

impl Walk {
    fn block(&mut self, block: &Block, state: &mut State, top: bool) {
        for stmt in &block.stmts {
            if top {
                self.top = Some(stmt.span);
            }
            self.stmt(stmt, state);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, state: &mut State) {
        match &stmt.kind {
            StmtKind::Expr(e) => self.reads(e, state),
            // `del x` reads nothing of `x`; `del d[k]` reads `d` and `k`.
            StmtKind::Del(targets) => targets
                .iter()
                .filter(|t| !matches!(t.unparen().kind, ExprKind::Name(_)))
                .for_each(|t| self.reads(t, state)),
            StmtKind::Return(Some(e)) => {
                self.reads(e, state);
                *state = None;
            }
            StmtKind::Assert { cond, message } => {
                self.reads(cond, state);
                if let Some(m) = message {
                    self.reads(m, state);
                }
            }
            StmtKind::Assign { targets, value } => {
                self.reads(value, state);
                for t in targets {
                    self.assign(t, state);
                }
            }
            StmtKind::AnnAssign { target, value, .. } => match value {
                Some(v) => {
                    self.reads(v, state);
                    self.assign(target, state);
                }
                // `v: f32` declares `v` and assigns nothing.
                None => {
                    if let ExprKind::Name(n) = &target.kind {
                        self.note_bound(n, target.span, Some(stmt.span));
                    }
                }
            },
            StmtKind::AugAssign { target, value, .. } => {
                self.reads(target, state);
                self.reads(value, state);
            }
            StmtKind::If { branches, orelse } => {
                let mut after: State = None;
                for branch in branches {
                    self.reads(&branch.cond, state);
                    let mut s = state.clone();
                    self.block(&branch.body, &mut s, false);
                    after = join(after, s);
                }
                let mut s = state.clone();
                if let Some(orelse) = orelse {
                    self.block(orelse, &mut s, false);
                }
                *state = join(after, s);
            }
            StmtKind::For { target, iter, body } => {
                self.reads(iter, state);
                let mut s = state.clone();
                self.assign(target, &mut s);
                let (breaks, end) = self.looped(body, s);
                // A loop that surely runs leaves after an iteration or at a
                // `break`.
                if surely_runs(iter) {
                    *state = join(end, breaks);
                }
            }
            StmtKind::While { cond, body } => {
                self.reads(cond, state);
                let (breaks, _) = self.looped(body, state.clone());
                if matches!(cond.unparen().kind, ExprKind::Bool(true)) {
                    *state = breaks;
                }
            }
            StmtKind::With { items, body } => {
                for item in items {
                    self.reads(&item.expr, state);
                    if let (Some(alias), Some(s)) = (&item.alias, state.as_mut()) {
                        s.insert(alias.name.clone());
                        self.note_assigned(&alias.name, alias.span);
                    }
                }
                self.block(body, state, false);
            }
            StmtKind::Return(None) => *state = None,
            StmtKind::Break => {
                if let Some((b, _)) = self.loops.last_mut() {
                    *b = join(b.take(), state.take());
                }
                *state = None;
            }
            StmtKind::Continue => {
                if let Some((_, c)) = self.loops.last_mut() {
                    *c = join(c.take(), state.take());
                }
                *state = None;
            }
            // A statement that did not parse: what it assigns is unknown,
            // so every local counts as assigned after it (no cascade).
            StmtKind::Error(_) => {
                if let Some(s) = state.as_mut() {
                    s.extend(self.locals.iter().cloned());
                }
            }
            StmtKind::Def(_) | StmtKind::Pass | StmtKind::Import(_) | StmtKind::FromImport { .. } => {}
        }
    }

    /// Walks a loop body from `entry`; the join of its `break` states, and
    /// the state at the end of an iteration (its end joined with its
    /// `continue`s). Unless the loop surely runs, the state after it is the
    /// one before it (the body may not run).
    fn looped(&mut self, body: &Block, entry: State) -> (State, State) {
        self.loops.push((None, None));
        let mut s = entry;
        self.block(body, &mut s, false);
        let (breaks, continues) = self.loops.pop().unwrap_or((None, None));
        (breaks, join(s, continues))
    }

    fn assign(&mut self, target: &Expr, state: &mut State) {
        match &target.kind {
            ExprKind::Name(n) => {
                self.note_assigned(n, target.span);
                if let Some(s) = state.as_mut() {
                    s.insert(n.clone());
                }
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    self.assign(item, state);
                }
            }
            ExprKind::Paren(inner) => self.assign(inner, state),
            // `x[i] = v`, `x.a = v`: reads `x` and the indices.
            _ => self.reads(target, state),
        }
    }

    fn note_assigned(&mut self, name: &str, span: Span) {
        self.note_bound(name, span, None);
    }

    fn note_bound(&mut self, name: &str, span: Span, declared: Option<Span>) {
        if !self.first_assigned.contains_key(name) {
            let top = self.top.map_or(span.start, |s| s.start);
            self.first_assigned
                .insert(name.to_string(), First { span, top, declared });
        }
    }

    fn reads(&mut self, e: &Expr, state: &State) {
        if let ExprKind::Name(n) = &e.kind {
            let Some(assigned) = state else { return };
            // A read before any assignment in the source is an unknown name
            // (E0101), reported by inference.
            let first = self.first_assigned.get(n).copied();
            if let Some(first) = first.filter(|_| self.locals.contains(n) && !assigned.contains(n)) {
                if self.reported.insert(n.clone()) {
                    let top = self.top.map_or(e.span.start, |s| s.start);
                    self.reads.push(Read {
                        name: n.clone(),
                        span: e.span,
                        first,
                        insert_at: top.min(first.top),
                    });
                }
            }
            return;
        }
        if let ExprKind::Comp { clauses, .. } = &e.kind {
            // A comprehension's names are its own, not the function's.
            let mut inner = state.clone();
            if let Some(assigned) = inner.as_mut() {
                assigned.extend(clauses.iter().flat_map(CompFor::bound_names).map(str::to_string));
            }
            e.kind.for_each_child(|c| self.reads(c, &inner));
            return;
        }
        e.kind.for_each_child(|c| self.reads(c, state));
    }
}

/// The E0108 diagnostic of a read, in the file's coordinates (`offset` is
/// where the function starts), with a fix that assigns a zero of the read's
/// type at [`Read::insert_at`], when that type is a scalar.
fn diagnostic(db: &dyn Db, offset: u32, file: SourceFile, read: &Read, ty: Option<&Ty>) -> Diagnostic {
    let text = file.text(db);
    let id = file.id(db);
    let at = |span: Span| Span::new(span.start + offset, span.end + offset).in_file(id);
    let name = &read.name;
    let mut d = Diagnostic::error(Code::E0108, format!("`{name}` may be read before it is assigned"))
        .with_primary(at(read.span), "not every path to here assigns it");
    d = match read.first.declared {
        Some(_) => d.with_secondary(at(read.first.span), "declared here, without a value"),
        None => d.with_secondary(at(read.first.span), "assigned here, but not on every path"),
    };
    d = d.with_note("a thread that skipped the assignment would read whatever the local's register held");
    // The zero of the read's type, and its annotation when the literal
    // alone would not give the type.
    let zero = match ty {
        Some(Ty::Scalar(dt)) if dt.is_float() => Some(("0.0", Some(*dt))),
        Some(Ty::Scalar(DType::Bool)) | Some(Ty::Bool) => Some(("False", None)),
        Some(Ty::Scalar(dt)) if dt.is_int() => Some(("0", Some(*dt))),
        Some(Ty::Float) => Some(("0.0", None)),
        Some(Ty::Int) => Some(("0", None)),
        _ => None,
    };
    if let (Some(declared), Some((value, _))) = (read.first.declared, zero) {
        // `v: f32` becomes `v: f32 = 0.0`.
        return d
            .with_help(format!(
                "give the declaration of `{name}` a value, or assign `{name}` on every path"
            ))
            .with_fix(
                Fix::new(
                    format!("give `{name}` a value where it is declared"),
                    Applicability::MaybeIncorrect,
                )
                .with_edit(at(Span::empty(declared.end)), format!(" = {value}")),
            );
    }
    let zero = zero.map(|(value, dt)| match dt {
        Some(dt) => format!("{name}: {dt} = {value}"),
        None => format!("{name} = {value}"),
    });
    let start = (read.insert_at + offset) as usize;
    let line_start = text.get(..start).map_or(0, |t| t.rfind('\n').map_or(0, |i| i + 1));
    let indent = text
        .get(line_start..start)
        .filter(|s| s.chars().all(|c| c == ' ' || c == '\t'));
    match (zero, indent) {
        (Some(zero), Some(indent)) => {
            d = d.with_help(format!(
                "assign `{name}` before the branch or loop that assigns it, or on every path"
            ));
            d.with_fix(
                Fix::new(format!("assign `{name}` first"), Applicability::MaybeIncorrect)
                    .with_edit(Span::empty(start as u32).in_file(id), format!("{zero}\n{indent}")),
            )
        }
        _ => d.with_help(format!(
            "assign `{name}` before the branch or loop that assigns it (`{name} = ...`), or on every path"
        )),
    }
}
