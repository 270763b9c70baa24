//! Tile IR and Target IR: the `tile` dialect (per-kernel loop nests,
//! thread mapping, memory and synchronization) and the `nvptx`, `amdgpu`
//! and `cpu` dialects that replace its target-dependent ops, with their
//! verifiers and the passes between them (`spec/ir-tile.md`,
//! `spec/ir-target.md`).
//!
//! - [`register_dialects`] adds the four dialects to a [`Registry`].
//! - [`register_passes`] adds `estimate-resources`, `estimate-cost` and
//!   `lower-tile-to-target` to a [`PassRegistry`].
//!
//! A module is at the Target layer when it has the attribute
//! `layer = "target"` (which `lower-tile-to-target` sets); there the
//! target-dependent `tile` ops are rejected and kernels must carry their
//! launch configuration. The target is the module attribute `target`.
//!
//! No I/O; depends on the IR core only.

mod amdgpu;
mod check;
mod collective;
mod cost;
mod cpu;
mod estimate;
mod flow;
mod gate;
pub mod locals;
mod lower;
mod multiple;
mod nvptx;
mod pipeline;
mod rules;
mod shape;
mod target;
mod tile;

pub use amdgpu::AmdgpuDialect;
pub use collective::{check_collective_mesh, COLLECTIVE_ALGOS, COLLECTIVE_OPS};
pub use cost::{EstimateCost, Flops, KernelCost, COST_ATTR};
pub use cpu::CpuDialect;
pub use estimate::{estimate_registers, EstimateResources};
pub use lower::LowerTileToTarget;
pub use multiple::{strides_aligned, Multiples};
pub use nvptx::{mbarrier_type, NvptxDialect, PRODUCER_THREADS, TENSOR_MAP_RANK};
pub use rules::{shared_allocations, shared_total};
pub use shape::{pad_of, swizzle_fits, swizzle_of};
pub use target::{
    func_at_target_layer, is_target_layer, sixteen_bit_into_f32, Family, Target, LAYER_ATTR, TARGET_ATTR, TARGET_LAYER,
};
pub use tile::{check_rng_probability, print_pieces, PrintPiece, RNG_DISTS};
pub use tile::{TileDialect, TARGET_DEPENDENT, WRITES_NO_MEMORY};

use tessera_ir::{PassInfo, PassRegistry, Registry};

/// Registers the `tile`, `nvptx`, `amdgpu` and `cpu` dialects.
pub fn register_dialects(registry: &mut Registry) {
    registry.register(Box::new(TileDialect));
    registry.register(Box::new(NvptxDialect));
    registry.register(Box::new(AmdgpuDialect));
    registry.register(Box::new(CpuDialect));
}

/// Registers `estimate-resources`, `estimate-cost` and `lower-tile-to-target`.
pub fn register_passes(passes: &mut PassRegistry) {
    passes.register(PassInfo {
        name: "estimate-resources",
        description: "set `shared_bytes` and an estimate of `registers` per thread on kernel functions",
        create: || Box::new(EstimateResources),
    });
    passes.register(PassInfo {
        name: "estimate-cost",
        description: "set the `cost` of kernel functions: FLOPs and bytes per launch, over their dims",
        create: || Box::new(EstimateCost),
    });
    passes.register(PassInfo {
        name: "lower-tile-to-target",
        description: "replace target-dependent tile ops by the ops of the module's `target` (nvptx, amdgpu, cpu)",
        create: || Box::new(LowerTileToTarget),
    });
}
