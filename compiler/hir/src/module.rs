//! File-level checks: duplicate definitions and imports.

use tessera_base::{FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};
use tessera_syntax::ast::StmtKind;

use crate::builtins;
use crate::db::{self, Db, SourceFile};
use crate::names::did_you_mean;

/// Finds the file of a sibling module: `import helpers` in `dir/a.tsr` is
/// `dir/helpers.tsr`; `import pkg.mod` is `dir/pkg/mod.tsr`.
pub fn resolve_module(db: &dyn Db, from: SourceFile, module: &str) -> Option<SourceFile> {
    let path = from.path(db);
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let relative = format!("{}.tsr", module.replace('.', "/"));
    let wanted = if dir.is_empty() {
        relative
    } else {
        format!("{dir}/{relative}")
    };
    db::file_by_path(db, &wanted)
}

pub(crate) fn check_module(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let id = file.id(db);
    let mut seen: Vec<(&str, FileSpan)> = Vec::new();
    for (offset, stmt) in db::top_level(db, file) {
        let at = |span: Span| Span::new(span.start + offset, span.end + offset).in_file(id);
        match &stmt.kind {
            StmtKind::Def(def) => {
                if let Some((_, first)) = seen.iter().find(|(n, _)| *n == def.name.name) {
                    diags.push(
                        Diagnostic::error(Code::E0104, format!("`{}` is defined twice", def.name.name))
                            .with_primary(at(def.name.span), "defined again here")
                            .with_secondary(*first, "first defined here")
                            .with_help("rename one of them"),
                    );
                } else {
                    seen.push((&def.name.name, at(def.name.span)));
                }
            }
            StmtKind::Import(paths) => {
                for p in paths {
                    let module: Vec<&str> = p.path.segments.iter().map(|s| s.name.as_str()).collect();
                    let module = module.join(".");
                    if !module_exists(db, file, &module) {
                        diags.push(unresolved(&module, at(p.path.span)));
                    }
                }
            }
            StmtKind::FromImport { module, names } => {
                let path: Vec<&str> = module.segments.iter().map(|s| s.name.as_str()).collect();
                let path = path.join(".");
                if path == "tessera" {
                    for n in names {
                        let known = builtins::NAMESPACES.contains(&n.name.name.as_str())
                            || crate::signature::DECORATORS.contains(&n.name.name.as_str())
                            || builtins::lookup(&n.name.name).is_some_and(|b| b.namespace().is_none());
                        if !known {
                            let candidates = builtins::NAMESPACES
                                .iter()
                                .copied()
                                .chain(builtins::globals().map(|b| b.path));
                            let mut diag =
                                Diagnostic::error(Code::E0105, format!("`tessera` has no member `{}`", n.name.name))
                                    .with_primary(at(n.name.span), "not in the standard library");
                            if let Some(s) = did_you_mean(&n.name.name, candidates) {
                                diag = diag.with_help(format!("did you mean `{s}`?"));
                            }
                            diags.push(diag);
                        }
                    }
                } else if let Some(target) = resolve_module(db, file, &path) {
                    let tree = db::item_tree(db, target);
                    for n in names {
                        if !tree.functions.contains(&n.name.name) {
                            diags.push(
                                Diagnostic::error(Code::E0105, format!("`{path}` has no function `{}`", n.name.name))
                                    .with_primary(at(n.name.span), "not defined there"),
                            );
                        }
                    }
                } else {
                    diags.push(unresolved(&path, at(module.span)));
                }
            }
            _ => {}
        }
    }
    diags
}

fn module_exists(db: &dyn Db, file: SourceFile, module: &str) -> bool {
    module == "tessera" || module.starts_with("tessera.") || resolve_module(db, file, module).is_some()
}

fn unresolved(module: &str, at: tessera_base::FileSpan) -> Diagnostic {
    Diagnostic::error(Code::E0105, format!("cannot find module `{module}`"))
        .with_primary(at, "no such module")
        .with_help(format!(
            "modules are `tessera` and sibling files: `{}.tsr` next to this file",
            module.replace('.', "/")
        ))
}
