use tessera_base::FileSpan;

use crate::{Code, Fix};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A labelled span. The primary label says where the problem is; secondary
/// labels point at what explains it (the declaration, the rule, the opener).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub span: FileSpan,
    pub message: String,
    pub primary: bool,
}

/// What the compiler has to say about a program.
///
/// Build one with [`Diagnostic::error`] and the `with_*` methods. The first
/// primary label is where the diagnostic is reported (line and column).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    pub fixes: Vec<Fix>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
            fixes: Vec::new(),
        }
    }

    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn with_primary(mut self, span: FileSpan, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }

    pub fn with_secondary(mut self, span: FileSpan, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Diagnostic {
        self.fixes.push(fix);
        self
    }

    /// The span the diagnostic is reported at: the first primary label, else
    /// the first label.
    pub fn primary_span(&self) -> Option<FileSpan> {
        self.labels
            .iter()
            .find(|l| l.primary)
            .or(self.labels.first())
            .map(|l| l.span)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Calls `f` on every span: labels and the edits of fixes.
    pub fn map_spans(&mut self, f: &mut dyn FnMut(&mut FileSpan)) {
        for label in &mut self.labels {
            f(&mut label.span);
        }
        for fix in &mut self.fixes {
            for edit in &mut fix.edits {
                f(&mut edit.span);
            }
        }
    }
}
