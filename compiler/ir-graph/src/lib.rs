//! Graph IR and Schedule IR: the two upper layers of Tessera's IR stack
//! (`spec/ir-graph.md`, `spec/ir-schedule.md`).
//!
//! - [`GraphDialect`] (`graph.*`): operator-level tensor ops in SSA form,
//!   with shapes and dtypes checked, effects ordered by `!token` chains and
//!   every function carrying its `effects` and `numerics`.
//! - [`ScheduleDialect`] (`schedule.*`): which graph ops run in which GPU
//!   kernel (`schedule.kernel`), how it is tiled and launched, and mesh and
//!   pipeline regions with their stage DAG.
//! - Passes: `fuse` (Graph → Schedule: fusion and tiling, per-target tile
//!   defaults in [`targets`]) and `lower-schedule-to-tile` (each kernel
//!   becomes a Tile-IR kernel function with its loop nest, the operator a
//!   host function that launches them).
//!
//! Tile-IR ops are produced by name, following the IR vocabulary contract;
//! this crate does not depend on the Tile dialect. No I/O.

mod fuse;
mod graph;
mod schedule;
mod shape;
pub mod targets;
mod to_tile;
mod tuned;

pub use fuse::Fuse;
pub use graph::GraphDialect;
pub use schedule::ScheduleDialect;
pub use shape::GridDim;
pub use to_tile::LowerScheduleToTile;

use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{Module, PassContext, PassInfo, PassRegistry, Registry};

/// Registers the `graph` and `schedule` dialects.
pub fn register_dialects(registry: &mut Registry) {
    registry.register(Box::new(GraphDialect));
    registry.register(Box::new(ScheduleDialect));
}

/// Registers `fuse` and `lower-schedule-to-tile`.
pub fn register_passes(passes: &mut PassRegistry) {
    passes.register(PassInfo {
        name: "fuse",
        description: "Graph IR to Schedule IR: group graph ops into tiled `schedule.kernel`s",
        create: || Box::new(Fuse),
    });
    passes.register(PassInfo {
        name: "lower-schedule-to-tile",
        description:
            "Schedule IR to Tile IR: a kernel function per `schedule.kernel`, a host function that launches them",
        create: || Box::new(LowerScheduleToTile),
    });
}

/// The passes transform only IR that verifies (so that they may rely on
/// the rules, and never panic on what the rules reject): the errors of the
/// full verifier, noted as the reason the pass did not run.
fn require_valid(m: &Module, ctx: &PassContext, pass: &str) -> Result<(), Vec<Diagnostic>> {
    let errors = ctx.registry.verify(m);
    if errors.is_empty() {
        return Ok(());
    }
    Err(errors
        .iter()
        .map(|e| {
            e.diagnostic_with_code(Code::E0901, ctx.files)
                .with_note(format!("`{pass}` runs on IR that verifies"))
        })
        .collect())
}
