//! Rules on the shape of the tree that the grammar does not express:
//! `break`/`continue` only inside loops, `return` only inside functions.

use tessera_base::FileId;
use tessera_diagnostics::{Code, Diagnostic};

use crate::ast::{Block, Module, Stmt, StmtKind};

#[derive(Clone, Copy, Default)]
struct Scope {
    in_loop: bool,
    in_function: bool,
}

pub(crate) fn validate(file: FileId, module: &Module) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    stmts(file, &module.body, Scope::default(), &mut diags);
    diags
}

fn stmts(file: FileId, body: &[Stmt], scope: Scope, diags: &mut Vec<Diagnostic>) {
    for stmt in body {
        self::stmt(file, stmt, scope, diags);
    }
}

fn block(file: FileId, block: &Block, scope: Scope, diags: &mut Vec<Diagnostic>) {
    stmts(file, &block.stmts, scope, diags);
}

fn stmt(file: FileId, stmt: &Stmt, scope: Scope, diags: &mut Vec<Diagnostic>) {
    let at = stmt.span.in_file(file);
    match &stmt.kind {
        StmtKind::Break | StmtKind::Continue if !scope.in_loop => {
            let word = if stmt.kind == StmtKind::Break {
                "break"
            } else {
                "continue"
            };
            diags.push(
                Diagnostic::error(Code::E0038, format!("`{word}` outside a loop"))
                    .with_primary(at, "not inside a `for` or `while`"),
            );
        }
        StmtKind::Return(_) if !scope.in_function => diags
            .push(Diagnostic::error(Code::E0039, "`return` outside a function").with_primary(at, "not inside a `def`")),
        StmtKind::If { branches, orelse } => {
            branches.iter().for_each(|b| block(file, &b.body, scope, diags));
            if let Some(orelse) = orelse {
                block(file, orelse, scope, diags);
            }
        }
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
            block(file, body, Scope { in_loop: true, ..scope }, diags);
        }
        StmtKind::With { body, .. } => block(file, body, scope, diags),
        StmtKind::Def(def) => block(
            file,
            &def.body,
            Scope {
                in_loop: false,
                in_function: true,
            },
            diags,
        ),
        // The header that failed to parse may have been a `def` or a loop;
        // do not report what its body would be allowed to do.
        StmtKind::Error(children) => stmts(
            file,
            children,
            Scope {
                in_loop: true,
                in_function: true,
            },
            diags,
        ),
        _ => {}
    }
}
