//! File-level checks: duplicate definitions and imports.

use tessera_base::{FileSpan, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Expr, ExprKind, StmtKind};

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

/// The dotted name of the module `file` as `from` imports it: its path
/// from `from`'s directory without `.tsr` (`steps`, `pkg.norms`); modules
/// resolve only below that directory ([`resolve_module`]).
pub fn module_name(db: &dyn Db, from: SourceFile, file: SourceFile) -> String {
    let home = from.path(db);
    let dir = home.rsplit_once('/').map_or("", |(d, _)| d);
    let path = file.path(db);
    let relative = path
        .strip_prefix(dir)
        .map_or(path.as_str(), |p| p.trim_start_matches('/'));
    relative.trim_end_matches(".tsr").replace('/', ".")
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
            // A policy bound at the top level is checked as a call is in a
            // body: a misspelled keyword (`accum=`) was dropped, and the
            // functions under the policy reported E0701 instead.
            StmtKind::Assign { value, .. } => diags.extend(policy_arguments(value, &at)),
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
                        let member = &n.name.name;
                        let module = format!("{path}.{member}");
                        let known = tree.functions.contains(member)
                            || tree.globals.contains(member)
                            || resolve_module(db, file, &module).is_some();
                        if !known {
                            let mut diag = Diagnostic::error(
                                Code::E0105,
                                format!("`{path}` has no function, constant or module `{member}`"),
                            )
                            .with_primary(at(n.name.span), "not defined there");
                            let candidates = tree.functions.iter().chain(&tree.globals).map(String::as_str);
                            if let Some(s) = did_you_mean(member, candidates) {
                                diag = diag.with_help(format!("did you mean `{s}`?"));
                            }
                            diags.push(diag);
                        }
                    }
                } else if names
                    .iter()
                    .all(|n| resolve_module(db, file, &format!("{path}.{}", n.name.name)).is_some())
                {
                    // `from pkg import mod`: a package is a folder of
                    // modules, not a module itself.
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
    let diag =
        Diagnostic::error(Code::E0105, format!("cannot find module `{module}`")).with_primary(at, "no such module");
    // `helpers.py` or `helpers.tsr`: a file's name with its extension.
    if let Some(stem) = module.strip_suffix(".py").or_else(|| module.strip_suffix(".tsr")) {
        return diag
            .with_help(format!(
                "a module is named without its file's extension: `{stem}` reads `{stem}.tsr`"
            ))
            .with_fix(
                Fix::new(format!("import `{stem}`"), Applicability::MaybeIncorrect).with_edit(at, stem.to_string()),
            );
    }
    diag.with_help(format!(
        "modules are `tessera` and sibling files: `{}.tsr` next to this file",
        module.replace('.', "/")
    ))
}

/// E0204 for the arguments of a top-level `numerics.policy(...)` it does
/// not take, or whose string names none of its choices.
fn policy_arguments(value: &Expr, at: &dyn Fn(Span) -> FileSpan) -> Vec<Diagnostic> {
    let ExprKind::Call { callee, args } = &value.kind else {
        return Vec::new();
    };
    let is_policy = matches!(&callee.kind, ExprKind::Attr { base, name }
        if name.name == "policy" && matches!(&base.kind, ExprKind::Name(n) if n == "numerics"));
    let Some(b) = builtins::lookup("numerics.policy").filter(|_| is_policy) else {
        return Vec::new();
    };
    let names = b.param_names();
    let mut diags = Vec::new();
    for a in args {
        let Some(name) = &a.name else { continue };
        if !names.contains(&name.name.as_str()) {
            let near = policy_keyword(&name.name, &names);
            diags.push(builtins::unknown_keyword(
                b,
                &name.name,
                at(name.span),
                Some(at(name.span)),
                near,
            ));
            continue;
        }
        for (path, param, choices, default) in builtins::CHOICES {
            if path == b.path && param == name.name {
                diags.extend(builtins::unknown_choice(
                    path,
                    param,
                    choices,
                    default,
                    &a.value,
                    at(a.value.span),
                ));
            }
        }
    }
    diags
}

/// The parameter of `numerics.policy` a misspelled or shortened keyword
/// means (`accum` is `accumulate`).
pub(crate) fn policy_keyword(name: &str, names: &[&'static str]) -> Option<&'static str> {
    let shortened = (name.len() >= 3)
        .then(|| names.iter().copied().find(|n| n.starts_with(name)))
        .flatten();
    shortened.or_else(|| did_you_mean(name, names.iter().copied()))
}
