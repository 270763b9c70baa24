use tessera_diagnostics::Diagnostic;

use crate::db::{Db, SourceFile};

pub(crate) fn check_effects(_db: &dyn Db, _file: SourceFile) -> Vec<Diagnostic> {
    Vec::new()
}
