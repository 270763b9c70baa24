//! A compact, stable text form of the tree: statements one per line,
//! expressions as S-expressions. Used by tests and `tessera parse`.

use std::fmt::Write;

use crate::ast::*;

/// Renders a module as indented S-expressions.
pub fn dump(module: &Module) -> String {
    let mut out = String::new();
    for stmt in &module.body {
        write_stmt(&mut out, stmt, 0);
    }
    out
}

fn line(out: &mut String, depth: usize, text: &str) {
    let _ = writeln!(out, "{}{text}", "  ".repeat(depth));
}

fn write_block(out: &mut String, header: &str, block: &Block, depth: usize) {
    line(out, depth, header);
    for stmt in &block.stmts {
        write_stmt(out, stmt, depth + 1);
    }
}

fn write_stmt(out: &mut String, stmt: &Stmt, depth: usize) {
    match &stmt.kind {
        StmtKind::Expr(e) => line(out, depth, &expr(e)),
        StmtKind::Assign { targets, value } => {
            let targets: Vec<String> = targets.iter().map(expr).collect();
            line(out, depth, &format!("(= {} {})", targets.join(" "), expr(value)));
        }
        StmtKind::AnnAssign { target, ty, value } => {
            let value = value.as_ref().map_or(String::new(), |v| format!(" {}", expr(v)));
            line(out, depth, &format!("(: {} {}{value})", expr(target), type_(ty)));
        }
        StmtKind::AugAssign { target, op, value } => {
            line(
                out,
                depth,
                &format!("({}= {} {})", op.symbol(), expr(target), expr(value)),
            );
        }
        StmtKind::If { branches, orelse } => {
            for (i, branch) in branches.iter().enumerate() {
                let word = if i == 0 { "if" } else { "elif" };
                write_block(out, &format!("{word} {}", expr(&branch.cond)), &branch.body, depth);
            }
            if let Some(orelse) = orelse {
                write_block(out, "else", orelse, depth);
            }
        }
        StmtKind::For { target, iter, body } => {
            write_block(out, &format!("for {} in {}", expr(target), expr(iter)), body, depth);
        }
        StmtKind::While { cond, body } => write_block(out, &format!("while {}", expr(cond)), body, depth),
        StmtKind::With { items, body } => {
            let items: Vec<String> = items
                .iter()
                .map(|i| match &i.alias {
                    Some(a) => format!("{} as {}", expr(&i.expr), a.name),
                    None => expr(&i.expr),
                })
                .collect();
            write_block(out, &format!("with {}", items.join(", ")), body, depth);
        }
        StmtKind::Def(def) => write_def(out, def, depth),
        StmtKind::Return(value) => match value {
            Some(v) => line(out, depth, &format!("return {}", expr(v))),
            None => line(out, depth, "return"),
        },
        StmtKind::Break => line(out, depth, "break"),
        StmtKind::Continue => line(out, depth, "continue"),
        StmtKind::Pass => line(out, depth, "pass"),
        StmtKind::Del(targets) => {
            let targets: Vec<String> = targets.iter().map(expr).collect();
            line(out, depth, &format!("del {}", targets.join(", ")));
        }
        StmtKind::Assert { cond, message } => {
            let message = message.as_ref().map_or(String::new(), |m| format!(" {}", expr(m)));
            line(out, depth, &format!("assert {}{message}", expr(cond)));
        }
        StmtKind::Import(paths) => {
            let paths: Vec<String> = paths.iter().map(|p| aliased(&path(&p.path), &p.alias)).collect();
            line(out, depth, &format!("import {}", paths.join(", ")));
        }
        StmtKind::FromImport { module, names } => {
            let names: Vec<String> = names.iter().map(|n| aliased(&n.name.name, &n.alias)).collect();
            line(
                out,
                depth,
                &format!("from {} import {}", path(module), names.join(", ")),
            );
        }
        StmtKind::Error(children) => {
            line(out, depth, "<error>");
            for child in children {
                write_stmt(out, child, depth + 1);
            }
        }
    }
}

fn write_def(out: &mut String, def: &FnDef, depth: usize) {
    for deco in &def.decorators {
        let clauses: Vec<String> = deco.clauses.iter().map(expr).collect();
        line(out, depth, &format!("@ {}", clauses.join(" ")));
    }
    let params: Vec<String> = def
        .params
        .iter()
        .map(|p| {
            let mut s = p.name.name.clone();
            if p.mutable.is_some() {
                s.push_str(" mut");
            }
            if let Some(ty) = &p.ty {
                let _ = write!(s, " {}", type_(ty));
            }
            if let Some(d) = &p.default {
                let _ = write!(s, " = {}", expr(d));
            }
            format!("({s})")
        })
        .collect();
    let mut header = format!("def {} [{}]", def.name.name, params.join(" "));
    if let Some(ret) = &def.ret {
        let _ = write!(header, " -> {}", type_(ret));
    }
    if let Some(effects) = &def.effects {
        let names: Vec<&str> = effects.effects.iter().map(|e| e.name.as_str()).collect();
        let _ = write!(header, " effects({})", names.join(", "));
    }
    if let Some(clause) = &def.where_clause {
        let cs: Vec<String> = clause.constraints.iter().map(expr).collect();
        let _ = write!(header, " where {}", cs.join(" "));
    }
    write_block(out, &header, &def.body, depth);
}

fn aliased(name: &str, alias: &Option<Ident>) -> String {
    match alias {
        Some(a) => format!("{name} as {}", a.name),
        None => name.to_string(),
    }
}

fn path(p: &Path) -> String {
    p.segments.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(".")
}

fn type_(ty: &Type) -> String {
    match &ty.kind {
        TypeKind::Named { space, name, dims } => {
            let mut s = String::new();
            if let Some(space) = space {
                let _ = write!(s, "{} ", space.name);
            }
            s.push_str(&name.name);
            if let Some(dims) = dims {
                let dims: Vec<String> = dims.iter().map(expr).collect();
                let _ = write!(s, "[{}]", dims.join(", "));
            }
            s
        }
        TypeKind::Tuple(items) => {
            let items: Vec<String> = items.iter().map(type_).collect();
            format!("({})", items.join(", "))
        }
        TypeKind::None => "None".to_string(),
    }
}

fn list(head: &str, items: &[Expr]) -> String {
    let mut s = format!("({head}");
    for item in items {
        let _ = write!(s, " {}", expr(item));
    }
    s.push(')');
    s
}

fn args(head: &str, callee: &Expr, args: &[Arg]) -> String {
    let mut s = format!("({head} {}", expr(callee));
    for arg in args {
        match &arg.name {
            Some(name) => {
                let _ = write!(s, " {}={}", name.name, expr(&arg.value));
            }
            None => {
                let _ = write!(s, " {}", expr(&arg.value));
            }
        }
    }
    s.push(')');
    s
}

fn opt(e: &Option<Box<Expr>>) -> String {
    e.as_ref().map_or("_".to_string(), |e| expr(e))
}

/// One expression as an S-expression.
pub(crate) fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{:?}", v.get()),
        ExprKind::Size(v) => format!("{v}B"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ExprKind::None => "None".to_string(),
        ExprKind::Tuple(items) => list("tuple", items),
        ExprKind::List(items) => list("list", items),
        ExprKind::Dict(entries) => {
            let mut s = "(dict".to_string();
            for (k, v) in entries {
                let _ = write!(s, " ({} {})", expr(k), expr(v));
            }
            s.push(')');
            s
        }
        ExprKind::Paren(inner) => format!("(paren {})", expr(inner)),
        ExprKind::Unary { op, operand } => format!("({} {})", op.symbol(), expr(operand)),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), expr(lhs), expr(rhs))
        }
        ExprKind::Range { start, end, inclusive } => {
            let op = if *inclusive { "..=" } else { ".." };
            format!("({op} {} {})", expr(start), expr(end))
        }
        ExprKind::IfElse { cond, then, orelse } => {
            format!("(if {} {} {})", expr(cond), expr(then), expr(orelse))
        }
        ExprKind::Call { callee, args: a } => args("call", callee, a),
        ExprKind::Subscript { base, args: a } => args("index", base, a),
        ExprKind::Attr { base, name } => format!("(. {} {})", expr(base), name.name),
        ExprKind::Slice { lower, upper, step } => {
            format!("(slice {} {} {})", opt(lower), opt(upper), opt(step))
        }
        ExprKind::Comp {
            kind,
            elt,
            value,
            clauses,
        } => {
            let head = match kind {
                CompKind::List => "listcomp",
                CompKind::Dict => "dictcomp",
                CompKind::Generator => "genexp",
            };
            let mut s = format!("({head} {}", expr(elt));
            if let Some(value) = value {
                let _ = write!(s, " {}", expr(value));
            }
            for c in clauses {
                let _ = write!(s, " (for {} {}", expr(&c.target), expr(&c.iter));
                for cond in &c.conds {
                    let _ = write!(s, " (if {})", expr(cond));
                }
                s.push(')');
            }
            s.push(')');
            s
        }
        ExprKind::Error => "<error>".to_string(),
    }
}
