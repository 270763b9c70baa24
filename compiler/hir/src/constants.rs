//! Module constants: `BLOCK = 128` at the top level of a file, assigned
//! once, whose value is a literal or arithmetic of literals and earlier
//! constants. Kernels, types (`f32[BLOCK]`), `where` clauses, shared
//! allocations and the kernel header (`tile[(BLOCK,)]`) read them as the
//! values they are; the host interpreter evaluates the same statements.

use std::collections::HashMap;

use tessera_syntax::ast::{BinOp, Expr, ExprKind, FnDef, Stmt, StmtKind, UnaryOp, F64};

use crate::db::{self, Db, SourceFile};
use crate::poly::Poly;

/// The value of a module constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Constant {
    Int(i64),
    Float(F64),
    Bool(bool),
}

impl Constant {
    pub fn as_int(self) -> Option<i64> {
        match self {
            Constant::Int(v) => Some(v),
            _ => None,
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Constant::Int(v) => v as f64,
            Constant::Float(f) => f.get(),
            Constant::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

/// The module constants of `file`, in the order they are defined. A
/// constant may be computed from the constants the file imports (`DOUBLE
/// = ops.WIDTH * 2`).
#[salsa::tracked(returns(ref))]
pub fn constants(db: &dyn Db, file: SourceFile) -> Vec<(String, Constant)> {
    own_constants(db, file, &mut vec![file])
}

/// [`constants`] of `file`, its imports' evaluated first, but those of the
/// files in `visiting` (an import cycle back to them gives nothing): a
/// plain function, so that a cycle of imports is no cycle of queries.
fn own_constants(db: &dyn Db, file: SourceFile, visiting: &mut Vec<SourceFile>) -> Vec<(String, Constant)> {
    let imported = imported_constants(db, file, &mut |module| {
        if visiting.contains(&module) {
            return Vec::new();
        }
        visiting.push(module);
        let values = own_constants(db, module, visiting);
        visiting.pop();
        values
    });
    let mut values: Vec<(String, Constant)> = Vec::new();
    let mut assigned: HashMap<String, u32> = HashMap::new();
    for (_, stmt) in db::top_level(db, file) {
        let (targets, value): (Vec<&Expr>, Option<&Expr>) = match &stmt.kind {
            StmtKind::Assign { targets, value } => (targets.iter().collect(), Some(value)),
            StmtKind::AnnAssign { target, value, .. } => (vec![target], value.as_ref()),
            StmtKind::AugAssign { target, .. } => (vec![target], None),
            _ => continue,
        };
        for target in targets {
            let ExprKind::Name(name) = &target.kind else { continue };
            *assigned.entry(name.clone()).or_default() += 1;
            let env: HashMap<&str, Constant> = imported.iter().chain(&values).map(|(n, c)| (n.as_str(), *c)).collect();
            if let Some(c) = value.and_then(|v| evaluate(v, &env)) {
                values.push((name.clone(), c));
            }
        }
    }
    // A name assigned twice is a variable of the module, not a constant.
    values.retain(|(name, _)| assigned.get(name) == Some(&1));
    values
}

/// The constants `file` imports, each under the name its code reads it
/// by: one imported by name (`from sizes import N`) as `N`, those of a
/// module it imports under the dotted name the code writes (`sizes.N`,
/// `pkg.sizes.N`, `m.N` after `import pkg.sizes as m`, `sizes.N` after
/// `from pkg import sizes`). `of` gives a module's own constants.
fn imported_constants(
    db: &dyn Db,
    file: SourceFile,
    of: &mut dyn FnMut(SourceFile) -> Vec<(String, Constant)>,
) -> Vec<(String, Constant)> {
    let mut imported = Vec::new();
    for import in &db::item_tree(db, file).imports {
        if let Some(member) = &import.member {
            let named = crate::module::resolve_module(db, file, &import.module)
                .and_then(|module| of(module).into_iter().find(|(n, _)| n == member));
            if let Some((_, c)) = named {
                imported.push((import.binding.clone(), c));
                continue;
            }
        }
        let (path, prefix) = match &import.member {
            Some(member) => (format!("{}.{member}", import.module), &import.binding),
            None if import.module.split('.').next() == Some(&import.binding) => (import.module.clone(), &import.module),
            None => (import.module.clone(), &import.binding),
        };
        if let Some(module) = crate::module::resolve_module(db, file, &path) {
            imported.extend(of(module).into_iter().map(|(name, c)| (format!("{prefix}.{name}"), c)));
        }
    }
    imported
}

/// How many times the top level of `file` assigns `name`.
pub fn top_level_assignments(db: &dyn Db, file: SourceFile, name: &str) -> usize {
    db::top_level(db, file)
        .filter(|(_, stmt)| match &stmt.kind {
            StmtKind::Assign { targets, .. } => targets
                .iter()
                .any(|t| matches!(&t.kind, ExprKind::Name(n) if n == name)),
            StmtKind::AnnAssign { target, .. } | StmtKind::AugAssign { target, .. } => {
                matches!(&target.kind, ExprKind::Name(n) if n == name)
            }
            _ => false,
        })
        .count()
}

/// The constant `name` of `file`.
pub fn constant(db: &dyn Db, file: SourceFile, name: &str) -> Option<Constant> {
    constants(db, file).iter().find(|(n, _)| n == name).map(|(_, c)| *c)
}

/// The module constant `e` names in `file`: one of the file's own (`N`),
/// one imported by name (`from sizes import N`), or one of an imported
/// module (`sizes.N`, `pkg.sizes.N`). Locals are the caller's to rule out.
pub fn named_constant(db: &dyn Db, file: SourceFile, e: &Expr) -> Option<Constant> {
    match &e.unparen().kind {
        ExprKind::Name(n) => scoped(db, file, n),
        ExprKind::Attr { base, name } => {
            let module = module_path(db, file, base)?;
            constant(db, crate::module::resolve_module(db, file, &module)?, &name.name)
        }
        _ => None,
    }
}

/// The constants `file`'s code reads by name, in the order a lookup
/// tries them: its own (`N`), those it imports by name (`from sizes
/// import N`), and those of the modules it imports, each under the dotted
/// name the code writes (`sizes.N`, `pkg.sizes.N`, `m.N` after `import
/// pkg.sizes as m`, `sizes.N` after `from pkg import sizes`).
#[salsa::tracked(returns(ref))]
pub fn scope(db: &dyn Db, file: SourceFile) -> Vec<(String, Constant)> {
    let mut scope = constants(db, file).clone();
    scope.extend(imported_constants(db, file, &mut |module| {
        constants(db, module).clone()
    }));
    scope
}

/// The constant `name` (plain or dotted, as [`scope`] lists them) is in
/// `file`.
pub fn scoped(db: &dyn Db, file: SourceFile, name: &str) -> Option<Constant> {
    scope(db, file).iter().find(|(n, _)| n == name).map(|(_, c)| *c)
}

/// The dotted path of the module or package `e` names in `file`: a name
/// an `import` binds (`pkg` of `import pkg.mod`, `m` of `import pkg.mod as
/// m`, `mod` of `from pkg import mod`), or an attribute of one.
pub fn module_path(db: &dyn Db, file: SourceFile, e: &Expr) -> Option<String> {
    match &e.unparen().kind {
        ExprKind::Name(n) => binding_path(db, file, n),
        ExprKind::Attr { base, name } => Some(format!("{}.{}", module_path(db, file, base)?, name.name)),
        _ => None,
    }
}

/// The dotted path of the module or package an `import` of `file` binds
/// to `name`, as [`module_path`] reads a name.
pub fn binding_path(db: &dyn Db, file: SourceFile, name: &str) -> Option<String> {
    let tree = db::item_tree(db, file);
    let import = tree.imports.iter().find(|i| i.binding == name)?;
    Some(match &import.member {
        Some(member) => {
            let module = format!("{}.{member}", import.module);
            crate::module::resolve_module(db, file, &module)?;
            module
        }
        None if import.module.split('.').next() == Some(name) => name.to_string(),
        None => import.module.clone(),
    })
}

/// `p` with the integer constants of `file` put in for their names: its
/// own and those it imports ([`scope`]).
pub fn substitute(db: &dyn Db, file: SourceFile, p: &Poly) -> Poly {
    p.substitute(&|s| scoped(db, file, s).and_then(Constant::as_int).map(Poly::constant))
}

/// The sizes a function's body knows when it is compiled: the module
/// constants of its file, and its locals that hold constants. A local holds
/// one when the body assigns it exactly once (an augmented assignment, a
/// `for` target or a `with` alias counts as an assignment), with `NAME =
/// value` where the value is a constant expression of literals, module
/// constants and earlier such locals — `BLOCK = 128` in a kernel sizes
/// `tshared.alloc[f32](BLOCK)` as a module constant would. Any other local
/// shadows the module constant of its name.
pub struct Sizes {
    locals: HashMap<String, Option<Constant>>,
    module: Vec<(String, Constant)>,
}

impl Sizes {
    pub fn new(db: &dyn Db, file: SourceFile, def: &FnDef) -> Sizes {
        let module = scope(db, file).clone();
        let (assigned, values) = assignments(def);
        let mut env: HashMap<&str, Constant> = module.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let mut locals: HashMap<String, Option<Constant>> = assigned.keys().map(|n| ((*n).to_string(), None)).collect();
        for p in &def.params {
            env.remove(p.name.name.as_str());
            locals.insert(p.name.name.clone(), None);
        }
        for (name, value) in values {
            if assigned.get(name) != Some(&1) {
                continue;
            }
            if let Some(c) = evaluate(value, &env) {
                env.insert(name, c);
                locals.insert(name.to_string(), Some(c));
            } else {
                env.remove(name);
            }
        }
        Sizes { locals, module }
    }

    /// `p` with the integer constants the body knows put in for their names.
    pub fn substitute(&self, p: &Poly) -> Poly {
        p.substitute(&|s| {
            let value = match self.locals.get(s) {
                Some(local) => *local,
                None => self.module.iter().find(|(n, _)| n == s).map(|(_, c)| *c),
            };
            value.and_then(Constant::as_int).map(Poly::constant)
        })
    }
}

/// How many times the body of `def` assigns each of its locals, and its
/// plain `NAME = value` assignments in source order.
fn assignments(def: &FnDef) -> (HashMap<&str, u32>, Vec<(&str, &Expr)>) {
    let mut assigned: HashMap<&str, u32> = HashMap::new();
    for name in def.body.bound_names() {
        *assigned.entry(name).or_default() += 1;
    }
    let mut values = Vec::new();
    collect(&def.body.stmts, &mut assigned, &mut values);
    (assigned, values)
}

/// How many times the body of `def` assigns the local `name`.
pub fn local_assignments(def: &FnDef, name: &str) -> u32 {
    assignments(def).0.get(name).copied().unwrap_or(0)
}

/// The plain `NAME = value` assignments of `stmts`, nested blocks included,
/// in source order; augmented assignments add to `assigned`.
fn collect<'e>(stmts: &'e [Stmt], assigned: &mut HashMap<&'e str, u32>, values: &mut Vec<(&'e str, &'e Expr)>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    if let ExprKind::Name(n) = &t.kind {
                        values.push((n, value));
                    }
                }
            }
            StmtKind::AugAssign { target, .. } => {
                if let ExprKind::Name(n) = &target.kind {
                    *assigned.entry(n).or_default() += 1;
                }
            }
            StmtKind::Error(inner) => collect(inner, assigned, values),
            _ => {}
        }
        for nested in stmt.kind.blocks() {
            collect(&nested.stmts, assigned, values);
        }
    }
}

/// The value of an expression of literals only (`1.0 / 3.0`), computed
/// as Python computes it; None when it names anything, overflows or
/// divides by zero.
pub fn literal_value(e: &Expr) -> Option<Constant> {
    evaluate(e, &HashMap::new())
}

/// The value of a constant expression: literals, earlier constants, and
/// Python's arithmetic on them (integer overflow and division by zero make
/// no constant).
fn evaluate(e: &Expr, env: &HashMap<&str, Constant>) -> Option<Constant> {
    Some(match &e.kind {
        ExprKind::Int(v) => Constant::Int(i64::try_from(*v).ok()?),
        ExprKind::Size(v) => Constant::Int(i64::try_from(*v).ok()?),
        ExprKind::Float(f) => Constant::Float(*f),
        ExprKind::Bool(b) => Constant::Bool(*b),
        ExprKind::Name(n) => *env.get(n.as_str())?,
        ExprKind::Attr { .. } => *env.get(crate::signature::dotted_name(e)?.as_str())?,
        ExprKind::Paren(inner) => evaluate(inner, env)?,
        ExprKind::Unary { op, operand } => match (op, evaluate(operand, env)?) {
            (UnaryOp::Neg, Constant::Int(v)) => Constant::Int(v.checked_neg()?),
            (UnaryOp::Neg, Constant::Float(f)) => Constant::Float(F64::new(-f.get())),
            (UnaryOp::Pos, c @ (Constant::Int(_) | Constant::Float(_))) => c,
            (UnaryOp::Not, Constant::Bool(b)) => Constant::Bool(!b),
            (UnaryOp::Invert, Constant::Int(v)) => Constant::Int(!v),
            _ => return None,
        },
        ExprKind::Binary { op, lhs, rhs } => binary(*op, evaluate(lhs, env)?, evaluate(rhs, env)?)?,
        _ => return None,
    })
}

fn binary(op: BinOp, a: Constant, b: Constant) -> Option<Constant> {
    if let (Constant::Int(x), Constant::Int(y)) = (a, b) {
        return Some(Constant::Int(match op {
            BinOp::Add => x.checked_add(y)?,
            BinOp::Sub => x.checked_sub(y)?,
            BinOp::Mul => x.checked_mul(y)?,
            BinOp::FloorDiv => {
                let q = x.checked_div(y)?;
                if x % y != 0 && (x < 0) != (y < 0) {
                    q - 1
                } else {
                    q
                }
            }
            BinOp::Mod => {
                let r = x.checked_rem(y)?;
                if r != 0 && (r < 0) != (y < 0) {
                    r + y
                } else {
                    r
                }
            }
            // Python's `2 ** -1` is the float 0.5.
            BinOp::Pow if y < 0 => return Some(Constant::Float(F64::new((x as f64).powf(y as f64)))),
            BinOp::Pow => x.checked_pow(u32::try_from(y).ok()?)?,
            BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?)?,
            BinOp::Shr => x.checked_shr(u32::try_from(y).ok()?)?,
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            BinOp::Div => return Some(Constant::Float(F64::new(x as f64 / y as f64))).filter(|_| y != 0),
            _ => return None,
        }));
    }
    if matches!(a, Constant::Bool(_)) || matches!(b, Constant::Bool(_)) {
        return None;
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    let v = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div if y != 0.0 => x / y,
        BinOp::Pow => x.powf(y),
        _ => return None,
    };
    Some(Constant::Float(F64::new(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(op: BinOp, x: i64, y: i64) -> Option<i64> {
        binary(op, Constant::Int(x), Constant::Int(y)).and_then(Constant::as_int)
    }

    #[test]
    fn integer_division_floors_as_python_does() {
        for (x, y, q, r) in [
            (7, 2, 3, 1),
            (-7, 2, -4, 1),
            (7, -2, -4, -1),
            (-7, -2, 3, -1),
            (6, 3, 2, 0),
        ] {
            assert_eq!(int(BinOp::FloorDiv, x, y), Some(q), "{x} // {y}");
            assert_eq!(int(BinOp::Mod, x, y), Some(r), "{x} % {y}");
        }
        assert_eq!(int(BinOp::FloorDiv, 1, 0), None);
        assert_eq!(int(BinOp::Mul, i64::MAX, 2), None);
        assert_eq!(int(BinOp::Shl, 1, 10), Some(1024));
    }
}
