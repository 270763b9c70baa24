//! The `amdgpu` dialect: Target IR for AMD GPUs (gfx90a, gfx942; wave64).
//! As in `nvptx`, copies and matrix products stay block-level.

use tessera_ir::{Arity, AttrDef, AttrKind, Dialect, MemSpace, Module, OpDef, OpId, ScalarType, Type, VerifyErrors};

use crate::check::{self, Check};
use crate::gate::{self, is_16bit_float};
use crate::rules;
use crate::shape::row_bytes;
use crate::target::Target;

/// The `amdgpu` dialect.
pub struct AmdgpuDialect;

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
    id_op!("amdgpu.workitem_id", "the work-item's index in its workgroup along `dim`"),
    id_op!("amdgpu.workgroup_id", "the workgroup's index in the grid along `dim`"),
    id_op!("amdgpu.workgroup_size", "the work-items of a workgroup along `dim`"),
    id_op!("amdgpu.num_workgroups", "the workgroups of the grid along `dim`"),
    OpDef {
        name: "amdgpu.lane_id",
        doc: "the lane in the wavefront (`mbcnt`), 0 to 63",
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.s_barrier",
        doc: "`s_barrier`: waits for the wavefronts of the workgroup",
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.alloc_lds",
        doc: "a static buffer in LDS (shared memory)",
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::optional("swizzle", AttrKind::Any),
            AttrDef::optional("bank_pad", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.ds_bpermute",
        doc: "`ds_bpermute`: each lane reads `%v` from lane `%src_lane` of the wavefront",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.ballot",
        doc: "the 64-lane mask of the lanes whose predicate holds",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.atomic",
        doc: "a global or LDS atomic `kind` on one element; gives the old value",
        operands: Arity::AtLeast(2),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("kind", AttrKind::Str), AttrDef::optional("nondeterministic", AttrKind::Str)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.copy_to_lds",
        doc: "copies the tile at the offsets of global `%src` into LDS `%dst` with dword loads (`buffer_load … lds`), asynchronously",
        operands: Arity::AtLeast(2),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.s_waitcnt",
        doc: "`s_waitcnt`: waits until at most `vmcnt` vector-memory and `lgkmcnt` LDS/scalar operations are outstanding",
        attrs: &[AttrDef::optional("vmcnt", AttrKind::Int), AttrDef::optional("lgkmcnt", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.mfma",
        doc: "the workgroup's `%a · %b + %c` in `v_mfma` instructions of shape `instr` (gfx90a, gfx942)",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("instr", AttrKind::Array)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "amdgpu.mma_fma",
        doc: "`%a · %b + %c` with scalar fused multiply-adds in the accumulator's type, k in increasing order",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
];

impl Dialect for AmdgpuDialect {
    fn name(&self) -> &str {
        "amdgpu"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        rules::at_anchor(m, op, errors);
        let mut c = Check::new(m, op, errors);
        let target = gate::family(&mut c);
        let name = c.name;
        match name {
            "amdgpu.workitem_id" | "amdgpu.workgroup_id" | "amdgpu.workgroup_size" | "amdgpu.num_workgroups" => {
                c.dim_attr();
                c.result_is(0, &Type::INDEX);
            }
            "amdgpu.lane_id" => c.result_is(0, &Type::INDEX),
            "amdgpu.alloc_lds" => check::alloc_shared(&mut c),
            "amdgpu.ds_bpermute" => check::shuffle(&mut c),
            "amdgpu.ballot" => {
                c.operand_is(0, &Type::I1);
                let ty = c.result_type(0);
                if !matches!(ty, Type::Scalar(ScalarType::I64 | ScalarType::U64)) {
                    c.fail(format!("`amdgpu.ballot` gives a 64-bit lane mask (wave64), not `{ty}`"));
                }
            }
            "amdgpu.atomic" => check::atomic(&mut c, &[MemSpace::Global, MemSpace::Shared]),
            "amdgpu.copy_to_lds" => {
                if let Some(dst) = check::tile_copy(&mut c, 0) {
                    if let Some(row) = row_bytes(&dst).filter(|r| r % 4 != 0) {
                        c.fail(format!(
                            "`amdgpu.copy_to_lds` moves dwords: a row of `{dst}` is {row} B, not a multiple of 4"
                        ));
                    }
                }
            }
            "amdgpu.s_waitcnt" => {
                if c.attr("vmcnt").is_none() && c.attr("lgkmcnt").is_none() {
                    c.fail("`amdgpu.s_waitcnt` needs `vmcnt` or `lgkmcnt`");
                }
                for (key, max) in [("vmcnt", 63), ("lgkmcnt", 15)] {
                    if let Some(v) = c.int(key).filter(|v| !(0..=max).contains(v)) {
                        c.fail(format!("`{key}` of `s_waitcnt` is 0 to {max}, not {v}"));
                    }
                }
            }
            "amdgpu.mfma" => mfma(&mut c, target),
            "amdgpu.mma_fma" => {
                check::matrix_product(&mut c);
            }
            _ => {}
        }
    }
}

fn mfma(c: &mut Check, target: Option<Target>) {
    for (i, role) in [(0, "operand `a`"), (1, "operand `b`"), (2, "accumulator")] {
        if !gate::in_registers(c, i, role, "load it with `tile.load_tile`") {
            return;
        }
    }
    let Some(dims) = check::matrix_product(c) else { return };
    let Some((elem, acc)) = gate::product_types(c) else {
        return;
    };
    let Some(instr) = gate::instr(c) else { return };
    let (allowed, acc_ty): (&[[i64; 3]], ScalarType) = match elem {
        e if is_16bit_float(e) => (&[[32, 32, 8], [16, 16, 16]], ScalarType::F32),
        ScalarType::F32 => (&[[32, 32, 2], [16, 16, 4]], ScalarType::F32),
        ScalarType::I8 => (&[[32, 32, 16], [16, 16, 32]], ScalarType::I32),
        e if e.is_fp8() => (&[[32, 32, 16], [16, 16, 32]], ScalarType::F32),
        other => {
            c.fail(format!(
                "`v_mfma` has no form for `{}` operands; use `amdgpu.mma_fma`",
                other.name()
            ));
            return;
        }
    };
    if !allowed.contains(&instr) {
        let list: Vec<String> = allowed.iter().map(|s| format!("{s:?}")).collect();
        c.fail(format!(
            "`v_mfma` on `{}` has the shapes {}, not {instr:?}",
            elem.name(),
            list.join(", ")
        ));
        return;
    }
    if acc != acc_ty {
        c.fail(format!(
            "`v_mfma` on `{}` accumulates in `{}`, not `{}`",
            elem.name(),
            acc_ty.name(),
            acc.name()
        ));
        return;
    }
    if let Some(t) = target {
        let needed: &[Target] = if elem.is_fp8() || elem == ScalarType::I8 && instr == [32, 32, 16] {
            &[Target::Gfx942]
        } else {
            &[Target::Gfx90a, Target::Gfx942]
        };
        let feature = if elem.is_fp8() { "fp8 `v_mfma`" } else { "`amdgpu.mfma`" };
        if !gate::needs(c, t, needed, Some(feature)) {
            return;
        }
    }
    gate::tiles_evenly(c, &dims, instr);
}
