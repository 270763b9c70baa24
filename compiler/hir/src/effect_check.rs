//! Effect inference and the `effects(...)` contract (E0401).
//!
//! A function's effects are those of the builtins it calls directly plus
//! those of the functions it calls, less what `with effects.suspend(...)`
//! suspends around each call. Calls may recurse, so the effects of a file's
//! functions are a least fixpoint over the (finite) effect lattice.
//! Functions of other files are summarized by their `effects(...)` clause
//! when they have one: the clause is their interface, and their own check
//! holds them to it.

use std::collections::{HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::{Block, FnDef, Stmt, StmtKind};

use crate::body::CallTarget;
use crate::db::{self, Db, FnId, SourceFile};
use crate::effects::{Effect, EffectSet};

pub(crate) fn check_effects(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let inferred = infer_file(db, file);
    let mut diags = Vec::new();
    for name in &db::item_tree(db, file).functions {
        let func = FnId::new(db, file, name.clone());
        let Some((declared, clause)) = db::signature(db, func).declared_effects else {
            continue;
        };
        let Some(def) = db::fn_ast(db, func) else { continue };
        // A misspelled effect is reported as E0402 with a suggestion; a
        // second error about the same clause would only repeat it.
        if def
            .effects
            .as_ref()
            .is_some_and(|c| c.effects.iter().any(|e| Effect::from_name(&e.name).is_none()))
        {
            continue;
        }
        let effects = inferred.of(name);
        let missing = effects.minus(declared);
        if missing.is_pure() {
            continue;
        }
        let offset = db::fn_offset(db, func);
        let at = |span: Span| Span::new(span.start + offset, span.end + offset).in_file(file.id(db));
        let names = quoted(missing);
        let title = match missing.iter().count() {
            1 => format!("undeclared effect {names}"),
            _ => format!("undeclared effects {names}"),
        };
        let declares = if declared.is_pure() {
            format!("`{name}` declares no effects")
        } else {
            format!("`{name}` declares only {}", quoted(declared))
        };
        let mut diag = Diagnostic::error(Code::E0401, title).with_primary(at(clause), declares);
        for (span, why) in sources(db, func, def, &inferred, missing) {
            diag = diag.with_secondary(at(span), why);
        }
        let all: Vec<&str> = declared.union(effects).iter().map(Effect::name).collect();
        diags.push(
            diag.with_help(format!("add {names} to the effects clause of `{name}`"))
                .with_fix(
                    Fix::new(format!("declare {names}"), Applicability::MachineApplicable)
                        .with_edit(at(clause), format!("effects({})", all.join(", "))),
                ),
        );
    }
    diags
}

/// `random` and `io` as `` `random` and `io` ``.
fn quoted(set: EffectSet) -> String {
    let names: Vec<String> = set.iter().map(|e| format!("`{}`", e.name())).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// The inferred effects of every function of `file`, by name.
pub fn inferred_effects(db: &dyn Db, file: SourceFile) -> HashMap<String, EffectSet> {
    infer_file(db, file).local
}

/// The inferred effects of one file's functions.
struct FileEffects {
    file: SourceFile,
    local: HashMap<String, EffectSet>,
}

impl FileEffects {
    fn of(&self, name: &str) -> EffectSet {
        self.local.get(name).copied().unwrap_or_default()
    }

    /// The effects a call of `name` in `file` contributes, before the
    /// suspension around the call is taken off.
    fn callee(&self, db: &dyn Db, file: SourceFile, name: &str) -> EffectSet {
        if file == self.file {
            return self.of(name);
        }
        let mut acc = EffectSet::PURE;
        self.external(db, file, name, EffectSet::PURE, &mut acc, &mut HashSet::new());
        acc
    }

    /// Adds to `acc` the effects of a function of another file, with
    /// `suspended` taken off. Suspension only grows along a call path, so
    /// visiting each (function, suspended set) once is exact, and cycles
    /// through other files end.
    fn external(
        &self,
        db: &dyn Db,
        file: SourceFile,
        name: &str,
        suspended: EffectSet,
        acc: &mut EffectSet,
        seen: &mut HashSet<(SourceFile, String, EffectSet)>,
    ) {
        if file == self.file {
            *acc = acc.union(self.of(name).minus(suspended));
            return;
        }
        if !seen.insert((file, name.to_string(), suspended)) {
            return;
        }
        let func = FnId::new(db, file, name.to_string());
        if let Some((declared, _)) = db::signature(db, func).declared_effects {
            *acc = acc.union(declared.minus(suspended));
            return;
        }
        let body = db::infer(db, func);
        *acc = acc.union(body.direct_effects.minus(suspended));
        for (callee_file, callee, _, around) in &body.calls_to {
            self.external(db, *callee_file, callee, suspended.union(*around), acc, seen);
        }
    }
}

/// The least fixpoint of `effects(f) = direct(f) ∪ ⋃ (effects(callee) − suspended)`
/// over the functions of `file`. Each round only adds effects, and there
/// are four, so it ends.
fn infer_file(db: &dyn Db, file: SourceFile) -> FileEffects {
    let names = &db::item_tree(db, file).functions;
    let mut effects = FileEffects {
        file,
        local: names
            .iter()
            .map(|n| (n.clone(), db::infer(db, FnId::new(db, file, n.clone())).direct_effects))
            .collect(),
    };
    loop {
        let mut changed = false;
        for name in names {
            let body = db::infer(db, FnId::new(db, file, name.clone()));
            let mut set = effects.of(name);
            for (callee_file, callee, _, suspended) in &body.calls_to {
                set = set.union(effects.callee(db, *callee_file, callee).minus(*suspended));
            }
            if set != effects.of(name) {
                effects.local.insert(name.clone(), set);
                changed = true;
            }
        }
        if !changed {
            return effects;
        }
    }
}

/// For each missing effect, the first call (in source order) through which
/// it enters `func`, with a label saying so. Spans are relative to the
/// function.
fn sources(db: &dyn Db, func: FnId<'_>, def: &FnDef, effects: &FileEffects, missing: EffectSet) -> Vec<(Span, String)> {
    let body = db::infer(db, func);
    let regions = suspend_regions(&def.body);
    let suspended_at = |span: Span| {
        regions
            .iter()
            .filter(|(region, _)| region.start <= span.start && span.end <= region.end)
            .fold(EffectSet::PURE, |acc, (_, set)| acc.union(*set))
    };
    let builtins = body.calls.iter().filter_map(|call| match &call.target {
        CallTarget::Builtin(b) => {
            let brings = common(b.effects.minus(suspended_at(call.span)), missing);
            (!brings.is_pure()).then(|| (call.span, brings, format!("`{}` performs {}", b.path, quoted(brings))))
        }
        CallTarget::Function { .. } => None,
    });
    let functions = body
        .calls_to
        .iter()
        .filter_map(|(callee_file, callee, span, suspended)| {
            let brings = common(effects.callee(db, *callee_file, callee).minus(*suspended), missing);
            (!brings.is_pure()).then(|| {
                (
                    *span,
                    brings,
                    format!("this calls `{callee}`, which performs {}", quoted(brings)),
                )
            })
        });
    let mut calls: Vec<(Span, EffectSet, String)> = builtins.chain(functions).collect();
    calls.sort_by_key(|(span, _, _)| (span.start, span.end));
    let mut labels: Vec<(Span, String)> = Vec::new();
    for effect in missing.iter() {
        let first = calls.iter().find(|(_, brings, _)| brings.contains(effect));
        if let Some((span, _, label)) = first.filter(|(span, _, _)| !labels.iter().any(|(s, _)| s == span)) {
            labels.push((*span, label.clone()));
        }
    }
    // In source order, so the snippet reads top to bottom.
    labels.sort_by_key(|(span, _)| (span.start, span.end));
    labels
}

/// The effects in both sets.
fn common(a: EffectSet, b: EffectSet) -> EffectSet {
    a.minus(a.minus(b))
}

/// The bodies of `with effects.suspend("...")` statements and the effects
/// each suspends, so a builtin call inside one is not blamed for them.
fn suspend_regions(block: &Block) -> Vec<(Span, EffectSet)> {
    fn walk(stmts: &[Stmt], out: &mut Vec<(Span, EffectSet)>) {
        for stmt in stmts {
            match &stmt.kind {
                StmtKind::With { items, body } => {
                    let set = items
                        .iter()
                        .filter_map(|item| crate::infer::suspended_effect(&item.expr))
                        .fold(EffectSet::PURE, |acc, e| acc.union(EffectSet::of(&[e])));
                    if !set.is_pure() {
                        out.push((body.span, set));
                    }
                    walk(&body.stmts, out);
                }
                StmtKind::If { branches, orelse } => {
                    for branch in branches {
                        walk(&branch.body.stmts, out);
                    }
                    if let Some(b) = orelse {
                        walk(&b.stmts, out);
                    }
                }
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => walk(&body.stmts, out),
                StmtKind::Error(children) => walk(children, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&block.stmts, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use tessera_base::FileId;

    use crate::db::{check_file, Db, Options, SourceFile, Workspace};

    #[salsa::db]
    #[derive(Clone)]
    struct TestDb {
        storage: salsa::Storage<Self>,
        workspace: Option<Workspace>,
    }

    #[salsa::db]
    impl salsa::Database for TestDb {}

    #[salsa::db]
    impl Db for TestDb {
        fn workspace(&self) -> Workspace {
            self.workspace.expect("set on creation")
        }
    }

    /// The E0401 lines (`line: message`) of the first file, when all are loaded.
    fn undeclared(files: &[(&str, &str)]) -> Vec<String> {
        let mut db = TestDb {
            storage: salsa::Storage::default(),
            workspace: None,
        };
        let sources: Vec<SourceFile> = files
            .iter()
            .enumerate()
            .map(|(i, (path, text))| SourceFile::new(&db, FileId(i as u32), path.to_string(), text.to_string()))
            .collect();
        db.workspace = Some(Workspace::new(&db, sources.clone(), Options::default()));
        let text = files[0].1;
        check_file(&db, sources[0])
            .iter()
            .filter(|d| d.code == tessera_diagnostics::Code::E0401)
            .map(|d| {
                let start = d.primary_span().map_or(0, |s| s.span.start as usize);
                format!("{}: {}", text[..start].lines().count(), d.message)
            })
            .collect()
    }

    #[test]
    fn effects_cross_files() {
        let main = "\
from lib import loud, declared_random, chained, cyc

def a(x: f32) effects():
    loud(x)

def b(x: f32) -> f32 effects():
    return declared_random(x)

def c(x: f32) effects():
    with effects.suspend(\"io\"):
        chained(x)

def back(x: f32):
    rand(4, seed=1)
    cyc(x)

def d(x: f32) effects():
    cyc(x)
";
        let lib = "\
from main import back

def loud(x: f32):
    print(x)

# The clause is the interface: callers see `random` although the body is pure.
def declared_random(x: f32) -> f32 effects(random):
    return x

def chained(x: f32):
    loud(x)

def cyc(x: f32):
    back(x)
";
        assert_eq!(
            undeclared(&[("dir/main.tsr", main), ("dir/lib.tsr", lib)]),
            [
                "3: undeclared effect `io`",
                "6: undeclared effect `random`",
                "17: undeclared effect `random`"
            ]
        );
    }
}
