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

/// Everything the compiler reports about one file, in source order.
pub fn check_file(sources: &Sources, file: FileId) -> Vec<Diagnostic> {
    let mut db = Database::default();
    db.load(sources);
    db.check(file)
}
