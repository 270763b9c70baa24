//! The one error type of the runtime: what went wrong, with the stable
//! diagnostic code the user sees. The host interpreter turns it into a
//! [`Diagnostic`] at the span of the statement that failed.

use std::fmt;

use tessera_base::{FileId, FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};

/// An error of the runtime: a device, a launch, a file, a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    pub code: Code,
    pub message: String,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// The places in the source that the error concerns (the first is where
    /// it happened), each with its label.
    pub sites: Vec<Site>,
}

/// A place in the source that a [`RunError`] concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The file's path as the compiler names it; None: the file of the
    /// statement the error is reported at.
    pub file: Option<String>,
    pub span: Span,
    pub label: String,
}

impl RunError {
    pub fn new(code: Code, message: impl Into<String>) -> RunError {
        RunError {
            code,
            message: message.into(),
            notes: Vec::new(),
            help: None,
            sites: Vec::new(),
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> RunError {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> RunError {
        self.help = Some(help.into());
        self
    }

    /// A place in the file of the statement the error is reported at.
    pub fn with_site(self, span: Span, label: impl Into<String>) -> RunError {
        self.with_site_in(None, span, label)
    }

    /// A place in the file `file` names (None: the statement's file).
    pub fn with_site_in(mut self, file: Option<String>, span: Span, label: impl Into<String>) -> RunError {
        self.sites.push(Site {
            file,
            span,
            label: label.into(),
        });
        self
    }

    /// No driver or no device: names the fallback.
    pub fn device_unavailable(message: impl Into<String>) -> RunError {
        RunError::new(Code::E1001, message).with_help("run on the CPU with `--device cpu`")
    }

    /// A launch that could not start or did not complete.
    pub fn launch(message: impl Into<String>) -> RunError {
        RunError::new(Code::E1008, message)
    }

    /// A bad value: a negative size, a division by zero, an unknown dtype.
    pub fn value(message: impl Into<String>) -> RunError {
        RunError::new(Code::E1009, message)
    }

    /// The diagnostic reported at `span` (or without a location), its sites
    /// in the file of `span`: [`RunError::to_diagnostic_in`] without other
    /// files.
    pub fn to_diagnostic(&self, span: Option<(FileSpan, String)>) -> Diagnostic {
        self.to_diagnostic_in(span, |_| None)
    }

    /// The diagnostic reported at `span` (or without a location); `file_of`
    /// gives the id of a site's file from its path. The place in a kernel
    /// where the error happened comes first, the other sites next and the
    /// launch (or call) that ran it last; a site whose file has no id
    /// becomes a note, so it is never lost.
    pub fn to_diagnostic_in(
        &self,
        span: Option<(FileSpan, String)>,
        file_of: impl Fn(&str) -> Option<FileId>,
    ) -> Diagnostic {
        let mut d = Diagnostic::error(self.code, self.message.clone());
        let mut primary = false;
        for site in &self.sites {
            let file = match &site.file {
                Some(path) => file_of(path),
                None => span.as_ref().map(|(s, _)| s.file),
            };
            match file {
                Some(file) => {
                    let at = FileSpan { file, span: site.span };
                    d = if primary {
                        d.with_secondary(at, site.label.clone())
                    } else {
                        d.with_primary(at, site.label.clone())
                    };
                    primary = true;
                }
                None => {
                    let path = site.file.as_deref().unwrap_or("the source");
                    d = d.with_note(format!(
                        "{}: {path}, bytes {}..{}",
                        site.label, site.span.start, site.span.end
                    ));
                }
            }
        }
        if let Some((span, label)) = span {
            d = if primary {
                d.with_secondary(span, label)
            } else {
                d.with_primary(span, label)
            };
        }
        for note in &self.notes {
            d = d.with_note(note.clone());
        }
        if let Some(help) = &self.help {
            d = d.with_help(help.clone());
        }
        d
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)?;
        for note in &self.notes {
            write!(f, "\n  note: {note}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RunError {}
