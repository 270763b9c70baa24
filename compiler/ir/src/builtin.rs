//! The builtin `func` dialect: functions, returns and calls. Every
//! registry has it; the other dialects live in their own crates.

use crate::{Arity, AttrDef, AttrKind, Dialect, Module, OpDef, OpId, Type, VerifyError, VerifyErrors, FUNC_OP};

pub(crate) struct FuncDialect;

const OPS: &[OpDef] = &[
    OpDef {
        name: FUNC_OP,
        doc: "a function: a symbol name, a signature and a body region whose arguments are the parameters",
        attrs: &[
            AttrDef::required(crate::SYM_NAME, AttrKind::Str),
            AttrDef::required(crate::FUNCTION_TYPE, AttrKind::Type),
            // What every layer says of a function (`spec/ir.md`, "Function
            // attributes"); the dialects state which are required where.
            AttrDef::optional("kind", AttrKind::Str),
            AttrDef::optional("effects", AttrKind::Array),
            AttrDef::optional("numerics", AttrKind::Str),
            AttrDef::optional("deterministic", AttrKind::Any),
            AttrDef::optional("constraints", AttrKind::Array),
            AttrDef::optional("guards", AttrKind::Array),
            AttrDef::optional("dims", AttrKind::Array),
            AttrDef::optional("mutable", AttrKind::Array),
            AttrDef::optional("block", AttrKind::Array),
            AttrDef::optional("any_block", AttrKind::Unit),
            AttrDef::optional("grid", AttrKind::Array),
            AttrDef::optional("shared_budget", AttrKind::Int),
            AttrDef::optional("shared_bytes", AttrKind::Int),
            AttrDef::optional("registers", AttrKind::Int),
            AttrDef::optional("cost", AttrKind::Dict),
            AttrDef::optional("threads", AttrKind::Int),
            AttrDef::optional("max_registers", AttrKind::Int),
            AttrDef::optional("warp_specialize", AttrKind::Bool),
            AttrDef::optional("layer", AttrKind::Str),
        ],
        regions: 1,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "func.return",
        doc: "returns its operands from the enclosing function",
        operands: Arity::VARIADIC,
        terminator: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "func.call",
        doc: "calls the function named by `callee` with its operands",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        attrs: &[AttrDef::required("callee", AttrKind::Symbol)],
        ..OpDef::DEFAULT
    },
];

impl Dialect for FuncDialect {
    fn name(&self) -> &str {
        "func"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        match m.op(op).name.op() {
            "func" if !m.is_function(op) => {
                errors.error(m, op, "`func.func` needs a string `sym_name` and a function type");
            }
            "return" => verify_return(m, op, errors),
            "call" => verify_call(m, op, errors),
            _ => {}
        }
    }
}

fn types_of(m: &Module, values: &[crate::ValueId]) -> Vec<Type> {
    values.iter().map(|&v| m.value_type(v).clone()).collect()
}

fn list(types: &[Type]) -> String {
    let parts: Vec<String> = types.iter().map(ToString::to_string).collect();
    format!("({})", parts.join(", "))
}

fn verify_return(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let Some(func) = m.parent_op(op).filter(|&f| m.is_function(f)) else {
        errors.push(
            VerifyError::at_op(m, op, "`func.return` outside a function body").with_label("not directly in a function"),
        );
        return;
    };
    let (_, expected) = m.func_type(func).expect("a function-like op has a type");
    let actual = types_of(m, m.operands(op));
    if actual != expected {
        errors.push(
            VerifyError::at_op(
                m,
                op,
                format!(
                    "`func.return` returns {} but the function declares {}",
                    list(&actual),
                    list(expected)
                ),
            )
            .with_label("these types differ from the signature")
            .with_related(m, func, "the function is declared here"),
        );
    }
}

fn verify_call(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let Some(callee) = m.attr(op, "callee").and_then(|a| a.as_symbol()) else {
        return;
    };
    let Some(func) = m.function(callee) else {
        errors.push(
            VerifyError::at_op(m, op, format!("call to undefined function `@{callee}`"))
                .with_label("no function of this name in the module"),
        );
        return;
    };
    let (inputs, results) = m.func_type(func).expect("a function has a type");
    let args = types_of(m, m.operands(op));
    let outs = types_of(m, m.results(op));
    if args != inputs || outs != results {
        errors.push(
            VerifyError::at_op(
                m,
                op,
                format!(
                    "call of `@{callee}` has type {} -> {} but the function is {} -> {}",
                    list(&args),
                    list(&outs),
                    list(inputs),
                    list(results)
                ),
            )
            .with_label("the types differ from the callee's signature")
            .with_related(m, func, "the callee is declared here"),
        );
    }
}
