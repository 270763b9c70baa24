//! Go to definition, find references and document symbols, from the names
//! the checker resolved.

use tessera_base::{FileSpan, Span};
use tessera_hir::{Db, SourceFile};
use tessera_syntax::ast::{ExprKind, StmtKind};
use tower_lsp_server::ls_types::{self as lsp, DocumentSymbol, Location, Position, SymbolKind, Uri};

use crate::analysis::{self, resolve_global, Function, Names, Node, Role, Symbol};
use crate::convert;
use crate::hover::signature_label;
use crate::workspace::Snapshot;

pub fn definition(snapshot: &Snapshot, uri: &Uri, pos: Position) -> Option<Location> {
    let file = snapshot.file_of(uri)?;
    let db = snapshot.db();
    let offset = convert::offset(&snapshot.line_index(file), pos);
    let (symbol, _) = analysis::symbol_at(db, snapshot.source(file), offset)?;
    convert::location(snapshot, declaration(db, &symbol)?)
}

pub fn references(snapshot: &Snapshot, uri: &Uri, pos: Position, include_declaration: bool) -> Vec<Location> {
    let Some(file) = snapshot.file_of(uri) else {
        return Vec::new();
    };
    let db = snapshot.db();
    let offset = convert::offset(&snapshot.line_index(file), pos);
    let Some((symbol, _)) = analysis::symbol_at(db, snapshot.source(file), offset) else {
        return Vec::new();
    };
    let declared = declaration(db, &symbol);
    let mut spans = uses(db, &symbol);
    if let Some(decl) = declared {
        if include_declaration && !spans.contains(&decl) {
            spans.push(decl);
        }
        if !include_declaration {
            spans.retain(|s| *s != decl);
        }
    }
    spans.sort();
    spans.dedup();
    spans
        .into_iter()
        .filter_map(|s| convert::location(snapshot, s))
        .collect()
}

/// Where a symbol is declared: a parameter's name, a local's first
/// binding, a function's name, a global's first assignment, a module's file.
fn declaration(db: &dyn Db, symbol: &Symbol<'_>) -> Option<FileSpan> {
    let in_file = |file: SourceFile, span: Span| Some(span.in_file(file.id(db)));
    match symbol {
        Symbol::Param { func, index } => in_file(func.file, func.absolute(func.def.params.get(*index)?.name.span)),
        Symbol::Local {
            func,
            name,
            scope: Some(scope),
        } => {
            let mut binding = None;
            analysis::walk_def(func.def, &mut |node| match node {
                Node::Expr(e, _) if e.span == *scope => {
                    if let ExprKind::Comp { clauses, .. } = &e.kind {
                        binding = clauses
                            .iter()
                            .find(|c| c.bound_names().contains(&name.as_str()))
                            .and_then(|c| name_in(&c.target, name));
                    }
                }
                _ => {}
            });
            in_file(func.file, func.absolute(binding?))
        }
        Symbol::Local { func, name, .. } => {
            // The function's own binding: not a comprehension's variable of
            // the same name, bound earlier in the function.
            let (_, span, _) = func
                .body(db)
                .locals
                .iter()
                .find(|(n, span, _)| n == name && analysis::comprehension_scope(func.def, name, *span).is_none())?;
            in_file(func.file, func.absolute(*span))
        }
        Symbol::Dim { func, name } => {
            let mut first = None;
            analysis::walk_def(func.def, &mut |node| {
                if let Node::Expr(e, Role::Dim) = node {
                    if matches!(&e.kind, ExprKind::Name(n) if n == name) && first.is_none() {
                        first = Some(e.span);
                    }
                }
            });
            in_file(func.file, func.absolute(first?))
        }
        Symbol::Function(f) => in_file(f.file, f.absolute(f.def.name.span)),
        Symbol::Module(file) => in_file(*file, Span::empty(0)),
        Symbol::Global { file, name } => analysis::top_level(db, *file).find_map(|(base, stmt)| {
            let targets: Vec<&tessera_syntax::ast::Expr> = match &stmt.kind {
                StmtKind::Assign { targets, .. } => targets.iter().collect(),
                StmtKind::AnnAssign { target, .. } => vec![target],
                _ => return None,
            };
            let target = targets
                .into_iter()
                .find(|t| matches!(&t.kind, ExprKind::Name(n) if n == name))?;
            in_file(*file, Span::new(target.span.start + base, target.span.end + base))
        }),
        Symbol::Builtin(_) | Symbol::Namespace(_) | Symbol::Policy(_) | Symbol::DType(_) => None,
    }
}

/// The span of `name` in the target `e` (a name, or a tuple of targets).
fn name_in(e: &tessera_syntax::ast::Expr, name: &str) -> Option<Span> {
    if matches!(&e.kind, ExprKind::Name(n) if n == name) {
        return Some(e.span);
    }
    let mut found = None;
    e.kind.for_each_child(|child| {
        if found.is_none() {
            found = name_in(child, name);
        }
    });
    found
}

/// Every place a symbol is named. Locals, parameters and dims live in one
/// function; functions, globals and builtins are looked up in every file
/// of the workspace (open documents and the modules they import).
fn uses(db: &dyn Db, symbol: &Symbol<'_>) -> Vec<FileSpan> {
    let mut out = Vec::new();
    match symbol {
        Symbol::Param { func, .. } | Symbol::Local { func, .. } | Symbol::Dim { func, .. } => {
            names_in(db, *func, &mut |found| same_symbol(found, symbol), &mut out);
        }
        Symbol::Function(_) | Symbol::Global { .. } | Symbol::Builtin(_) => {
            for &file in db.workspace().files(db) {
                for func in analysis::functions(db, file) {
                    names_in(db, func, &mut |found| same_symbol(found, symbol), &mut out);
                }
                top_level_names(db, file, symbol, &mut out);
            }
        }
        Symbol::Module(_) | Symbol::Namespace(_) | Symbol::Policy(_) | Symbol::DType(_) => {}
    }
    out
}

/// The names in `func` whose symbol passes `wanted`.
fn names_in<'db>(
    db: &'db dyn Db,
    func: Function<'db>,
    wanted: &mut dyn FnMut(&Symbol<'db>) -> bool,
    out: &mut Vec<FileSpan>,
) {
    let file = func.file;
    let names = Names::new(db, func);
    analysis::walk_def(func.def, &mut |node| {
        let found = match node {
            Node::Expr(e, role) => match &e.kind {
                ExprKind::Name(n) if role != Role::Decorator => names.resolve(db, n, e.span, role),
                ExprKind::Attr { base, name } => {
                    let symbol = analysis::attr_symbol(db, file, Some(func), names.type_at(e.span), base, &name.name);
                    if symbol.as_ref().is_some_and(&mut *wanted) {
                        out.push(func.absolute(name.span).in_file(file.id(db)));
                    }
                    return;
                }
                _ => None,
            },
            Node::Param(p) => func
                .def
                .params
                .iter()
                .position(|q| q.name.span == p.name.span)
                .map(|index| Symbol::Param { func, index }),
            Node::FnName(_) => Some(Symbol::Function(func)),
            Node::WithAlias(a) => Some(Symbol::Local {
                func,
                name: a.name.clone(),
                scope: None,
            }),
            _ => None,
        };
        if found.as_ref().is_some_and(&mut *wanted) {
            out.push(func.absolute(node.span()).in_file(file.id(db)));
        }
    });
}

/// Names in the top-level statements of `file` (imports, module-level
/// assignments and calls) that refer to `symbol`.
fn top_level_names(db: &dyn Db, file: SourceFile, symbol: &Symbol<'_>, out: &mut Vec<FileSpan>) {
    for (offset, stmt) in analysis::top_level(db, file) {
        if matches!(stmt.kind, StmtKind::Def(_)) {
            continue;
        }
        let at = |span: Span| Span::new(span.start + offset, span.end + offset).in_file(file.id(db));
        analysis::walk_stmt(stmt, &mut |node| {
            let (found, span) = match node {
                Node::Expr(e, _) => match &e.kind {
                    ExprKind::Name(n) => (resolve_global(db, file, n), node.span()),
                    ExprKind::Attr { base, name } => {
                        (analysis::attr_symbol(db, file, None, None, base, &name.name), name.span)
                    }
                    _ => return,
                },
                Node::Imported { module, name } => {
                    (analysis::imported_symbol(db, file, module, &name.name), node.span())
                }
                _ => return,
            };
            if found.as_ref().is_some_and(|s| same_symbol(s, symbol)) {
                out.push(at(span));
            }
        });
    }
}

fn same_symbol(a: &Symbol<'_>, b: &Symbol<'_>) -> bool {
    match (a, b) {
        (Symbol::Param { func: f, index: i }, Symbol::Param { func: g, index: j }) => f.id == g.id && i == j,
        (
            Symbol::Local {
                func: f,
                name: m,
                scope: s,
            },
            Symbol::Local {
                func: g,
                name: n,
                scope: t,
            },
        ) => f.id == g.id && m == n && s == t,
        (Symbol::Dim { func: f, name: m }, Symbol::Dim { func: g, name: n }) => f.id == g.id && m == n,
        (Symbol::Function(f), Symbol::Function(g)) => f.id == g.id,
        (Symbol::Global { file: f, name: m }, Symbol::Global { file: g, name: n }) => f == g && m == n,
        (Symbol::Builtin(x), Symbol::Builtin(y)) => x.path == y.path,
        (Symbol::Module(f), Symbol::Module(g)) => f == g,
        _ => false,
    }
}

/// The outline of a file: its functions (with their signatures), module
/// globals and imports.
pub fn document_symbols(snapshot: &Snapshot, uri: &Uri) -> Vec<DocumentSymbol> {
    let Some(file) = snapshot.file_of(uri) else {
        return Vec::new();
    };
    let db = snapshot.db();
    let source = snapshot.source(file);
    let index = snapshot.line_index(file);
    let at = |base: u32, span: Span| convert::range(&index, Span::new(span.start + base, span.end + base));
    let mut out = Vec::new();
    for (base, stmt) in analysis::top_level(db, source) {
        let range = at(base, stmt.span);
        match &stmt.kind {
            StmtKind::Def(def) => {
                let func = Function::new(db, source, &def.name.name).filter(|f| f.offset == base + stmt.span.start);
                out.push(symbol(
                    &def.name.name,
                    func.map(|f| signature_label(db, f)),
                    SymbolKind::FUNCTION,
                    range,
                    at(base, def.name.span),
                ));
            }
            StmtKind::Assign { targets, .. } => {
                for t in targets {
                    if let ExprKind::Name(n) = &t.kind {
                        out.push(symbol(n, None, SymbolKind::VARIABLE, range, at(base, t.span)));
                    }
                }
            }
            StmtKind::AnnAssign { target, .. } => {
                if let ExprKind::Name(n) = &target.kind {
                    out.push(symbol(n, None, SymbolKind::VARIABLE, range, at(base, target.span)));
                }
            }
            StmtKind::Import(paths) => {
                for p in paths {
                    let name = p.alias.as_ref().map_or(analysis::dotted(&p.path), |a| a.name.clone());
                    let span = p.alias.as_ref().map_or(p.path.span, |a| a.span);
                    out.push(symbol(&name, None, SymbolKind::MODULE, range, at(base, span)));
                }
            }
            StmtKind::FromImport { module, names } => {
                for n in names {
                    let bound = n.alias.as_ref().unwrap_or(&n.name);
                    let detail = format!("from {}", analysis::dotted(module));
                    out.push(symbol(
                        &bound.name,
                        Some(detail),
                        SymbolKind::MODULE,
                        range,
                        at(base, bound.span),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn symbol(
    name: &str,
    detail: Option<String>,
    kind: SymbolKind,
    range: lsp::Range,
    selection: lsp::Range,
) -> DocumentSymbol {
    // The selection must lie inside the range; a name recovered from broken
    // text may not.
    let selection_range = if selection.start >= range.start && selection.end <= range.end {
        selection
    } else {
        range
    };
    #[allow(deprecated)]
    DocumentSymbol {
        // Clients reject symbols with empty names.
        name: if name.is_empty() {
            "_".to_string()
        } else {
            name.to_string()
        },
        detail,
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range,
        children: None,
    }
}
