//! The `graph` dialect: operator-level tensor ops (`spec/ir-graph.md`).
//!
//! Each op's rule checks shapes and dtypes; the rules of a whole function
//! (its `effects` and `numerics`, the token chain, effect coverage) run
//! once per function, on the first graph op of its body.

use std::collections::{HashMap, HashSet};

use tessera_ir::{
    Arity, Attr, AttrDef, AttrKind, Dialect, Dim, DimExpr, Module, OpDef, OpId, ScalarType, ShapeConstraint, Type,
    ValueDef, ValueId, VerifyError, VerifyErrors,
};

use crate::shape::{
    broadcast, call_binding, declared_effects, effect_of, function_dims, instantiate, is_compute, is_deterministic,
    known_equal, normalize_axis, num_elements, shape, show_shape, Layer, EFFECTS,
};

/// The `graph` dialect.
pub struct GraphDialect;

const fn req(name: &'static str, kind: AttrKind) -> AttrDef {
    AttrDef::required(name, kind)
}

const fn opt(name: &'static str, kind: AttrKind) -> AttrDef {
    AttrDef::optional(name, kind)
}

const OPS: &[OpDef] = &[
    OpDef {
        name: "graph.constant",
        doc: "a scalar constant (or a tensor filled with it)",
        results: Arity::Exact(1),
        attrs: &[req("value", AttrKind::Any)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.dim",
        doc: "the value of a dim of the function (`N`, `R*C`), as an integer",
        results: Arity::Exact(1),
        attrs: &[req("dim", AttrKind::Str)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.elementwise",
        doc: "an elementwise function of tensors and scalars, with NumPy broadcasting",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[req("fn", AttrKind::Str)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.matmul",
        doc: "matrix product over the last two dims, batch dims broadcast",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[req("accumulate", AttrKind::Type), opt("tile_shape", AttrKind::Array)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.reduce",
        doc: "a reduction over some axes",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[
            req("kind", AttrKind::Str),
            req("axes", AttrKind::Array),
            opt("keepdims", AttrKind::Bool),
            req("accumulate", AttrKind::Type),
            opt("order", AttrKind::Str),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.softmax",
        doc: "softmax along one axis; with `log`, its logarithm",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[
            opt("axis", AttrKind::Int),
            req("accumulate", AttrKind::Type),
            opt("log", AttrKind::Bool),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.cumsum",
        doc: "the inclusive cumulative sum along one axis, added in index order in `accumulate`",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[opt("axis", AttrKind::Int), req("accumulate", AttrKind::Type)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.attention",
        doc: "scaled dot-product attention `softmax(q·kᵀ·scale) · v` over the last two dims, optionally causal",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[
            opt("causal", AttrKind::Bool),
            opt("scale", AttrKind::Float),
            req("accumulate", AttrKind::Type),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.norm",
        doc: "layer or RMS normalization of the trailing dims from `axis`, with optional weight and bias",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[
            req("kind", AttrKind::Str),
            opt("axis", AttrKind::Int),
            opt("eps", AttrKind::Any),
            req("accumulate", AttrKind::Type),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.transpose",
        doc: "permutes the dims: result dim i is operand dim perm[i]",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[req("perm", AttrKind::Array)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.reshape",
        doc: "the same elements in row-major order under another shape (the result type's)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.concat",
        doc: "joins tensors along `axis`",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[req("axis", AttrKind::Int)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.cast",
        doc: "converts the element type, rounding as `rounding` says",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[opt("rounding", AttrKind::Str), opt("saturate", AttrKind::Unit)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.broadcast",
        doc: "stretches the operand to the result type's shape (NumPy broadcasting)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.slice",
        doc: "a window of the operand: along `axes`, from `starts` (or the index operands; from the end for a negative step) by `steps` (1s without), of the result's extent",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[
            opt("axes", AttrKind::Array),
            opt("starts", AttrKind::Array),
            opt("steps", AttrKind::Array),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.call",
        doc: "calls another operator function; a token in and out when the callee has effects",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        attrs: &[req("callee", AttrKind::Symbol)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.entry_token",
        doc: "the first token of a function's chain of side effects",
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.all_reduce",
        doc: "a collective reduction over a mesh axis (effect `collective`)",
        operands: Arity::Exact(2),
        results: Arity::Exact(2),
        attrs: &[
            opt("op", AttrKind::Str),
            opt("axis", AttrKind::Str),
            opt("algo", AttrKind::Str),
            opt("deterministic", AttrKind::Unit),
            opt("mesh_axes", AttrKind::Array),
            opt("mesh_shape", AttrKind::Array),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.rng",
        doc: "random numbers of the result's type (effect `random`): `uniform` in [0, 1), `normal`, or a `dropout` mask of probability `p` (0 or 1/(1 - p))",
        operands: Arity::Exact(1),
        results: Arity::Exact(2),
        attrs: &[
            req("dist", AttrKind::Str),
            opt("seed", AttrKind::Int),
            opt("stream", AttrKind::Str),
            opt("p", AttrKind::Float),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.print",
        doc: "prints its operands (effect `io`)",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[opt("format", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.guard",
        doc: "a runtime check of a shape constraint the checker could not prove",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[req("constraint", AttrKind::Str), opt("callee", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "graph.return",
        doc: "returns from an operator function",
        operands: Arity::VARIADIC,
        terminator: true,
        ..OpDef::DEFAULT
    },
];

/// The binary and unary functions of `graph.elementwise`.
pub const BINARY_FNS: [&str; 14] = [
    "add", "sub", "mul", "div", "max", "min", "pow", "floordiv", "rem", "and", "or", "xor", "shl", "shr",
];
/// The binary functions of `graph.elementwise` on integers (and bools) only.
pub const BITWISE_FNS: [&str; 6] = ["and", "or", "xor", "shl", "shr", "not"];
/// The comparisons of `graph.elementwise`: binary, giving `i1`.
pub const COMPARE_FNS: [&str; 6] = ["lt", "le", "gt", "ge", "eq", "ne"];
pub const UNARY_FNS: [&str; 19] = [
    "neg", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_erf", "silu", "sin",
    "cos", "floor", "ceil", "not", "erf",
];
const REDUCE_KINDS: [&str; 5] = ["sum", "mean", "max", "min", "prod"];

impl Dialect for GraphDialect {
    fn name(&self) -> &str {
        "graph"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        let mut v = Verifier { m, op, errors };
        v.layer();
        if let Some(func) = function_anchor(m, op) {
            verify_function(m, func, v.errors);
        }
        match m.op(op).name.op() {
            "constant" => v.constant(),
            "dim" => v.dim(),
            "elementwise" => v.elementwise(),
            "matmul" => v.matmul(),
            "reduce" => v.reduce(),
            "softmax" | "cumsum" => v.along_axis(),
            "attention" => v.attention(),
            "norm" => v.norm(),
            "transpose" => v.transpose(),
            "reshape" => v.reshape(),
            "concat" => v.concat(),
            "cast" => v.cast(),
            "broadcast" => v.broadcast(),
            "slice" => v.slice(),
            "call" => v.call(),
            "entry_token" => v.expect_type(m.result(op, 0), &Type::Token, "result"),
            "all_reduce" => v.all_reduce(),
            "rng" => v.rng(),
            "print" => {
                v.tokens();
            }
            "guard" => v.guard(),
            "return" => v.ret(),
            _ => {}
        }
    }
}

/// The function whose rules `op` carries: its first graph op.
fn function_anchor(m: &Module, op: OpId) -> Option<OpId> {
    let block = m.parent_block(op)?;
    let func = m.block_parent_op(block).filter(|&f| m.is_function(f))?;
    let first = m
        .block_ops(block)
        .iter()
        .copied()
        .find(|&o| m.op(o).name.dialect() == "graph")?;
    (first == op).then_some(func)
}

struct Verifier<'a, 'e> {
    m: &'a Module,
    op: OpId,
    errors: &'e mut VerifyErrors,
}

impl Verifier<'_, '_> {
    fn name(&self) -> &str {
        self.m.op(self.op).name.as_str()
    }

    fn error(&mut self, message: String, label: impl Into<String>) {
        let e = VerifyError::at_op(self.m, self.op, message).with_label(label);
        self.errors.push(e);
    }

    fn error_note(&mut self, message: String, label: impl Into<String>, note: impl Into<String>) {
        let e = VerifyError::at_op(self.m, self.op, message)
            .with_label(label)
            .with_note(note);
        self.errors.push(e);
    }

    fn ty(&self, v: ValueId) -> &Type {
        self.m.value_type(v)
    }

    fn operand(&self, i: usize) -> ValueId {
        self.m.operands(self.op)[i]
    }

    fn result(&self) -> ValueId {
        self.m.result(self.op, 0)
    }

    fn str_attr(&self, name: &str) -> Option<&str> {
        self.m.attr(self.op, name).and_then(Attr::as_str)
    }

    fn int_attr(&self, name: &str) -> Option<i64> {
        self.m.attr(self.op, name).and_then(Attr::as_int)
    }

    /// The module's layer decides where graph ops may be.
    fn layer(&mut self) {
        let m = self.m;
        match Layer::of(m) {
            Err(bad) => {
                if function_anchor(m, self.op).is_some() {
                    self.error_note(
                        format!("unknown layer {bad} in the module's `layer`"),
                        "in this module",
                        "the layers are \"graph\", \"schedule\", \"tile\" and \"target\"",
                    );
                }
            }
            Ok(Layer::Tile | Layer::Target) => {
                let layer = Layer::of(m).map(Layer::name).unwrap_or_default();
                self.error(
                    format!("`{}` in a module whose `layer` is \"{layer}\"", self.name()),
                    "graph ops do not survive the lowering to Tile IR",
                );
            }
            Ok(Layer::Schedule) if is_compute(self.name()) && !inside_kernel(m, self.op) => {
                self.error_note(
                    format!("`{}` outside a `schedule.kernel` in Schedule IR", self.name()),
                    "a compute op at the function level",
                    "with `layer = \"schedule\"` every compute op runs in a kernel; `fuse` groups them",
                );
            }
            Ok(_) => {}
        }
    }

    /// `ty` must be exactly `expected`.
    fn expect_type(&mut self, v: ValueId, expected: &Type, what: &str) {
        let actual = self.ty(v).clone();
        if actual != *expected {
            self.error(
                format!("the {what} of `{}` must be {expected}, not {actual}", self.name()),
                "wrong type",
            );
        }
    }

    /// The shape and element type of a tensor or scalar value.
    fn shaped(&mut self, v: ValueId, what: &str) -> Option<(Vec<Dim>, ScalarType)> {
        let ty = self.ty(v).clone();
        match (shape(&ty), ty.elem()) {
            (Some(dims), Some(elem)) => Some((dims.to_vec(), elem)),
            _ => {
                self.error(
                    format!("the {what} of `{}` must be a tensor or a scalar, not {ty}", self.name()),
                    "not a tensor",
                );
                None
            }
        }
    }

    fn tensor(&mut self, v: ValueId, what: &str) -> Option<(Vec<Dim>, ScalarType)> {
        let ty = self.ty(v).clone();
        match ty {
            Type::Tensor { dims, elem } => Some((dims, elem)),
            _ => {
                self.error(
                    format!("the {what} of `{}` must be a tensor, not {ty}", self.name()),
                    "not a tensor",
                );
                None
            }
        }
    }

    /// The result must have `dims` and `elem` (a scalar when `dims` is empty
    /// and `scalar_ok`).
    fn expect_result(&mut self, dims: &[Dim], elems: &[ScalarType]) {
        let ty = self.ty(self.result()).clone();
        let ok_shape = shape(&ty).is_some_and(|d| d == dims);
        let ok_elem = ty.elem().is_some_and(|e| elems.contains(&e));
        if !ok_shape || !ok_elem || matches!(ty, Type::Scalar(_)) && !dims.is_empty() {
            let mut elem_names: Vec<&str> = elems.iter().map(|e| e.name()).collect();
            elem_names.dedup();
            self.error(
                format!(
                    "`{}` gives shape {} of {}, but its result type is {ty}",
                    self.name(),
                    show_shape(dims),
                    elem_names.join(" or ")
                ),
                "the result type does not match",
            );
        }
    }

    /// The `accumulate` type: a scalar at least as wide as the operands.
    fn accumulate(&mut self, operand: ScalarType) -> Option<ScalarType> {
        let ty = self.m.attr(self.op, "accumulate").and_then(Attr::as_type)?.clone();
        let Type::Scalar(acc) = ty else {
            self.error(
                format!("`accumulate` of `{}` must be a scalar type, not {ty}", self.name()),
                "not a dtype",
            );
            return None;
        };
        let narrower = (operand.is_float() && !acc.is_float()) || acc.bits() < operand.bits();
        if narrower {
            self.error_note(
                format!(
                    "`accumulate = {}` of `{}` is narrower than its operands' {}",
                    acc.name(),
                    self.name(),
                    operand.name()
                ),
                "accumulating here would lose precision",
                "accumulate in a type at least as wide (f32 for bf16 and f16 operands)",
            );
        }
        Some(acc)
    }

    fn axis(&mut self, attr: &str, axis: i64, rank: usize) -> Option<usize> {
        let a = normalize_axis(axis, rank);
        if a.is_none() {
            self.error(
                format!("{attr} {axis} of `{}` is out of range for rank {rank}", self.name()),
                format!("valid axes are {}..{rank}", -(rank as i64)),
            );
        }
        a
    }

    fn one_of(&mut self, attr: &str, allowed: &[&str]) -> Option<String> {
        let value = self.str_attr(attr)?.to_string();
        if !allowed.contains(&value.as_str()) {
            let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
            self.error_note(
                format!("unknown {attr} \"{value}\" of `{}`", self.name()),
                format!("`{attr}` is not one of the known values"),
                format!("`{attr}` is one of {}", list.join(", ")),
            );
            return None;
        }
        Some(value)
    }

    fn constant(&mut self) {
        let ty = self.ty(self.result()).clone();
        let Some(elem) = self.shaped(self.result(), "result").map(|(_, e)| e) else {
            return;
        };
        let value = self.m.attr(self.op, "value").cloned().unwrap_or(Attr::Unit);
        let fits = match value {
            Attr::Float(_) => elem.is_float(),
            Attr::Int(_) => !elem.is_float(),
            Attr::Bool(_) => elem == ScalarType::I1,
            _ => false,
        };
        if !fits {
            self.error(
                format!("`graph.constant` of type {ty} cannot hold the value {value}"),
                if elem.is_float() {
                    "a float type needs a float value"
                } else {
                    "an integer type needs an integer value"
                },
            );
        }
    }

    /// The first of `symbols` that is not a dim of the enclosing function
    /// (which the runtime could not bind), with the function's name.
    fn unbound(&self, symbols: &[&str]) -> Option<(String, String)> {
        let func = self.m.enclosing_function(self.op)?;
        let known = function_dims(self.m, func);
        let sym = symbols.iter().find(|s| !known.contains(**s))?;
        Some((sym.to_string(), self.m.func_name(func).unwrap_or_default().to_string()))
    }

    /// `graph.dim`: an integer scalar holding a dim expression over the
    /// function's dims, which the runtime binds.
    fn dim(&mut self) {
        let m = self.m;
        let result = self.result();
        if !matches!(self.ty(result), Type::Scalar(s) if !s.is_float() && *s != ScalarType::I1) {
            let ty = self.ty(result).clone();
            self.error(
                format!("`graph.dim` of type {ty}"),
                "a dim's value is an integer scalar",
            );
        }
        let text = m.attr(self.op, "dim").and_then(Attr::as_str).unwrap_or_default();
        let Some(dim) = DimExpr::parse(text) else {
            self.error_note(
                format!("the dim {text:?} of `graph.dim` is not a dim expression"),
                "cannot read this dim",
                "a dim is a polynomial of the function's dim symbols and integers (`N`, `R*C`, `2*D+1`)",
            );
            return;
        };
        if let Some((sym, name)) = self.unbound(&dim.symbols()) {
            self.error_note(
                format!("`graph.dim` reads `{sym}`, which is not a dim of `@{name}`"),
                "the runtime cannot bind this dim",
                "a dim is bound by the function's parameters, or derived by its `constraints`",
            );
        }
    }

    fn elementwise(&mut self) {
        let Some(f) = self.str_attr("fn").map(str::to_string) else {
            return;
        };
        let compare = COMPARE_FNS.contains(&f.as_str());
        let select = f == "select";
        let arity = if BINARY_FNS.contains(&f.as_str()) || compare {
            2
        } else if UNARY_FNS.contains(&f.as_str()) {
            1
        } else if select {
            3
        } else {
            self.error_note(
                format!("unknown elementwise function \"{f}\""),
                "not a function of `graph.elementwise`",
                format!(
                    "the binary functions are {}; the comparisons {}; the unary ones {}; and \"select\" (condition, a, b)",
                    BINARY_FNS.join(", "),
                    COMPARE_FNS.join(", "),
                    UNARY_FNS.join(", ")
                ),
            );
            return;
        };
        let n = self.m.operands(self.op).len();
        if n != arity {
            self.error(
                format!(
                    "`graph.elementwise` \"{f}\" takes {arity} operand{}, not {n}",
                    if arity == 1 { "" } else { "s" }
                ),
                "wrong number of operands",
            );
            return;
        }
        let mut out: Vec<Dim> = Vec::new();
        let mut tensor_elem: Option<ScalarType> = None;
        let mut scalar_elem: Option<ScalarType> = None;
        let mut any_tensor = false;
        for i in 0..n {
            let v = self.operand(i);
            let Some((dims, elem)) = self.shaped(v, "operand") else {
                return;
            };
            let condition = select && i == 0;
            if condition && elem != ScalarType::I1 {
                self.error(
                    format!(
                        "the condition of `graph.elementwise` \"select\" is i1, not {}",
                        elem.name()
                    ),
                    "compare first: `graph.elementwise` \"gt\" and the others give i1",
                );
                return;
            }
            if matches!(self.ty(v), Type::Tensor { .. }) {
                any_tensor = true;
            }
            if condition {
                match broadcast(&out, &dims) {
                    Ok(b) => out = b,
                    Err(_) => {
                        let ty = self.ty(v).clone();
                        self.error(
                            format!("the condition {ty} of `graph.elementwise` \"select\" does not broadcast"),
                            "broadcasting aligns the last dims; two dims must be equal or one of them 1",
                        );
                        return;
                    }
                }
                continue;
            }
            if matches!(self.ty(v), Type::Tensor { .. }) {
                match tensor_elem {
                    Some(e) if e != elem => {
                        self.error(
                            format!(
                                "operands of `graph.elementwise` have different dtypes: {} and {}",
                                e.name(),
                                elem.name()
                            ),
                            "cast one of them first",
                        );
                        return;
                    }
                    _ => tensor_elem = Some(elem),
                }
                let before = out.clone();
                match broadcast(&out, &dims) {
                    Ok(b) => out = b,
                    Err(from_end) => {
                        let prev = self.ty(self.operand(0)).clone();
                        let this = self.ty(v).clone();
                        let da = &before[before.len() - 1 - from_end];
                        let db = &dims[dims.len() - 1 - from_end];
                        self.error_note(
                            format!("operands of `graph.elementwise` do not broadcast: {prev} and {this}"),
                            format!("dim {} from the end is {da} in one and {db} in the other", from_end + 1),
                            "broadcasting aligns the last dims; two dims must be equal or one of them 1",
                        );
                        return;
                    }
                }
            } else {
                match scalar_elem {
                    Some(e) if e != elem && !any_tensor => {
                        self.error(
                            format!(
                                "operands of `graph.elementwise` have different dtypes: {} and {}",
                                e.name(),
                                elem.name()
                            ),
                            "cast one of them first",
                        );
                        return;
                    }
                    _ => scalar_elem = Some(elem),
                }
            }
        }
        let elem = tensor_elem.or(scalar_elem).expect("at least one operand");
        if BITWISE_FNS.contains(&f.as_str()) && elem.is_float() {
            self.error(
                format!("`graph.elementwise` \"{f}\" takes integers, not {}", elem.name()),
                "a bitwise function of floats",
            );
            return;
        }
        let elem = if compare { ScalarType::I1 } else { elem };
        if any_tensor {
            if matches!(self.ty(self.result()), Type::Scalar(_)) {
                let ty = self.ty(self.result()).clone();
                self.error(
                    format!("`graph.elementwise` of tensors gives a tensor, not {ty}"),
                    "the result type does not match",
                );
                return;
            }
        } else if !matches!(self.ty(self.result()), Type::Scalar(_)) {
            let ty = self.ty(self.result()).clone();
            self.error(
                format!("`graph.elementwise` of scalars gives a scalar, not {ty}"),
                "the result type does not match",
            );
            return;
        }
        self.expect_result(&out, &[elem]);
    }

    fn matmul(&mut self) {
        let (Some((a, ea)), Some((b, eb))) = (self.tensor(self.operand(0), "lhs"), self.tensor(self.operand(1), "rhs"))
        else {
            return;
        };
        if a.len() < 2 || b.len() < 2 {
            let which = if a.len() < 2 { "lhs" } else { "rhs" };
            self.error(
                format!("the {which} of `graph.matmul` needs at least 2 dims"),
                "matmul multiplies the last two dims",
            );
            return;
        }
        if !ea.multiplies_with(eb) {
            self.error(
                format!(
                    "operands of `graph.matmul` have different dtypes: {} and {}",
                    ea.name(),
                    eb.name()
                ),
                "cast one of them first",
            );
            return;
        }
        let (k1, k2) = (&a[a.len() - 1], &b[b.len() - 2]);
        if k1 != k2 {
            self.error_note(
                format!(
                    "inner dims of `graph.matmul` differ: {k1} (last dim of the lhs {}) vs {k2} (dim -2 of the rhs {})",
                    show_shape(&a),
                    show_shape(&b)
                ),
                "the contraction needs equal inner dims",
                "matmul takes [.., M, K] and [.., K, N]",
            );
            return;
        }
        let batch = match broadcast(&a[..a.len() - 2], &b[..b.len() - 2]) {
            Ok(batch) => batch,
            Err(_) => {
                self.error(
                    format!(
                        "batch dims of `graph.matmul` do not broadcast: {} and {}",
                        show_shape(&a[..a.len() - 2]),
                        show_shape(&b[..b.len() - 2])
                    ),
                    "the leading dims must be equal or 1",
                );
                return;
            }
        };
        let Some(acc) = self.accumulate(ea) else { return };
        if let Some(tile) = self.m.attr(self.op, "tile_shape").cloned() {
            let ok = tile.as_ints().is_some_and(|t| t.len() == 3 && t.iter().all(|&x| x > 0));
            if !ok {
                self.error(
                    format!("`tile_shape` of `graph.matmul` must be 3 positive integers [BM, BN, BK], not {tile}"),
                    "bad tile shape",
                );
            }
        }
        let mut dims = batch;
        dims.push(a[a.len() - 2].clone());
        dims.push(b[b.len() - 1].clone());
        self.expect_result(&dims, &[acc, ea]);
    }

    fn reduce(&mut self) {
        let Some((dims, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        self.one_of("kind", &REDUCE_KINDS);
        if self.m.attr(self.op, "order").is_some() {
            self.one_of("order", &["tree", "any"]);
        }
        let Some(axes) = self.m.attr(self.op, "axes").and_then(Attr::as_ints) else {
            self.error(
                "`axes` of `graph.reduce` must be an array of integers".into(),
                "not integers",
            );
            return;
        };
        if axes.is_empty() {
            self.error("`graph.reduce` needs at least one axis".into(), "`axes` is empty");
            return;
        }
        let mut seen = HashSet::new();
        for &a in &axes {
            let Some(axis) = self.axis("axis", a, dims.len()) else {
                return;
            };
            if !seen.insert(axis) {
                self.error(
                    format!("axis {axis} appears twice in `axes` of `graph.reduce`"),
                    "repeated axis",
                );
                return;
            }
        }
        let Some(acc) = self.accumulate(elem) else { return };
        let keep = self
            .m
            .attr(self.op, "keepdims")
            .and_then(Attr::as_bool)
            .unwrap_or(false);
        let out: Vec<Dim> = dims
            .iter()
            .enumerate()
            .filter_map(|(i, d)| match (seen.contains(&i), keep) {
                (false, _) => Some(d.clone()),
                (true, true) => Some(DimExpr::constant(1)),
                (true, false) => None,
            })
            .collect();
        self.expect_result(&out, &[acc, elem]);
    }

    /// An op along one axis of its operand (`graph.softmax`,
    /// `graph.cumsum`): the axis in range, the result of the operand's
    /// dims, of its dtype or the accumulator's.
    fn along_axis(&mut self) {
        let Some((dims, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        let axis = self.int_attr("axis").unwrap_or(-1);
        if self.axis("axis", axis, dims.len()).is_none() {
            return;
        }
        let Some(acc) = self.accumulate(elem) else { return };
        self.expect_result(&dims, &[elem, acc]);
    }

    fn attention(&mut self) {
        let mut operands = Vec::new();
        for (i, what) in ["query", "key", "value"].into_iter().enumerate() {
            let Some(t) = self.tensor(self.operand(i), what) else {
                return;
            };
            operands.push(t);
        }
        let [(q, eq), (k, ek), (v, ev)] = [operands[0].clone(), operands[1].clone(), operands[2].clone()];
        if q.len() < 2 || q.len() != k.len() || k.len() != v.len() {
            self.error_note(
                format!(
                    "`graph.attention` takes q, k and v of one rank, at least 2: {}, {} and {}",
                    show_shape(&q),
                    show_shape(&k),
                    show_shape(&v)
                ),
                "ranks differ",
                "attention takes [.., M, D], [.., N, D] and [.., N, Dv]",
            );
            return;
        }
        if eq != ek || ek != ev {
            self.error(
                format!(
                    "operands of `graph.attention` have different dtypes: {}, {} and {}",
                    eq.name(),
                    ek.name(),
                    ev.name()
                ),
                "cast them to one dtype first",
            );
            return;
        }
        let r = q.len();
        let (mismatch, what) = if q[r - 1] != k[r - 1] {
            (true, "the head dims of q and k differ")
        } else if k[r - 2] != v[r - 2] {
            (true, "k and v have different numbers of keys")
        } else if q[..r - 2] != k[..r - 2] || k[..r - 2] != v[..r - 2] {
            (true, "the batch dims differ")
        } else {
            (false, "")
        };
        if mismatch {
            self.error_note(
                format!(
                    "shapes of `graph.attention` do not fit: {what} (q {}, k {}, v {})",
                    show_shape(&q),
                    show_shape(&k),
                    show_shape(&v)
                ),
                "mismatched shapes",
                "attention takes [.., M, D], [.., N, D] and [.., N, Dv]",
            );
            return;
        }
        if let Some(scale) = self.m.attr(self.op, "scale").cloned() {
            if !matches!(scale, Attr::Float(f) if f > 0.0 && f.is_finite()) {
                self.error(
                    format!("`scale` of `graph.attention` must be a positive number, not {scale}"),
                    "bad scale",
                );
            }
        }
        let Some(acc) = self.accumulate(eq) else { return };
        let mut dims = q.clone();
        dims[r - 1] = v[r - 1].clone();
        self.expect_result(&dims, &[eq, acc]);
    }

    fn norm(&mut self) {
        let Some((dims, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        let kind = self.one_of("kind", &["layer", "rms"]);
        let n = self.m.operands(self.op).len();
        if n > 3 {
            self.error(
                format!("`graph.norm` takes the input, a weight and a bias, not {n} operands"),
                "too many operands",
            );
            return;
        }
        if let Some(eps) = self.m.attr(self.op, "eps").cloned() {
            let ok = match eps {
                Attr::Float(f) => f >= 0.0,
                Attr::Int(i) => i >= 0,
                _ => false,
            };
            if !ok {
                self.error(
                    format!("`eps` of `graph.norm` must be a nonnegative number, not {eps}"),
                    "bad epsilon",
                );
            }
        }
        let axis = self.int_attr("axis").unwrap_or(-1);
        let Some(axis) = self.axis("axis", axis, dims.len()) else {
            return;
        };
        let normalized = &dims[axis..];
        for (i, what) in [(1, "weight"), (2, "bias")] {
            if i >= n {
                break;
            }
            let Some((w, _)) = self.tensor(self.operand(i), what) else {
                return;
            };
            if w != normalized {
                self.error_note(
                    format!(
                        "the {what} of `graph.norm` has shape {}, but the normalized dims are {}",
                        show_shape(&w),
                        show_shape(normalized)
                    ),
                    format!("the {what} does not fit"),
                    "weight and bias have the shape of the dims from `axis` on",
                );
                return;
            }
        }
        if n == 3 && kind.as_deref() == Some("rms") {
            self.error(
                "an RMS `graph.norm` takes no bias".into(),
                "RMS normalization scales, it does not shift",
            );
            return;
        }
        let Some(acc) = self.accumulate(elem) else { return };
        self.expect_result(&dims, &[elem, acc]);
    }

    fn transpose(&mut self) {
        let Some((dims, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        let perm = self.m.attr(self.op, "perm").and_then(Attr::as_ints).unwrap_or_default();
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..dims.len() as i64).collect::<Vec<_>>() {
            self.error_note(
                format!(
                    "`perm` {} of `graph.transpose` is not a permutation of the {} dims",
                    Attr::ints(perm.iter().copied()),
                    dims.len()
                ),
                "not a permutation",
                format!("`perm` lists each of 0..{} once", dims.len()),
            );
            return;
        }
        let out: Vec<Dim> = perm.iter().map(|&p| dims[p as usize].clone()).collect();
        self.expect_result(&out, &[elem]);
    }

    fn reshape(&mut self) {
        let Some((dims, elem)) = self.shaped(self.operand(0), "operand") else {
            return;
        };
        let Some((out, out_elem)) = self.shaped(self.result(), "result") else {
            return;
        };
        if out_elem != elem {
            self.error(
                format!(
                    "`graph.reshape` changes the dtype from {} to {}",
                    elem.name(),
                    out_elem.name()
                ),
                "use `graph.cast` to change the dtype",
            );
            return;
        }
        let (n_in, n_out) = (num_elements(&dims), num_elements(&out));
        // Equal by a guard or constraint: the element counts, or (the same
        // rank) each pair of dims, `[B, N]` into `[B, M]` with `N == M`.
        let guarded = || {
            let func = self.m.enclosing_function(self.op);
            func.is_some_and(|f| {
                known_equal(self.m, f, &n_in, &n_out)
                    || (dims.len() == out.len()
                        && dims
                            .iter()
                            .zip(&out)
                            .all(|(a, b)| a == b || known_equal(self.m, f, a, b)))
            })
        };
        if n_in != n_out && !guarded() {
            self.error_note(
                format!(
                    "`graph.reshape` changes the number of elements: {} has {n_in}, {} has {n_out}",
                    show_shape(&dims),
                    show_shape(&out)
                ),
                "the element counts differ",
                "the products of the dims must be equal as polynomials, or by a `graph.guard` or constraint of the function",
            );
        }
    }

    fn concat(&mut self) {
        let n = self.m.operands(self.op).len();
        let Some((first, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        let axis = self.int_attr("axis").unwrap_or(0);
        let Some(axis) = self.axis("axis", axis, first.len()) else {
            return;
        };
        let mut total = DimExpr::default();
        for i in 0..n {
            let Some((dims, e)) = self.tensor(self.operand(i), "operand") else {
                return;
            };
            if e != elem {
                self.error(
                    format!(
                        "operands of `graph.concat` have different dtypes: {} and {}",
                        elem.name(),
                        e.name()
                    ),
                    "cast one of them first",
                );
                return;
            }
            let mismatch = dims.len() != first.len()
                || dims
                    .iter()
                    .zip(&first)
                    .enumerate()
                    .any(|(j, (a, b))| j != axis && a != b);
            if mismatch {
                self.error_note(
                    format!(
                        "operand {i} of `graph.concat` has shape {}, which does not fit {} along axis {axis}",
                        show_shape(&dims),
                        show_shape(&first)
                    ),
                    "shapes differ outside the concatenation axis",
                    "all operands have the same rank and the same dims except along `axis`",
                );
                return;
            }
            total = total.add(&dims[axis]);
        }
        let mut out = first;
        out[axis] = total;
        self.expect_result(&out, &[elem]);
    }

    fn cast(&mut self) {
        let Some((dims, from)) = self.shaped(self.operand(0), "operand") else {
            return;
        };
        let Some((out, to)) = self.shaped(self.result(), "result") else {
            return;
        };
        if self.m.attr(self.op, "rounding").is_some() {
            self.one_of("rounding", &tessera_base::ROUNDINGS);
        }
        if dims != out {
            self.error(
                format!(
                    "`graph.cast` changes the shape from {} to {}",
                    show_shape(&dims),
                    show_shape(&out)
                ),
                "a cast keeps the shape",
            );
            return;
        }
        if from == ScalarType::Index || to == ScalarType::Index {
            self.error(
                "`graph.cast` converts between numeric dtypes, not `index`".into(),
                "not a tensor dtype",
            );
            return;
        }
        let narrowing = from.is_float() && (!to.is_float() || to.bits() < from.bits());
        if narrowing && self.m.attr(self.op, "rounding").is_none() {
            self.error_note(
                format!(
                    "the narrowing `graph.cast` from {} to {} needs a `rounding` mode",
                    from.name(),
                    to.name()
                ),
                "no rounding mode",
                "numerics policies make every rounding explicit: add `rounding = \"nearest_even\"`",
            );
        }
    }

    fn broadcast(&mut self) {
        let Some((dims, elem)) = self.shaped(self.operand(0), "operand") else {
            return;
        };
        let Some((out, out_elem)) = self.shaped(self.result(), "result") else {
            return;
        };
        if elem != out_elem || broadcast(&dims, &out).ok().as_deref() != Some(out.as_slice()) {
            self.error_note(
                format!(
                    "`graph.broadcast` cannot stretch {} of {} to {} of {}",
                    show_shape(&dims),
                    elem.name(),
                    show_shape(&out),
                    out_elem.name()
                ),
                "not a broadcast",
                "each dim, aligned at the end, must be equal to the result's or 1; the dtype stays",
            );
        }
    }

    fn slice(&mut self) {
        let Some((dims, elem)) = self.tensor(self.operand(0), "operand") else {
            return;
        };
        let Some((out, out_elem)) = self.tensor(self.result(), "result") else {
            return;
        };
        let indices = &self.m.operands(self.op)[1..];
        let axes = match self.m.attr(self.op, "axes") {
            Some(a) => match a.as_ints() {
                Some(axes) => axes,
                None => {
                    self.error("`axes` of `graph.slice` must be integers".into(), "not integers");
                    return;
                }
            },
            None => (0..dims.len() as i64).collect(),
        };
        let mut sliced = HashSet::new();
        for &a in &axes {
            let Some(axis) = self.axis("axis", a, dims.len()) else {
                return;
            };
            sliced.insert(axis);
        }
        let starts = self.m.attr(self.op, "starts").map(|s| s.as_ints().unwrap_or_default());
        let count_ok = match &starts {
            Some(s) => s.len() == axes.len() && indices.is_empty() && s.iter().all(|&x| x >= 0),
            None => indices.len() == axes.len(),
        };
        if !count_ok {
            self.error_note(
                format!("`graph.slice` needs one start per sliced axis ({})", axes.len()),
                "starts and axes do not match",
                "give `starts = [..]` (nonnegative) or one `index` operand per axis, not both",
            );
            return;
        }
        for &i in indices {
            if *self.ty(i) != Type::INDEX {
                let ty = self.ty(i).clone();
                self.error(
                    format!("a start of `graph.slice` must be an `index`, not {ty}"),
                    "not an index",
                );
                return;
            }
        }
        if let Some(steps) = self.m.attr(self.op, "steps") {
            let fits = steps
                .as_ints()
                .is_some_and(|s| s.len() == axes.len() && s.iter().all(|&k| k != 0));
            if !fits {
                self.error_note(
                    format!("`graph.slice` needs one nonzero step per sliced axis ({})", axes.len()),
                    "these steps do not fit",
                    "`steps = [..]` takes a nonzero integer per axis; element i of an axis is start + i·step, the start counted from the end when the step is negative",
                );
                return;
            }
        }
        let fits = out_elem == elem
            && out.len() == dims.len()
            && out
                .iter()
                .zip(&dims)
                .enumerate()
                .all(|(j, (o, d))| sliced.contains(&j) || o == d);
        if !fits {
            self.error_note(
                format!(
                    "`graph.slice` of {} cannot give {}",
                    show_shape(&dims),
                    show_shape(&out)
                ),
                "the result type does not match",
                "a slice keeps the rank, the dtype and the dims it does not slice",
            );
        }
    }

    /// Side-effecting ops take a token first and give one back last.
    fn tokens(&mut self) -> bool {
        let m = self.m;
        let name = self.name().to_string();
        let operands = m.operands(self.op);
        let results = m.results(self.op);
        if operands.first().is_none_or(|&t| *m.value_type(t) != Type::Token) {
            self.error_note(
                format!("`{name}` takes a `!token` as its first operand"),
                "no token: this side effect is not ordered",
                "side effects are ordered by a chain of tokens from `graph.entry_token`",
            );
            return false;
        }
        if results.last().is_none_or(|&t| *m.value_type(t) != Type::Token) {
            self.error(
                format!("`{name}` returns a `!token` as its last result"),
                "the chain of side effects must go on",
            );
            return false;
        }
        let stray = operands[1..]
            .iter()
            .chain(&results[..results.len() - 1])
            .any(|&v| *m.value_type(v) == Type::Token);
        if stray {
            self.error(
                format!("`{name}` takes one token and gives one token"),
                "a second token here",
            );
            return false;
        }
        true
    }

    fn all_reduce(&mut self) {
        if !self.tokens() {
            return;
        }
        if self.m.attr(self.op, "op").is_some() {
            self.one_of("op", &REDUCE_KINDS);
        }
        if let Some(message) = tessera_ir_tile::check_collective_mesh(self.m, self.op) {
            self.error(message, "in this collective");
        }
        let x = self.operand(1);
        let out = self.m.result(self.op, 0);
        self.shaped(x, "operand");
        if self.ty(x) != self.ty(out) {
            let (a, b) = (self.ty(x).clone(), self.ty(out).clone());
            self.error(
                format!("`graph.all_reduce` of {a} gives {a}, not {b}"),
                "the result type does not match",
            );
        }
    }

    fn rng(&mut self) {
        if !self.tokens() {
            return;
        }
        let dist = self.one_of("dist", tessera_ir_tile::RNG_DISTS);
        let p = self.m.attr(self.op, "p").and_then(Attr::as_float);
        if let Some((message, label)) = tessera_ir_tile::check_rng_probability(dist.as_deref(), p) {
            self.error(message, label);
        }
        let value = self.m.result(self.op, 0);
        let Some((_, elem)) = self.shaped(value, "result") else {
            return;
        };
        if !elem.is_float() {
            self.error(
                format!("`graph.rng` draws floats, not {}", elem.name()),
                "not a float type",
            );
        }
        let func = self.m.enclosing_function(self.op);
        if is_deterministic(self.m, func) && self.m.attr(self.op, "stream").is_none() {
            self.error_note(
                "`graph.rng` in a deterministic function needs a `stream`".into(),
                "no stream bound",
                "deterministic random numbers come from a named counter-based stream",
            );
        }
    }

    fn guard(&mut self) {
        if !self.tokens() {
            return;
        }
        let m = self.m;
        let text = m.attr(self.op, "constraint").and_then(Attr::as_str).unwrap_or_default();
        let Some(constraint) = ShapeConstraint::parse(text) else {
            self.error_note(
                format!("the constraint {text:?} of `graph.guard` is not a shape constraint"),
                "cannot read this constraint",
                "a guard checks `X % k == 0`, a comparison of dims (`S <= 8192`) or a range (`B in 1..=4096`)",
            );
            return;
        };
        if let Some((sym, name)) = self.unbound(&constraint.symbols()) {
            self.error_note(
                format!("`graph.guard` checks `{constraint}`, but `{sym}` is not a dim of `@{name}`"),
                "the runtime cannot bind this dim",
                "a guard's dims are bound by the function's parameters, or derived by its `constraints`",
            );
        }
    }

    /// A call of a function with a chain of side effects or guards
    /// (its `graph.entry_token`) is on the caller's chain.
    fn call(&mut self) {
        let m = self.m;
        let Some(callee) = m.attr(self.op, "callee").and_then(Attr::as_symbol).map(str::to_string) else {
            return;
        };
        let Some(func) = m.function(&callee) else {
            self.error(
                format!("call to undefined function `@{callee}`"),
                "no function of this name in the module",
            );
            return;
        };
        let effectful = has_chain(m, func);
        let operands = m.operands(self.op);
        let results = m.results(self.op);
        let (args, outs) = if effectful {
            if !self.tokens() {
                return;
            }
            (&operands[1..], &results[..results.len() - 1])
        } else {
            (operands, results)
        };
        let (inputs, expected) = m.func_type(func).expect("a function has a type");
        let args: Vec<Type> = args.iter().map(|&v| m.value_type(v).clone()).collect();
        let outs: Vec<Type> = outs.iter().map(|&v| m.value_type(v).clone()).collect();
        let binding = call_binding(inputs, &args);
        let instance = |types: &[Type]| -> Vec<Type> { types.iter().map(|t| instantiate(t, &binding)).collect() };
        if args != instance(inputs) || outs != instance(expected) {
            let e = VerifyError::at_op(
                m,
                self.op,
                format!(
                    "`graph.call` of `@{callee}` passes {} -> {} but the function is {} -> {}",
                    list(&args),
                    list(&outs),
                    list(inputs),
                    list(expected)
                ),
            )
            .with_label(if effectful {
                "the types, without the token, differ from the callee's signature"
            } else {
                "the types differ from the callee's signature"
            })
            .with_related(m, func, "the callee is declared here");
            self.errors.push(e);
        }
    }

    fn ret(&mut self) {
        let m = self.m;
        let Some(func) = m.parent_op(self.op).filter(|&f| m.is_function(f)) else {
            self.error(
                "`graph.return` outside a function body".into(),
                "not directly in a function",
            );
            return;
        };
        let (_, expected) = m.func_type(func).expect("a function has a type");
        let actual: Vec<Type> = m.operands(self.op).iter().map(|&v| m.value_type(v).clone()).collect();
        if actual != expected {
            let e = VerifyError::at_op(
                m,
                self.op,
                format!(
                    "`graph.return` returns {} but the function declares {}",
                    list(&actual),
                    list(expected)
                ),
            )
            .with_label("these types differ from the signature")
            .with_related(m, func, "the function is declared here");
            self.errors.push(e);
        }
    }
}

fn list(types: &[Type]) -> String {
    let parts: Vec<String> = types.iter().map(ToString::to_string).collect();
    format!("({})", parts.join(", "))
}

/// Whether `op` is inside a `schedule.kernel`.
pub fn inside_kernel(m: &Module, op: OpId) -> bool {
    let mut current = m.parent_op(op);
    while let Some(p) = current {
        if m.op(p).name == "schedule.kernel" {
            return true;
        }
        if m.is_function(p) {
            return false;
        }
        current = m.parent_op(p);
    }
    false
}

/// A function's `autotune.configs`: at least two entries `{dims = {…},
/// config = {…}}`, each measured at positive values of the same dims of
/// the function's parameters, its knobs integers; never with
/// `autotune.config` (one configuration for every shape).
fn verify_tuned_configs(m: &Module, func: OpId, name: &str, configs: &Attr, errors: &mut VerifyErrors) {
    let bad = |message: String| VerifyError::at_op(m, func, message).with_label("bad tuned configurations");
    if m.attr(func, crate::tuned::CONFIG_ATTR).is_some() {
        errors.push(bad(format!(
            "`@{name}` has both `autotune.config` and `autotune.configs`"
        )));
    }
    let Some(items) = configs.as_array().filter(|items| items.len() >= 2) else {
        errors.push(
            bad(format!(
                "`autotune.configs` of `@{name}` must list at least two configurations, not {configs}"
            ))
            .with_note("one configuration for every shape is `autotune.config`"),
        );
        return;
    };
    let params = function_dims(m, func);
    let mut first_dims: Option<Vec<&String>> = None;
    for (i, item) in items.iter().enumerate() {
        let dict = item.as_dict();
        let dims = dict.and_then(|d| d.get("dims")).and_then(Attr::as_dict);
        let config = dict.and_then(|d| d.get("config")).and_then(Attr::as_dict);
        let (Some(dims), Some(config)) = (dims, config) else {
            errors.push(bad(format!(
                "configuration #{i} of `@{name}` must be `{{dims = {{…}}, config = {{…}}}}`, not {item}"
            )));
            continue;
        };
        for (dim, value) in dims {
            if !params.contains(dim) {
                errors.push(bad(format!(
                    "configuration #{i} of `@{name}` was measured at `{dim}`, which is not a dim of its parameters"
                )));
            } else if value.as_int().is_none_or(|v| v < 1) {
                errors.push(bad(format!(
                    "configuration #{i} of `@{name}` was measured at {dim} = {value}; dims are positive integers"
                )));
            }
        }
        let names: Vec<&String> = dims.keys().collect();
        match &first_dims {
            Some(first) if *first != names => errors.push(bad(format!(
                "configuration #{i} of `@{name}` was measured at other dims than the first: {} instead of {}",
                names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", "),
                first.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
            ))),
            Some(_) => {}
            None => first_dims = Some(names),
        }
        if let Some((knob, value)) = config.iter().find(|(_, v)| v.as_int().is_none_or(|v| v < 0)) {
            errors.push(bad(format!(
                "knob `{knob}` of configuration #{i} of `@{name}` is {value}, not a non-negative integer"
            )));
        }
    }
}

/// The rules of a Graph-IR function as a whole: its `effects` and
/// `numerics`, one chain of tokens, and effects that cover its ops'.
fn verify_function(m: &Module, func: OpId, errors: &mut VerifyErrors) {
    let name = m.func_name(func).unwrap_or_default().to_string();
    let at = |message: String| VerifyError::at_op(m, func, message);
    match m.attr(func, "effects") {
        None => errors.push(
            at(format!("Graph-IR function `@{name}` has no `effects`"))
                .with_label("every operator function states its effects")
                .with_note("add `effects = []` for a pure function, or list them: [\"random\", \"io\", \"memory\", \"collective\"]"),
        ),
        Some(Attr::Array(items)) => {
            let mut seen = HashSet::new();
            for item in items {
                match item.as_str() {
                    Some(e) if EFFECTS.contains(&e) => {
                        if !seen.insert(e) {
                            errors.push(
                                at(format!("effect \"{e}\" is listed twice in `effects` of `@{name}`"))
                                    .with_label("repeated effect"),
                            );
                        }
                    }
                    _ => errors.push(
                        at(format!("unknown effect {item} in `effects` of `@{name}`"))
                            .with_label("not an effect")
                            .with_note("the effects are \"random\", \"io\", \"memory\" and \"collective\""),
                    ),
                }
            }
        }
        // The kinds of function attributes are checked by `func.func`'s
        // definition.
        Some(_) => {}
    }
    if let Some(configs) = m.attr(func, crate::tuned::CONFIGS_ATTR) {
        verify_tuned_configs(m, func, &name, configs, errors);
    }
    if m.attr(func, "numerics").is_none() {
        errors.push(
            at(format!("Graph-IR function `@{name}` has no `numerics` policy"))
                .with_label("every operator function states its numerics policy")
                .with_note(
                    "add `numerics = \"none\"` when no policy applies, or name it (\"Training\", \"Inference\", ...)",
                ),
        );
    }
    let declared = declared_effects(m, func);
    let mut first_use: HashMap<ValueId, OpId> = HashMap::new();
    let mut entry: Option<OpId> = None;
    for op in m.walk_op(func) {
        let data = m.op(op);
        for &v in &data.operands {
            if *m.value_type(v) != Type::Token {
                continue;
            }
            match first_use.get(&v) {
                None => {
                    first_use.insert(v, op);
                }
                Some(&first) => {
                    let origin = match m.value_def(v) {
                        ValueDef::Result { op: def, .. } => format!("of `{}`", m.op(def).name),
                        ValueDef::BlockArg { .. } => "passed in".to_string(),
                    };
                    errors.push(
                        VerifyError::at_op(m, op, format!("a token {origin} is used twice"))
                            .with_label("second use of the token")
                            .with_related(m, first, "first used here")
                            .with_note("side effects form one chain: each token is consumed once, by the next effect"),
                    );
                }
            }
        }
        let op_name = data.name.as_str();
        if op_name == "graph.entry_token" {
            if let Some(first) = entry {
                errors.push(
                    VerifyError::at_op(m, op, format!("function `@{name}` has a second `graph.entry_token`"))
                        .with_label("a second chain of side effects")
                        .with_related(m, first, "the chain starts here"),
                );
            } else {
                entry = Some(op);
            }
        }
        let mut needed: Vec<String> = effect_of(op_name).map(|e| vec![e.to_string()]).unwrap_or_default();
        if op_name == "graph.call" {
            if let Some(callee) = data
                .attr("callee")
                .and_then(Attr::as_symbol)
                .and_then(|c| m.function(c))
            {
                needed = declared_effects(m, callee).into_iter().map(str::to_string).collect();
            }
        }
        for effect in needed {
            if !declared.contains(&effect.as_str()) {
                errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        format!("`{op_name}` has the effect \"{effect}\", which `effects` of `@{name}` does not list"),
                    )
                    .with_label(format!("effect \"{effect}\" here"))
                    .with_related(m, func, "the function's effects are declared here")
                    .with_note(format!("add \"{effect}\" to the function's `effects`")),
                );
            }
        }
    }
}

/// Whether `func` has a chain of side effects or guards: a
/// `graph.entry_token` in its body.
fn has_chain(m: &Module, func: OpId) -> bool {
    m.entry_block(func)
        .is_some_and(|b| m.block_ops(b).iter().any(|&op| m.op(op).name == "graph.entry_token"))
}
