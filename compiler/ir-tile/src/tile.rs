//! The `tile` dialect: Tile IR, the per-kernel loop nests with their thread
//! mapping, memory and synchronization (`spec/ir-tile.md`).
//!
//! Each op is an [`OpDef`]; [`TileDialect::verify_op`] checks what the
//! definition cannot say (types agree, index counts match ranks, shapes of
//! matrix products, region shapes), and the function-level contract rules
//! (async stages, determinism, RNG streams, the shared-memory budget) run
//! from [`crate::rules`].

use tessera_ir::{
    Arity, Attr, AttrDef, AttrKind, Dialect, MemSpace, Module, OpDef, OpId, ScalarType, ShapeConstraint, Type,
    VerifyErrors,
};

use crate::check::{self, Check};
use crate::rules;
use crate::shape::{self, elementwise, is_value};
use crate::target::{func_at_target_layer, is_target_layer};

/// The `tile` dialect.
pub struct TileDialect;

const DIM: &[AttrDef] = &[AttrDef::required("dim", AttrKind::Int)];

macro_rules! id_op {
    ($name:literal, $doc:literal) => {
        OpDef {
            name: $name,
            doc: $doc,
            results: Arity::Exact(1),
            attrs: DIM,
            pure: true,
            ..OpDef::DEFAULT
        }
    };
}

const OPS: &[OpDef] = &[
    id_op!("tile.thread_id", "the thread's index in its block along `dim` (0, 1 or 2)"),
    id_op!("tile.block_id", "the block's index in the grid along `dim`"),
    id_op!("tile.block_dim", "the number of threads of a block along `dim`"),
    id_op!("tile.grid_dim", "the number of blocks of the grid along `dim`"),
    OpDef {
        name: "tile.lane_id",
        doc: "the thread's lane in its warp (wavefront on AMD GPUs)",
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.warp_id",
        doc: "the index of the thread's warp in its block",
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.const",
        doc: "a constant scalar, or a tile with every element equal to `value`",
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("value", AttrKind::Any)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.binary",
        doc: "an elementwise binary operation `fn` on scalars or tiles (a scalar broadcasts over a tile)",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("fn", AttrKind::Str)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.unary",
        doc: "an elementwise unary operation `fn` on a scalar or a tile; with `approx`, an `exp` a GPU may compute with its hardware approximation",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("fn", AttrKind::Str), AttrDef::optional("approx", AttrKind::Unit)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.cmp",
        doc: "an elementwise comparison `pred`, giving `i1` (or a tile of `i1`)",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("pred", AttrKind::Str)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.select",
        doc: "`%a` where the condition holds, else `%b`, elementwise",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.cast",
        doc: "converts a scalar or tile to the result's element type, rounding as `rounding` says; with \
              `saturate`, a float beyond the range of a narrower float type becomes its largest value; \
              with `bitcast`, reads the bits as the result's type, of the same width",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::optional("rounding", AttrKind::Str),
            AttrDef::optional("saturate", AttrKind::Unit),
            AttrDef::optional("bitcast", AttrKind::Unit),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.local",
        doc: "a slot in thread-local memory for a variable that is reassigned",
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.load",
        doc: "reads one element of a memref at the given indices",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.store",
        doc: "writes `%v` into one element of a memref at the given indices",
        operands: Arity::AtLeast(2),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.view",
        doc: "the slice of a memref at fixed indices of its leading dims: a memref of the remaining dims, in the same memory",
        operands: Arity::AtLeast(2),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.alloc_shared",
        doc: "a buffer in the block's shared memory, optionally swizzled and with rows padded by `bank_pad` elements",
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::optional("swizzle", AttrKind::Any),
            AttrDef::optional("bank_pad", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.load_tile",
        doc: "reads the tile of the result's shape at the given offsets of a memref",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.store_tile",
        doc: "writes the tile `%v` at the given offsets of a memref",
        operands: Arity::AtLeast(2),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.async_copy",
        doc: "starts copying the tile of `%dst`'s shape at the offsets of global `%src` into shared `%dst`, in stage `stage`",
        operands: Arity::AtLeast(2),
        attrs: &[AttrDef::required("stage", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.wait_async",
        doc: "waits until the async copy of stage `stage` is complete and visible to the whole block",
        attrs: &[AttrDef::required("stage", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.barrier",
        doc: "waits until every thread of the block (or of a cooperative group of `size` threads) reaches it; memory writes before it are visible after it",
        attrs: &[AttrDef::optional("scope", AttrKind::Str), AttrDef::optional("size", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.fence",
        doc: "orders the calling thread's memory accesses: the threads of `scope` (`block`, `device` or `system`) see those before it before those after it",
        attrs: &[AttrDef::required("scope", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.print",
        doc: "records a line of output: `text` with each `{}` replaced by a value (`{{` and `}}` are braces); the first two operands, the block's and the thread's linear index, order the launch's lines",
        operands: Arity::AtLeast(2),
        attrs: &[AttrDef::required("text", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.mma",
        doc: "matrix multiply-accumulate `%a · %b + %acc` (a and b tiles or shared memrefs) in `accumulate` precision",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("accumulate", AttrKind::Type)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.iota",
        doc: "a tile of `index` values, each element its position along axis `dim` (for masks of partial tiles)",
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("dim", AttrKind::Int)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.reshape",
        doc: "the same elements of a register tile in the same row-major order, under other dims (a column load's unit dim dropped)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.transpose",
        doc: "permutes the axes of a register tile (`perm`); the result type is the permuted shape",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("perm", AttrKind::Array)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.broadcast",
        doc: "broadcasts a scalar or tile to the result's shape (NumPy rules: trailing dims match or are 1)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.softmax",
        doc: "softmax of a register tile along `axis`, accumulating in `accumulate` (max, exp, sum, divide; `order = \"tree\"` fixes the reduction order)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("axis", AttrKind::Int),
            AttrDef::required("accumulate", AttrKind::Type),
            AttrDef::optional("order", AttrKind::Str),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.reduce",
        doc: "reduces a tile along `axis` with `kind`, in `order` (`tree`: a fixed order; `any`: unspecified)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("kind", AttrKind::Str),
            AttrDef::required("axis", AttrKind::Int),
            AttrDef::optional("order", AttrKind::Str),
            AttrDef::optional("accumulate", AttrKind::Type),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.shuffle",
        doc: "reads `%v` from another lane of the warp (`mode` down, up, xor or idx) within segments of `width` lanes",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("mode", AttrKind::Str),
            AttrDef::optional("width", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.vote",
        doc: "a warp vote on a predicate: `any`, `all` (i1) or `ballot` (a lane mask)",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("mode", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.atomic",
        doc: "an atomic read-modify-write `kind` of one element of a memref; gives the old value (`cas` takes the expected value before `%v`); `nondeterministic` holds the reason of a `with nondeterministic(...)` around it",
        operands: Arity::AtLeast(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("kind", AttrKind::Str), AttrDef::optional("nondeterministic", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.rng",
        doc: "counter-based random numbers (Philox-4x32-10) of distribution `dist` from the bound stream `stream` of function `function`, at the counter `%index`",
        operands: Arity::VARIADIC,
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("dist", AttrKind::Str),
            AttrDef::optional("stream", AttrKind::Str),
            AttrDef::optional("seed", AttrKind::Int),
            AttrDef::optional("function", AttrKind::Str),
            AttrDef::optional("p", AttrKind::Float),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.for",
        doc: "runs its region for `%i` from `%lb` while below `%ub`, by `%step`",
        operands: Arity::Exact(3),
        attrs: &[AttrDef::optional("unroll", AttrKind::Int)],
        regions: 1,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.pipeline",
        doc: "a software-pipelined loop for `%k` from `%lb` while below `%ub` by `%step`: region #0 starts the async copies of an iteration into ring slot `%slot`, `stages - 1` iterations ahead; region #1 runs the iteration once they are complete",
        operands: Arity::Exact(3),
        attrs: &[AttrDef::required("stages", AttrKind::Int)],
        regions: 2,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.if",
        doc: "runs its first region when `%cond` holds, else its second",
        operands: Arity::Exact(1),
        regions: 2,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.while",
        doc: "runs its first region, which ends in `tile.condition`, and while that holds its second",
        regions: 2,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.yield",
        doc: "ends a region of `tile.for`, `tile.pipeline`, `tile.if` or `tile.while`",
        terminator: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.condition",
        doc: "ends the condition region of `tile.while`: whether to run the body again",
        operands: Arity::Exact(1),
        terminator: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.break",
        doc: "leaves the innermost enclosing loop",
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.continue",
        doc: "goes on with the next iteration of the innermost enclosing loop",
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.return",
        doc: "leaves the function (from any depth), returning its operands",
        operands: Arity::VARIADIC,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.all_reduce",
        doc: "reduces the host buffer %src across the ranks of a mesh axis into %dst, on every rank (host functions only)",
        operands: Arity::Exact(2),
        attrs: &[
            AttrDef::required("op", AttrKind::Str),
            AttrDef::optional("axis", AttrKind::Str),
            AttrDef::optional("algo", AttrKind::Str),
            AttrDef::optional("deterministic", AttrKind::Unit),
            AttrDef::optional("mesh_axes", AttrKind::Array),
            AttrDef::optional("mesh_shape", AttrKind::Array),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.guard",
        doc: "checks the shape constraint `constraint` over the function's dims before anything runs, and fails the call when it is false (host functions only)",
        attrs: &[
            AttrDef::required("constraint", AttrKind::Str),
            AttrDef::optional("callee", AttrKind::Str),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "tile.launch",
        doc: "launches the kernel `callee` on `grid` blocks of `block` threads with the operands as arguments; with `when`, only where that shape constraint over the function's dims holds",
        operands: Arity::VARIADIC,
        attrs: &[
            AttrDef::required("callee", AttrKind::Symbol),
            AttrDef::required("grid", AttrKind::Array),
            AttrDef::required("block", AttrKind::Array),
            AttrDef::optional("shared_bytes", AttrKind::Int),
            AttrDef::optional("stream", AttrKind::Any),
            AttrDef::optional("when", AttrKind::Str),
        ],
        ..OpDef::DEFAULT
    },
];

/// Tile- and Target-IR ops that write no memory a kernel allocated (they
/// compute values, or read memory): between a load of a shared buffer and
/// a product, they let the product read the buffer where the load did.
pub const WRITES_NO_MEMORY: &[&str] = &[
    "tile.const",
    "tile.binary",
    "tile.unary",
    "tile.cmp",
    "tile.cast",
    "tile.select",
    "tile.iota",
    "tile.broadcast",
    "tile.transpose",
    "tile.reshape",
    "tile.view",
    "tile.load",
    "tile.load_tile",
    "nvptx.ldmatrix",
    "nvptx.sreg",
];

/// The `tile` ops that depend on the target and that `lower-tile-to-target`
/// replaces; they must not be left at the Target layer.
pub const TARGET_DEPENDENT: &[&str] = &[
    "tile.thread_id",
    "tile.block_id",
    "tile.block_dim",
    "tile.grid_dim",
    "tile.lane_id",
    "tile.warp_id",
    "tile.barrier",
    "tile.alloc_shared",
    "tile.async_copy",
    "tile.wait_async",
    "tile.pipeline",
    "tile.mma",
    "tile.shuffle",
    "tile.vote",
    "tile.atomic",
];

const BINARY_FNS: &[&str] = &[
    "add", "sub", "mul", "div", "floordiv", "rem", "max", "min", "pow", "and", "or", "xor", "shl", "shr",
];
const BITWISE_FNS: &[&str] = &["and", "or", "xor", "shl", "shr"];
const UNARY_FNS: &[&str] = &[
    "neg", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu", "not", "popcount",
    "sin", "cos", "floor", "ceil", "erf", "gelu_erf",
];
const FLOAT_UNARY_FNS: &[&str] = &[
    "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "gelu_erf", "silu", "sin", "cos", "erf",
];
pub(crate) const CMP_PREDS: &[&str] = &["lt", "le", "gt", "ge", "eq", "ne"];
const REDUCE_KINDS: &[&str] = &["sum", "max", "min", "prod"];
const REDUCE_ORDERS: &[&str] = &["tree", "any"];
pub(crate) const SHUFFLE_MODES: &[&str] = &["down", "up", "xor", "idx"];
pub(crate) const VOTE_MODES: &[&str] = &["any", "all", "ballot"];
/// The distributions of random draws (`graph.rng`, `tile.rng`).
pub const RNG_DISTS: &[&str] = &["uniform", "normal", "dropout"];

/// What is wrong with the probability `p` of a random draw of distribution
/// `dist`, checked the same way in Graph IR and Tile IR: a dropout mask
/// needs one in [0, 1), and only a dropout mask takes one. The message and
/// a label for the op.
pub fn check_rng_probability(dist: Option<&str>, p: Option<f64>) -> Option<(String, &'static str)> {
    match (dist, p) {
        (Some("dropout"), Some(p)) if !(0.0..1.0).contains(&p) => {
            Some((format!("a dropout probability is in [0, 1), not {p}"), "p out of range"))
        }
        (Some("dropout"), None) => Some(("a dropout draw needs its probability `p`".into(), "no `p`")),
        (Some("uniform" | "normal"), Some(_)) => Some((
            "only a dropout draw takes a probability `p`".into(),
            "`p` of a uniform or normal draw",
        )),
        _ => None,
    }
}

impl Dialect for TileDialect {
    fn name(&self) -> &str {
        "tile"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        rules::at_anchor(m, op, errors);
        let name = m.op(op).name.as_str();
        let at_target = m
            .enclosing_function(op)
            .map_or(is_target_layer(m), |f| func_at_target_layer(m, f));
        if at_target && TARGET_DEPENDENT.contains(&name) {
            errors.push(
                tessera_ir::VerifyError::at_op(
                    m,
                    op,
                    format!("target-dependent op `{name}` is left in a module at the target layer"),
                )
                .with_label("`lower-tile-to-target` replaces this op with the target's form")
                .with_note("at the target layer (`layer = \"target\"`) only portable `tile` ops may remain"),
            );
        }
        let mut c = Check::new(m, op, errors);
        verify(&mut c, name);
    }
}

fn verify(c: &mut Check, name: &str) {
    match name {
        "tile.thread_id" | "tile.block_id" | "tile.block_dim" | "tile.grid_dim" => {
            c.dim_attr();
            c.result_is(0, &Type::INDEX);
        }
        "tile.lane_id" | "tile.warp_id" => c.result_is(0, &Type::INDEX),
        "tile.const" => constant(c),
        "tile.binary" => binary(c),
        "tile.unary" => unary(c),
        "tile.cmp" => cmp(c),
        "tile.select" => select(c),
        "tile.cast" => cast(c),
        "tile.local" => {
            let ty = c.result_type(0);
            if !shape::is_memref_in(&ty, MemSpace::Local) {
                c.fail(format!("`tile.local` gives a `memref<…, local>`, not `{ty}`"));
            }
        }
        "tile.load" => check::load(c, 0, 1),
        "tile.store" => check::store(c),
        "tile.view" => check::view(c),
        "tile.alloc_shared" => check::alloc_shared(c),
        "tile.load_tile" => check::load_tile(c),
        "tile.store_tile" => check::store_tile(c),
        "tile.async_copy" => {
            check::tile_copy(c, 0);
            c.int_at_least("stage", 0);
        }
        "tile.wait_async" => c.int_at_least("stage", 0),
        "tile.barrier" => c.one_of_opt("scope", &["block", "group"]),
        "tile.fence" => {
            c.one_of("scope", &["block", "device", "system"]);
        }
        "tile.print" => print(c),
        "tile.mma" => mma(c),
        "tile.reduce" => reduce(c),
        "tile.transpose" => transpose(c),
        "tile.reshape" => reshape(c),
        "tile.iota" => iota(c),
        "tile.broadcast" => broadcast(c),
        "tile.softmax" => softmax(c),
        "tile.shuffle" => {
            c.one_of("mode", SHUFFLE_MODES);
            check::shuffle(c);
        }
        "tile.vote" => {
            c.one_of("mode", VOTE_MODES);
            check::vote(c);
        }
        "tile.atomic" => check::atomic(c, &[MemSpace::Global, MemSpace::Shared]),
        "tile.rng" => rng(c),
        "tile.for" => for_(c),
        "tile.pipeline" => crate::pipeline::verify(c),
        "tile.if" => if_(c),
        "tile.while" => while_(c),
        "tile.yield" => c.parent_is(&[
            "tile.for",
            "tile.pipeline",
            "tile.if",
            "tile.while",
            "nvptx.warp_specialize",
        ]),
        "tile.condition" => {
            c.parent_is(&["tile.while"]);
            c.operand_is(0, &Type::I1);
        }
        "tile.break" | "tile.continue" if !c.inside(&["tile.for", "tile.while"]) => {
            c.fail(format!("`{name}` outside a loop"));
        }
        "tile.return" => return_(c),
        "tile.launch" => launch(c),
        "tile.all_reduce" => all_reduce(c),
        "tile.guard" => guard(c),
        _ => {}
    }
}

fn constant(c: &mut Check) {
    let ty = c.result_type(0);
    let Some(elem) = ty.elem().filter(|_| is_value(&ty)) else {
        c.fail(format!("`tile.const` gives a scalar or a tile, not `{ty}`"));
        return;
    };
    let value = c.attr("value").cloned();
    let fits = match value {
        Some(Attr::Int(v)) => elem.is_float() || elem != ScalarType::I1 || v == 0 || v == 1,
        Some(Attr::Float(_)) => elem.is_float(),
        Some(Attr::Bool(_)) => elem == ScalarType::I1,
        _ => false,
    };
    if !fits {
        c.fail(format!(
            "`tile.const` of type `{ty}` cannot hold the value {}",
            value.map_or("?".to_string(), |v| v.to_string())
        ));
    }
}

fn binary(c: &mut Check) {
    let f = c.one_of("fn", BINARY_FNS);
    let (a, b) = (c.operand_type(0), c.operand_type(1));
    let Some(joined) = elementwise(&a, &b) else {
        c.fail(format!(
            "the operands of `tile.binary` have different types: `{a}` and `{b}`"
        ));
        return;
    };
    c.result_is(0, &joined);
    let elem = joined.elem().unwrap_or(ScalarType::F32);
    if let Some(f) = f {
        if BITWISE_FNS.contains(&f.as_str()) && elem.is_float() {
            c.fail(format!(
                "`{f}` needs integer operands, not `{elem}`",
                elem = elem.name()
            ));
        }
    }
}

fn unary(c: &mut Check) {
    let f = c.one_of("fn", UNARY_FNS);
    let ty = c.operand_type(0);
    if !is_value(&ty) {
        c.fail(format!("`tile.unary` works on scalars and tiles, not `{ty}`"));
        return;
    }
    c.result_is(0, &ty);
    let elem = ty.elem().unwrap_or(ScalarType::F32);
    match f.as_deref() {
        Some(f) if FLOAT_UNARY_FNS.contains(&f) && !elem.is_float() => {
            c.fail(format!("`{f}` needs a float operand, not `{}`", elem.name()));
        }
        Some(f @ ("not" | "popcount")) if elem.is_float() => {
            c.fail(format!("`{f}` needs an integer operand, not `{}`", elem.name()))
        }
        _ => {}
    }
    if c.attr("approx").is_some() && !matches!(f.as_deref(), Some("exp" | "exp2")) {
        c.fail(format!(
            "`approx` is for `exp` and `exp2`, not `{}`: no other function has a hardware approximation here",
            f.as_deref().unwrap_or("?")
        ));
    }
}

fn cmp(c: &mut Check) {
    c.one_of("pred", CMP_PREDS);
    let (a, b) = (c.operand_type(0), c.operand_type(1));
    let Some(joined) = elementwise(&a, &b) else {
        c.fail(format!(
            "the operands of `tile.cmp` have different types: `{a}` and `{b}`"
        ));
        return;
    };
    c.result_is(0, &shape::with_elem(&joined, ScalarType::I1));
}

fn select(c: &mut Check) {
    let (cond, a, b) = (c.operand_type(0), c.operand_type(1), c.operand_type(2));
    // Choosing between two buffers of one type (double buffering) needs a
    // scalar condition: every thread picks the same buffer.
    if matches!(a, Type::MemRef { .. }) && a == b {
        if cond != Type::I1 {
            c.fail(format!(
                "a `tile.select` of buffers needs an `i1` condition, not `{cond}`"
            ));
        }
        c.result_is(0, &a);
        return;
    }
    let Some(joined) = elementwise(&a, &b) else {
        c.fail(format!(
            "the alternatives of `tile.select` have different types: `{a}` and `{b}`"
        ));
        return;
    };
    let scalar_cond = cond == Type::I1;
    if !scalar_cond && cond != shape::with_elem(&joined, ScalarType::I1) {
        c.fail(format!(
            "the condition of `tile.select` is `{cond}`; it must be `i1` or an `i1` tile of the result's shape"
        ));
    }
    c.result_is(0, &joined);
}

fn cast(c: &mut Check) {
    let (from, to) = (c.operand_type(0), c.result_type(0));
    let same_shape = match (&from, &to) {
        (Type::Scalar(_), Type::Scalar(_)) => true,
        (Type::Tensor { dims: a, .. }, Type::Tensor { dims: b, .. }) => a == b,
        _ => false,
    };
    if !same_shape {
        c.fail(format!(
            "`tile.cast` changes the element type only: `{from}` cannot become `{to}`"
        ));
    }
    let bits = |t: &Type| t.elem().map(|e| e.bits());
    if c.attr("bitcast").is_some() && bits(&from) != bits(&to) {
        c.fail(format!("a `bitcast` keeps the width: `{from}` and `{to}` differ"));
    }
}

fn mma(c: &mut Check) {
    let (a, b, acc) = (c.operand_type(0), c.operand_type(1), c.operand_type(2));
    for (which, ty) in [("a", &a), ("b", &b)] {
        let ok = matches!(ty, Type::Tensor { .. }) || shape::is_memref_in(ty, MemSpace::Shared);
        if !ok {
            c.fail(format!(
                "operand `{which}` of `tile.mma` is `{ty}`: it must be a tile or a shared memref"
            ));
            return;
        }
    }
    if !matches!(acc, Type::Tensor { .. }) {
        c.fail(format!("the accumulator of `tile.mma` is `{acc}`: it must be a tile"));
        return;
    }
    if let Err(e) = shape::mma_dims(&a, &b, &acc) {
        c.fail(format!("`tile.mma` shapes do not fit: {e}"));
        return;
    }
    if a.elem() != b.elem() && !a.elem().zip(b.elem()).is_some_and(|(ea, eb)| ea.multiplies_with(eb)) {
        c.fail(format!(
            "the operands of `tile.mma` have different element types: `{}` and `{}`",
            elem_name(&a),
            elem_name(&b)
        ));
    }
    c.result_is(0, &acc);
    if let Some(Attr::Type(Type::Scalar(acc_dtype))) = c.attr("accumulate").cloned() {
        if acc.elem() != Some(acc_dtype) {
            c.fail(format!(
                "`tile.mma` accumulates in `{}` but its accumulator tile holds `{}`",
                acc_dtype.name(),
                elem_name(&acc)
            ));
        }
    } else {
        c.fail("`accumulate` of `tile.mma` must be a scalar type");
    }
}

fn elem_name(ty: &Type) -> &'static str {
    ty.elem().map_or("?", ScalarType::name)
}

fn iota(c: &mut Check) {
    let result = c.result_type(0);
    let dim = c.attr("dim").and_then(Attr::as_int).unwrap_or(0);
    match &result {
        Type::Tensor {
            dims,
            elem: ScalarType::Index,
        } if dim >= 0 && (dim as usize) < dims.len() => {}
        _ => c.fail(format!(
            "`tile.iota` along axis {dim} makes an `index` tile with that axis, not `{result}`"
        )),
    }
}

fn transpose(c: &mut Check) {
    let x = c.operand_type(0);
    let Type::Tensor { dims, elem } = &x else {
        c.fail(format!("`tile.transpose` permutes a tile, not `{x}`"));
        return;
    };
    let perm: Vec<i64> = c.attr("perm").and_then(Attr::as_ints).unwrap_or_default();
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..dims.len() as i64).collect::<Vec<_>>() {
        c.fail(format!(
            "`perm` {perm:?} is not a permutation of the {} axes of `{x}`",
            dims.len()
        ));
        return;
    }
    let expected = Type::tensor(perm.iter().map(|&p| dims[p as usize].clone()), *elem);
    let result = c.result_type(0);
    if result != expected {
        c.fail(format!(
            "`tile.transpose` of `{x}` by {perm:?} gives `{expected}`, not `{result}`"
        ));
    }
}

/// `tile.reshape(%x) -> tile`: a tile of the same element type and the
/// same number of elements, known when the op is compiled.
fn reshape(c: &mut Check) {
    let x = c.operand_type(0);
    let result = c.result_type(0);
    let count = |t: &Type| match t {
        Type::Tensor { dims, .. } => dims.iter().map(tessera_ir::Dim::as_const).product::<Option<i64>>(),
        _ => None,
    };
    let (Some(from), Some(to)) = (count(&x), count(&result)) else {
        c.fail(format!(
            "`tile.reshape` takes and gives tiles of constant shapes, not `{x}` to `{result}`"
        ));
        return;
    };
    if from != to || x.elem() != result.elem() {
        c.fail(format!(
            "`tile.reshape` keeps the elements and their type: `{x}` ({from} elements) is not `{result}` ({to})"
        ));
    }
}

fn broadcast(c: &mut Check) {
    let x = c.operand_type(0);
    let result = c.result_type(0);
    let (from, from_elem) = match &x {
        Type::Tensor { dims, elem } => (dims.clone(), *elem),
        Type::Scalar(s) => (Vec::new(), *s),
        _ => {
            c.fail(format!("`tile.broadcast` broadcasts a scalar or tile, not `{x}`"));
            return;
        }
    };
    let Type::Tensor { dims: to, elem } = &result else {
        c.fail(format!("`tile.broadcast` makes a tile, not `{result}`"));
        return;
    };
    let fits = from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(f, t)| f == t || f.as_const() == Some(1));
    if *elem != from_elem || !fits {
        c.fail(format!("`{x}` does not broadcast to `{result}`"));
    }
}

fn softmax(c: &mut Check) {
    let x = c.operand_type(0);
    let Type::Tensor { dims, .. } = &x else {
        c.fail(format!("`tile.softmax` normalizes a tile, not `{x}`"));
        return;
    };
    let axis = c.attr("axis").and_then(Attr::as_int).unwrap_or(-1);
    let rank = dims.len() as i64;
    if axis < -rank || axis >= rank {
        c.fail(format!(
            "`tile.softmax` axis {axis} is out of range for the rank-{rank} tile `{x}`"
        ));
    }
    c.one_of_opt("order", REDUCE_ORDERS);
    let result = c.result_type(0);
    if result != x {
        c.fail(format!("`tile.softmax` of `{x}` has the same type, not `{result}`"));
    }
}

fn reduce(c: &mut Check) {
    c.one_of("kind", REDUCE_KINDS);
    c.one_of_opt("order", REDUCE_ORDERS);
    let x = c.operand_type(0);
    let Type::Tensor { dims, elem } = &x else {
        c.fail(format!("`tile.reduce` reduces a tile, not `{x}`"));
        return;
    };
    let axis = c.attr("axis").and_then(Attr::as_int).unwrap_or(0);
    let rank = dims.len() as i64;
    if axis < 0 || axis >= rank {
        c.fail(format!(
            "`tile.reduce` axis {axis} is out of range for the rank-{rank} tile `{x}`"
        ));
        return;
    }
    let elem = match c.attr("accumulate") {
        Some(Attr::Type(Type::Scalar(acc))) => *acc,
        Some(_) => {
            c.fail("`accumulate` of `tile.reduce` must be a scalar type");
            return;
        }
        None => *elem,
    };
    let mut removed = dims.clone();
    removed.remove(axis as usize);
    let mut kept = dims.clone();
    kept[axis as usize] = 1.into();
    let expected_removed = if removed.is_empty() {
        Type::Scalar(elem)
    } else {
        Type::tensor(removed, elem)
    };
    let expected_kept = Type::tensor(kept, elem);
    let result = c.result_type(0);
    if result != expected_removed && result != expected_kept {
        c.fail(format!(
            "`tile.reduce` over axis {axis} of `{x}` gives `{expected_removed}` (or `{expected_kept}`), not `{result}`"
        ));
    }
}

fn rng(c: &mut Check) {
    let dist = c.one_of("dist", RNG_DISTS);
    if let Some((message, _)) = check_rng_probability(dist.as_deref(), c.attr("p").and_then(Attr::as_float)) {
        c.fail(message);
    }
    for i in 0..c.operand_count() {
        let ty = c.operand_type(i);
        if !matches!(ty, Type::Scalar(s) if !s.is_float() && s != ScalarType::I1) {
            c.fail(format!("the counters of `tile.rng` are integers, not `{ty}`"));
        }
    }
    let ty = c.result_type(0);
    if !ty.elem().is_some_and(ScalarType::is_float) || !is_value(&ty) {
        c.fail(format!("`tile.rng` gives floats (a scalar or a tile), not `{ty}`"));
    }
}

/// `tile.print`: two index operands, then one scalar for each placeholder
/// of `text`.
fn print(c: &mut Check) {
    for i in 0..2.min(c.operand_count()) {
        c.operand_is(i, &Type::INDEX);
    }
    for i in 2..c.operand_count() {
        let ty = c.operand_type(i);
        if !matches!(ty, Type::Scalar(_)) {
            c.fail(format!("`tile.print` prints scalars, and operand {i} is `{ty}`"));
        }
    }
    let Some(text) = c.attr("text").and_then(Attr::as_str) else {
        return;
    };
    let placeholders = print_pieces(text).map(|p| p.iter().filter(|p| **p == PrintPiece::Value).count());
    match placeholders {
        Ok(n) if n + 2 == c.operand_count() => {}
        Ok(n) => {
            let values = c.operand_count().saturating_sub(2);
            let plural = if values == 1 { "" } else { "s" };
            c.fail(format!(
                "the `text` of `tile.print` has {n} placeholders for {values} value{plural}"
            ))
        }
        Err(message) => c.fail(format!("the `text` of `tile.print` {message}")),
    }
}

/// A piece of a `tile.print` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintPiece {
    /// A character printed as it is (a doubled brace is one brace).
    Char(char),
    /// `{}`: where the next value goes.
    Value,
}

/// The pieces of a `tile.print` text, whose literal braces are doubled;
/// what is wrong with it, when a brace is neither.
pub fn print_pieces(text: &str) -> Result<Vec<PrintPiece>, &'static str> {
    let mut pieces = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, chars.peek()) {
            ('{', Some('{')) | ('}', Some('}')) => {
                chars.next();
                pieces.push(PrintPiece::Char(ch));
            }
            ('{', Some('}')) => {
                chars.next();
                pieces.push(PrintPiece::Value);
            }
            ('{', _) => return Err("has a `{` that is neither `{}` nor `{{`"),
            ('}', _) => return Err("has a `}` that is not doubled"),
            _ => pieces.push(PrintPiece::Char(ch)),
        }
    }
    Ok(pieces)
}

fn for_(c: &mut Check) {
    for i in 0..3 {
        c.operand_is(i, &Type::INDEX);
    }
    let args = c.region_arg_types(0);
    if args != [Type::INDEX] {
        c.fail("the region of `tile.for` takes one argument, the induction variable `%i: index`");
    }
    c.region_ends_with(
        0,
        &["tile.yield", "tile.break", "tile.continue", "tile.return"],
        "tile.yield",
    );
}

fn if_(c: &mut Check) {
    c.operand_is(0, &Type::I1);
    for r in 0..2 {
        if !c.region_arg_types(r).is_empty() {
            c.fail("the regions of `tile.if` take no arguments");
        }
        c.region_ends_with(
            r,
            &["tile.yield", "tile.break", "tile.continue", "tile.return"],
            "tile.yield",
        );
    }
}

fn while_(c: &mut Check) {
    for r in 0..2 {
        if !c.region_arg_types(r).is_empty() {
            c.fail("the regions of `tile.while` take no arguments");
        }
    }
    c.region_ends_with(0, &["tile.condition"], "tile.condition");
    c.region_ends_with(
        1,
        &["tile.yield", "tile.break", "tile.continue", "tile.return"],
        "tile.yield",
    );
}

fn return_(c: &mut Check) {
    let Some(func) = c.m.enclosing_function(c.op) else {
        c.fail("`tile.return` outside a function");
        return;
    };
    let Some((_, results)) = c.m.func_type(func) else {
        return;
    };
    let given: Vec<Type> = (0..c.operand_count()).map(|i| c.operand_type(i)).collect();
    if given != results {
        let list = |ts: &[Type]| ts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        c.fail(format!(
            "`tile.return` returns ({}) but the function returns ({})",
            list(&given),
            list(results)
        ));
    }
}

fn all_reduce(c: &mut Check) {
    let m = c.m;
    if let Some(func) = m.enclosing_function(c.op) {
        if rules::func_kind(m, func) == Some("kernel") {
            c.fail("a kernel cannot run a collective: `tile.all_reduce` belongs in a host function");
        }
    }
    c.one_of("op", &crate::COLLECTIVE_OPS);
    if let Some(message) = crate::check_collective_mesh(m, c.op) {
        c.fail(message);
    }
    let src = c.memref(0, "source", &[MemSpace::Global]);
    let dst = c.memref(1, "destination", &[MemSpace::Global]);
    if let (Some(src), Some(dst)) = (src, dst) {
        if src != dst {
            c.fail(format!(
                "`tile.all_reduce` of `{src}` into `{dst}`: the buffers' types differ"
            ));
        }
    }
}

fn guard(c: &mut Check) {
    let m = c.m;
    let Some(func) = m.enclosing_function(c.op) else {
        return;
    };
    if rules::func_kind(m, func) != Some("host") {
        c.fail("`tile.guard` belongs in a host function: it checks the dims of a call before its launches");
        return;
    }
    let text = c
        .attr("constraint")
        .and_then(Attr::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(constraint) = ShapeConstraint::parse(&text) else {
        c.fail(format!(
            "the constraint {text:?} of `tile.guard` is not a shape constraint"
        ));
        return;
    };
    if let Some(sym) = dim_outside(m, func, &constraint) {
        c.fail(format!(
            "`tile.guard` checks `{constraint}`, but `{sym}` is not among the function's `dims`"
        ));
    }
}

/// A dim `constraint` relates that is not among function `func`'s `dims`.
fn dim_outside(m: &Module, func: OpId, constraint: &ShapeConstraint) -> Option<String> {
    let dims = rules::func_dims(m, func);
    constraint
        .symbols()
        .into_iter()
        .find(|s| !dims.contains(s))
        .map(str::to_string)
}

/// `when` of `tile.launch`: shape constraints over the host function's
/// dims, joined by `and` (the launch runs only where all hold).
fn launch_condition(c: &mut Check, when: &Attr) {
    let m = c.m;
    let Some(constraints) = when.as_str().and_then(ShapeConstraint::parse_all) else {
        c.fail(format!(
            "`when` of `tile.launch` is {when}, not shape constraints joined by `and`"
        ));
        return;
    };
    let Some(func) = m.enclosing_function(c.op) else {
        return;
    };
    for constraint in &constraints {
        if let Some(sym) = dim_outside(m, func, constraint) {
            c.fail(format!(
                "`tile.launch` runs when `{constraint}`, but `{sym}` is not among the function's `dims`"
            ));
        }
    }
}

fn launch(c: &mut Check) {
    let m = c.m;
    if let Some(func) = m.enclosing_function(c.op) {
        if rules::func_kind(m, func) == Some("kernel") {
            c.fail("a kernel cannot launch a kernel: `tile.launch` belongs in a host function");
        }
    }
    for key in ["grid", "block"] {
        let items = c
            .attr(key)
            .and_then(Attr::as_array)
            .map(<[Attr]>::to_vec)
            .unwrap_or_default();
        let good = (1..=3).contains(&items.len())
            && items
                .iter()
                .all(|a| a.as_int().is_some_and(|v| v > 0) || key == "grid" && a.as_str().is_some());
        if !good {
            c.fail(format!(
                "`{key}` of `tile.launch` must list 1 to 3 positive sizes{}",
                if key == "grid" { " (or dim names)" } else { "" }
            ));
        }
    }
    let block: i64 = c
        .attr("block")
        .and_then(Attr::as_ints)
        .map_or(1, |b| b.iter().product());
    if block > 1024 {
        c.fail(format!(
            "`tile.launch` asks for {block} threads per block; a block has at most 1024"
        ));
    }
    if let Some(when) = c.attr("when").cloned() {
        launch_condition(c, &when);
    }
    let Some(callee) = c.attr("callee").and_then(Attr::as_symbol).map(str::to_string) else {
        return;
    };
    let Some(kernel) = m.function(&callee) else {
        c.fail(format!("`tile.launch` of undefined kernel `@{callee}`"));
        return;
    };
    if rules::func_kind(m, kernel) != Some("kernel") {
        c.fail(format!(
            "`tile.launch` of `@{callee}`, which is not a kernel (`kind = \"kernel\"`)"
        ));
        return;
    }
    let Some((params, _)) = m.func_type(kernel) else { return };
    let args: Vec<Type> = (0..c.operand_count()).map(|i| c.operand_type(i)).collect();
    if args.len() != params.len() {
        c.fail(format!(
            "`tile.launch` passes {} arguments to `@{callee}`, which takes {}",
            args.len(),
            params.len()
        ));
        return;
    }
    for (i, (arg, param)) in args.iter().zip(params).enumerate() {
        if arg != param {
            c.fail(format!(
                "argument #{i} of the launch of `@{callee}` is `{arg}`, but the kernel takes `{param}`"
            ));
        }
    }
    if let Some(declared) = m.attr(kernel, "block").and_then(Attr::as_ints) {
        let given = c.attr("block").and_then(Attr::as_ints).unwrap_or_default();
        if declared.iter().product::<i64>() != given.iter().product::<i64>() {
            c.fail(format!(
                "`tile.launch` uses blocks of {given:?} threads, but `@{callee}` is written for {declared:?}"
            ));
        }
    }
}
