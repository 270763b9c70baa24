//! The one error type of the runtime: what went wrong, with the stable
//! diagnostic code the user sees. The host interpreter turns it into a
//! [`Diagnostic`] at the span of the statement that failed.

use std::fmt;

use tessera_base::{FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};

/// An error of the runtime: a device, a launch, a file, a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    pub code: Code,
    pub message: String,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// A second place in the source that the error concerns, in the file of
    /// the statement it is reported at, with its label.
    pub site: Option<(Span, String)>,
}

impl RunError {
    pub fn new(code: Code, message: impl Into<String>) -> RunError {
        RunError {
            code,
            message: message.into(),
            notes: Vec::new(),
            help: None,
            site: None,
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

    pub fn with_site(mut self, span: Span, label: impl Into<String>) -> RunError {
        self.site = Some((span, label.into()));
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

    /// The diagnostic reported at `span` (or without a location).
    pub fn to_diagnostic(&self, span: Option<(FileSpan, String)>) -> Diagnostic {
        let mut d = Diagnostic::error(self.code, self.message.clone());
        // The place in a kernel where the error happened comes first; the
        // launch (or call) that ran it second.
        if let Some((span, label)) = span {
            match &self.site {
                Some((site, site_label)) => {
                    let site = FileSpan {
                        file: span.file,
                        span: *site,
                    };
                    d = d.with_primary(site, site_label.clone()).with_secondary(span, label);
                }
                None => d = d.with_primary(span, label),
            }
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
