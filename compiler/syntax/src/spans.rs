//! A walk over every span of a function definition, for moving them (the
//! database stores function bodies with spans relative to their start).

use tessera_base::Span;

use crate::ast::*;

/// Calls `f` on every span inside `def`, the definition's own included.
pub fn map_spans(def: &mut FnDef, f: &mut dyn FnMut(&mut Span)) {
    f(&mut def.span);
    for deco in &mut def.decorators {
        f(&mut deco.span);
        deco.clauses.iter_mut().for_each(|e| expr(e, f));
    }
    ident(&mut def.name, f);
    for param in &mut def.params {
        f(&mut param.span);
        ident(&mut param.name, f);
        if let Some(m) = &mut param.mutable {
            f(m);
        }
        if let Some(ty) = &mut param.ty {
            type_(ty, f);
        }
        if let Some(d) = &mut param.default {
            expr(d, f);
        }
    }
    if let Some(ret) = &mut def.ret {
        type_(ret, f);
    }
    if let Some(effects) = &mut def.effects {
        f(&mut effects.span);
        effects.effects.iter_mut().for_each(|i| ident(i, f));
    }
    if let Some(clause) = &mut def.where_clause {
        f(&mut clause.span);
        clause.constraints.iter_mut().for_each(|e| expr(e, f));
    }
    block(&mut def.body, f);
}

fn ident(i: &mut Ident, f: &mut dyn FnMut(&mut Span)) {
    f(&mut i.span);
}

fn block(b: &mut Block, f: &mut dyn FnMut(&mut Span)) {
    f(&mut b.span);
    b.stmts.iter_mut().for_each(|s| stmt(s, f));
}

/// Calls `f` on every span inside `s`, the statement's own included.
pub fn map_stmt_spans(s: &mut Stmt, f: &mut dyn FnMut(&mut Span)) {
    stmt(s, f)
}

fn stmt(s: &mut Stmt, f: &mut dyn FnMut(&mut Span)) {
    f(&mut s.span);
    match &mut s.kind {
        StmtKind::Expr(e) => expr(e, f),
        StmtKind::Assign { targets, value } => {
            targets.iter_mut().for_each(|t| expr(t, f));
            expr(value, f);
        }
        StmtKind::AnnAssign { target, ty, value } => {
            expr(target, f);
            type_(ty, f);
            if let Some(v) = value {
                expr(v, f);
            }
        }
        StmtKind::AugAssign { target, value, .. } => {
            expr(target, f);
            expr(value, f);
        }
        StmtKind::If { branches, orelse } => {
            for branch in branches {
                expr(&mut branch.cond, f);
                block(&mut branch.body, f);
            }
            if let Some(b) = orelse {
                block(b, f);
            }
        }
        StmtKind::For { target, iter, body } => {
            expr(target, f);
            expr(iter, f);
            block(body, f);
        }
        StmtKind::While { cond, body } => {
            expr(cond, f);
            block(body, f);
        }
        StmtKind::With { items, body } => {
            for item in items {
                expr(&mut item.expr, f);
                if let Some(a) = &mut item.alias {
                    ident(a, f);
                }
            }
            block(body, f);
        }
        StmtKind::Def(def) => map_spans(def, f),
        StmtKind::Return(v) => {
            if let Some(v) = v {
                expr(v, f);
            }
        }
        StmtKind::Del(targets) => targets.iter_mut().for_each(|t| expr(t, f)),
        StmtKind::Assert { cond, message } => {
            expr(cond, f);
            if let Some(m) = message {
                expr(m, f);
            }
        }
        StmtKind::Import(paths) => {
            for p in paths {
                path(&mut p.path, f);
                if let Some(a) = &mut p.alias {
                    ident(a, f);
                }
            }
        }
        StmtKind::FromImport { module, names } => {
            path(module, f);
            for n in names {
                ident(&mut n.name, f);
                if let Some(a) = &mut n.alias {
                    ident(a, f);
                }
            }
        }
        StmtKind::Error(children) => children.iter_mut().for_each(|s| stmt(s, f)),
        StmtKind::Break | StmtKind::Continue | StmtKind::Pass => {}
    }
}

fn path(p: &mut Path, f: &mut dyn FnMut(&mut Span)) {
    f(&mut p.span);
    p.segments.iter_mut().for_each(|i| ident(i, f));
}

fn type_(t: &mut Type, f: &mut dyn FnMut(&mut Span)) {
    f(&mut t.span);
    match &mut t.kind {
        TypeKind::Named { space, name, dims } => {
            if let Some(s) = space {
                ident(s, f);
            }
            ident(name, f);
            if let Some(dims) = dims {
                dims.iter_mut().for_each(|d| expr(d, f));
            }
        }
        TypeKind::Tuple(items) => items.iter_mut().for_each(|t| type_(t, f)),
        TypeKind::None => {}
    }
}

fn expr(e: &mut Expr, f: &mut dyn FnMut(&mut Span)) {
    f(&mut e.span);
    match &mut e.kind {
        ExprKind::Name(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Size(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Error => {}
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter_mut().for_each(|e| expr(e, f)),
        ExprKind::Dict(entries) => entries.iter_mut().for_each(|(k, v)| {
            expr(k, f);
            expr(v, f);
        }),
        ExprKind::Paren(inner) => expr(inner, f),
        ExprKind::Unary { operand, .. } => expr(operand, f),
        ExprKind::Binary { lhs, rhs, .. } => {
            expr(lhs, f);
            expr(rhs, f);
        }
        ExprKind::Range { start, end, .. } => {
            expr(start, f);
            expr(end, f);
        }
        ExprKind::IfElse { cond, then, orelse } => {
            expr(cond, f);
            expr(then, f);
            expr(orelse, f);
        }
        ExprKind::Call { callee, args } | ExprKind::Subscript { base: callee, args } => {
            expr(callee, f);
            for a in args {
                f(&mut a.span);
                if let Some(n) = &mut a.name {
                    ident(n, f);
                }
                expr(&mut a.value, f);
            }
        }
        ExprKind::Attr { base, name } => {
            expr(base, f);
            ident(name, f);
        }
        ExprKind::Slice { lower, upper, step } => {
            for part in [lower, upper, step].into_iter().flatten() {
                expr(part, f);
            }
        }
        ExprKind::Comp {
            elt, value, clauses, ..
        } => {
            expr(elt, f);
            if let Some(value) = value {
                expr(value, f);
            }
            for c in clauses {
                expr(&mut c.target, f);
                expr(&mut c.iter, f);
                c.conds.iter_mut().for_each(|e| expr(e, f));
            }
        }
    }
}
