//! Hover: what the checker inferred for the thing under the cursor — a
//! value's type with its shape, a function's signature with its effects,
//! numerics policy and `where` constraints, a builtin's entry in the op
//! table.

use tessera_base::Span;
use tessera_hir::builtins::{self, Builtin, Context, Det};
use tessera_hir::effect_check::inferred_effects;
use tessera_hir::signature::FnKind;
use tessera_hir::ty::{DType, Space, Ty};
use tessera_hir::{Db, SourceFile};
use tessera_syntax::ast::{Expr, ExprKind, Stmt, StmtKind};
use tower_lsp_server::ls_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position, Uri};

use crate::analysis::{self, resolve, resolve_global, Function, Node, Role, Symbol};
use crate::convert;
use crate::workspace::Snapshot;

pub fn hover(snapshot: &Snapshot, uri: &Uri, pos: Position) -> Option<Hover> {
    let file = snapshot.file_of(uri)?;
    let db = snapshot.db();
    let source = snapshot.source(file);
    let index = snapshot.line_index(file);
    let offset = convert::offset(&index, pos);
    let text = snapshot.text(file);
    let (markdown, span) = match analysis::function_at(db, source, offset) {
        Some(func) => {
            let node = analysis::node_at(offset - func.offset, |f| analysis::walk_def(func.def, f))?;
            let markdown = in_function(db, source, func, node, offset - func.offset, text)?;
            (markdown, func.absolute(node.span()))
        }
        None => {
            let (base, stmt) = analysis::top_level(db, source)
                .find(|(base, s)| s.span.start + base <= offset && offset <= s.span.end + base)?;
            let node = analysis::node_at(offset - base, |f| analysis::walk_stmt(stmt, f))?;
            let markdown = at_top_level(db, source, node, offset - base)?;
            let span = node.span();
            (markdown, Span::new(span.start + base, span.end + base))
        }
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: Some(convert::range(&index, span)),
    })
}

fn in_function<'db>(
    db: &'db dyn Db,
    file: SourceFile,
    func: Function<'db>,
    node: Node<'_>,
    rel: u32,
    text: &str,
) -> Option<String> {
    let symbol = match node {
        Node::Expr(e, Role::Decorator) => {
            return match &e.kind {
                ExprKind::Name(n) => decorator(n),
                _ => None,
            }
        }
        Node::Expr(e, role) => match &e.kind {
            ExprKind::Name(n) => resolve(db, file, Some(func), n, e.span, role),
            ExprKind::Attr { base, name } if name.span.start <= rel && rel <= name.span.end => {
                // A method of a string or a list local, from the tables
                // the interpreter runs.
                let methods = func.type_at(db, base.span).map_or(&[][..], |t| builtins::methods_of(t));
                if let Some((method, doc)) = methods.iter().find(|(m, _)| *m == name.name) {
                    let of = source_text(text, func.absolute(base.span)).unwrap_or("");
                    return Some(format!("{}\n\n{doc}", code(&format!("{of}.{method}(…)"))));
                }
                let ty = func.type_at(db, e.span);
                if let Some(symbol) = analysis::attr_symbol(db, file, Some(func), ty, base, &name.name) {
                    return Some(describe(db, &symbol, None));
                }
                return Some(format!(
                    "{}{}",
                    code(&format!(".{}: {}", name.name, ty?)),
                    context(db, func, rel)
                ));
            }
            _ => {
                let ty = func.type_at(db, e.span)?;
                let shown = source_text(text, func.absolute(e.span))
                    .filter(|s| s.len() <= 60 && !s.contains('\n'))
                    .map_or_else(|| ty.to_string(), |s| format!("{s}: {ty}"));
                return Some(format!("{}{}", code(&shown), context(db, func, rel)));
            }
        },
        Node::FnName(_) => Some(Symbol::Function(func)),
        Node::Param(p) => {
            let index = func.def.params.iter().position(|q| q.name.span == p.name.span)?;
            Some(Symbol::Param { func, index })
        }
        Node::WithAlias(a) => Some(Symbol::Local {
            func,
            name: a.name.clone(),
            scope: None,
        }),
        other => return about_syntax(db, file, other),
    }?;
    Some(describe(db, &symbol, Some((func, node.span(), rel))))
}

fn at_top_level(db: &dyn Db, file: SourceFile, node: Node<'_>, rel: u32) -> Option<String> {
    let symbol = match node {
        Node::Expr(e, _) => match &e.kind {
            ExprKind::Name(n) => resolve_global(db, file, n)?,
            ExprKind::Attr { base, name } if name.span.start <= rel && rel <= name.span.end => {
                analysis::attr_symbol(db, file, None, None, base, &name.name)?
            }
            _ => return None,
        },
        other => return about_syntax(db, file, other),
    };
    Some(describe(db, &symbol, None))
}

/// Hover on parts of the syntax that are not names of values.
fn about_syntax(db: &dyn Db, file: SourceFile, node: Node<'_>) -> Option<String> {
    match node {
        Node::DType(name) => DType::from_name(&name.name).map(dtype),
        Node::Space(name) => Space::from_name(&name.name).map(|s| {
            format!(
                "{}\nmemory space: {}",
                code(s.name()),
                match s {
                    Space::Register => "per-thread registers",
                    Space::Shared => "shared by the threads of a block (LDS on AMD)",
                    Space::Global => "device memory, visible to every thread",
                    Space::Managed => "unified memory, migrated between host and device",
                    Space::Host => "host memory",
                    Space::Tmem => "tensor memory (sm_100 and later)",
                    Space::Constant => "read-only constant memory",
                    Space::Local => "per-thread local memory",
                }
            )
        }),
        Node::Effect(e) => Some(format!(
            "{}\n{}",
            code(&format!("effect {}", e.name)),
            effect_doc(&e.name)
        )),
        Node::Module(path) => {
            let module: Vec<&str> = path.segments.iter().map(|s| s.name.as_str()).collect();
            let module = module.join(".");
            let found = tessera_hir::resolve_module(db, file, &module);
            Some(match found {
                Some(f) => format!("{}\n`{}`", code(&format!("module {module}")), f.path(db)),
                None => code(&format!("module {module}")),
            })
        }
        Node::Imported { module, name } => {
            let module: Vec<&str> = module.segments.iter().map(|s| s.name.as_str()).collect();
            let module = module.join(".");
            if module == "tessera" || module.starts_with("tessera.") {
                return resolve_global(db, file, &name.name).map(|symbol| describe(db, &symbol, None));
            }
            let target = Function::new(db, tessera_hir::resolve_module(db, file, &module)?, &name.name)?;
            Some(function(db, target))
        }
        Node::ImportAlias(alias) => {
            let symbol = resolve_global(db, file, &alias.name)?;
            Some(describe(db, &symbol, None))
        }
        Node::Expr(..) | Node::FnName(_) | Node::Param(_) | Node::Keyword(_) | Node::WithAlias(_) => None,
    }
}

/// The hover text of a symbol. `at` is the function the cursor is in, the
/// span of the hovered node and the cursor, all relative to that function.
fn describe(db: &dyn Db, symbol: &Symbol<'_>, at: Option<(Function<'_>, Span, u32)>) -> String {
    let ctx = |body: String| match at {
        Some((func, _, rel)) => format!("{body}{}", context(db, func, rel)),
        None => body,
    };
    match symbol {
        Symbol::Param { func, index } => {
            let sig = func.signature(db);
            let Some(p) = sig.params.get(*index) else {
                return String::new();
            };
            let mutable = if p.mutable { "mut " } else { "" };
            ctx(format!(
                "{}\nparameter of `{}`",
                code(&format!("{}: {mutable}{}", p.name, shown_ty(&p.ty))),
                func.name()
            ))
        }
        Symbol::Local { func, name, .. } => {
            // The type at this use when inference recorded one, else at the
            // first binding.
            let here = at.and_then(|(f, span, _)| f.type_at(db, span));
            let first = func
                .body(db)
                .locals
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, _, t)| t);
            let ty = here
                .filter(|t| !t.is_unknown())
                .or(first)
                .map_or("?".to_string(), shown_ty);
            ctx(format!(
                "{}\nlocal of `{}`",
                code(&format!("{name}: {ty}")),
                func.name()
            ))
        }
        Symbol::Dim { func, name } => {
            let rules: Vec<String> = func
                .signature(db)
                .constraints
                .iter()
                .filter(|c| {
                    c.kind
                        .to_string()
                        .split(|ch: char| !ch.is_alphanumeric() && ch != '_')
                        .any(|w| w == name)
                })
                .map(|c| format!("`{}`", c.text))
                .collect();
            let mut body = format!("{}\ndim of `{}`", code(&format!("{name}: dim")), func.name());
            if !rules.is_empty() {
                body.push_str(&format!(", constrained by {}", rules.join(", ")));
            }
            body
        }
        Symbol::Function(f) => function(db, *f),
        Symbol::Builtin(b) => builtin(b),
        Symbol::Namespace(ns) => {
            let members: Vec<String> = builtins::members(ns).map(|b| format!("`{}`", b.name())).collect();
            format!(
                "{}\nbuiltin namespace: {}",
                code(&format!("namespace {ns}")),
                members.join(", ")
            )
        }
        Symbol::Module(file) => format!("{}\n`{}`", code("module"), file.path(db)),
        Symbol::Global { file, name } => {
            let value = global_value(db, *file, name);
            match value {
                Some(v) => format!("{}\n{}", code(&format!("{name} = {v}")), policy_note(&v)),
                None => code(name),
            }
        }
        Symbol::Policy(name) => format!("{}\n{}", code(&format!("policy {name}")), policy(db, None, name)),
        Symbol::DType(d) => dtype(*d),
    }
}

/// A function: its decorators and signature, then its effects, numerics
/// policy and kernel attributes.
fn function(db: &dyn Db, func: Function<'_>) -> String {
    let sig = func.signature(db);
    let file_text = func.file.text(db);
    let mut head = String::new();
    for deco in &func.def.decorators {
        if let Some(t) = source_text(file_text, func.absolute(deco.span)) {
            head.push_str(t.trim_end());
            head.push('\n');
        }
    }
    head.push_str(&signature_label(db, func));
    if !sig.constraints.is_empty() {
        let rules: Vec<&str> = sig.constraints.iter().map(|c| c.text.as_str()).collect();
        head.push_str(&format!("\n    where {}", rules.join(", ")));
    }
    let mut lines = vec![code(&head)];
    let inferred = inferred_effects(db, func.file)
        .get(func.name())
        .copied()
        .unwrap_or_default();
    let effects = match sig.declared_effects {
        Some((declared, _)) => format!("effects: `{inferred}` (declares `{declared}`)"),
        None => format!("effects: `{inferred}` (inferred)"),
    };
    lines.push(effects);
    if let Some(name) = &sig.numerics {
        lines.push(format!("numerics: {}", policy(db, Some(func.file), name)));
    }
    match sig.kind {
        FnKind::Kernel => lines.push("kernel: launched with `[grid=..., block=...]`".to_string()),
        FnKind::Device => lines.push("device function: called from kernels, inlined into them".to_string()),
        FnKind::Function => {}
    }
    match sig.deterministic {
        Some(Some(seed)) => lines.push(format!("deterministic, seed {seed}")),
        Some(None) => lines.push("deterministic".to_string()),
        None => {}
    }
    if let Some(bytes) = sig.shared_budget {
        lines.push(format!("shared memory budget: {bytes} bytes"));
    }
    lines.join("\n\n")
}

/// `def f(x: f32[N], mut out: f32[N]) -> f32[N]`: parameter types as the
/// checker lowered them, defaults as written.
pub fn signature_label(db: &dyn Db, func: Function<'_>) -> String {
    format!(
        "def {}({}){}",
        func.name(),
        parameter_labels(db, func).join(", "),
        return_label(db, func)
    )
}

pub fn parameter_labels(db: &dyn Db, func: Function<'_>) -> Vec<String> {
    let sig = func.signature(db);
    let file_text = func.file.text(db);
    sig.params
        .iter()
        .zip(&func.def.params)
        .map(|(p, param)| {
            let mut label = p.name.clone();
            if !p.ty.is_unknown() || param.ty.is_some() {
                let mutable = if p.mutable { "mut " } else { "" };
                label.push_str(&format!(": {mutable}{}", shown_ty(&p.ty)));
            }
            if let Some(default) = param
                .default
                .as_ref()
                .and_then(|d| source_text(file_text, func.absolute(d.span)))
            {
                label.push_str(&format!(" = {default}"));
            }
            label
        })
        .collect()
}

pub fn return_label(db: &dyn Db, func: Function<'_>) -> String {
    match &func.signature(db).ret {
        Ty::None => String::new(),
        ty => format!(" -> {}", shown_ty(ty)),
    }
}

/// A builtin from the op table: its signature, its documentation and the
/// facts the checks use.
fn builtin(b: &Builtin) -> String {
    let mut facts = vec![format!(
        "context: {}",
        match b.context {
            Context::Anywhere => "anywhere",
            Context::Kernel => "kernels only",
            Context::Host => "host code only",
        }
    )];
    facts.push(format!("effects: `{}`", b.effects));
    match b.det {
        Det::Deterministic => {}
        Det::Rng => facts.push("draws random numbers: needs a bound `stream=` in `@deterministic` code".into()),
        Det::Atomic => facts.push("atomic: concurrent updates land in an unspecified order".into()),
        Det::Reduction => facts.push("reduction: tree-ordered in `@deterministic` code".into()),
        Det::Nondeterministic(instead) => facts.push(format!("nondeterministic: {instead}")),
    }
    if b.accumulates {
        facts.push("accumulates: states an accumulate dtype or takes the numerics policy's".into());
    }
    if b.block_collective {
        facts.push("barrier: every thread of the block must reach it".into());
    }
    if b.thread_dependent {
        facts.push("differs between the threads of a block".into());
    }
    format!("{}\n{}\n\n{}", code(&builtin_label(b)), b.doc, facts.join(" · "))
}

pub fn builtin_label(b: &Builtin) -> String {
    format!("{}{}", b.path, b.params)
}

/// What a decorator does (the names `signature.rs` accepts).
fn decorator(name: &str) -> Option<String> {
    let doc = match name {
        "kernel" => "a kernel: written per tile or thread, launched from host code with `[grid=..., block=...]`; clauses such as `tile[(128,)]` and `shared(16_KiB)` configure it",
        "device" => "a device function: kernel code called from kernels and other device functions, and inlined into them; it may use the kernel-only builtins and return a value",
        "deterministic" => "the determinism contract: bit-identical results on every run and backend (`seed=` keys the random streams)",
        "numerics" => "the numerics policy of the function: storage, compute and accumulate dtypes, rounding, saturation",
        "test" => "a test, run on the CPU by the test runner",
        "host" => "host code",
        "autotune" => "a search over kernel configurations",
        "tile" => "the kernel clause giving the shape of a tile group (`tile[(128,)]`)",
        "shared" => "the kernel clause giving its shared-memory budget (`shared(16_KiB)`)",
        _ => return None,
    };
    Some(format!("{}\n{doc}", code(&format!("@{name}"))))
}

fn dtype(d: DType) -> String {
    let what = if d.is_float() {
        format!("{}-bit floating-point", d.bits())
    } else if d == DType::Bool {
        "boolean".to_string()
    } else if d.name().starts_with('u') {
        format!("{}-bit unsigned integer", d.bits())
    } else {
        format!("{}-bit signed integer", d.bits())
    };
    format!("{}\n{what} element type", code(d.name()))
}

fn effect_doc(name: &str) -> &'static str {
    match name {
        "random" => "draws random numbers",
        "io" => "reads or writes outside the program (printing, files)",
        "memory" => "writes memory that others can see (atomics, scatters, copies)",
        "collective" => "communicates across devices of a mesh",
        _ => "not an effect: the effects are `random`, `io`, `memory` and `collective`",
    }
}

/// A numerics policy: a preset's dtypes, or how the file defines it.
fn policy(db: &dyn Db, file: Option<SourceFile>, name: &str) -> String {
    let bare = name.strip_prefix("numerics.").unwrap_or(name);
    if let Some((_, storage, compute, accumulate)) = builtins::PRESET_POLICIES.iter().find(|p| p.0 == bare) {
        return format!("`{bare}` — {storage} storage, {compute} compute, {accumulate} accumulate");
    }
    match file.and_then(|f| global_value(db, f, bare)) {
        Some(value) => format!("`{bare}` = `{value}`"),
        None => format!("`{bare}`"),
    }
}

fn policy_note(value: &str) -> String {
    if value.starts_with("numerics.") {
        "numerics policy".to_string()
    } else {
        "module-level value".to_string()
    }
}

/// The source of the value a top-level assignment binds to `name` (the
/// last one, as at run time).
fn global_value(db: &dyn Db, file: SourceFile, name: &str) -> Option<String> {
    let text = file.text(db);
    analysis::top_level(db, file)
        .filter_map(|(base, stmt)| {
            let (targets, value) = match &stmt.kind {
                StmtKind::Assign { targets, value } => (targets.iter().collect::<Vec<_>>(), value),
                StmtKind::AnnAssign {
                    target,
                    value: Some(value),
                    ..
                } => (vec![target], value),
                _ => return None,
            };
            let binds = targets
                .iter()
                .any(|t| matches!(&t.kind, ExprKind::Name(n) if n == name));
            binds.then(|| source_text(text, Span::new(value.span.start + base, value.span.end + base)))?
        })
        .last()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The line under a hover inside a function: the function's effects, the
/// numerics policy in force at the cursor and the `where` constraints.
fn context(db: &dyn Db, func: Function<'_>, rel: u32) -> String {
    let sig = func.signature(db);
    let mut parts = Vec::new();
    let effects = inferred_effects(db, func.file)
        .get(func.name())
        .copied()
        .unwrap_or_default();
    parts.push(format!("effects `{effects}`"));
    match region_policy(&func.def.body.stmts, rel).or_else(|| sig.numerics.clone()) {
        Some(p) => parts.push(format!("numerics {}", policy(db, Some(func.file), &p))),
        None => parts.push("no numerics policy".to_string()),
    }
    if !sig.constraints.is_empty() {
        let rules: Vec<String> = sig.constraints.iter().map(|c| format!("`{}`", c.text)).collect();
        parts.push(format!("where {}", rules.join(", ")));
    }
    format!("\n\n---\nin `{}`: {}", func.name(), parts.join(" · "))
}

/// The policy of the innermost `with numerics(P):` region around `rel`.
fn region_policy(stmts: &[Stmt], rel: u32) -> Option<String> {
    for stmt in stmts.iter().filter(|s| s.span.start <= rel && rel <= s.span.end) {
        let inner = match &stmt.kind {
            StmtKind::With { items, body } => region_policy(&body.stmts, rel).or_else(|| {
                items.iter().find_map(|item| match &item.expr.kind {
                    ExprKind::Call { callee, args } if matches!(&callee.kind, ExprKind::Name(n) if n == "numerics") => {
                        args.first().and_then(|a| policy_name(&a.value))
                    }
                    _ => None,
                })
            }),
            StmtKind::If { branches, orelse } => branches
                .iter()
                .find_map(|b| region_policy(&b.body.stmts, rel))
                .or_else(|| orelse.as_ref().and_then(|b| region_policy(&b.stmts, rel))),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => region_policy(&body.stmts, rel),
            StmtKind::Error(children) => region_policy(children, rel),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
    }
    None
}

/// `Training` or `numerics.Training`, as a policy is named.
fn policy_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Attr { base, name } => match &base.kind {
            ExprKind::Name(ns) => Some(format!("{ns}.{}", name.name)),
            _ => None,
        },
        _ => None,
    }
}

fn shown_ty(ty: &Ty) -> String {
    ty.to_string()
}

fn code(text: &str) -> String {
    format!("```tessera\n{text}\n```")
}

pub fn source_text(text: &str, span: Span) -> Option<&str> {
    text.get(span.range())
}
