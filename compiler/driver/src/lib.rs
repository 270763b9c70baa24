//! The compiler's front door: loads sources (the only file I/O in the
//! compiler), runs the pipeline over them and applies fixes.

mod database;
mod files;
mod fix;

pub use database::Database;
pub use files::{load, Input, LoadError, SourceFile, Sources, MAX_SOURCE_BYTES};
pub use fix::{apply_machine_fixes, FixOutcome};

use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;

/// How far `check` goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stage {
    /// Lexing, layout and parsing only.
    Syntax,
    /// Every check: names, types, shapes, effects, determinism, numerics.
    #[default]
    Full,
}

/// Everything the compiler reports about one file, in source order.
pub fn check_file(sources: &Sources, file: FileId) -> Vec<Diagnostic> {
    check_file_to(sources, file, Stage::Full)
}

/// What the compiler reports about one file up to `stage`.
pub fn check_file_to(sources: &Sources, file: FileId, stage: Stage) -> Vec<Diagnostic> {
    let source = sources.get(file);
    if stage == Stage::Syntax || !source.load_diagnostics.is_empty() {
        let mut diags = source.load_diagnostics.clone();
        if diags.is_empty() {
            diags = tessera_syntax::parse(file, &source.text).diagnostics;
        }
        return diags;
    }
    let mut db = Database::default();
    db.load(sources);
    db.check(file)
}
