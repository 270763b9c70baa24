//! One diagnostic model for the whole compiler, and its renderings.
//!
//! Every check in every layer reports a [`Diagnostic`]: a stable [`Code`], a
//! message, labelled spans, notes, one help line and fixes. The terminal
//! (ariadne), short and JSON renderings are made here and nowhere else; the
//! language server converts the same values into LSP types.

mod codes;
mod diagnostic;
mod fix;
mod render;

pub use codes::{Code, CodeInfo, CODES};
pub use diagnostic::{Diagnostic, Label, Severity};
pub use fix::{apply_edits, Applicability, Fix, TextEdit};
pub use render::{render_human, render_json, render_short, SourceLookup};
