//! From the checked program to the first IR layers: operator-level
//! functions become Graph IR (`graph.*` ops on tensors), `@kernel`
//! functions become Tile IR directly (`tile.*` ops: thread mapping, memory,
//! synchronization, loops). Host functions (`main`, functions that launch
//! kernels or create tensors) are not device code and are not lowered: the
//! runtime runs them.
//!
//! Lowering runs only on a program that checked clean, so every type and
//! call it reads was resolved by `tessera-hir`. What the IR layers cannot
//! express yet is reported as E0903 at the construct, never dropped.

mod cx;
mod kernel;
mod operator;
mod visibility;

use std::collections::HashMap;

use tessera_diagnostics::Diagnostic;
use tessera_hir::body::CallTarget;
use tessera_hir::builtins::Context;
use tessera_hir::db::{self, Db, FnId, SourceFile};
use tessera_hir::effects::Effect;
use tessera_hir::signature::FnKind;
use tessera_hir::ty::Ty;
use tessera_ir::{Attr, Module};

pub use cx::{dim_of, scalar_of};

/// What a function becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnRole {
    /// Tile IR, launched by the host.
    Kernel,
    /// Inlined into the kernels that call it; not lowered on its own.
    Device,
    /// Graph IR, scheduled into kernels by the compiler.
    Operator,
    /// Run by the runtime on the host; not lowered.
    Host,
}

/// The role of a function of `file`.
pub fn role(db: &dyn Db, file: SourceFile, name: &str) -> FnRole {
    role_of(db, file, name, &mut Roles::default())
}

/// What [`role_of`] knows: the functions whose role is being decided (a
/// call back into one of them decides nothing: recursion) and the roles
/// decided so far (each function is looked at once, however many paths
/// of calls reach it).
#[derive(Default)]
struct Roles {
    visiting: Vec<(SourceFile, String)>,
    decided: HashMap<(SourceFile, String), FnRole>,
}

fn role_of(db: &dyn Db, file: SourceFile, name: &str, roles: &mut Roles) -> FnRole {
    let key = (file, name.to_string());
    if let Some(&known) = roles.decided.get(&key) {
        return known;
    }
    let func = FnId::new(db, file, name.to_string());
    let sig = db::signature(db, func);
    match sig.kind {
        FnKind::Kernel => return FnRole::Kernel,
        FnKind::Device => return FnRole::Device,
        FnKind::Function => {}
    }
    let info = db::infer(db, func);
    // A function of no tensors is a helper of host code (or, inlined, of a
    // kernel): an operator function computes tensors.
    let tensor = |t: &Ty| matches!(t, Ty::Tensor(_));
    let scalar_only = !sig.params.iter().any(|p| tensor(&p.ty)) && !tensor(&sig.ret);
    // Host work: a launch, a host-only builtin, input or output (`print`,
    // which kernels do too, but a plain function prints on the host), or a
    // call of a function that is host code itself.
    roles.visiting.push(key.clone());
    let host = name == "main"
        || sig.is_test
        || scalar_only
        || info.calls.iter().any(|c| {
            c.launched
                || match &c.target {
                    CallTarget::Builtin(b) => {
                        (b.context == Context::Host && b.namespace() != Some("dist")) || b.effects.contains(Effect::Io)
                    }
                    CallTarget::Function { file, name } => {
                        !roles.visiting.iter().any(|(f, n)| f == file && n == name)
                            && role_of(db, *file, name, roles) == FnRole::Host
                    }
                }
        });
    roles.visiting.pop();
    let role = if host { FnRole::Host } else { FnRole::Operator };
    roles.decided.insert(key, role);
    role
}

/// The operator functions of other files that the operator functions of
/// `file` call, directly or through each other, each once.
fn imported_operators(db: &dyn Db, file: SourceFile) -> Vec<FnId<'_>> {
    let mut seen: Vec<(SourceFile, String)> = Vec::new();
    let mut work: Vec<(SourceFile, String)> = db::item_tree(db, file)
        .functions
        .iter()
        .filter(|n| role(db, file, n) == FnRole::Operator)
        .map(|n| (file, n.clone()))
        .collect();
    while let Some((f, name)) = work.pop() {
        for call in &db::infer(db, FnId::new(db, f, name)).calls {
            let CallTarget::Function { file: callee, name } = &call.target else {
                continue;
            };
            let key = (*callee, name.clone());
            if *callee == file || seen.contains(&key) || role(db, *callee, name) != FnRole::Operator {
                continue;
            }
            seen.push(key.clone());
            work.push(key);
        }
    }
    seen.into_iter().map(|(f, name)| FnId::new(db, f, name)).collect()
}

/// Lowers the functions of a checked file into one module: operator
/// functions in Graph IR, kernels in Tile IR, and the operator functions
/// of imported modules that its operator functions call (directly or
/// through others), under their qualified names ([`cx::FnCx::symbol`]),
/// for the fusion to inline. The module's `target` is the database's.
pub fn lower_file(db: &dyn Db, file: SourceFile) -> Result<Module, Vec<Diagnostic>> {
    let path = file.path(db).clone();
    let stem = path
        .rsplit('/')
        .next()
        .unwrap_or(&path)
        .trim_end_matches(".tsr")
        .replace(['-', '.', ' '], "_");
    let mut module = Module::new(Some(&stem));
    let target = db.workspace().options(db).target;
    module.attrs.insert("target".into(), Attr::str(target.name()));
    let effects = tessera_hir::effect_check::inferred_effects(db, file);
    let mut errors = Vec::new();
    for name in &db::item_tree(db, file).functions {
        let func = FnId::new(db, file, name.clone());
        let Some(def) = db::fn_ast(db, func) else { continue };
        let mut cx = cx::FnCx::new(db, func, def, effects.get(name).copied().unwrap_or_default());
        match role(db, file, name) {
            FnRole::Kernel => kernel::lower(&mut cx, &mut module),
            FnRole::Operator => operator::lower(&mut cx, &mut module),
            FnRole::Device | FnRole::Host => {}
        }
        errors.extend(cx.errors);
    }
    for func in imported_operators(db, file) {
        let Some(def) = db::fn_ast(db, func) else { continue };
        let callee = func.file(db);
        let effects = tessera_hir::effect_check::inferred_effects(db, callee);
        let name = func.name(db);
        let mut cx = cx::FnCx::new(db, func, def, effects.get(name).copied().unwrap_or_default());
        cx.home = file;
        operator::lower(&mut cx, &mut module);
        errors.extend(cx.errors);
    }
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(errors)
    }
}
