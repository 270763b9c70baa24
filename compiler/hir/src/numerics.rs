use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};
use tessera_syntax::ast::Expr;

use crate::body::BodyCtx;
use crate::db::relative;
use crate::ty::DType;

pub(crate) fn check(_ctx: &BodyCtx) -> Vec<Diagnostic> {
    Vec::new()
}

/// An implicit float downcast, with the fix that makes it explicit.
pub(crate) fn implicit_downcast(value: &Expr, from: DType, to: DType) -> Diagnostic {
    let text = crate::pretty::expr(value);
    Diagnostic::error(Code::E0702, format!("implicit downcast from {from} to {to}"))
        .with_primary(relative(value.span, 0), format!("this {from} value would be rounded to {to}"))
        .with_help("make the conversion explicit, with its rounding mode")
        .with_fix(
            Fix::new(format!("cast to {to} with round-to-nearest-even"), Applicability::MachineApplicable)
                .with_edit(relative(value.span, 0), format!("cast({text}, {to}, rounding=\"nearest_even\")")),
        )
}
