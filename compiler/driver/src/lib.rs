//! The compiler's front door: loads sources (the only file I/O in the
//! compiler), runs the pipeline over them and applies fixes.

mod files;
mod fix;

pub use files::{load, Input, LoadError, SourceFile, Sources, MAX_SOURCE_BYTES};
pub use fix::{apply_machine_fixes, FixOutcome};

use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;

/// Everything the compiler reports about one file, in source order.
pub fn check_file(sources: &Sources, file: FileId) -> Vec<Diagnostic> {
    let source = sources.get(file);
    let mut diags = source.load_diagnostics.clone();
    if diags.is_empty() {
        diags.extend(tessera_syntax::parse(file, &source.text).diagnostics);
    }
    diags
}
