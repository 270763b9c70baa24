//! Inlay hints: the inferred type, with its shape, after each local's
//! first binding (`y = x @ w` shows `y: f32[M, N]`), unless it is annotated.

use tessera_base::Span;
use tessera_syntax::ast::{Stmt, StmtKind};
use tower_lsp_server::ls_types::{InlayHint, InlayHintKind, InlayHintLabel, Range, Uri};

use crate::analysis;
use crate::convert;
use crate::workspace::Snapshot;

pub fn inlay_hints(snapshot: &Snapshot, uri: &Uri, range: Range) -> Vec<InlayHint> {
    let Some(file) = snapshot.file_of(uri) else {
        return Vec::new();
    };
    let db = snapshot.db();
    let index = snapshot.line_index(file);
    // A reversed range is the range between its ends (it had given none).
    let (a, b) = (convert::offset(&index, range.start), convert::offset(&index, range.end));
    let (start, end) = (a.min(b), a.max(b));
    let mut hints = Vec::new();
    for func in analysis::functions(db, snapshot.source(file)) {
        let whole = func.absolute(func.def.span);
        if whole.end < start || whole.start > end {
            continue;
        }
        let mut annotated = Vec::new();
        annotated_targets(&func.def.body.stmts, &mut annotated);
        for (_, span, ty) in &func.body(db).locals {
            let at = func.absolute(*span).end;
            if ty.is_unknown() || annotated.contains(span) || at < start || at > end {
                continue;
            }
            hints.push(InlayHint {
                position: convert::position(&index, at),
                label: InlayHintLabel::String(format!(": {ty}")),
                kind: Some(InlayHintKind::TYPE),
                text_edits: None,
                tooltip: None,
                padding_left: Some(false),
                padding_right: Some(false),
                data: None,
            });
        }
    }
    hints
}

/// The targets of `x: T = ...` statements, which already say their type.
fn annotated_targets(stmts: &[Stmt], out: &mut Vec<Span>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::AnnAssign { target, .. } => out.push(target.span),
            StmtKind::If { branches, orelse } => {
                branches.iter().for_each(|b| annotated_targets(&b.body.stmts, out));
                if let Some(b) = orelse {
                    annotated_targets(&b.stmts, out);
                }
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::With { body, .. } => {
                annotated_targets(&body.stmts, out)
            }
            StmtKind::Error(children) => annotated_targets(children, out),
            _ => {}
        }
    }
}
