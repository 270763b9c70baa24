//! Source locations of IR ops, and how they become diagnostic labels.

use std::collections::HashMap;

use tessera_base::{FileId, FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};

/// Where an op comes from in the Tessera source: a byte span of a `.tsr`
/// file, printed `loc("examples/gemm.tsr":340..362)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Loc {
    #[default]
    Unknown,
    Source {
        file: String,
        start: u32,
        end: u32,
    },
}

impl Loc {
    pub fn source(file: impl Into<String>, span: Span) -> Loc {
        Loc::Source {
            file: file.into(),
            start: span.start,
            end: span.end,
        }
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Loc::Unknown)
    }

    /// The file path and span, when known.
    pub fn span(&self) -> Option<(&str, Span)> {
        match self {
            Loc::Unknown => None,
            Loc::Source { file, start, end } => Some((file, Span::new(*start, *end))),
        }
    }
}

/// Which [`FileId`] each source path has in the renderer's source lookup,
/// and which file holds the IR text ops were parsed from: the two places a
/// diagnostic about an op can point at.
#[derive(Clone, Debug, Default)]
pub struct FileMap {
    files: HashMap<String, FileId>,
    ir_file: Option<FileId>,
}

impl FileMap {
    pub fn new() -> FileMap {
        FileMap::default()
    }

    /// Registers the id of a `.tsr` file that locations name.
    pub fn insert(&mut self, path: impl Into<String>, file: FileId) {
        self.files.insert(path.into(), file);
    }

    /// Sets the file holding the IR text (for ops parsed from text).
    pub fn set_ir_file(&mut self, file: FileId) {
        self.ir_file = Some(file);
    }

    pub fn ir_file(&self) -> Option<FileId> {
        self.ir_file
    }

    /// The source span of a location, when its file is known.
    pub fn file_span(&self, loc: &Loc) -> Option<FileSpan> {
        let (path, span) = loc.span()?;
        Some(span.in_file(*self.files.get(path)?))
    }

    /// A diagnostic about a thing at `loc` (and at `text_span` of the IR
    /// text, when parsed). The primary label points into the `.tsr` file
    /// when its id is known, else into the IR text; a location whose file
    /// is not known becomes a note, so it is never lost.
    pub fn diagnostic(
        &self,
        code: Code,
        message: impl Into<String>,
        label: impl Into<String>,
        loc: &Loc,
        text_span: Option<Span>,
    ) -> Diagnostic {
        let mut diag = Diagnostic::error(code, message);
        let label = label.into();
        let in_ir = text_span.zip(self.ir_file).map(|(span, file)| span.in_file(file));
        match (self.file_span(loc), in_ir) {
            (Some(source), ir) => {
                diag = diag.with_primary(source, label);
                if let Some(ir) = ir {
                    diag = diag.with_secondary(ir, "in the IR here");
                }
            }
            (None, Some(ir)) => {
                diag = diag.with_primary(ir, label);
                if let Some((path, span)) = loc.span() {
                    diag = diag.with_note(format!("from {path}:{}..{}", span.start, span.end));
                }
            }
            (None, None) => {
                if let Some((path, span)) = loc.span() {
                    diag = diag.with_note(format!("at {path}:{}..{}", span.start, span.end));
                }
            }
        }
        diag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_prefer_the_source_file() {
        let mut files = FileMap::new();
        files.insert("a.tsr", FileId(3));
        files.set_ir_file(FileId(1));
        let loc = Loc::source("a.tsr", Span::new(4, 9));
        let d = files.diagnostic(Code::E0901, "bad", "here", &loc, Some(Span::new(0, 2)));
        assert_eq!(d.primary_span(), Some(Span::new(4, 9).in_file(FileId(3))));
        assert_eq!(d.labels.len(), 2);

        let other = Loc::source("b.tsr", Span::new(1, 2));
        let d = files.diagnostic(Code::E0901, "bad", "here", &other, Some(Span::new(0, 2)));
        assert_eq!(d.primary_span(), Some(Span::new(0, 2).in_file(FileId(1))));
        assert_eq!(d.notes, vec!["from b.tsr:1..2".to_string()]);
    }
}
