//! The compiler's front door: loads sources (the only file I/O in the
//! compiler), runs the pipeline over them and applies fixes.

mod build;
mod database;
mod files;
mod fix;
pub mod tune;

pub use build::{
    check_and_lower, codegen_diagnostic, generate, lower_layers, lower_layers_tuned, passes, registry, Layer, Layers,
};
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

/// Everything the compiler reports about one file, in source order (a
/// one-off check; to check many files, load them into one [`Database`]).
pub fn check_file(sources: &Sources, file: FileId) -> Vec<Diagnostic> {
    let mut db = Database::default();
    db.load(sources);
    db.check_to(file, Stage::Full)
}
