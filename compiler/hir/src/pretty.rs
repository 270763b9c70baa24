//! Expressions printed back as source text, for messages.

use tessera_syntax::ast::{CompKind, Expr, ExprKind, UnaryOp};

/// Binding strength, loosest first; used to decide where parentheses go.
fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::IfElse { .. } => 1,
        ExprKind::Binary { op, .. } => match op.symbol() {
            "or" => 2,
            "and" => 3,
            "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in" => 5,
            "|" => 7,
            "^" => 8,
            "&" => 9,
            "<<" | ">>" => 10,
            "+" | "-" => 11,
            "**" => 14,
            _ => 12,
        },
        ExprKind::Unary { op: UnaryOp::Not, .. } => 4,
        ExprKind::Range { .. } => 6,
        ExprKind::Unary { .. } => 13,
        _ => 15,
    }
}

fn wrap(e: &Expr, min: u8) -> String {
    let text = expr(e);
    if precedence(e) < min {
        format!("({text})")
    } else {
        text
    }
}

pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{:?}", v.get()),
        ExprKind::Size(v) => format!("{v}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.into(),
        ExprKind::None => "None".into(),
        ExprKind::Tuple(items) if items.len() == 1 => format!("({},)", expr(&items[0])),
        ExprKind::Tuple(items) => format!("({})", list(items)),
        ExprKind::List(items) => format!("[{}]", list(items)),
        ExprKind::Dict(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", expr(k), expr(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        ExprKind::Paren(inner) => format!("({})", expr(inner)),
        ExprKind::Unary { op, operand } => {
            let sep = if *op == UnaryOp::Not { " " } else { "" };
            format!("{}{sep}{}", op.symbol(), wrap(operand, precedence(e)))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = precedence(e);
            format!("{} {} {}", wrap(lhs, p), op.symbol(), wrap(rhs, p + 1))
        }
        ExprKind::Range { start, end, inclusive } => {
            format!(
                "{}{}{}",
                wrap(start, 7),
                if *inclusive { "..=" } else { ".." },
                wrap(end, 7)
            )
        }
        ExprKind::IfElse { cond, then, orelse } => {
            format!("{} if {} else {}", wrap(then, 2), wrap(cond, 2), expr(orelse))
        }
        ExprKind::Call { callee, args } => format!("{}({})", wrap(callee, 15), arg_list(args)),
        ExprKind::Subscript { base, args } => format!("{}[{}]", wrap(base, 15), arg_list(args)),
        ExprKind::Attr { base, name } => format!("{}.{}", wrap(base, 15), name.name),
        ExprKind::Slice { lower, upper, step } => {
            let part = |p: &Option<Box<Expr>>| p.as_ref().map_or(String::new(), |e| expr(e));
            match step {
                Some(s) => format!("{}:{}:{}", part(lower), part(upper), expr(s)),
                None => format!("{}:{}", part(lower), part(upper)),
            }
        }
        ExprKind::Comp {
            kind,
            elt,
            value,
            clauses,
        } => {
            let mut body = match value {
                Some(v) => format!("{}: {}", expr(elt), expr(v)),
                None => expr(elt),
            };
            for c in clauses {
                body += &format!(" for {} in {}", expr(&c.target), wrap(&c.iter, 2));
                for cond in &c.conds {
                    body += &format!(" if {}", wrap(cond, 2));
                }
            }
            match kind {
                CompKind::List => format!("[{body}]"),
                CompKind::Dict => format!("{{{body}}}"),
                CompKind::Generator => format!("({body})"),
            }
        }
        ExprKind::Error => "<error>".into(),
    }
}

fn list(items: &[Expr]) -> String {
    items.iter().map(expr).collect::<Vec<_>>().join(", ")
}

pub fn arg_list(args: &[tessera_syntax::ast::Arg]) -> String {
    args.iter()
        .map(|a| match &a.name {
            Some(n) => format!("{}={}", n.name, expr(&a.value)),
            None => expr(&a.value),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
