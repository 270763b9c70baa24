//! `tile.pipeline`: a software-pipelined loop over ring buffers in shared
//! memory (`spec/ir-tile.md`, "Pipelines").
//!
//! ```text
//! tile.pipeline(%lb, %ub, %step) {stages = S} ({
//! ^(%k: index, %slot: index):      // fill: start iteration k's copies into ring slot %slot
//!   %a = tile.view(%ring_a, %slot)
//!   tile.async_copy(%a, %A, %row0, %k) {stage = 0}
//!   tile.yield
//! }, {
//! ^(%k: index, %slot: index):      // use: iteration k, its copies complete and visible
//!   ...
//!   tile.yield
//! })
//! ```
//!
//! Iteration `t` (`k = lb + t·step`) has slot `t mod S` of every ring (a
//! shared buffer whose leading dim is `S`). The fill of iteration `t + S -
//! 1` starts before the use of iteration `t`, once every thread has
//! finished the use of `t - 1`, whose slot it refills; the use of `t` runs
//! once the copies of its fill are complete and visible to the block.
//!
//! What this module checks, so that the lowering can rely on it: the fill
//! holds only async copies into `tile.view(%ring, %slot)` of rings with `S`
//! slots and the index arithmetic they need; the use starts and waits for
//! no async copy, writes into no ring, and does not leave the pipeline
//! (`tile.return`, or a `break`/`continue` of a loop outside it).

use std::collections::{HashMap, HashSet};

use tessera_ir::{Attr, Dim, MemSpace, Module, OpId, Type, ValueId, VerifyError};

use crate::check::Check;
use crate::rules::SHARED_ALLOCS;

/// The ops a fill region may hold besides its copies.
const FILL_OPS: &[&str] = &[
    "tile.const",
    "tile.binary",
    "tile.cmp",
    "tile.select",
    "tile.cast",
    "tile.view",
    "tile.yield",
];

/// The memref `v` is a view of (through any `tile.view`s), or `v`.
pub(crate) fn root_memref(m: &Module, mut v: ValueId) -> ValueId {
    while let Some(def) = m.defining_op(v).filter(|&d| m.op(d).name == "tile.view") {
        v = m.operands(def)[0];
    }
    v
}

/// The `%k` and `%slot` arguments of region `r` of a pipeline.
pub(crate) fn region_args(m: &Module, op: OpId, r: usize) -> (ValueId, ValueId) {
    let args = m.region_args(m.regions(op)[r]);
    (args[0], args[1])
}

/// The pipeline's `stages`.
pub(crate) fn stages(m: &Module, op: OpId) -> i64 {
    m.attr(op, "stages").and_then(Attr::as_int).unwrap_or(1)
}

/// The ring a fill copy writes into, or why its destination is not a
/// slot of a ring of `stages` slots.
fn ring_of(m: &Module, copy: OpId, slot: ValueId, stages: i64) -> Result<ValueId, String> {
    let dst = m.operands(copy)[0];
    let fill_block = m.value_block(slot);
    let Some(view) = m
        .defining_op(dst)
        .filter(|&d| m.op(d).name == "tile.view" && m.parent_block(d) == fill_block)
    else {
        return Err(
            "the copies of a pipeline's fill write into `tile.view(%ring, %slot)`, a view made in the fill".into(),
        );
    };
    let &[ring, index] = m.operands(view) else {
        return Err("the view a fill copy writes into fixes one index, the slot: `tile.view(%ring, %slot)`".into());
    };
    if index != slot {
        return Err("a fill copy writes into a slot other than the fill's `%slot`".into());
    }
    let ty = m.value_type(ring);
    let Type::MemRef {
        dims,
        space: MemSpace::Shared,
        ..
    } = ty
    else {
        return Err(format!("a pipeline's ring is a shared memref, not `{ty}`"));
    };
    if dims.first().and_then(Dim::as_const) != Some(stages) {
        return Err(format!(
            "a ring of a pipeline with {stages} stages has {stages} slots (its leading dim); `{ty}` does not"
        ));
    }
    if !m
        .defining_op(ring)
        .is_some_and(|d| SHARED_ALLOCS.contains(&m.op(d).name.as_str()))
    {
        return Err("a pipeline's ring is a shared allocation of its own, not a view".into());
    }
    Ok(ring)
}

/// The op checks of `tile.pipeline`.
pub(crate) fn verify(c: &mut Check) {
    for i in 0..3 {
        c.operand_is(i, &Type::INDEX);
    }
    c.int_at_least("stages", 1);
    for r in 0..2 {
        if c.region_arg_types(r) != [Type::INDEX, Type::INDEX] {
            c.fail(format!(
                "region #{r} of `tile.pipeline` takes two arguments, `%k: index` and `%slot: index`"
            ));
            return;
        }
        c.region_ends_with(r, &["tile.yield"], "tile.yield");
    }
    let (m, op) = (c.m, c.op);
    let stages = stages(m, op);
    let (_, slot) = region_args(m, op, 0);
    let fill = m.region_block(m.regions(op)[0]);
    let mut rings = HashSet::new();
    let mut copy_stages: HashMap<i64, OpId> = HashMap::new();
    for &inner in m.block_ops(fill) {
        let name = m.op(inner).name.as_str();
        if name == "tile.async_copy" {
            match ring_of(m, inner, slot, stages) {
                Ok(ring) => {
                    rings.insert(ring);
                }
                Err(why) => c.push(
                    VerifyError::at_op(m, inner, why)
                        .with_label("this copy does not fill a ring slot")
                        .with_related(m, op, "in the fill of this pipeline"),
                ),
            }
            let stage = m.attr(inner, "stage").and_then(Attr::as_int).unwrap_or(0);
            if let Some(&first) = copy_stages.get(&stage) {
                c.push(
                    VerifyError::at_op(
                        m,
                        inner,
                        format!("two copies of a pipeline's fill are on stage {stage}"),
                    )
                    .with_related(m, first, "the other copy")
                    .with_note("number the copies of a fill 0, 1, …: each completes on its own barrier"),
                );
            }
            copy_stages.entry(stage).or_insert(inner);
        } else if !FILL_OPS.contains(&name) {
            c.push(
                VerifyError::at_op(m, inner, format!("`{name}` in the fill region of `tile.pipeline`"))
                    .with_label("a fill holds only async copies and the index arithmetic and views they need")
                    .with_note("move it into the use region (#1), or before the pipeline"),
            );
        }
    }
    if copy_stages.is_empty() {
        c.fail("the fill region of `tile.pipeline` starts no async copy");
    }
    let use_block = m.region_block(m.regions(op)[1]);
    for inner in m.walk_block(use_block) {
        let name = m.op(inner).name.as_str();
        let why = match name {
            "tile.async_copy" | "tile.wait_async" | "tile.pipeline" => Some(format!(
                "`{name}` in the use region of `tile.pipeline`: the pipeline starts and waits for its copies itself"
            )),
            "tile.return" => Some("`tile.return` in a pipeline: a pipeline runs to its end".to_string()),
            "tile.break" | "tile.continue" if !loop_inside(m, inner, op) => Some(format!(
                "`{name}` leaves a pipeline: only loops inside its use region may be left"
            )),
            "tile.store" | "tile.store_tile" | "tile.atomic" => {
                let at = if name == "tile.atomic" { 0 } else { 1 };
                m.operands(inner)
                    .get(at)
                    .filter(|&&mem| rings.contains(&root_memref(m, mem)))
                    .map(|_| format!("`{name}` writes into a ring of the pipeline, which only its fill writes"))
            }
            _ => None,
        };
        if let Some(why) = why {
            c.push(VerifyError::at_op(m, inner, why).with_related(m, op, "in the use region of this pipeline"));
        }
    }
}

/// Whether the loop that `tile.break`/`tile.continue` `op` leaves lies
/// inside the pipeline `pipeline`.
fn loop_inside(m: &Module, op: OpId, pipeline: OpId) -> bool {
    let mut current = op;
    while let Some(parent) = m.parent_op(current) {
        if parent == pipeline {
            return false;
        }
        if matches!(m.op(parent).name.as_str(), "tile.for" | "tile.while") {
            return true;
        }
        current = parent;
    }
    false
}
