use tessera_diagnostics::Diagnostic;

use crate::body::BodyCtx;

pub(crate) fn check(_ctx: &BodyCtx) -> Vec<Diagnostic> {
    Vec::new()
}
