//! Device functions across calls. A `@device` function is inlined into the
//! kernels that call it, so two rules look across calls, over the call
//! graph of a file's kernel code and the device functions it reaches in
//! any file:
//!
//! - a device function, or a plain function that kernel code calls (it
//!   is inlined the same way), must not reach itself through calls
//!   (E0216): inlining would not end;
//! - a device function that waits at a barrier is a barrier of its caller,
//!   and the arguments that decide whether it reaches one must be the same
//!   in every thread (E0601, `barrier::check_calls`). What a callee does is
//!   its [`Summary`], a least fixpoint over the graph since calls may form
//!   cycles (which are errors, but are checked all the same).

use std::collections::{HashMap, HashSet};

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};

use crate::barrier::{self, Summary};
use crate::body::{BodyCtx, CallTarget};
use crate::db::{self, absolute, relative, Anchor, Db, FnId, SourceFile};
use crate::signature::FnKind;

/// A function of kernel code, by file and name.
type Key = (SourceFile, String);

/// The device-code diagnostics of `file` that need other functions.
pub(crate) fn check_device(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let own: Vec<Key> = db::item_tree(db, file)
        .functions
        .iter()
        .map(|name| (file, name.clone()))
        .filter(|(f, name)| db::signature(db, FnId::new(db, *f, name.clone())).kind.is_device_code())
        .collect();
    if own.is_empty() {
        return Vec::new();
    }
    let graph = Graph::reach(db, &own);
    let summaries = graph.summaries(db);
    let lookup = |target: &CallTarget| match target {
        CallTarget::Function { file, name } => summaries.get(&(*file, name.clone())).cloned(),
        CallTarget::Builtin(_) => None,
    };
    let mut diags = Vec::new();
    for key in &own {
        let anchors = [Anchor {
            file,
            name: key.1.clone(),
        }];
        if let Some(ctx) = body(db, key) {
            for diag in barrier::check_calls(&ctx.ctx(), &lookup) {
                diags.push(absolute(db, &diag, &anchors));
            }
        }
    }
    // Every function of this file that kernel code reaches: a call that
    // leads back to its caller, or into another file's recursion.
    let mut reached: Vec<&Key> = graph.calls.keys().filter(|key| key.0 == file).collect();
    reached.sort_by(|a, b| a.1.cmp(&b.1));
    for key in reached {
        let anchors = [Anchor {
            file,
            name: key.1.clone(),
        }];
        for (callee, span) in graph.calls.get(key).into_iter().flatten() {
            let kind = db::signature(db, FnId::new(db, callee.0, callee.1.clone())).kind;
            if graph.reaches(callee, key) {
                diags.push(absolute(db, &recursive_call(key, callee, kind, *span, None), &anchors));
            } else if callee.0 != file {
                if let Some(cycle) = graph.recursive_from(callee) {
                    diags.push(absolute(
                        db,
                        &recursive_call(key, callee, kind, *span, Some(cycle)),
                        &anchors,
                    ));
                }
            }
        }
    }
    diags
}

/// The calls from kernel code to device functions.
struct Graph {
    /// Each kernel or device function reached, with its calls of device
    /// functions and where they are.
    calls: HashMap<Key, Vec<(Key, Span)>>,
}

impl Graph {
    /// The graph from `roots` through every device function they reach.
    fn reach(db: &dyn Db, roots: &[Key]) -> Graph {
        let mut calls = HashMap::new();
        let mut todo: Vec<Key> = roots.to_vec();
        while let Some(key) = todo.pop() {
            if calls.contains_key(&key) {
                continue;
            }
            let info = db::infer(db, FnId::new(db, key.0, key.1.clone()));
            let mut out = Vec::new();
            for call in &info.calls {
                let CallTarget::Function { file, name } = &call.target else {
                    continue;
                };
                // Device functions and plain ones are inlined alike.
                let callee = (*file, name.clone());
                if db::signature(db, FnId::new(db, *file, name.clone())).kind != FnKind::Kernel {
                    todo.push(callee.clone());
                    out.push((callee, call.span));
                }
            }
            calls.insert(key, out);
        }
        Graph { calls }
    }

    /// Whether `from` reaches `to` through one or more calls.
    fn reaches(&self, from: &Key, to: &Key) -> bool {
        let mut seen = HashSet::new();
        let mut todo = vec![from];
        while let Some(key) = todo.pop() {
            if key == to {
                return true;
            }
            if seen.insert(key) {
                todo.extend(self.calls.get(key).into_iter().flatten().map(|(callee, _)| callee));
            }
        }
        false
    }

    /// A function reached from `from` (itself included) that calls
    /// itself through calls, when there is one.
    fn recursive_from<'k>(&'k self, from: &'k Key) -> Option<&'k Key> {
        let mut seen = HashSet::new();
        let mut todo = vec![from];
        while let Some(key) = todo.pop() {
            if !seen.insert(key) {
                continue;
            }
            let callees = self.calls.get(key).into_iter().flatten().map(|(callee, _)| callee);
            if callees.clone().any(|callee| self.reaches(callee, key)) {
                return Some(key);
            }
            todo.extend(callees);
        }
        None
    }

    /// Every device function's summary: summaries only grow (a function
    /// becomes collective, a parameter governing), so rounds until nothing
    /// changes end.
    fn summaries(&self, db: &dyn Db) -> HashMap<Key, Summary> {
        let devices: Vec<&Key> = self
            .calls
            .keys()
            .filter(|(file, name)| db::signature(db, FnId::new(db, *file, name.clone())).kind == FnKind::Device)
            .collect();
        let mut summaries: HashMap<Key, Summary> = devices.iter().map(|&k| (k.clone(), Summary::default())).collect();
        for _ in 0..=devices.len() {
            let mut changed = false;
            for &key in &devices {
                let Some(parts) = body(db, key) else { continue };
                let lookup = |target: &CallTarget| match target {
                    CallTarget::Function { file, name } => summaries.get(&(*file, name.clone())).cloned(),
                    CallTarget::Builtin(_) => None,
                };
                let summary = barrier::summarize(&parts.ctx(), &lookup);
                if summaries.get(key) != Some(&summary) {
                    summaries.insert(key.clone(), summary);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        summaries
    }
}

/// What a function's [`BodyCtx`] is made of.
struct Body<'a> {
    db: &'a dyn Db,
    file: SourceFile,
    def: &'a tessera_syntax::ast::FnDef,
    sig: &'a crate::signature::Signature,
    info: &'a crate::body::BodyInfo,
}

impl<'a> Body<'a> {
    fn ctx(&self) -> BodyCtx<'a> {
        BodyCtx::new(self.db, self.file, self.def, self.sig, self.info)
    }
}

fn body<'a>(db: &'a dyn Db, key: &Key) -> Option<Body<'a>> {
    let func = FnId::new(db, key.0, key.1.clone());
    Some(Body {
        db,
        file: key.0,
        def: db::fn_ast(db, func).as_deref()?,
        sig: db::signature(db, func),
        info: db::infer(db, func),
    })
}

/// E0216: a call that leads back to its caller, or (`cycle`) into a
/// recursive function of another file.
fn recursive_call(caller: &Key, callee: &Key, kind: FnKind, span: Span, cycle: Option<&Key>) -> Diagnostic {
    let label = match cycle {
        Some(f) if f == callee => format!("`{}` calls itself", callee.1),
        Some(f) => format!("`{}` leads to `{}`, which calls itself", callee.1, f.1),
        None if caller == callee => format!("`{}` calls itself here", caller.1),
        None => format!("`{}` leads back to `{}`", callee.1, caller.1),
    };
    let what = if kind == FnKind::Device {
        "device function"
    } else {
        "function"
    };
    let name = cycle.map_or(&callee.1, |f| &f.1);
    Diagnostic::error(
        Code::E0216,
        format!("{what} `{name}` is called recursively from kernel code"),
    )
    .with_primary(relative(span, 0), label)
    .with_note(
        "functions that kernel code calls are inlined into the kernels, and inlining a recursive call would not end",
    )
    .with_help("write the recursion as a loop")
}
