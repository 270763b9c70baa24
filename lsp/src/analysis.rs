//! What is at a position: the function around it, the syntax node under
//! it, and what a name there refers to. Everything here reads the
//! compiler's queries (`fn_ast`, `signature`, `infer`, `item_tree`); the
//! server never re-derives a type or a resolution the checker already made.

use std::collections::{HashMap, HashSet};

use tessera_base::Span;
use tessera_hir::body::BodyInfo;
use tessera_hir::builtins::{self, Builtin};
use tessera_hir::db::{self as q, FnId};
use tessera_hir::signature::Signature;
use tessera_hir::ty::{DType, Ty};
use tessera_hir::{Db, SourceFile};
use tessera_syntax::ast::{Expr, ExprKind, FnDef, Ident, Param, Path, Stmt, StmtKind, Type, TypeKind};

/// A function of a file, with its definition (spans relative to `offset`,
/// where it starts in the file).
#[derive(Clone, Copy)]
pub struct Function<'db> {
    pub id: FnId<'db>,
    pub file: SourceFile,
    pub offset: u32,
    pub def: &'db FnDef,
}

impl<'db> Function<'db> {
    pub fn new(db: &'db dyn Db, file: SourceFile, name: &str) -> Option<Function<'db>> {
        let id = FnId::new(db, file, name.to_string());
        let def = q::fn_ast(db, id).as_deref()?;
        Some(Function {
            id,
            file,
            offset: *q::fn_offset(db, id),
            def,
        })
    }

    pub fn name(&self) -> &'db str {
        &self.def.name.name
    }

    pub fn signature(&self, db: &'db dyn Db) -> &'db Signature {
        q::signature(db, self.id)
    }

    pub fn body(&self, db: &'db dyn Db) -> &'db BodyInfo {
        q::infer(db, self.id)
    }

    /// A span relative to the function, as a span of the file.
    pub fn absolute(&self, span: Span) -> Span {
        Span::new(
            span.start.saturating_add(self.offset),
            span.end.saturating_add(self.offset),
        )
    }

    /// Whether an offset of the file is inside the definition (its end included,
    /// so that a cursor right after the last character still counts).
    fn covers(&self, offset: u32) -> bool {
        offset >= self.offset && offset - self.offset <= self.def.span.end
    }

    /// The type inference gave the expression with this (relative) span.
    pub fn type_at(&self, db: &'db dyn Db, span: Span) -> Option<&'db Ty> {
        self.body(db)
            .types
            .iter()
            .rev()
            .find(|(s, _)| *s == span)
            .map(|(_, t)| t)
    }

    /// The names used as dims in the signature (`N` in `x: f32[N]`, `where N % 8 == 0`).
    pub fn dim_names(&self) -> Vec<&'db str> {
        let mut names: Vec<&str> = Vec::new();
        walk_signature(self.def, &mut |node| {
            if let Node::Expr(e, Role::Dim) = node {
                if let ExprKind::Name(n) = &e.kind {
                    if !names.contains(&n.as_str()) {
                        names.push(n);
                    }
                }
            }
        });
        names
    }
}

/// The functions of a file, in source order.
pub fn functions<'db>(db: &'db dyn Db, file: SourceFile) -> Vec<Function<'db>> {
    let mut out: Vec<Function> = q::item_tree(db, file)
        .functions
        .iter()
        .filter_map(|name| Function::new(db, file, name))
        .collect();
    out.sort_by_key(|f| f.offset);
    out
}

/// The function whose definition holds `offset`.
pub fn function_at(db: &dyn Db, file: SourceFile, offset: u32) -> Option<Function<'_>> {
    functions(db, file).into_iter().rev().find(|f| f.covers(offset))
}

/// How an expression is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Value,
    /// A dim of a type annotation or a `where` constraint.
    Dim,
    /// The name of a decorator (`kernel` in `@kernel`).
    Decorator,
}

/// A node of the tree that the server can say something about.
#[derive(Clone, Copy)]
pub enum Node<'a> {
    Expr(&'a Expr, Role),
    FnName(&'a Ident),
    Param(&'a Param),
    /// The element type of a type annotation (`f32` in `f32[N]`).
    DType(&'a Ident),
    /// The memory space of a type annotation (`shared`).
    Space(&'a Ident),
    Effect(&'a Ident),
    /// The name of a keyword argument (`axis` in `axis=0`).
    Keyword(&'a Ident),
    /// A name bound by `with ... as name`.
    WithAlias(&'a Ident),
    /// The module path of an import.
    Module(&'a Path),
    /// A name imported with `from module import name`.
    Imported {
        module: &'a Path,
        name: &'a Ident,
    },
    /// The binding of `import m as alias` or `from m import n as alias`.
    ImportAlias(&'a Ident),
}

impl Node<'_> {
    pub fn span(&self) -> Span {
        match self {
            Node::Expr(e, _) => e.span,
            Node::Param(p) => p.name.span,
            Node::Module(p) => p.span,
            Node::Imported { name, .. } => name.span,
            Node::FnName(i)
            | Node::DType(i)
            | Node::Space(i)
            | Node::Effect(i)
            | Node::Keyword(i)
            | Node::WithAlias(i)
            | Node::ImportAlias(i) => i.span,
        }
    }
}

/// Calls `f` on every node of a definition, outer nodes before inner ones.
pub fn walk_def<'a>(def: &'a FnDef, f: &mut dyn FnMut(Node<'a>)) {
    walk_signature(def, f);
    for stmt in &def.body.stmts {
        walk_stmt(stmt, f);
    }
}

/// The decorators, name, parameters, return type, effects and `where` clause.
fn walk_signature<'a>(def: &'a FnDef, f: &mut dyn FnMut(Node<'a>)) {
    for deco in &def.decorators {
        for clause in &deco.clauses {
            match &clause.kind {
                ExprKind::Call { callee: head, args } | ExprKind::Subscript { base: head, args } => {
                    f(Node::Expr(head, Role::Decorator));
                    for a in args {
                        if let Some(n) = &a.name {
                            f(Node::Keyword(n));
                        }
                        walk_expr(&a.value, Role::Value, f);
                    }
                }
                _ => f(Node::Expr(clause, Role::Decorator)),
            }
        }
    }
    f(Node::FnName(&def.name));
    for p in &def.params {
        f(Node::Param(p));
        if let Some(t) = &p.ty {
            walk_type(t, f);
        }
        if let Some(d) = &p.default {
            walk_expr(d, Role::Value, f);
        }
    }
    if let Some(t) = &def.ret {
        walk_type(t, f);
    }
    if let Some(clause) = &def.effects {
        clause.effects.iter().for_each(|e| f(Node::Effect(e)));
    }
    if let Some(clause) = &def.where_clause {
        clause.constraints.iter().for_each(|c| walk_expr(c, Role::Dim, f));
    }
}

pub fn walk_stmt<'a>(stmt: &'a Stmt, f: &mut dyn FnMut(Node<'a>)) {
    let value = |e: &'a Expr, f: &mut dyn FnMut(Node<'a>)| walk_expr(e, Role::Value, f);
    match &stmt.kind {
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => value(e, f),
        StmtKind::Del(targets) => targets.iter().for_each(|t| value(t, f)),
        StmtKind::Assign { targets, value: v } => {
            targets.iter().for_each(|t| value(t, f));
            value(v, f);
        }
        StmtKind::AnnAssign { target, ty, value: v } => {
            value(target, f);
            walk_type(ty, f);
            if let Some(v) = v {
                value(v, f);
            }
        }
        StmtKind::AugAssign { target, value: v, .. } => {
            value(target, f);
            value(v, f);
        }
        StmtKind::If { branches, orelse } => {
            for branch in branches {
                value(&branch.cond, f);
                branch.body.stmts.iter().for_each(|s| walk_stmt(s, f));
            }
            if let Some(b) = orelse {
                b.stmts.iter().for_each(|s| walk_stmt(s, f));
            }
        }
        StmtKind::For { target, iter, body } => {
            value(target, f);
            value(iter, f);
            body.stmts.iter().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::While { cond, body } => {
            value(cond, f);
            body.stmts.iter().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::With { items, body } => {
            for item in items {
                value(&item.expr, f);
                if let Some(a) = &item.alias {
                    f(Node::WithAlias(a));
                }
            }
            body.stmts.iter().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::Def(def) => walk_def(def, f),
        StmtKind::Assert { cond, message } => {
            value(cond, f);
            if let Some(m) = message {
                value(m, f);
            }
        }
        StmtKind::Import(paths) => {
            for p in paths {
                f(Node::Module(&p.path));
                if let Some(a) = &p.alias {
                    f(Node::ImportAlias(a));
                }
            }
        }
        StmtKind::FromImport { module, names } => {
            f(Node::Module(module));
            for n in names {
                f(Node::Imported { module, name: &n.name });
                if let Some(a) = &n.alias {
                    f(Node::ImportAlias(a));
                }
            }
        }
        StmtKind::Error(children) => children.iter().for_each(|s| walk_stmt(s, f)),
        StmtKind::Return(None) | StmtKind::Break | StmtKind::Continue | StmtKind::Pass => {}
    }
}

fn walk_type<'a>(t: &'a Type, f: &mut dyn FnMut(Node<'a>)) {
    match &t.kind {
        TypeKind::Named { space, name, dims } => {
            if let Some(s) = space {
                f(Node::Space(s));
            }
            f(Node::DType(name));
            for d in dims.iter().flatten() {
                walk_expr(d, Role::Dim, f);
            }
        }
        TypeKind::Tuple(items) => items.iter().for_each(|t| walk_type(t, f)),
        TypeKind::None => {}
    }
}

fn walk_expr<'a>(e: &'a Expr, role: Role, f: &mut dyn FnMut(Node<'a>)) {
    f(Node::Expr(e, role));
    match &e.kind {
        ExprKind::Call { callee, args } | ExprKind::Subscript { base: callee, args } => {
            walk_expr(callee, role, f);
            for a in args {
                if let Some(n) = &a.name {
                    f(Node::Keyword(n));
                }
                walk_expr(&a.value, role, f);
            }
        }
        // The other kinds' children, in source order, as the tree gives them.
        kind => kind.for_each_child(|child| walk_expr(child, role, f)),
    }
}

/// The innermost node at `offset` (relative to the same start as the spans
/// of `walk`'s nodes). A node ending exactly at `offset` counts, so a cursor
/// right after a name finds the name; among nodes of the same size, one that
/// strictly contains the offset wins.
pub fn node_at<'a>(offset: u32, walk: impl FnOnce(&mut dyn FnMut(Node<'a>))) -> Option<Node<'a>> {
    let mut best: Option<(u32, bool, Node<'a>)> = None;
    walk(&mut |node| {
        let span = node.span();
        if span.start > offset || span.end < offset {
            return;
        }
        let strict = offset < span.end;
        let better = match &best {
            None => true,
            Some((len, was_strict, _)) => span.len() < *len || (span.len() == *len && (strict || !was_strict)),
        };
        if better {
            best = Some((span.len(), strict, node));
        }
    });
    best.map(|(_, _, node)| node)
}

/// What a name refers to.
#[derive(Clone)]
pub enum Symbol<'db> {
    Param {
        func: Function<'db>,
        index: usize,
    },
    /// A local variable; `scope` is the span (relative to the function)
    /// of the comprehension that binds it, None for the function's own.
    Local {
        func: Function<'db>,
        name: String,
        scope: Option<Span>,
    },
    Dim {
        func: Function<'db>,
        name: String,
    },
    Function(Function<'db>),
    Builtin(&'static Builtin),
    Namespace(&'static str),
    Module(SourceFile),
    Global {
        file: SourceFile,
        name: String,
    },
    Policy(String),
    DType(DType),
}

/// Resolves a name used in `func` (or at the top level of `file` when
/// `func` is `None`); `span` is the name's span relative to the function.
/// A name the function binds (a parameter, a local, a comprehension's
/// variable) is that binding, whatever it holds: `g` in `g = sqrt` is a
/// local. For other names the checker's own result comes first: the type
/// inference recorded for the expression. One lookup; a walk over every
/// name of a function resolves through one [`Names`].
pub fn resolve<'db>(
    db: &'db dyn Db,
    file: SourceFile,
    func: Option<Function<'db>>,
    name: &str,
    span: Span,
    role: Role,
) -> Option<Symbol<'db>> {
    match func {
        Some(func) => Names::new(db, func).resolve(db, name, span, role),
        None => resolve_global(db, file, name),
    }
}

/// What resolving the names of one function reads, gathered once: its
/// comprehensions, its locals and the types inference recorded by span.
/// Resolving each name of a function of `n` names is then O(1) in `n`,
/// not a walk of the function per name (semantic tokens and references of
/// a function of 8000 locals took 20 s).
pub struct Names<'db> {
    func: Function<'db>,
    comprehensions: Vec<&'db Expr>,
    locals: HashSet<&'db str>,
    bindings: HashSet<(&'db str, Span)>,
    types: HashMap<Span, &'db Ty>,
}

impl<'db> Names<'db> {
    pub fn new(db: &'db dyn Db, func: Function<'db>) -> Names<'db> {
        let body = func.body(db);
        Names {
            func,
            comprehensions: comprehensions(func.def),
            locals: body.locals.iter().map(|(n, _, _)| n.as_str()).collect(),
            bindings: body.locals.iter().map(|(n, span, _)| (n.as_str(), *span)).collect(),
            // The last type recorded for a span wins, as `type_at` reads.
            types: body.types.iter().map(|(span, ty)| (*span, ty)).collect(),
        }
    }

    /// The type inference gave the expression with this (relative) span.
    pub fn type_at(&self, span: Span) -> Option<&'db Ty> {
        self.types.get(&span).copied()
    }

    /// Whether the name at `span` is a local's first binding.
    pub fn first_binding(&self, name: &str, span: Span) -> bool {
        self.bindings.contains(&(name, span))
    }

    /// [`resolve`] of the name at `span` of this function.
    pub fn resolve(&self, db: &'db dyn Db, name: &str, span: Span, role: Role) -> Option<Symbol<'db>> {
        let func = self.func;
        if role == Role::Dim {
            return Some(Symbol::Dim {
                func,
                name: name.to_string(),
            });
        }
        if let Some(scope) = innermost_comprehension(self.comprehensions.iter().copied(), name, span) {
            return Some(Symbol::Local {
                func,
                name: name.to_string(),
                scope: Some(scope),
            });
        }
        if let Some(index) = func.def.params.iter().position(|p| p.name.name == name) {
            return Some(Symbol::Param { func, index });
        }
        if self.locals.contains(name) {
            return Some(Symbol::Local {
                func,
                name: name.to_string(),
                scope: None,
            });
        }
        match self.type_at(span) {
            Some(Ty::Function(path)) => return function_by_path(db, func.file, path).map(Symbol::Function),
            Some(Ty::Builtin(b)) => return Some(Symbol::Builtin(b)),
            Some(Ty::Namespace(n)) => return Some(Symbol::Namespace(n)),
            Some(Ty::DTypeValue(d)) => return Some(Symbol::DType(*d)),
            _ => {}
        }
        if func.dim_names().contains(&name) {
            return Some(Symbol::Dim {
                func,
                name: name.to_string(),
            });
        }
        resolve_global(db, func.file, name)
    }
}

/// The span of the innermost comprehension of `def` whose variable `name`
/// is at `span` (both relative to the function). A comprehension's
/// variable is seen by its element (and a dict's value), and from the
/// clause that binds it on, but for that clause's iterable, which is
/// evaluated before it binds (the first clause's in the enclosing scope).
pub fn comprehension_scope(def: &FnDef, name: &str, span: Span) -> Option<Span> {
    innermost_comprehension(comprehensions(def).into_iter(), name, span)
}

/// The comprehension expressions of `def`.
fn comprehensions(def: &FnDef) -> Vec<&Expr> {
    let mut found = Vec::new();
    walk_def(def, &mut |node| {
        if let Node::Expr(e, _) = node {
            if matches!(e.kind, ExprKind::Comp { .. }) {
                found.push(e);
            }
        }
    });
    found
}

/// [`comprehension_scope`] among the comprehension expressions given.
fn innermost_comprehension<'a>(comprehensions: impl Iterator<Item = &'a Expr>, name: &str, span: Span) -> Option<Span> {
    let inside = |outer: Span| outer.start <= span.start && span.end <= outer.end;
    let mut best: Option<Span> = None;
    for e in comprehensions {
        let ExprKind::Comp { clauses, .. } = &e.kind else {
            continue;
        };
        let (Some(first), true) = (clauses.first(), inside(e.span)) else {
            continue;
        };
        let Some(binding) = clauses.iter().find(|c| c.bound_names().contains(&name)) else {
            continue;
        };
        let in_element = span.end <= first.target.span.start;
        let after_binding = span.start >= binding.target.span.start && !inside(binding.iter.span);
        if (in_element || after_binding) && best.is_none_or(|b| e.span.len() < b.len()) {
            best = Some(e.span);
        }
    }
    best
}

/// A name at the top level of a file: its functions, imports, globals,
/// then the builtins.
pub fn resolve_global<'db>(db: &'db dyn Db, file: SourceFile, name: &str) -> Option<Symbol<'db>> {
    let tree = q::item_tree(db, file);
    if tree.functions.iter().any(|f| f == name) {
        return Function::new(db, file, name).map(Symbol::Function);
    }
    if let Some(import) = tree.imports.iter().find(|i| i.binding == name) {
        if import.module == "tessera" || import.module.starts_with("tessera.") {
            return import.member.as_deref().and_then(builtin_symbol);
        }
        return match &import.member {
            Some(member) => module_member(db, file, &import.module, member),
            None => tessera_hir::resolve_module(db, file, &import.module).map(Symbol::Module),
        };
    }
    if tree.globals.iter().any(|g| g == name) {
        return Some(Symbol::Global {
            file,
            name: name.to_string(),
        });
    }
    if builtins::PRESET_POLICIES.iter().any(|p| p.0 == name) {
        return Some(Symbol::Policy(name.to_string()));
    }
    builtin_symbol(name)
}

fn builtin_symbol(name: &str) -> Option<Symbol<'static>> {
    if let Some(b) = builtins::lookup(name) {
        return Some(Symbol::Builtin(b));
    }
    if let Some(ns) = builtins::NAMESPACES.iter().find(|n| **n == name) {
        return Some(Symbol::Namespace(ns));
    }
    DType::from_name(name).map(Symbol::DType)
}

/// The member `name` of the module `module` (a dotted path from `file`):
/// a function, a module constant, or a module of the package `module`.
pub fn module_member<'db>(db: &'db dyn Db, file: SourceFile, module: &str, name: &str) -> Option<Symbol<'db>> {
    if let Some(m) = tessera_hir::resolve_module(db, file, module) {
        if let Some(f) = Function::new(db, m, name) {
            return Some(Symbol::Function(f));
        }
        if q::item_tree(db, m).globals.iter().any(|g| g == name) {
            return Some(Symbol::Global {
                file: m,
                name: name.to_string(),
            });
        }
    }
    tessera_hir::resolve_module(db, file, &format!("{module}.{name}")).map(Symbol::Module)
}

/// What `base.name` is when `base` names an imported module or package
/// (`ops.scaled`, `pkg.norms.unit_rows`, `ops.WIDTH`), unless the first
/// name of `base` is a parameter or local of `func`.
pub fn member_symbol<'db>(
    db: &'db dyn Db,
    file: SourceFile,
    func: Option<Function<'db>>,
    base: &Expr,
    name: &str,
) -> Option<Symbol<'db>> {
    let mut root = base.unparen();
    while let ExprKind::Attr { base, .. } = &root.kind {
        root = base.unparen();
    }
    if let (Some(f), ExprKind::Name(n)) = (func, &root.kind) {
        let bound = f.def.params.iter().any(|p| &p.name.name == n) || f.body(db).locals.iter().any(|(l, ..)| l == n);
        if bound {
            return None;
        }
    }
    module_member(db, file, &tessera_hir::constants::module_path(db, file, base)?, name)
}

/// What the attribute `base.name` names: a builtin of a namespace
/// (`op.sum`), or a module's function or constant ([`member_symbol`]).
/// In a function `ty` is the type inference gave the attribute, a
/// builtin's there; at the top level (`func` None) the namespace is read
/// from the name.
pub fn attr_symbol<'db>(
    db: &'db dyn Db,
    file: SourceFile,
    func: Option<Function<'db>>,
    ty: Option<&Ty>,
    base: &Expr,
    name: &str,
) -> Option<Symbol<'db>> {
    let builtin = match (func, ty, &base.kind) {
        (Some(_), Some(Ty::Builtin(b)), _) => Some(*b),
        (None, _, ExprKind::Name(ns)) => builtins::lookup(&format!("{ns}.{name}")),
        _ => None,
    };
    builtin
        .map(Symbol::Builtin)
        .or_else(|| member_symbol(db, file, func, base, name))
}

/// The module a dotted text names in `file` (`ops`, `pkg.norms`, or `q`
/// of `import pkg.norms as q`), for completions after it.
pub fn module_of_text(db: &dyn Db, file: SourceFile, text: &str) -> Option<SourceFile> {
    let (root, rest) = text.split_once('.').map_or((text, None), |(r, rest)| (r, Some(rest)));
    let import = q::item_tree(db, file).imports.iter().find(|i| i.binding == root)?;
    let head = match &import.member {
        Some(member) => format!("{}.{member}", import.module),
        None if import.module.split('.').next() == Some(root) => root.to_string(),
        None => import.module.clone(),
    };
    let path = rest.map_or(head.clone(), |rest| format!("{head}.{rest}"));
    tessera_hir::resolve_module(db, file, &path)
}

/// A function named as inference names it: `f` in this file, or
/// `module::f` for one imported from a sibling module.
pub fn function_by_path<'db>(db: &'db dyn Db, file: SourceFile, path: &str) -> Option<Function<'db>> {
    match path.rsplit_once("::") {
        Some((module, member)) => Function::new(db, tessera_hir::resolve_module(db, file, module)?, member),
        None => Function::new(db, file, path),
    }
}

/// The symbol under `offset` of `file`, with the span (in the file) of
/// the name that refers to it.
pub fn symbol_at(db: &dyn Db, file: SourceFile, offset: u32) -> Option<(Symbol<'_>, Span)> {
    if let Some(func) = function_at(db, file, offset) {
        let rel = offset - func.offset;
        let node = node_at(rel, |f| walk_def(func.def, f))?;
        let symbol = match node {
            Node::Expr(e, role) => match &e.kind {
                ExprKind::Name(n) if role != Role::Decorator => resolve(db, file, Some(func), n, e.span, role),
                ExprKind::Attr { base, name } if name.span.start <= rel && rel <= name.span.end => {
                    attr_symbol(db, file, Some(func), func.type_at(db, e.span), base, &name.name)
                }
                _ => None,
            },
            Node::FnName(_) => Some(Symbol::Function(func)),
            Node::Param(p) => func
                .def
                .params
                .iter()
                .position(|q| q.name.span == p.name.span)
                .map(|index| Symbol::Param { func, index }),
            Node::WithAlias(a) => Some(Symbol::Local {
                func,
                name: a.name.clone(),
                scope: None,
            }),
            Node::DType(d) => DType::from_name(&d.name).map(Symbol::DType),
            _ => None,
        }?;
        return Some((symbol, func.absolute(node.span())));
    }
    let (base, stmt) =
        top_level(db, file).find(|(base, s)| s.span.start + base <= offset && offset <= s.span.end + base)?;
    let rel = offset - base;
    let node = node_at(rel, |f| walk_stmt(stmt, f))?;
    let symbol = match node {
        Node::Expr(e, _) => match &e.kind {
            ExprKind::Name(n) => resolve_global(db, file, n),
            ExprKind::Attr { base, name } if name.span.start <= rel && rel <= name.span.end => {
                attr_symbol(db, file, None, None, base, &name.name)
            }
            _ => None,
        },
        Node::Module(path) => tessera_hir::resolve_module(db, file, &dotted(path)).map(Symbol::Module),
        Node::Imported { module, name } => imported_symbol(db, file, module, &name.name),
        Node::ImportAlias(a) => resolve_global(db, file, &a.name),
        Node::DType(d) => DType::from_name(&d.name).map(Symbol::DType),
        _ => None,
    }?;
    let span = node.span();
    Some((symbol, Span::new(span.start + base, span.end + base)))
}

/// What `from module import name` imports into `file`.
pub fn imported_symbol<'db>(db: &'db dyn Db, file: SourceFile, module: &Path, name: &str) -> Option<Symbol<'db>> {
    let module = dotted(module);
    if module == "tessera" || module.starts_with("tessera.") {
        builtin_symbol(name)
    } else {
        module_member(db, file, &module, name)
    }
}

/// `a.b.c` for a module path.
pub fn dotted(path: &Path) -> String {
    let parts: Vec<&str> = path.segments.iter().map(|s| s.name.as_str()).collect();
    parts.join(".")
}

/// The top-level statements of a file with the offset their spans are relative to.
pub fn top_level(db: &dyn Db, file: SourceFile) -> impl Iterator<Item = (u32, &Stmt)> {
    q::top_level(db, file)
}

/// Where the text before `offset` ends in an identifier, the identifier's start.
pub fn ident_start(text: &str, offset: usize) -> usize {
    let mut start = offset.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while let Some(c) = text[..start].chars().next_back() {
        if !(c.is_alphanumeric() || c == '_') {
            break;
        }
        start -= c.len_utf8();
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_end_at_the_cursor() {
        let text = "x = op.mat";
        assert_eq!(ident_start(text, text.len()), 7);
        assert_eq!(ident_start(text, 1), 0);
        assert_eq!(ident_start("é_b", 4), 0);
        assert_eq!(ident_start("a", 99), 0);
    }
}
