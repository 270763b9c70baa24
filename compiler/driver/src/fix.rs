use tessera_base::FileId;
use tessera_diagnostics::{apply_edits, Applicability, Diagnostic};

use crate::Sources;

/// What applying fixes to one file did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FixOutcome {
    /// Edits applied.
    pub applied: usize,
    /// Edits skipped because they overlapped one already applied; a second
    /// run picks them up.
    pub skipped: usize,
}

/// Applies every machine-applicable fix among `diags` to the text of `file`
/// in `sources`. Returns what was done; the text is updated in place.
pub fn apply_machine_fixes(sources: &mut Sources, file: FileId, diags: &[Diagnostic]) -> FixOutcome {
    let fixes: Vec<_> = diags
        .iter()
        .flat_map(|d| &d.fixes)
        .filter(|f| f.applicability == Applicability::MachineApplicable)
        .filter(|f| f.edits.iter().all(|e| e.span.file == file))
        .collect();
    if fixes.is_empty() {
        return FixOutcome::default();
    }
    let edits: Vec<_> = fixes.iter().flat_map(|f| &f.edits).collect();
    let (text, skipped) = apply_edits(&sources.get(file).text, edits.iter().copied());
    sources.set_text(file, text);
    FixOutcome {
        applied: edits.len() - skipped,
        skipped,
    }
}
