//! Warp specialization (`spec/ir-target.md`, "Warp specialization"): a
//! kernel whose schedule asks for it (`warp_specialize = true`) and whose
//! K loop is an sm_90a pipeline of TMA loads gets a producer warpgroup of
//! its own. The kernel's entry keeps the mbarrier rings and the shared
//! buffers; everything else moves into the consumer region of one
//! `nvptx.warp_specialize`, where the pipeline only waits, uses and hands
//! slots back. The producer region is the fill loop alone, with its own
//! copies of the scalars it reads (tile offsets, bounds):
//!
//! ```text
//! rings; buffers; bar.sync 0
//! warp_specialize {
//!   producer (one thread, 40 registers):
//!     for k in lb..ub by step:  wait empty[slot(g)]; fill(k, slot(g))
//! } {
//!   consumers (the schedule's threads, the registers the producer gave up):
//!     init; for k: wait full[slot(g)]; use(k, slot(g)); hand back; epilogue
//! }
//! ```
//!
//! The consumers keep the kernel's thread count, so every layout the
//! lowering and the code generator choose for them is the one the kernel
//! had without a producer; the block grows by one warpgroup.

use std::collections::{HashMap, HashSet};

use tessera_ir::{Attr, BlockId, Builder, MemSpace, Module, OpId, Type, ValueId, VerifyError};

use super::ring::{await_empty, steps, trips, Fill};
use super::{binary, konst, Lowering};
use crate::nvptx::PRODUCER_THREADS;
use crate::target::Target;

/// Registers per thread the producer warpgroup keeps.
pub(crate) const PRODUCER_REGISTERS: i64 = 40;
/// Registers per thread for `consumers` consumer threads: what the block
/// starts with (each thread the `max_registers` of its size) less what the
/// producer keeps, rounded down to `setmaxnreg`'s multiple of 8, at most
/// 256. `setmaxnreg.inc` waits for registers the block's pool has, so more
/// would never come.
pub(crate) fn consumer_registers(consumers: i64) -> i64 {
    let (block, kept) = pool(consumers);
    ((block - kept) / consumers.max(1) / 8 * 8).min(256)
}

/// The registers a specialized block of `consumers` starts with, and those
/// its producer keeps.
fn pool(consumers: i64) -> (i64, i64) {
    let threads = consumers + PRODUCER_THREADS;
    let each = Target::Sm90a.default_max_registers(threads).unwrap_or(255);
    (threads * each, PRODUCER_THREADS * PRODUCER_REGISTERS)
}

/// Ops a producer may recompute for itself: pure scalar arithmetic on the
/// kernel's parameters and block indices.
const RECOMPUTED: &[&str] = &[
    "tile.const",
    "tile.binary",
    "tile.cmp",
    "tile.cast",
    "tile.select",
    "tile.block_id",
    "tile.grid_dim",
];

/// The ops of a fill the producer can run: views of the rings, the copies
/// and the arithmetic on their coordinates.
const FILL_OPS: &[&str] = &[
    "tile.view",
    "tile.async_copy",
    "tile.const",
    "tile.binary",
    "tile.cmp",
    "tile.cast",
    "tile.select",
    "tile.yield",
];

/// The pipeline of kernel `func` that gets a producer warpgroup, if any:
/// the kernel asks for one, targets sm_90a, and has one pipeline, directly
/// in its body, whose copies are TMA loads into two stages or more (the
/// kernel's other copies are TMA loads into other buffers, which the
/// consumers issue and wait for); its fill only loads; the values its
/// fill and bounds read can be recomputed by the producer; the body
/// returns at its end only; and nothing reads the thread's raw index (the
/// consumers' indices start at 0 again). Such a pipeline hands its slots
/// back through an `empty` ring (`ring.rs`).
pub(super) fn candidate(m: &Module, func: OpId, l: &Lowering, pipelines: &[OpId], copies: &[OpId]) -> Option<OpId> {
    if m.attr(func, "warp_specialize").and_then(Attr::as_bool) != Some(true) || l.target != Target::Sm90a {
        return None;
    }
    let threads = l.threads?;
    if threads % PRODUCER_THREADS != 0 || threads + PRODUCER_THREADS > 1024 {
        return None;
    }
    let &[pipeline] = pipelines else { return None };
    let entry = m.entry_block(func)?;
    let walk = walk_of(m, func, pipeline);
    let home = match walk {
        Some(w) => m.region_block(m.regions(w)[0]),
        None => entry,
    };
    let last = m.block_ops(entry).last().copied();
    let is_return = |o: OpId| matches!(m.op(o).name.as_str(), "func.return" | "tile.return");
    let unsplittable = m.walk_op(func).into_iter().any(|o| {
        matches!(m.op(o).name.as_str(), "tile.thread_id" | "tile.block_dim") || (is_return(o) && Some(o) != last)
    });
    let returns_last = last.is_some_and(is_return);
    // Copies outside the pipeline (attention's q tile) stay with the
    // consumers, on mbarriers of their own: into buffers the producer
    // never refills.
    let (filled, outside): (Vec<OpId>, Vec<OpId>) = copies.iter().partition(|&&c| inside(m, c, pipeline));
    let ring = |c: OpId| crate::pipeline::root_memref(m, m.operands(c)[0]);
    let rings: HashSet<ValueId> = filled.iter().map(|&c| ring(c)).collect();
    if m.parent_block(pipeline) != Some(home)
        || !returns_last
        || unsplittable
        || crate::pipeline::stages(m, pipeline) < 2
        || filled.is_empty()
        || copies.iter().any(|c| !l.tma_copies.contains(c))
        || outside.iter().any(|&c| rings.contains(&ring(c)))
    {
        return None;
    }
    let fill = m.region_block(m.regions(pipeline)[0]);
    let loads_only = m
        .walk_block(fill)
        .into_iter()
        .all(|o| FILL_OPS.contains(&m.op(o).name.as_str()));
    if !loads_only {
        return None;
    }
    let mut seen = HashSet::new();
    let scope = Scope { entry, home };
    let recomputable = free_values(m, m.block_ops(fill), m.block_args(fill))
        .into_iter()
        .chain(m.operands(pipeline).iter().copied())
        .chain(walk.iter().flat_map(|&w| m.operands(w).to_vec()))
        .all(|v| available(m, scope, v, &mut seen));
    recomputable.then_some(pipeline)
}

/// The walk around `pipeline` of kernel `func`, if any: a `tile.for` of
/// the body over the kernel's tiles (a persistent grid's loop) directly
/// holding it, which the producer walks too.
pub(super) fn walk_of(m: &Module, func: OpId, pipeline: OpId) -> Option<OpId> {
    let entry = m.entry_block(func)?;
    m.parent_op(pipeline)
        .filter(|&w| m.op(w).name == "tile.for" && m.parent_block(w) == Some(entry))
}

/// Where the values a producer recomputes may come from: the kernel's
/// entry block, and the body of the walk around the pipeline (the entry
/// itself when there is none).
#[derive(Clone, Copy)]
struct Scope {
    entry: BlockId,
    home: BlockId,
}

/// What the producer's loop needs beyond the pipeline's fill: the walk
/// around the pipeline, if any (its loop over the tiles, which the
/// producer repeats), and the `tile.local` that counts the pipeline's
/// earlier iterations, if any (`ring.rs`), which the producer keeps for
/// itself: a local is each thread's own.
pub(super) struct Producing {
    pub walk: Option<OpId>,
    pub earlier: Option<ValueId>,
}

impl Lowering {
    /// Builds the `nvptx.warp_specialize` of kernel `func` before its
    /// return: the producer's fill loop over `bounds`, on the rings of
    /// `ctx` and the `empty` ring; then moves the body after the entry's
    /// barrier into the consumer region. The expanded pipeline (its waits,
    /// uses and hand-backs) is already in the body.
    pub(super) fn specialize(
        &self,
        m: &mut Module,
        func: OpId,
        ctx: &Fill,
        bounds: [ValueId; 3],
        stages: i64,
        around: Producing,
    ) -> Result<(), Box<VerifyError>> {
        if ctx.empty.is_none() {
            // `candidate` asks what the `empty` ring needs; without it the
            // producer could refill a slot still in use.
            return Err(Box::new(VerifyError::at_op(
                m,
                func,
                "a producer warpgroup needs its pipeline's slots handed back through an `empty` mbarrier ring",
            )));
        }
        let entry = m.entry_block(func).expect("a function has a body");
        let body = m.block_ops(entry).to_vec();
        let ret = *body.last().expect("`candidate` found the return");
        let loc = m.op(ret).loc.clone();
        let consumers = self.threads.expect("`candidate` found the threads");
        let mut b = Builder::before(m, ret);
        b.set_loc(loc);
        let producer = b.new_region(&[]);
        let consumer = b.new_region(&[]);
        let (producer_block, consumer_block) = (b.region_block(producer), b.region_block(consumer));
        b.op("nvptx.warp_specialize")
            .region(producer)
            .region(consumer)
            .attr("producer_registers", Attr::Int(PRODUCER_REGISTERS))
            .attr("consumer_registers", Attr::Int(consumer_registers(consumers)))
            .build();

        let mut p = Builder::at_end(&mut b, producer_block);
        let mut outer = HashMap::new();
        match around.walk {
            Some(walk) => {
                // The producer walks the consumers' tiles in their order.
                let walk_bounds = p.operands(walk).to_vec();
                for &v in &walk_bounds {
                    recompute(&mut p, v, &mut outer);
                }
                let mapped: Vec<ValueId> = walk_bounds.iter().map(|v| *outer.get(v).unwrap_or(v)).collect();
                let region = p.new_region(&[Type::INDEX]);
                let body = p.region_block(region);
                let tile = p.block_args(body)[0];
                p.op("tile.for").operands(&mapped).region(region).build();
                let walked = p.region_block(p.regions(walk)[0]);
                outer.insert(p.block_args(walked)[0], tile);
                let mut w = Builder::at_end(&mut p, body);
                self.produce(&mut w, ctx, bounds, stages, outer, around.earlier)?;
                w.op("tile.yield").build();
            }
            None => self.produce(&mut p, ctx, bounds, stages, outer, around.earlier)?,
        }
        p.op("tile.yield").build();
        drop(p);

        // The entry keeps what both sides share: the rings and their
        // barrier, and the shared buffers.
        let module: &Module = &b;
        let name = |o: OpId| module.op(o).name.as_str();
        let published = body
            .iter()
            .position(|&o| name(o) == "nvptx.bar_sync")
            .map_or(0, |i| i + 1);
        let moved: Vec<OpId> = body[published..]
            .iter()
            .copied()
            .filter(|&o| o != ret && name(o) != "tile.alloc_shared")
            .collect();
        for op in moved {
            b.move_op_to_end(op, consumer_block);
        }
        Builder::at_end(&mut b, consumer_block).op("tile.yield").build();
        Ok(())
    }

    /// The producer's loop over one run of the pipeline: it recomputes the
    /// values the fill and `bounds` read (`outer` maps those it has
    /// already), then for each step waits for the slot's `empty` phase and
    /// fills it. With `earlier`, the steps count on from the runs before,
    /// as the consumers' do.
    fn produce(
        &self,
        b: &mut Builder,
        ctx: &Fill,
        bounds: [ValueId; 3],
        stages: i64,
        mut outer: HashMap<ValueId, ValueId>,
        earlier: Option<ValueId>,
    ) -> Result<(), Box<VerifyError>> {
        let (k_arg, slot_arg) = ctx.args;
        for v in free_values(b, ctx.ops, &[k_arg, slot_arg]).into_iter().chain(bounds) {
            recompute(b, v, &mut outer);
        }
        let [lb, ub, step] = bounds.map(|v| *outer.get(&v).unwrap_or(&v));
        let g0 = match earlier {
            Some(local) => b.op("tile.load").operand(local).result(Type::INDEX).build_value(),
            None => konst(b, Attr::Int(0), Type::INDEX),
        };
        let s_v = konst(b, Attr::Int(stages), Type::INDEX);
        let producing = Fill {
            stages: s_v,
            outer,
            ..ctx.clone()
        };
        let (loop_body, k, g) = steps(b, [lb, ub, step], lb, g0);
        let mut l = Builder::at_end(b, loop_body);
        let slot = binary(&mut l, "rem", g, s_v);
        await_empty(&mut l, &producing, g, slot);
        self.fill(&mut l, &producing, k, slot)?;
        l.op("tile.yield").build();
        drop(l);
        if let Some(local) = earlier {
            let zero = konst(b, Attr::Int(0), Type::INDEX);
            let one = konst(b, Attr::Int(1), Type::INDEX);
            let trips = trips(b, [lb, ub, step], zero, one);
            let total = binary(b, "add", g0, trips);
            b.op("tile.store").operands(&[total, local]).build();
        }
        Ok(())
    }
}

/// Whether `op` is inside `ancestor`'s regions.
fn inside(m: &Module, op: OpId, ancestor: OpId) -> bool {
    let mut at = m.parent_op(op);
    while let Some(parent) = at {
        if parent == ancestor {
            return true;
        }
        at = m.parent_op(parent);
    }
    false
}

/// The values `ops` (nested regions included) read but neither define nor
/// get as `args`, in first-use order.
fn free_values(m: &Module, ops: &[OpId], args: &[ValueId]) -> Vec<ValueId> {
    let mut defined: HashSet<ValueId> = args.iter().copied().collect();
    let mut free = Vec::new();
    let all: Vec<OpId> = ops
        .iter()
        .flat_map(|&op| std::iter::once(op).chain(m.walk_op(op)))
        .collect();
    for &op in &all {
        for &r in m.regions(op) {
            defined.extend(m.region_args(r).iter().copied());
        }
        defined.extend(m.results(op).iter().copied());
    }
    for &op in &all {
        for &v in m.operands(op) {
            if !defined.contains(&v) && !free.contains(&v) {
                free.push(v);
            }
        }
    }
    free
}

/// Whether the producer can have `v`: a parameter, the walk's step, a
/// shared buffer of the entry, a scalar the [`RECOMPUTED`] ops of the
/// entry or the walk compute from such values, or a `tile.view` of a
/// global memref at such indices (a TMA load's source, whose indices
/// become its coordinates).
fn available(m: &Module, scope: Scope, v: ValueId, seen: &mut HashSet<ValueId>) -> bool {
    if !seen.insert(v) {
        return true;
    }
    let Some(def) = m.defining_op(v) else {
        return m.block_args(scope.entry).contains(&v) || m.block_args(scope.home).contains(&v);
    };
    let block = m.parent_block(def);
    if block != Some(scope.entry) && block != Some(scope.home) {
        return false;
    }
    let name = m.op(def).name.as_str();
    if name == "tile.alloc_shared" {
        return true;
    }
    let recomputed = (RECOMPUTED.contains(&name) && matches!(m.value_type(v), Type::Scalar(_)))
        || (name == "tile.view" && crate::shape::is_memref_in(m.value_type(v), MemSpace::Global));
    recomputed
        && m.operands(def)
            .to_vec()
            .into_iter()
            .all(|o| available(m, scope, o, seen))
}

/// Clones into `b` the ops that compute `v` ([`available`]), mapping
/// originals to clones in `map`; parameters and shared buffers map to
/// themselves.
fn recompute(b: &mut Builder, v: ValueId, map: &mut HashMap<ValueId, ValueId>) {
    if map.contains_key(&v) {
        return;
    }
    let module: &Module = b;
    let Some(def) = module
        .defining_op(v)
        .filter(|&d| module.op(d).name != "tile.alloc_shared")
    else {
        return;
    };
    for o in b.operands(def).to_vec() {
        recompute(b, o, map);
    }
    let clone = b.clone_op(def, map);
    b.insert(clone);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The producer's and the consumers' registers fit in what the block
    /// starts with, in `setmaxnreg`'s steps.
    #[test]
    fn registers_fit_the_pool() {
        for consumers in [128, 256, 384, 512, 768] {
            let c = consumer_registers(consumers);
            assert_eq!(c % 8, 0);
            assert!((24..=256).contains(&c), "{consumers}: {c}");
            let (block, kept) = pool(consumers);
            assert!(kept + consumers * c <= block, "{consumers}: {c}");
        }
        assert_eq!(consumer_registers(256), 232);
    }
}
