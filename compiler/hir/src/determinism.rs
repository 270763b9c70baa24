use tessera_base::Span;
use tessera_diagnostics::Diagnostic;

use crate::body::BodyCtx;

pub(crate) struct DeterminismResult {
    pub diagnostics: Vec<Diagnostic>,
    pub tree_reductions: Vec<Span>,
}

pub(crate) fn check(_ctx: &BodyCtx) -> DeterminismResult {
    DeterminismResult { diagnostics: Vec::new(), tree_reductions: Vec::new() }
}
