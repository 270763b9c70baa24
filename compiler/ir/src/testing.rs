//! The `test` dialect: a few ops that exercise the verifier framework and
//! the generic passes. Only tests use it (`tessera opt --test-dialect`
//! registers it for the IR corpus); no compiler pipeline does.

use crate::{Arity, AttrDef, AttrKind, Dialect, Module, OpDef, OpId, VerifyError, VerifyErrors};

/// `test`: constants, an addition whose operands and result share a type,
/// a side effect, a loop with a terminator, and an op whose custom rule
/// rejects negative values.
pub struct TestDialect;

const OPS: &[OpDef] = &[
    OpDef {
        name: "test.const",
        doc: "a constant",
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("value", AttrKind::Int)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.add",
        doc: "a sum of two values of one type",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::optional("fast", AttrKind::Unit)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.print",
        doc: "prints its operands",
        operands: Arity::AtLeast(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.loop",
        doc: "runs its region",
        operands: Arity::Exact(1),
        regions: 1,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.pure_region",
        doc: "a pure op with a region",
        results: Arity::Exact(1),
        regions: 1,
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.yield",
        doc: "ends a region",
        operands: Arity::VARIADIC,
        terminator: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "test.positive",
        doc: "holds a positive value",
        attrs: &[AttrDef::required("value", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
];

impl Dialect for TestDialect {
    fn name(&self) -> &str {
        "test"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        match m.op(op).name.op() {
            "add" => {
                let result = m.value_type(m.result(op, 0));
                if m.operands(op).iter().any(|&v| m.value_type(v) != result) {
                    errors.error(m, op, "`test.add` operands must have the result's type");
                }
            }
            "positive" if m.attr(op, "value").and_then(|a| a.as_int()).is_some_and(|v| v <= 0) => {
                errors.push(
                    VerifyError::at_op(m, op, "`test.positive` needs a positive value").with_label("not positive"),
                );
            }
            _ => {}
        }
    }
}
