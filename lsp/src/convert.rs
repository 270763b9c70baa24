//! Between the compiler's terms and the protocol's: byte offsets and UTF-16
//! positions (always through a file's [`LineIndex`]), and the one
//! [`Diagnostic`] model turned into LSP diagnostics and quick fixes.

use std::collections::HashMap;
use std::str::FromStr;

use tessera_base::{FileId, FileSpan, LineCol, LineIndex, Span};
use tessera_diagnostics::{Applicability, Diagnostic, Fix, Severity};
use tower_lsp_server::ls_types::{self as lsp, Position, Range, Uri};

use crate::workspace::Snapshot;

/// The byte offset of a position; out-of-range positions clamp.
pub fn offset(index: &LineIndex, pos: Position) -> u32 {
    index.offset_utf16(LineCol {
        line: pos.line,
        col: pos.character,
    })
}

pub fn position(index: &LineIndex, offset: u32) -> Position {
    let lc = index.line_col_utf16(offset);
    Position::new(lc.line, lc.col)
}

pub fn range(index: &LineIndex, span: Span) -> Range {
    Range::new(position(index, span.start), position(index, span.end))
}

/// Where a span of any file of the snapshot is, when that file has a URI.
pub fn location(snapshot: &Snapshot, span: FileSpan) -> Option<lsp::Location> {
    let uri = snapshot.uri(span.file)?.clone();
    let index = snapshot.line_index(span.file);
    Some(lsp::Location::new(uri, range(&index, span.span)))
}

/// The URI under which a code's `--explain` text is served: the VS Code
/// extension opens it through the `tessera/explain` request.
pub fn explain_uri(code: &str) -> Option<Uri> {
    Uri::from_str(&format!("tessera-explain:{code}.md")).ok()
}

/// A compiler diagnostic of `file` as the protocol shows it: the message
/// with the primary label, notes and help below it; secondary labels as
/// related information; the code linked to its explanation.
pub fn diagnostic(snapshot: &Snapshot, file: FileId, index: &LineIndex, diag: &Diagnostic) -> lsp::Diagnostic {
    let at = diag
        .primary_span()
        .filter(|s| s.file == file)
        .or_else(|| diag.labels.iter().map(|l| l.span).find(|s| s.file == file))
        .map_or(Span::empty(0), |s| s.span);
    let mut message = diag.message.clone();
    // A label that says what the title says is not said twice.
    let primary = diag.labels.iter().find(|l| l.primary && !l.message.is_empty());
    if let Some(label) = primary.filter(|l| l.message != diag.message) {
        message.push('\n');
        message.push_str(&label.message);
    }
    for note in &diag.notes {
        message.push_str("\nnote: ");
        message.push_str(note);
    }
    if let Some(help) = &diag.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = diag
        .labels
        .iter()
        .filter(|l| !l.primary)
        .filter_map(|l| {
            Some(lsp::DiagnosticRelatedInformation {
                location: location(snapshot, l.span)?,
                message: l.message.clone(),
            })
        })
        .collect();
    lsp::Diagnostic {
        range: range(index, at),
        severity: Some(match diag.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        }),
        code: Some(lsp::NumberOrString::String(diag.code.as_str().to_string())),
        code_description: explain_uri(diag.code.as_str()).map(|href| lsp::CodeDescription { href }),
        source: Some("tessera".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

/// The quick fixes for the diagnostics of `file` that touch `range`: each
/// fix-it of the compiler becomes a code action whose edit is the fix's
/// edits; machine-applicable ones are preferred.
pub fn code_actions(snapshot: &Snapshot, file: FileId, range: Range) -> Vec<lsp::CodeActionOrCommand> {
    let index = snapshot.line_index(file);
    let (start, end) = (offset(&index, range.start), offset(&index, range.end));
    let mut actions = Vec::new();
    for diag in snapshot.database().check(file) {
        let Some(at) = diag.primary_span().filter(|s| s.file == file) else {
            continue;
        };
        // Touching counts: a cursor right after the span asks for its fixes.
        if at.span.start > end || at.span.end < start {
            continue;
        }
        let shown = diagnostic(snapshot, file, &index, &diag);
        for fix in &diag.fixes {
            let Some(edit) = workspace_edit(snapshot, fix) else {
                continue;
            };
            actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: fix.message.clone(),
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![shown.clone()]),
                edit: Some(edit),
                command: None,
                is_preferred: Some(fix.applicability == Applicability::MachineApplicable),
                disabled: None,
                data: None,
            }));
        }
    }
    actions
}

fn workspace_edit(snapshot: &Snapshot, fix: &Fix) -> Option<lsp::WorkspaceEdit> {
    let mut changes: HashMap<Uri, Vec<lsp::TextEdit>> = HashMap::new();
    for edit in &fix.edits {
        let uri = snapshot.uri(edit.span.file)?.clone();
        let index = snapshot.line_index(edit.span.file);
        changes.entry(uri).or_default().push(lsp::TextEdit {
            range: range(&index, edit.span.span),
            new_text: edit.text.clone(),
        });
    }
    (!changes.is_empty()).then_some(lsp::WorkspaceEdit {
        changes: Some(changes),
        document_changes: None,
        change_annotations: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_clamp() {
        let index = LineIndex::new("a𝔸b\nxy");
        // `𝔸` is two UTF-16 units and four bytes.
        assert_eq!(offset(&index, Position::new(0, 3)), 5);
        assert_eq!(position(&index, 5), Position::new(0, 3));
        // Inside the surrogate pair: the next character boundary.
        assert_eq!(offset(&index, Position::new(0, 2)), 5);
        assert_eq!(offset(&index, Position::new(0, 99)), 6);
        assert_eq!(offset(&index, Position::new(9, 0)), 9);
        assert_eq!(
            range(&index, Span::new(7, 9)),
            Range::new(Position::new(1, 0), Position::new(1, 2))
        );
    }

    #[test]
    fn explain_links_parse() {
        let uri = explain_uri("E0205").expect("a valid URI");
        assert_eq!(uri.as_str(), "tessera-explain:E0205.md");
    }
}
