//! The expansion of `tile.pipeline` (`spec/ir-target.md`, "Pipelines"):
//!
//! ```text
//! for k in lb - (S-1)·step .. ub by step:   // t = (k - lb) / step, g = g0 + t
//!     if k >= lb:
//!         wait for slot(g)              // cp.async.wait_group S-2, then TMA's mbarriers, parity (g / S) mod 2
//!         barrier                       // the copies are visible; every thread is done with slot(g - 1)
//!     if k + (S-1)·step < ub: fill(k + (S-1)·step, slot(g + S - 1))
//!     commit                            // cp.async: one group per iteration, empty or not
//!     if k >= lb: use(k, slot(g))
//! barrier                               // the last use is done before the rings are reused
//! ```
//!
//! The first `S - 1` iterations are the prologue: they only fill. So the
//! fill and the use appear once each in the code, whatever `S` is.
//!
//! With one stage there is nothing to run ahead: each iteration fills the
//! slot, waits, uses it and ends with a barrier.
//!
//! On sm_90a, when every copy is a TMA load and there are two stages or
//! more, the loop has no barrier: each thread waits on the full mbarriers
//! itself, arrives on the slot's `empty` mbarrier (a ring counting the
//! block's threads) after its use, and the thread that issues the TMA
//! loads waits for the slot's `empty` phase before refilling it.
//!
//! With a producer warpgroup (`lower/specialize.rs`) the loop here has no
//! fills and no prologue: it waits, uses and hands back, and the
//! producer's own loop fills every slot.
//!
//! `slot(g) = g mod S`. `g0` is 0, or, for a pipeline with TMA loads
//! inside a loop, the number of iterations its earlier runs made (kept in
//! a `tile.local`), so that every slot's mbarrier phases keep alternating
//! from run to run.
//! The fill's copies are lowered here, each on its own: `cp.async` without
//! a commit of its own, a TMA load on the slot's mbarrier of a ring made at
//! the kernel's entry (one ring per TMA copy), or the AMD and CPU copies,
//! whose waits are `s_waitcnt vmcnt(0)` and nothing. A fill may mix TMA
//! loads and `cp.async` (sm_90a, a source a tensor map cannot describe):
//! the iteration then commits a group and its wait does both.

use std::collections::HashMap;

use tessera_ir::{Attr, BlockId, Builder, Dim, MemSpace, Module, OpId, ScalarType, Type, ValueId, VerifyError};

use super::specialize::{walk_of, Producing};
use super::{binary, cmp, konst, Completion, Lowering};
use crate::check::enclosed_by;
use crate::locals::accumulates_in_place;
use crate::nvptx::mbarrier_type;
use crate::pipeline::{region_args, stages};
use crate::target::Family;

impl Lowering {
    /// Replaces the `tile.pipeline` `op` of function `func` by its
    /// prologue, loop and closing barrier.
    pub(super) fn expand_pipeline(&mut self, m: &mut Module, func: OpId, op: OpId) -> Result<(), Box<VerifyError>> {
        let s = stages(m, op);
        let &[lb, ub, step] = m.operands(op) else {
            return Err(Box::new(VerifyError::at_op(
                m,
                op,
                "`tile.pipeline` takes `%lb, %ub, %step`",
            )));
        };
        let loc = m.op(op).loc.clone();
        let fill_block = m.region_block(m.regions(op)[0]);
        let fill: Vec<OpId> = m
            .block_ops(fill_block)
            .iter()
            .copied()
            .filter(|&o| m.op(o).name != "tile.yield")
            .collect();
        let copies: Vec<OpId> = fill
            .iter()
            .copied()
            .filter(|&o| m.op(o).name == "tile.async_copy")
            .collect();
        let nested = enclosed_by(m, op, &["tile.for", "tile.while", "tile.pipeline"]);

        // At the kernel's entry: the mbarrier rings (the lowering's
        // preamble ends with the barrier that publishes them) and the
        // count of earlier iterations.
        let entry = m.entry_block(func).expect("a function has a body");
        let first = m.block_ops(entry).first().copied();
        let mut at_entry = match first {
            Some(first) => Builder::before(m, first),
            None => Builder::at_end(m, entry),
        };
        at_entry.set_loc(loc.clone());
        let rings: Vec<Option<ValueId>> = copies
            .iter()
            .map(|c| {
                self.tma_copies.contains(c).then(|| {
                    at_entry
                        .op("nvptx.mbarrier_init")
                        .attr("count", Attr::Int(1))
                        .attr("slots", Attr::Int(s))
                        .result(mbarrier_type())
                        .build_value()
                })
            })
            .collect();
        // A pipeline whose copies are all TMA loads hands slots back through
        // a ring of its own: every thread arrives on `empty[slot]` when its use
        // is done, and the thread that issues the TMA loads waits for that
        // before refilling the slot, so the loop needs no block barrier.
        let handshake = match self.threads {
            Some(threads) if s >= 2 && !rings.is_empty() && rings.iter().all(Option::is_some) => Some(
                at_entry
                    .op("nvptx.mbarrier_init")
                    .attr("count", Attr::Int(threads))
                    .attr("slots", Attr::Int(s))
                    .result(mbarrier_type())
                    .build_value(),
            ),
            _ => None,
        };
        // With three stages or more, a use that only accumulates a product
        // into a local may leave its wgmma group in flight until the next
        // use has issued its own: it hands its slot back one iteration
        // late, and the fills run one iteration less ahead.
        let lagged = handshake
            .filter(|_| s >= 3)
            .and_then(|_| accumulating_product(&at_entry, at_entry.region_block(at_entry.regions(op)[1])));
        let lag = i64::from(lagged.is_some());
        if let Some(product) = lagged {
            self.lagged.insert(product);
        }
        // Only mbarrier phases need to know the earlier runs.
        let earlier = (nested && rings.iter().any(Option::is_some)).then(|| {
            let slot = at_entry
                .op("tile.local")
                .result(Type::memref(Vec::<Dim>::new(), ScalarType::Index, MemSpace::Local))
                .build_value();
            let zero = konst(&mut at_entry, Attr::Int(0), Type::INDEX);
            at_entry.op("tile.store").operands(&[zero, slot]).build();
            slot
        });

        let mut b = Builder::before(m, op);
        b.set_loc(loc);
        let g0 = match earlier {
            Some(slot) => b.op("tile.load").operand(slot).result(Type::INDEX).build_value(),
            None => konst(&mut b, Attr::Int(0), Type::INDEX),
        };
        let s_v = konst(&mut b, Attr::Int(s), Type::INDEX);
        let ctx = Fill {
            ops: &fill,
            args: region_args(&b, op, 0),
            rings: &rings,
            stages: s_v,
            empty: handshake,
            outer: HashMap::new(),
        };
        // With a producer warpgroup, the fills are its loop alone.
        let specialized = self.specialized == Some(op);
        let (use_k, use_slot) = region_args(&b, op, 1);
        let use_block = b.region_block(b.regions(op)[1]);
        let uses = b.block_ops(use_block).to_vec();
        // How far the fills run ahead of the uses, in steps and in `k`.
        let run_ahead = (!specialized).then(|| {
            let ahead = konst(&mut b, Attr::Int(s - 1 - lag), Type::INDEX);
            (ahead, binary(&mut b, "mul", ahead, step))
        });
        let start = match (run_ahead, handshake) {
            (None, _) => lb,
            (Some((_, lead)), Some(_)) => {
                // The prologue, a loop of its own: the fills that run ahead
                // of the first use, so that the main loop's use is
                // unconditional.
                let end = binary(&mut b, "add", lb, lead);
                let (body, k, g) = steps(&mut b, [lb, end, step], lb, g0);
                let mut p = Builder::at_end(&mut b, body);
                self.guarded_fill(&mut p, &ctx, k, ub, g)?;
                p.op("tile.yield").build();
                lb
            }
            (Some((_, lead)), None) => binary(&mut b, "sub", lb, lead),
        };
        let (body, k, g) = steps(&mut b, [start, ub, step], lb, g0);
        let mut l = Builder::at_end(&mut b, body);
        let slot = binary(&mut l, "rem", g, s_v);
        let use_into = match (handshake, run_ahead) {
            _ if s == 1 => {
                self.fill(&mut l, &ctx, k, slot)?;
                self.commit(&mut l, &ctx);
                self.wait_slot(&mut l, &ctx, slot, g, 1);
                self.barrier(&mut l);
                body
            }
            (None, Some((ahead, lead))) => {
                // The first S - 1 iterations (k below lb) only fill.
                let using = cmp(&mut l, "ge", k, lb);
                let wait = if_then(&mut l, using);
                {
                    let mut w = Builder::at_end(&mut l, wait);
                    self.wait_slot(&mut w, &ctx, slot, g, s);
                    self.barrier(&mut w);
                    w.op("tile.yield").build();
                }
                let next_k = binary(&mut l, "add", k, lead);
                let next_g = binary(&mut l, "add", g, ahead);
                self.guarded_fill(&mut l, &ctx, next_k, ub, next_g)?;
                let then = if_then(&mut l, using);
                l.op("tile.yield").build();
                then
            }
            (_, run_ahead) => {
                self.wait_slot(&mut l, &ctx, slot, g, s);
                if let Some((ahead, lead)) = run_ahead {
                    let next_k = binary(&mut l, "add", k, lead);
                    let next_g = binary(&mut l, "add", g, ahead);
                    self.guarded_fill(&mut l, &ctx, next_k, ub, next_g)?;
                }
                body
            }
        };
        for &inner in &uses {
            l.move_op_to_end(inner, use_into);
        }
        let end = *uses.last().expect("the use region ends with `tile.yield`");
        if s == 1 {
            // The next iteration's fill overwrites the only slot.
            let mut e = Builder::before(&mut l, end);
            self.barrier(&mut e);
        }
        if let Some(empty) = handshake {
            let mut e = Builder::before(&mut l, end);
            if lag == 0 {
                // This thread is done with the slot.
                hand_back(&mut e, empty, g, ctx.stages);
            } else {
                // The wgmma has waited for all but its own group: the
                // previous iteration's slot is free.
                let after_first = cmp(&mut e, "gt", k, lb);
                let later = if_then(&mut e, after_first);
                let mut p = Builder::at_end(&mut e, later);
                let one = konst(&mut p, Attr::Int(1), Type::INDEX);
                let previous = binary(&mut p, "sub", g, one);
                hand_back(&mut p, empty, previous, ctx.stages);
                p.op("tile.yield").build();
            }
        }
        drop(l);
        b.replace_all_uses(use_k, k);
        b.replace_all_uses(use_slot, slot);

        if earlier.is_some() || lag > 0 {
            let zero = konst(&mut b, Attr::Int(0), Type::INDEX);
            let one = konst(&mut b, Attr::Int(1), Type::INDEX);
            let trips = trips(&mut b, [lb, ub, step], zero, one);
            let total = binary(&mut b, "add", g0, trips);
            if let (Some(empty), true) = (handshake, lag > 0) {
                // The last group completes, and its slot is handed back.
                b.op("nvptx.wgmma_wait").attr("pending", Attr::Int(0)).build();
                let ran = cmp(&mut b, "gt", trips, zero);
                let then = if_then(&mut b, ran);
                let mut t = Builder::at_end(&mut b, then);
                let last = binary(&mut t, "sub", total, one);
                hand_back(&mut t, empty, last, s_v);
                t.op("tile.yield").build();
            }
            if let Some(local) = earlier {
                b.op("tile.store").operands(&[total, local]).build();
            }
        }
        self.barrier(&mut b);
        drop(b);
        if specialized {
            let walk = walk_of(m, func, op);
            self.specialize(m, func, &ctx, [lb, ub, step], s, Producing { walk, earlier })?;
        }
        m.erase_op(op);
        Ok(())
    }

    /// `if k < ub: fill(k, g mod S)`, then the iteration's commit.
    fn guarded_fill(
        &self,
        b: &mut Builder,
        ctx: &Fill,
        k: ValueId,
        ub: ValueId,
        g: ValueId,
    ) -> Result<(), Box<VerifyError>> {
        let slot = binary(b, "rem", g, ctx.stages);
        let inside = cmp(b, "lt", k, ub);
        let then = if_then(b, inside);
        {
            let mut t = Builder::at_end(b, then);
            await_empty(&mut t, ctx, g, slot);
            self.fill(&mut t, ctx, k, slot)?;
            t.op("tile.yield").build();
        }
        self.commit(b, ctx);
        Ok(())
    }

    /// The iteration's `cp.async` commit group (empty or not, so that
    /// every iteration commits one).
    fn commit(&self, b: &mut Builder, ctx: &Fill) {
        if self.family == Family::Nvptx && ctx.rings.contains(&None) {
            b.op("nvptx.cp_async_commit").build();
        }
    }

    /// The fill's ops for iteration `k` into `slot`, its copies lowered.
    pub(super) fn fill(&self, b: &mut Builder, ctx: &Fill, k: ValueId, slot: ValueId) -> Result<(), Box<VerifyError>> {
        let mut map = ctx.outer.clone();
        map.extend([(ctx.args.0, k), (ctx.args.1, slot)]);
        let mut copy = 0;
        for &op in ctx.ops {
            let module: &Module = b;
            if module.op(op).name != "tile.async_copy" {
                let clone = b.clone_op(op, &mut map);
                b.insert(clone);
                continue;
            }
            let operands: Vec<ValueId> = b.operands(op).iter().map(|v| *map.get(v).unwrap_or(v)).collect();
            let done = match ctx.rings.get(copy).copied().flatten() {
                Some(ring) => Completion::Mbarrier(ring_slot(b, ring, slot)),
                None => Completion::PipelineGroup,
            };
            copy += 1;
            self.copy_to_shared(b, op, &operands, done)?;
        }
        Ok(())
    }

    /// Waits until the copies into `slot` (iteration `g`) are complete;
    /// the barrier after it (the caller's, unless the pipeline hands slots
    /// back through mbarriers) makes them visible to the block and has
    /// every thread done with the slot the next fill refills. With `S`
    /// stages, `S - 1` groups are committed when it waits (one when `S` is
    /// 1).
    fn wait_slot(&self, b: &mut Builder, ctx: &Fill, slot: ValueId, g: ValueId, stages: i64) {
        match self.family {
            Family::Nvptx => {
                if ctx.rings.contains(&None) {
                    let pending = (stages - 2).max(0);
                    b.op("nvptx.cp_async_wait").attr("pending", Attr::Int(pending)).build();
                }
                if ctx.rings.iter().any(Option::is_some) {
                    let round = binary(b, "floordiv", g, ctx.stages);
                    let two = konst(b, Attr::Int(2), Type::INDEX);
                    let parity = binary(b, "rem", round, two);
                    for &ring in ctx.rings.iter().flatten() {
                        let mbar = ring_slot(b, ring, slot);
                        b.op("nvptx.mbarrier_try_wait").operands(&[mbar, parity]).build();
                    }
                }
            }
            Family::Amdgpu => {
                b.op("amdgpu.s_waitcnt").attr("vmcnt", Attr::Int(0)).build();
            }
            Family::Cpu => {}
        }
    }
}

/// What every copy of a pipeline's fill needs.
#[derive(Clone)]
pub(super) struct Fill<'a> {
    /// The fill's ops, without its `tile.yield`.
    pub ops: &'a [OpId],
    /// Its `%k` and `%slot`.
    pub args: (ValueId, ValueId),
    /// Per copy, in order: the ring of mbarriers a TMA load completes on,
    /// or `None` for a `cp.async` (in the iteration's commit group).
    pub rings: &'a [Option<ValueId>],
    /// `S`, as an index.
    pub stages: ValueId,
    /// The ring of `empty` mbarriers through which uses hand slots back,
    /// when every copy is a TMA load.
    pub empty: Option<ValueId>,
    /// The values the fill reads in place of the originals: a producer's
    /// own copies of its scalars (`lower/specialize.rs`).
    pub outer: HashMap<ValueId, ValueId>,
}

/// A `tile.if` on `cond` without an else; returns its then block, for the
/// caller to fill and end with `tile.yield`.
pub(super) fn if_then(b: &mut Builder, cond: ValueId) -> BlockId {
    let then = b.new_region(&[]);
    let other = b.new_region(&[]);
    let (then_block, other_block) = (b.region_block(then), b.region_block(other));
    b.op("tile.if").operand(cond).region(then).region(other).build();
    Builder::at_end(b, other_block).op("tile.yield").build();
    then_block
}

/// The trips of a loop over `[lb, ub, step]`: `⌈max(ub − lb, 0) / step⌉`;
/// `zero` and `one` are those index constants.
pub(super) fn trips(b: &mut Builder, [lb, ub, step]: [ValueId; 3], zero: ValueId, one: ValueId) -> ValueId {
    let span = binary(b, "sub", ub, lb);
    let span = binary(b, "max", span, zero);
    let round = binary(b, "sub", step, one);
    let span = binary(b, "add", span, round);
    binary(b, "floordiv", span, step)
}

/// A `tile.for` over `[from, to, step]`; gives its body, its `k` and the
/// step's `g = g0 + (k - lb) / step`, computed at the body's start.
pub(super) fn steps(
    b: &mut Builder,
    [from, to, step]: [ValueId; 3],
    lb: ValueId,
    g0: ValueId,
) -> (BlockId, ValueId, ValueId) {
    let region = b.new_region(&[Type::INDEX]);
    let body = b.region_block(region);
    let k = b.block_args(body)[0];
    b.op("tile.for").operands(&[from, to, step]).region(region).build();
    let mut l = Builder::at_end(b, body);
    let from_lb = binary(&mut l, "sub", k, lb);
    let t = binary(&mut l, "floordiv", from_lb, step);
    let g = binary(&mut l, "add", g0, t);
    (body, k, g)
}

/// The one `tile.mma` of the use block `use_block`, when it accumulates
/// in place into a whole-tile local ([`accumulates_in_place`]): nothing
/// then reads the product until the next iteration's product, which takes
/// it in the same registers.
fn accumulating_product(m: &Module, use_block: BlockId) -> Option<OpId> {
    let products: Vec<OpId> = m
        .block_ops(use_block)
        .iter()
        .copied()
        .filter(|&o| m.op(o).name == "tile.mma")
        .collect();
    match products.as_slice() {
        &[product] if accumulates_in_place(m, product) => Some(product),
        _ => None,
    }
}

/// Every thread arrives on the `empty` mbarrier of step `g`'s slot: it is
/// done with that slot.
fn hand_back(b: &mut Builder, empty: ValueId, g: ValueId, stages: ValueId) {
    let slot = binary(b, "rem", g, stages);
    let mbar = ring_slot(b, empty, slot);
    b.op("nvptx.mbarrier_arrive").operand(mbar).build();
}

/// Fill `n = g / S` of a slot waits for use `n - 1` to be handed back: the
/// `empty` phase of parity `(n + 1) mod 2`, which a fresh mbarrier counts
/// as complete. Only the thread that issues the loads waits.
pub(super) fn await_empty(b: &mut Builder, ctx: &Fill, g: ValueId, slot: ValueId) {
    let Some(empty) = ctx.empty else { return };
    let round = binary(b, "floordiv", g, ctx.stages);
    let one = konst(b, Attr::Int(1), Type::INDEX);
    let round = binary(b, "add", round, one);
    let two = konst(b, Attr::Int(2), Type::INDEX);
    let parity = binary(b, "rem", round, two);
    let mbar = ring_slot(b, empty, slot);
    b.op("nvptx.mbarrier_try_wait")
        .operands(&[mbar, parity])
        .attr("elected", Attr::Bool(true))
        .build();
}

/// The mbarrier of `slot` in the mbarrier ring `ring`.
fn ring_slot(b: &mut Builder, ring: ValueId, slot: ValueId) -> ValueId {
    b.op("nvptx.mbarrier_slot")
        .operands(&[ring, slot])
        .result(mbarrier_type())
        .build_value()
}
