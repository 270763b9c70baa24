//! The `cpu` dialect: Target IR for the host CPU backend, which runs the
//! threads of a block as iterations of loops (warps of 32 are emulated).
//! Block-collective ops (`barrier`, `copy`, `mma`) split those loops;
//! copies are synchronous.

use tessera_ir::{Arity, Attr, AttrDef, AttrKind, Dialect, MemSpace, Module, OpDef, OpId, Type, VerifyErrors};

use crate::check::{self, Check};
use crate::gate;
use crate::rules;
use crate::tile::{SHUFFLE_MODES, VOTE_MODES};

/// The `cpu` dialect.
pub struct CpuDialect;

macro_rules! id_op {
    ($name:literal, $doc:literal) => {
        OpDef {
            name: $name,
            doc: $doc,
            results: Arity::Exact(1),
            attrs: &[AttrDef::required("dim", AttrKind::Int)],
            pure: true,
            ..OpDef::DEFAULT
        }
    };
}

const OPS: &[OpDef] = &[
    id_op!("cpu.thread_id", "the emulated thread's index in its block along `dim`"),
    id_op!("cpu.block_id", "the block's index in the grid along `dim`"),
    id_op!("cpu.block_dim", "the threads of a block along `dim`"),
    id_op!("cpu.grid_dim", "the blocks of the grid along `dim`"),
    OpDef {
        name: "cpu.barrier",
        doc: "every emulated thread of the block reaches this point before any goes on",
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.alloc_shared",
        doc: "a per-block buffer standing for shared memory",
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::optional("swizzle", AttrKind::Any),
            AttrDef::optional("bank_pad", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.shuffle",
        doc: "reads `%v` from another emulated lane of the warp (`mode` down, up, xor or idx) in segments of `width`",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("mode", AttrKind::Str), AttrDef::optional("width", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.vote",
        doc: "a vote over the emulated warp: `any`, `all` or `ballot`",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("mode", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.atomic",
        doc: "an atomic read-modify-write `kind` on one element; gives the old value",
        operands: Arity::AtLeast(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("kind", AttrKind::Str), AttrDef::optional("nondeterministic", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.copy",
        doc: "copies the tile at the offsets of `%src` into the shared buffer `%dst`, synchronously, for the whole block",
        operands: Arity::AtLeast(2),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "cpu.mma",
        doc: "the block's `%a · %b + %c` (a and b tiles or shared buffers) in `accumulate` precision, k in increasing order",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("accumulate", AttrKind::Type)],
        ..OpDef::DEFAULT
    },
];

impl Dialect for CpuDialect {
    fn name(&self) -> &str {
        "cpu"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        rules::at_anchor(m, op, errors);
        let mut c = Check::new(m, op, errors);
        gate::family(&mut c);
        match c.name {
            "cpu.thread_id" | "cpu.block_id" | "cpu.block_dim" | "cpu.grid_dim" => {
                c.dim_attr();
                c.result_is(0, &Type::INDEX);
            }
            "cpu.alloc_shared" => check::alloc_shared(&mut c),
            "cpu.shuffle" => {
                c.one_of("mode", SHUFFLE_MODES);
                check::shuffle(&mut c);
            }
            "cpu.vote" => {
                c.one_of("mode", VOTE_MODES);
                check::vote(&mut c);
            }
            "cpu.atomic" => check::atomic(&mut c, &[MemSpace::Global, MemSpace::Shared]),
            "cpu.copy" => {
                check::tile_copy(&mut c, 0);
            }
            "cpu.mma" => mma(&mut c),
            _ => {}
        }
    }
}

fn mma(c: &mut Check) {
    if check::matrix_product(c).is_none() {
        return;
    }
    let acc = c.operand_type(2);
    let declared = c.attr("accumulate").and_then(Attr::as_type).and_then(Type::elem);
    if declared != acc.elem() {
        c.fail(format!(
            "`cpu.mma` accumulates in `{}` but its accumulator holds `{}`",
            declared.map_or("?", |d| d.name()),
            acc.elem().map_or("?", |d| d.name())
        ));
    }
}
