//! `lower-tile-to-target`: replaces the target-dependent `tile` ops by the
//! ops of the module's `target`, sets each kernel's launch configuration
//! and marks the module `layer = "target"`. The lowering table is in
//! `spec/ir-target.md`; the choices that need a reason are here.
//!
//! - Async copies on sm_80 become `cp.async` in the largest chunks (16, 8
//!   or 4 bytes) that divide a row, one commit group per copy; a wait for
//!   stage `s` becomes `cp.async.wait_group N`, where `N` counts the groups
//!   issued after stage `s`'s and still in flight there (found by the same
//!   flow analysis as the verifier's; 0 where paths disagree on the order),
//!   and a `bar.sync`, because each thread waits only for its own chunks
//!   (consecutive waits share the barrier).
//! - On sm_90a, a copy of a 2-D tile from a kernel parameter of at most
//!   five dims, or from a `tile.view` of one (the views' indices become the
//!   load's leading coordinates), whose row strides the constraints prove
//!   multiples of 16 bytes, into an unpadded buffer with rows of a
//!   multiple of 16 bytes, becomes a TMA load: one mbarrier per stage,
//!   initialized at the kernel's entry, and a phase bit per stage in a
//!   `tile.local` slot that each wait flips. The other copies use
//!   `cp.async` as on sm_80 (TMA writes a dense box), in the same kernel. A
//!   stage outside pipelines is one or the other for all its copies; in a
//!   pipeline's fill each copy has a stage of its own.
//! - AMD GPUs wait with `s_waitcnt vmcnt(0)` and an `s_barrier` (one for
//!   consecutive waits); the CPU copies synchronously, so its waits
//!   disappear.
//! - `tile.mma` becomes `wgmma` (sm_90a: B in shared memory, M a multiple
//!   of 64; a B that is the transpose of a whole shared buffer just loaded
//!   is that buffer, read K-major with `transpose_b`; a bf16/f16 B tile of
//!   constant shape is first stored into a
//!   shared buffer of its own when the kernel's budget and the target have
//!   room, between barriers, with the proxy fence), `mma.sync` (f16/bf16 `[16, 8, 16]`, i8 `[16, 8, 32]`, fp8
//!   `[16, 8, 32]` on sm_90a; shared operands loaded with `ldmatrix`) or
//!   `v_mfma` (`[32, 32, 8]` or `[16, 16, 16]` for f16/bf16, `[32, 32, 2]`
//!   for f32; never fp8: gfx942's fp8 MFMA reads the FNUZ formats, whose
//!   bias and NaN differ from the OCP formats the fp8 dtypes are). A
//!   product no instruction fits — f32 on
//!   NVIDIA, a shape that is not a multiple of the instruction, an
//!   accumulator the instruction lacks — becomes `nvptx.mma_fma` or
//!   `amdgpu.mma_fma`: scalar FMAs in the accumulator's type, never a
//!   silent change of precision (no TF32).
//! - `fence.proxy.async` precedes a `wgmma` whose shared operand is written
//!   by generic stores in the kernel (`tile.store`, `tile.store_tile`,
//!   atomics, `cp.async`).
//! - `tile.warp_id` is the linear thread index divided by the warp size
//!   (PTX's `%warpid` is not stable); `tile.lane_id` is `%laneid`,
//!   `amdgpu.lane_id`, or the linear index modulo 32 on the CPU.

use std::collections::{BTreeSet, HashMap, HashSet};

use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{
    Attr, Builder, Dim, MemSpace, Module, OpId, Pass, PassContext, ScalarType, Type, ValueDef, ValueId, VerifyError,
};

use crate::estimate::block_threads;
use crate::flow::{self, Transfer};
use crate::multiple::Multiples;
use crate::nvptx::{mbarrier_type, TENSOR_MAP_RANK};
use crate::pipeline;
use crate::rules::{func_kind, shared_allocations, shared_total};
use crate::shape::{self, buffer_bytes, divisible, pad_of, row_bytes};
use crate::target::{Family, Target, LAYER_ATTR, TARGET_ATTR, TARGET_LAYER};
use crate::tile::{TARGET_DEPENDENT, WRITES_NO_MEMORY};

mod ring;
mod specialize;

/// The `lower-tile-to-target` pass.
pub struct LowerTileToTarget;

impl Pass for LowerTileToTarget {
    fn name(&self) -> &'static str {
        "lower-tile-to-target"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        let target = match m.attrs.get(TARGET_ATTR) {
            Some(Attr::Str(name)) => Target::from_name(name).ok_or_else(|| {
                vec![
                    Diagnostic::error(Code::E0901, format!("`lower-tile-to-target`: unknown target `{name}`"))
                        .with_note("the targets are sm_80, sm_90a, gfx90a, gfx942 and cpu"),
                ]
            })?,
            _ => {
                return Err(vec![Diagnostic::error(
                    Code::E0901,
                    "`lower-tile-to-target` needs the module attribute `target`",
                )
                .with_note(
                    "write `module attributes {target = \"sm_90a\"}` (or sm_80, gfx90a, gfx942, cpu)",
                )])
            }
        };
        // The rewrites rely on what the verifier guarantees (operand counts,
        // types, constant shared sizes), so invalid input stops here.
        let invalid = ctx.registry.verify(m);
        if !invalid.is_empty() {
            return Err(invalid
                .iter()
                .map(|e| {
                    e.diagnostic_with_code(Code::E0901, ctx.files)
                        .with_note("`lower-tile-to-target` lowers only IR that verifies")
                })
                .collect());
        }
        let mut errors = Vec::new();
        let mut specialized = HashSet::new();
        for func in m.functions() {
            if lower_function(m, func, target, &mut errors) {
                specialized.insert(m.func_name(func).unwrap_or_default().to_string());
            }
        }
        relaunch(m, &specialized);
        if !errors.is_empty() {
            return Err(errors
                .iter()
                .map(|e| e.diagnostic_with_code(Code::E0901, ctx.files))
                .collect());
        }
        m.attrs.insert(LAYER_ATTR.to_string(), Attr::str(TARGET_LAYER));
        Ok(())
    }
}

/// How the target form of an async copy completes.
#[derive(Clone, Copy)]
enum Completion {
    /// `cp.async` in a commit group of its own, numbered by its stage.
    OwnGroup(i64),
    /// `cp.async` in the group its pipeline commits for the iteration.
    PipelineGroup,
    /// A TMA load, on this mbarrier.
    Mbarrier(ValueId),
}

/// An mbarrier and its phase slot, for the TMA copies of one stage.
#[derive(Clone, Copy)]
struct StageBarrier {
    mbar: ValueId,
    phase: ValueId,
}

struct Lowering {
    target: Target,
    family: Family,
    /// The kernel's `block` sizes; None for a kernel that runs any block
    /// (`any_block`, whose `block` is only the default launch's).
    block: Option<[i64; 3]>,
    threads: Option<i64>,
    /// `cp.async.wait_group` counts, by `tile.wait_async` op.
    pending: HashMap<OpId, i64>,
    /// The mbarrier of each stage whose copies (outside pipelines) are TMA
    /// loads.
    tma: HashMap<i64, StageBarrier>,
    /// The copies that become TMA loads, in pipelines or not.
    tma_copies: HashSet<OpId>,
    /// The allocations TMA writes into (they get `align = 128`).
    tma_dsts: HashSet<OpId>,
    /// Shared buffers written through the generic proxy.
    generic_written: HashSet<ValueId>,
    /// The products of pipelines that keep one `wgmma` group in flight
    /// across iterations (`lower/ring.rs`): their `wgmma` gets `pending = 1`.
    lagged: HashSet<OpId>,
    rename: HashMap<ValueId, ValueId>,
    /// Shared bytes the kernel may still allocate (its budget, the target's
    /// limit), for the buffers the lowering adds.
    shared_left: u64,
    /// The pipeline that gets a producer warpgroup (`lower/specialize.rs`):
    /// the kernel's threads are then its consumers, and its barriers are
    /// theirs alone.
    specialized: Option<OpId>,
    /// Ops whose only user a rewrite replaced (the load and transpose of a
    /// B that `wgmma` reads in shared memory): erased once unused.
    dead: Vec<OpId>,
}

/// Lowers function `func`; true when the kernel got a producer warpgroup
/// (and so a larger block).
fn lower_function(m: &mut Module, func: OpId, target: Target, errors: &mut Vec<VerifyError>) -> bool {
    let ops = m.walk_op(func);
    let runs_any_block = m.attr(func, "any_block").is_some();
    let sizes = m
        .attr(func, "block")
        .and_then(Attr::as_ints)
        .filter(|_| !runs_any_block);
    let block = sizes.map(|sizes| {
        let mut block = [1i64; 3];
        for (slot, &size) in block.iter_mut().zip(&sizes) {
            *slot = size;
        }
        block
    });
    let mut l = Lowering {
        target,
        family: target.family(),
        block,
        threads: block_threads(m, func),
        pending: HashMap::new(),
        tma: HashMap::new(),
        tma_copies: HashSet::new(),
        tma_dsts: HashSet::new(),
        generic_written: HashSet::new(),
        lagged: HashSet::new(),
        rename: HashMap::new(),
        shared_left: {
            let limit = m
                .attr(func, "shared_budget")
                .and_then(Attr::as_int)
                .and_then(|b| u64::try_from(b).ok())
                .map_or(target.max_shared_bytes(), |b| b.min(target.max_shared_bytes()));
            limit.saturating_sub(shared_total(&shared_allocations(m, &ops)))
        },
        specialized: None,
        dead: Vec::new(),
    };
    let copies: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&op| m.op(op).name == "tile.async_copy")
        .collect();
    let pipelines: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&op| m.op(op).name == "tile.pipeline")
        .collect();
    let known = Multiples::of_function(m, func);
    if target == Target::Sm90a {
        l.tma_copies = tma_copies(m, &known, &copies);
    }
    if !l.tma_copies.is_empty() {
        l.tma_dsts = l
            .tma_copies
            .iter()
            .filter_map(|&c| m.defining_op(pipeline::root_memref(m, m.operands(c)[0])))
            .collect();
        // The copies of a pipeline's fill complete on rings of mbarriers
        // of their own (made by its expansion).
        let stages: BTreeSet<i64> = l
            .tma_copies
            .iter()
            .filter(|&&c| !in_fill(m, c))
            .map(|&c| stage(m, c))
            .collect();
        l.tma = preamble(m, func, &stages);
    }
    if l.family == Family::Nvptx && copies.iter().any(|c| !l.tma_copies.contains(c)) {
        let mut groups = GroupOrder {
            pending: &mut l.pending,
            tma: &l.tma,
        };
        flow::run(m, func, &mut groups);
    }
    for &op in &ops {
        let data = m.op(op);
        let written = match data.name.as_str() {
            "tile.store" | "tile.store_tile" => data.operands.get(1),
            "tile.atomic" => data.operands.first(),
            "tile.async_copy" if !l.tma_copies.contains(&op) => data.operands.first(),
            _ => None,
        };
        if let Some(&v) = written.filter(|&&v| shape::is_memref_in(m.value_type(v), MemSpace::Shared)) {
            l.generic_written.insert(pipeline::root_memref(m, v));
        }
    }
    l.specialized = specialize::candidate(m, func, &l, &pipelines, &copies);
    for &op in &pipelines {
        if let Err(e) = l.expand_pipeline(m, func, op) {
            errors.push(*e);
        }
    }
    let ops = if pipelines.is_empty() { ops } else { m.walk_op(func) };
    for &op in &ops {
        if m.is_erased(op) || !TARGET_DEPENDENT.contains(&m.op(op).name.as_str()) {
            continue;
        }
        if let Err(e) = l.rewrite(m, op) {
            errors.push(*e);
        }
    }
    for &op in &l.dead {
        if !m.is_erased(op) && m.results(op).iter().all(|&r| m.users(r).is_empty()) {
            m.erase_op(op);
        }
    }
    for op in m.walk_op(func) {
        for operand in &mut m.op_mut(op).operands {
            if let Some(&to) = l.rename.get(operand) {
                *operand = to;
            }
        }
    }
    if func_kind(m, func) == Some("kernel") {
        kernel_config(m, func, &l, errors);
    }
    m.set_attr(func, LAYER_ATTR, Attr::str(TARGET_LAYER));
    l.specialized.is_some()
}

/// Gives the launches of the kernels in `specialized` the block their
/// producer warpgroup grew.
fn relaunch(m: &mut Module, specialized: &HashSet<String>) {
    if specialized.is_empty() {
        return;
    }
    for op in m.walk() {
        if m.op(op).name != "tile.launch" {
            continue;
        }
        let callee = m.attr(op, "callee").and_then(Attr::as_symbol).map(str::to_string);
        let block = callee
            .filter(|c| specialized.contains(c))
            .and_then(|c| m.function(&c))
            .and_then(|k| m.attr(k, "block").cloned());
        if let Some(block) = block {
            m.set_attr(op, "block", block);
        }
    }
}

/// The shared buffer `v` is the transpose of, when `v` is
/// `tile.transpose(tile.load_tile(buffer, 0, 0))` of a whole 2-D shared
/// buffer, used by the product `product` alone, and nothing between the
/// load and the product (in one block) writes memory: the product can read
/// the buffer where the load did. Gives the buffer, and the transpose and
/// the load (dead once the product reads the buffer).
fn transposed_in_shared(m: &Module, product: OpId, v: ValueId) -> Option<(ValueId, [OpId; 2])> {
    let transpose = m.defining_op(v).filter(|&t| {
        m.op(t).name == "tile.transpose" && m.attr(t, "perm").and_then(Attr::as_ints) == Some(vec![1, 0])
    })?;
    let tile = m.operands(transpose)[0];
    let load = m.defining_op(tile).filter(|&l| m.op(l).name == "tile.load_tile")?;
    let operands = m.operands(load);
    let buffer = operands[0];
    let zero = |&o: &ValueId| {
        m.defining_op(o)
            .is_some_and(|d| m.op(d).name == "tile.const" && m.attr(d, "value").and_then(Attr::as_int) == Some(0))
    };
    let whole = m.value_type(buffer).dims().is_some_and(|d| d.len() == 2)
        && m.value_type(buffer).dims() == m.value_type(tile).dims();
    let only = |v: ValueId, user: OpId| m.users(v).iter().all(|&(u, _)| u == user);
    if !shape::is_memref_in(m.value_type(buffer), MemSpace::Shared)
        || !whole
        || !operands[1..].iter().all(zero)
        || !only(tile, transpose)
        || !only(v, product)
    {
        return None;
    }
    let block = m.parent_block(load)?;
    let ops = m.block_ops(block);
    let from = ops.iter().position(|&o| o == load)?;
    let to = ops.iter().position(|&o| o == product)?;
    let reads_only = ops
        .get(from + 1..to)?
        .iter()
        .all(|&o| WRITES_NO_MEMORY.contains(&m.op(o).name.as_str()));
    reads_only.then_some((buffer, [transpose, load]))
}

fn stage(m: &Module, op: OpId) -> i64 {
    m.attr(op, "stage").and_then(Attr::as_int).unwrap_or(0)
}

/// Whether `op` is in the fill region of a `tile.pipeline`.
fn in_fill(m: &Module, op: OpId) -> bool {
    m.parent_op(op)
        .is_some_and(|p| m.op(p).name == "tile.pipeline" && m.parent_block(op) == Some(m.region_block(m.regions(p)[0])))
}

/// The copies of `copies` that become TMA loads on sm_90a: each copy of
/// a pipeline's fill that a tensor map can describe (it has a stage of its
/// own), and the copies outside pipelines on a stage all of whose copies
/// one can (a wait is for a stage: an mbarrier, or a `cp.async` group).
fn tma_copies(m: &Module, known: &Multiples<'_>, copies: &[OpId]) -> HashSet<OpId> {
    let (fit, unfit): (Vec<OpId>, Vec<OpId>) = copies.iter().partition(|&&c| tma_fits(m, known, c));
    let unfit_stages: BTreeSet<i64> = unfit
        .into_iter()
        .filter(|&c| !in_fill(m, c))
        .map(|c| stage(m, c))
        .collect();
    fit.into_iter()
        .filter(|&c| in_fill(m, c) || !unfit_stages.contains(&stage(m, c)))
        .collect()
}

/// The kernel parameter a global memref `src` reads and the indices that
/// select `src` in it: `src` itself, or `tile.view`s of it, each fixing
/// leading dims (outer views' indices first). A tensor map describes the
/// whole parameter; the indices become the load's leading coordinates.
fn tensor_source(m: &Module, src: ValueId) -> Option<(ValueId, Vec<ValueId>)> {
    let Some(view) = m.defining_op(src) else {
        return matches!(m.value_def(src), ValueDef::BlockArg { .. }).then(|| (src, Vec::new()));
    };
    let (&base, indices) = m.operands(view).split_first()?;
    if m.op(view).name != "tile.view" || !shape::is_memref_in(m.value_type(base), MemSpace::Global) {
        return None;
    }
    let (param, mut leading) = tensor_source(m, base)?;
    leading.extend_from_slice(indices);
    Some((param, leading))
}

/// Whether a copy can be a TMA load: of a 2-D tile (the loads codegen
/// emits), from a kernel parameter of at most five dims or a `tile.view`
/// of one (its indices are the load's leading coordinates), whose row
/// strides the function's constraints prove multiples of 16 bytes (a
/// tensor map needs them so), into an unpadded `tile.alloc_shared` buffer
/// of constant dims whose rows are a multiple of 16 bytes, or into a slot
/// of such a ring (a pipeline's) whose size keeps every slot 128-byte
/// aligned.
fn tma_fits(m: &Module, known: &Multiples<'_>, copy: OpId) -> bool {
    let (Some(&dst), Some(&src)) = (m.operands(copy).first(), m.operands(copy).get(1)) else {
        return false;
    };
    let Some((param, _)) = tensor_source(m, src) else {
        return false;
    };
    let param_ty = m.value_type(param);
    let two_d = m.value_type(dst).dims().is_some_and(|d| d.len() == 2);
    if !two_d || param_ty.dims().is_none_or(|d| d.len() > TENSOR_MAP_RANK) || !known.strides_aligned(param_ty, 16) {
        return false;
    }
    let root = pipeline::root_memref(m, dst);
    let Some(alloc) = m.defining_op(root).filter(|&a| m.op(a).name == "tile.alloc_shared") else {
        return false;
    };
    let ty = m.value_type(dst);
    let bytes = buffer_bytes(ty, 0);
    pad_of(m.value_type(root), Some((m, alloc))) == 0
        && bytes.as_ref().is_ok_and(|&b| root == dst || b % 128 == 0)
        && row_bytes(ty).is_some_and(|r| r > 0 && r % 16 == 0)
}

/// At the kernel's entry: an mbarrier and a phase slot (0) per stage, then
/// a barrier so that every thread sees them initialized.
fn preamble(m: &mut Module, func: OpId, stages: &BTreeSet<i64>) -> HashMap<i64, StageBarrier> {
    let entry = m.entry_block(func).expect("a function has a body");
    let loc = m.op(func).loc.clone();
    let mut out = HashMap::new();
    let mut b = match m.block_ops(entry).first() {
        Some(&first) => Builder::before(m, first),
        None => Builder::at_end(m, entry),
    };
    b.set_loc(loc);
    let phase_ty = Type::memref(Vec::<Dim>::new(), ScalarType::I32, MemSpace::Local);
    if !stages.is_empty() {
        let zero = konst(&mut b, Attr::Int(0), Type::I32);
        for &s in stages {
            let mbar = b
                .op("nvptx.mbarrier_init")
                .attr("count", Attr::Int(1))
                .attr("stage", Attr::Int(s))
                .result(mbarrier_type())
                .build_value();
            let phase = b.op("tile.local").result(phase_ty.clone()).build_value();
            b.op("tile.store").operands(&[zero, phase]).build();
            out.insert(s, StageBarrier { mbar, phase });
        }
    }
    b.op("nvptx.bar_sync").attr("id", Attr::Int(0)).build();
    out
}

fn kernel_config(m: &mut Module, func: OpId, l: &Lowering, errors: &mut Vec<VerifyError>) {
    let Some(threads) = l.threads else {
        errors.push(
            VerifyError::at_op(
                m,
                func,
                format!(
                    "kernel `@{}` has no `block`: `lower-tile-to-target` needs it to set `threads`",
                    m.func_name(func).unwrap_or_default()
                ),
            )
            .with_note("add `block = [128, 1, 1]` (threads per block) to the kernel"),
        );
        return;
    };
    let allocs = shared_allocations(m, &m.walk_op(func));
    let shared = shared_total(&allocs);
    let threads = if l.specialized.is_some() {
        let threads = threads + crate::nvptx::PRODUCER_THREADS;
        m.set_attr(func, "block", Attr::ints([threads, 1, 1]));
        threads
    } else {
        threads
    };
    m.set_attr(func, "threads", Attr::Int(threads));
    m.set_attr(
        func,
        "shared_bytes",
        Attr::Int(i64::try_from(shared).unwrap_or(i64::MAX)),
    );
    if m.attr(func, "max_registers").is_none() {
        if let Some(regs) = l.target.default_max_registers(threads) {
            m.set_attr(func, "max_registers", Attr::Int(regs));
        }
    }
}

// ---- cp.async group counts ---------------------------------------------

/// The stages in flight in the order their copies were issued; `ambiguous`
/// once paths with different orders met.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Groups {
    order: Vec<i64>,
    ambiguous: bool,
}

struct GroupOrder<'p> {
    pending: &'p mut HashMap<OpId, i64>,
    /// The stages that complete on mbarriers, not in commit groups (the
    /// flow leaves pipelines' fills out: every copy it visits is on a
    /// stage of its own kind).
    tma: &'p HashMap<i64, StageBarrier>,
}

impl Transfer for GroupOrder<'_> {
    type State = Groups;

    fn join(into: &mut Groups, other: &Groups) {
        if into.order != other.order {
            into.ambiguous = true;
            for &s in &other.order {
                if !into.order.contains(&s) {
                    into.order.push(s);
                }
            }
        }
        into.ambiguous |= other.ambiguous;
    }

    fn visit(&mut self, m: &Module, op: OpId, state: &mut Groups, report: bool) {
        match m.op(op).name.as_str() {
            "tile.async_copy" | "tile.wait_async" if self.tma.contains_key(&stage(m, op)) => {}
            "tile.async_copy" => {
                let s = stage(m, op);
                state.order.retain(|&o| o != s);
                state.order.push(s);
            }
            "tile.wait_async" => {
                let s = stage(m, op);
                if report {
                    let after = match state.order.iter().position(|&o| o == s) {
                        Some(i) if !state.ambiguous => (state.order.len() - i - 1) as i64,
                        _ => 0,
                    };
                    let entry = self.pending.entry(op).or_insert(after);
                    *entry = (*entry).min(after);
                }
                state.order.retain(|&o| o != s);
                if state.order.is_empty() {
                    state.ambiguous = false;
                }
            }
            _ => {}
        }
    }

    fn exit(&mut self, _: &Module, _: Option<OpId>, _: &Groups, _: bool) {}
}

// ---- rewriting ------------------------------------------------------------

/// The async copy `op` (with `operands`: the shared destination, the
/// global source and the offsets) as a load of the tile into registers and
/// a store into shared memory, done when it returns: for rows that no
/// `cp.async` chunk or LDS load (4 bytes at least) divides, a head dim of
/// 3 `bf16` (6 bytes) or a column of one.
fn copy_through_registers(b: &mut Builder, op: OpId, operands: &[ValueId]) -> Result<(), Box<VerifyError>> {
    let (dst, src, offsets) = (operands[0], operands[1], &operands[2..]);
    let dst_ty = b.value_type(dst).clone();
    let (Some(dims), Some(elem)) = (dst_ty.dims().map(<[_]>::to_vec), dst_ty.elem()) else {
        return Err(Box::new(VerifyError::at_op(
            b,
            op,
            "an async copy into something other than a memref",
        )));
    };
    let rank = dims.len();
    let tile = b
        .op("tile.load_tile")
        .operand(src)
        .operands(offsets)
        .result(Type::tensor(dims, elem))
        .build_value();
    let zero = konst(b, Attr::Int(0), Type::INDEX);
    b.op("tile.store_tile")
        .operands(&[tile, dst])
        .operands(&vec![zero; rank])
        .build();
    Ok(())
}

fn konst(b: &mut Builder, value: Attr, ty: Type) -> ValueId {
    b.op("tile.const").attr("value", value).result(ty).build_value()
}

fn binary(b: &mut Builder, f: &str, x: ValueId, y: ValueId) -> ValueId {
    let ty = b.value_type(x).clone();
    b.op("tile.binary")
        .operands(&[x, y])
        .attr("fn", f)
        .result(ty)
        .build_value()
}

fn cmp(b: &mut Builder, pred: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op("tile.cmp")
        .operands(&[x, y])
        .attr("pred", pred)
        .result(Type::I1)
        .build_value()
}

const AXES: [&str; 3] = ["x", "y", "z"];
/// All lanes of an NVIDIA warp.
const FULL_MASK: i64 = 0xffff_ffff;

impl Lowering {
    /// Replaces `op` (a target-dependent `tile` op) by its target form.
    fn rewrite(&mut self, m: &mut Module, op: OpId) -> Result<(), Box<VerifyError>> {
        let data = m.op(op).clone();
        let name = data.name.as_str().strip_prefix("tile.").unwrap_or_default().to_string();
        let operands = data.operands.clone();
        let result = data.results().first().copied();
        let result_ty = result.map(|r| m.value_type(r).clone());
        let mut b = Builder::before(m, op);
        b.set_loc(data.loc.clone());
        let dim = data.attrs.get("dim").and_then(Attr::as_int).unwrap_or(0).clamp(0, 2) as usize;
        let replacement: Option<ValueId> = match name.as_str() {
            "thread_id" | "block_id" | "block_dim" | "grid_dim" => Some(self.id(&mut b, &name, dim)),
            "lane_id" => Some(match self.family {
                Family::Nvptx => sreg(&mut b, "laneid"),
                Family::Amdgpu => b.op("amdgpu.lane_id").result(Type::INDEX).build_value(),
                Family::Cpu => {
                    let linear = self.linear_tid(&mut b);
                    let warp = konst(&mut b, Attr::Int(32), Type::INDEX);
                    binary(&mut b, "rem", linear, warp)
                }
            }),
            "warp_id" => {
                let linear = self.linear_tid(&mut b);
                let warp = konst(&mut b, Attr::Int(self.target.warp_size()), Type::INDEX);
                Some(binary(&mut b, "floordiv", linear, warp))
            }
            "barrier" => {
                self.barrier(&mut b);
                None
            }
            "alloc_shared" => {
                let new_name = match self.family {
                    Family::Nvptx => "nvptx.alloc_shared",
                    Family::Amdgpu => "amdgpu.alloc_lds",
                    Family::Cpu => "cpu.alloc_shared",
                };
                let mut ob = b
                    .op(new_name)
                    .result(result_ty.clone().expect("an allocation has a result"));
                for (k, v) in &data.attrs {
                    ob = ob.attr(k, v.clone());
                }
                if self.tma_dsts.contains(&op) {
                    ob = ob.attr("align", Attr::Int(128));
                }
                Some(ob.build_value())
            }
            "async_copy" => {
                self.async_copy(&mut b, op, &data.attrs, &operands)?;
                None
            }
            "wait_async" => {
                self.wait(&mut b, op, &data.attrs);
                None
            }
            "mma" => Some(Lowering::mma(
                self,
                &mut b,
                op,
                &operands,
                &data.attrs,
                result_ty.clone().expect("mma has a result"),
            )),
            "shuffle" => Some(self.shuffle(&mut b, &operands, &data.attrs, result_ty.clone().expect("a result"))),
            "vote" => Some(self.vote(&mut b, &operands, &data.attrs, result_ty.clone().expect("a result"))),
            "atomic" => {
                let ty = result_ty.clone().expect("an atomic has a result");
                let kind = data.attrs.get("kind").cloned().unwrap_or(Attr::str("add"));
                let ob = match self.family {
                    Family::Nvptx => {
                        let space = b.value_type(operands[0]).space().map_or("global", MemSpace::name);
                        b.op("nvptx.atom").attr("space", space)
                    }
                    Family::Amdgpu => b.op("amdgpu.atomic"),
                    Family::Cpu => b.op("cpu.atomic"),
                };
                let mut ob = ob.operands(&operands).attr("kind", kind);
                if let Some(why) = data.attrs.get("nondeterministic") {
                    ob = ob.attr("nondeterministic", why.clone());
                }
                Some(ob.result(ty).build_value())
            }
            _ => return Ok(()),
        };
        if let (Some(old), Some(new)) = (result, replacement) {
            self.rename.insert(old, new);
        }
        m.erase_op(op);
        Ok(())
    }

    fn id(&self, b: &mut Builder, which: &str, dim: usize) -> ValueId {
        match self.family {
            Family::Nvptx => {
                let reg = match which {
                    "thread_id" => "tid",
                    "block_id" => "ctaid",
                    "block_dim" => "ntid",
                    _ => "nctaid",
                };
                sreg(b, &format!("{reg}.{}", AXES[dim]))
            }
            Family::Amdgpu => {
                let name = match which {
                    "thread_id" => "amdgpu.workitem_id",
                    "block_id" => "amdgpu.workgroup_id",
                    "block_dim" => "amdgpu.workgroup_size",
                    _ => "amdgpu.num_workgroups",
                };
                id_op(b, name, dim)
            }
            Family::Cpu => id_op(b, &format!("cpu.{which}"), dim),
        }
    }

    /// The thread's index in its block, linearized (x fastest) with the
    /// kernel's `block` sizes, or, in a kernel that runs any block, with the
    /// launch's: `x + block_dim.x · (y + block_dim.y · z)`.
    fn linear_tid(&self, b: &mut Builder) -> ValueId {
        let mut linear = self.id(b, "thread_id", 0);
        let Some(block) = self.block else {
            let y = self.id(b, "thread_id", 1);
            let z = self.id(b, "thread_id", 2);
            let height = self.id(b, "block_dim", 1);
            let width = self.id(b, "block_dim", 0);
            let plane = binary(b, "mul", height, z);
            let row = binary(b, "add", y, plane);
            let rows = binary(b, "mul", width, row);
            return binary(b, "add", linear, rows);
        };
        let mut stride = block[0];
        for (d, &size) in block.iter().enumerate().skip(1) {
            if size <= 1 {
                continue;
            }
            let t = self.id(b, "thread_id", d);
            let s = konst(b, Attr::Int(stride), Type::INDEX);
            let scaled = binary(b, "mul", t, s);
            linear = binary(b, "add", linear, scaled);
            stride *= size;
        }
        linear
    }

    /// A barrier of the block's threads; in a kernel with a producer
    /// warpgroup, of its consumers (named barrier 1: the producer never
    /// arrives at one).
    fn barrier(&self, b: &mut Builder) {
        match (self.family, self.specialized.and(self.threads)) {
            (Family::Nvptx, Some(consumers)) => b
                .op("nvptx.bar_sync")
                .attr("id", Attr::Int(1))
                .attr("count", Attr::Int(consumers))
                .build(),
            (Family::Nvptx, None) => b.op("nvptx.bar_sync").attr("id", Attr::Int(0)).build(),
            (Family::Amdgpu, _) => b.op("amdgpu.s_barrier").build(),
            (Family::Cpu, _) => b.op("cpu.barrier").build(),
        };
    }

    /// `tile` stored into a new shared buffer of its shape, for a `wgmma`
    /// (which reads B from shared memory): a barrier before the store (threads
    /// still reading the buffer from an earlier iteration are done), the proxy
    /// fence (the async proxy reads what generic stores wrote) and a barrier
    /// after it.
    fn stage_in_shared(&self, b: &mut Builder, tile: ValueId) -> ValueId {
        let Type::Tensor { dims, elem } = b.value_type(tile).clone() else {
            return tile;
        };
        let buffer = b
            .op("nvptx.alloc_shared")
            .attr("align", Attr::Int(128))
            .result(Type::memref(dims.clone(), elem, MemSpace::Shared))
            .build_value();
        let zero = konst(b, Attr::Int(0), Type::INDEX);
        let offsets = vec![zero; dims.len()];
        self.barrier(b);
        b.op("tile.store_tile")
            .operand(tile)
            .operand(buffer)
            .operands(&offsets)
            .build();
        b.op("nvptx.fence_proxy_async").build();
        self.barrier(b);
        buffer
    }

    fn async_copy(
        &self,
        b: &mut Builder,
        op: OpId,
        attrs: &std::collections::BTreeMap<String, Attr>,
        operands: &[ValueId],
    ) -> Result<(), Box<VerifyError>> {
        let s = attrs.get("stage").and_then(Attr::as_int).unwrap_or(0);
        let done = match self.tma.get(&s) {
            Some(barrier) => Completion::Mbarrier(barrier.mbar),
            None => Completion::OwnGroup(s),
        };
        self.copy_to_shared(b, op, operands, done)
    }

    /// The target's form of the async copy `op` (with `operands`), which
    /// completes as `done` says.
    fn copy_to_shared(
        &self,
        b: &mut Builder,
        op: OpId,
        operands: &[ValueId],
        done: Completion,
    ) -> Result<(), Box<VerifyError>> {
        let dst_ty = b.value_type(operands[0]).clone();
        match (self.family, done) {
            (Family::Nvptx, Completion::Mbarrier(mbar)) => {
                let bytes = buffer_bytes(&dst_ty, 0).unwrap_or(0);
                b.op("nvptx.mbarrier_arrive_expect_tx")
                    .operand(mbar)
                    .attr("bytes", Attr::Int(bytes as i64))
                    .build();
                let (dst, src, offsets) = (operands[0], operands[1], &operands[2..]);
                let Some((param, leading)) = tensor_source(b, src) else {
                    return Err(Box::new(VerifyError::at_op(
                        b,
                        op,
                        "a TMA load reads a kernel parameter or a `tile.view` of one",
                    )));
                };
                b.op("nvptx.tma_load")
                    .operand(dst)
                    .operand(param)
                    .operands(&leading)
                    .operands(offsets)
                    .operand(mbar)
                    .build();
            }
            (Family::Nvptx, done) => {
                let row = row_bytes(&dst_ty).unwrap_or(0);
                match [16u64, 8, 4].into_iter().find(|c| row > 0 && row.is_multiple_of(*c)) {
                    Some(chunk) => {
                        b.op("nvptx.cp_async")
                            .operands(operands)
                            .attr("bytes", Attr::Int(chunk as i64))
                            .build();
                    }
                    None => copy_through_registers(b, op, operands)?,
                }
                // A copy through registers commits an empty group, so that
                // the waits count the groups of every stage alike.
                if let Completion::OwnGroup(s) = done {
                    b.op("nvptx.cp_async_commit").attr("group", Attr::Int(s)).build();
                }
            }
            (Family::Amdgpu, _) => {
                if row_bytes(&dst_ty).is_some_and(|r| r % 4 != 0) {
                    copy_through_registers(b, op, operands)?;
                } else {
                    b.op("amdgpu.copy_to_lds").operands(operands).build();
                }
            }
            (Family::Cpu, _) => {
                b.op("cpu.copy").operands(operands).build();
            }
        }
        Ok(())
    }

    fn wait(&self, b: &mut Builder, op: OpId, attrs: &std::collections::BTreeMap<String, Attr>) {
        let s = attrs.get("stage").and_then(Attr::as_int).unwrap_or(0);
        // Consecutive waits share one barrier (and, on AMD, one `s_waitcnt`),
        // after the last of them; a wait on an mbarrier needs none.
        let module: &Module = b;
        let next_wait = module
            .position(op)
            .and_then(|i| module.block_ops(module.parent_block(op)?).get(i + 1).copied())
            .filter(|&next| module.op(next).name == "tile.wait_async");
        let next_waits = next_wait.is_some();
        let next_needs_barrier = next_wait.is_some_and(|next| !self.tma.contains_key(&stage(module, next)));
        match (self.family, self.tma.get(&s)) {
            (Family::Nvptx, Some(&barrier)) => {
                let phase = b.op("tile.load").operand(barrier.phase).result(Type::I32).build_value();
                b.op("nvptx.mbarrier_try_wait").operands(&[barrier.mbar, phase]).build();
                let one = konst(b, Attr::Int(1), Type::I32);
                let flipped = binary(b, "xor", phase, one);
                b.op("tile.store").operands(&[flipped, barrier.phase]).build();
            }
            (Family::Nvptx, None) => {
                let pending = self.pending.get(&op).copied().unwrap_or(0);
                b.op("nvptx.cp_async_wait").attr("pending", Attr::Int(pending)).build();
                if !next_needs_barrier {
                    self.barrier(b);
                }
            }
            (Family::Amdgpu, _) if next_waits => {}
            (Family::Amdgpu, _) => {
                b.op("amdgpu.s_waitcnt").attr("vmcnt", Attr::Int(0)).build();
                b.op("amdgpu.s_barrier").build();
            }
            (Family::Cpu, _) => {}
        }
    }

    fn mma(
        &mut self,
        b: &mut Builder,
        op: OpId,
        operands: &[ValueId],
        attrs: &std::collections::BTreeMap<String, Attr>,
        result: Type,
    ) -> ValueId {
        let (a, mut bv, acc) = (operands[0], operands[1], operands[2]);
        let (a_ty, mut b_ty) = (b.value_type(a).clone(), b.value_type(bv).clone());
        let elem = a_ty.elem().unwrap_or(ScalarType::F32);
        let acc_elem = result.elem().unwrap_or(ScalarType::F32);
        let dims = shape::mma_dims(&a_ty, &b_ty, &result).ok();
        let (mdim, ndim) = match &dims {
            Some((m, n, _)) => (m.as_const().unwrap_or(0), n.as_const().unwrap_or(0)),
            None => (0, 0),
        };
        let fits = |instr: [i64; 3]| dims.as_ref().is_some_and(|(m, n, k)| divisible(&[m, n, k], &instr));
        let fp16 = matches!(elem, ScalarType::F16 | ScalarType::BF16);
        let fp8 = elem.is_fp8();
        let lagged = self.lagged.contains(&op);
        // The matrix instruction, where the product's types have one that
        // tiles it (a `wgmma` on sm_90a is chosen before it).
        let instr = self
            .target
            .matrix_instructions(elem, acc_elem)
            .iter()
            .copied()
            .find(|&i| fits(i));
        match self.family {
            Family::Cpu => b
                .op("cpu.mma")
                .operands(operands)
                .attr(
                    "accumulate",
                    attrs
                        .get("accumulate")
                        .cloned()
                        .unwrap_or(Attr::Type(Type::Scalar(acc_elem))),
                )
                .result(result)
                .build_value(),
            Family::Nvptx => {
                let k_step = if fp8 { 32 } else { 16 };
                let wgmma_acc = acc_elem == ScalarType::F32 || acc_elem == ScalarType::F16 && elem == ScalarType::F16;
                // The instruction's N, when wgmma takes these operand types.
                let wgmma_n = (1..=32)
                    .rev()
                    .map(|i| i * 8)
                    .find(|n| ndim > 0 && ndim % n == 0)
                    .filter(|&n| self.target == Target::Sm90a && wgmma_acc && fits([64, n, k_step]));
                let a_readable = matches!(a_ty, Type::Tensor { .. }) || shape::is_memref_in(&a_ty, MemSpace::Shared);
                let whole_groups = self.threads.is_some_and(|t| t > 0 && t % 128 == 0);
                if let Some(n) = wgmma_n.filter(|_| (fp16 || fp8) && a_readable && whole_groups) {
                    if let Some((buffer, dead)) = transposed_in_shared(b, op, bv) {
                        self.dead.extend(dead);
                        return self.wgmma(b, [a, buffer, acc], [64, n, k_step], lagged, true, result);
                    }
                }
                let b_bytes = buffer_bytes(&b_ty, 0)
                    .ok()
                    .filter(|_| matches!(b_ty, Type::Tensor { .. }));
                if let Some(bytes) = b_bytes.filter(|&bytes| {
                    fp16 && matches!(a_ty, Type::Tensor { .. }) && wgmma_n.is_some() && bytes <= self.shared_left
                }) {
                    self.shared_left -= bytes;
                    bv = self.stage_in_shared(b, bv);
                    b_ty = b.value_type(bv).clone();
                }
                let b_shared = shape::is_memref_in(&b_ty, MemSpace::Shared);
                if let Some(n) = wgmma_n.filter(|_| (fp16 || fp8) && a_readable && b_shared) {
                    return self.wgmma(b, [a, bv, acc], [64, n, k_step], lagged, false, result);
                }
                match instr {
                    Some(instr) => {
                        let a_reg = self.to_registers(b, a, false);
                        let b_reg = self.to_registers(b, bv, true);
                        let warps = self.warps(mdim / instr[0], ndim / instr[1]);
                        b.op("nvptx.mma_sync")
                            .operands(&[a_reg, b_reg, acc])
                            .attr("instr", Attr::ints(instr))
                            .attr("warps", Attr::ints(warps))
                            .result(result)
                            .build_value()
                    }
                    None => b.op("nvptx.mma_fma").operands(operands).result(result).build_value(),
                }
            }
            Family::Amdgpu => match instr {
                Some(instr) => {
                    let a_reg = self.to_registers(b, a, false);
                    let b_reg = self.to_registers(b, bv, false);
                    b.op("amdgpu.mfma")
                        .operands(&[a_reg, b_reg, acc])
                        .attr("instr", Attr::ints(instr))
                        .result(result)
                        .build_value()
                }
                None => b.op("amdgpu.mma_fma").operands(operands).result(result).build_value(),
            },
        }
    }

    /// `nvptx.wgmma` of `operands` (`transpose_b`: B given N×K), its group
    /// left running (`pending = 1`) when `lagged`. What threads wrote
    /// reaches wgmma's async proxy first: each thread fences its own
    /// writes, then the barrier publishes them all.
    fn wgmma(
        &self,
        b: &mut Builder,
        [a, bv, acc]: [ValueId; 3],
        instr: [i64; 3],
        lagged: bool,
        transpose_b: bool,
        result: Type,
    ) -> ValueId {
        let written = |v| self.generic_written.contains(&pipeline::root_memref(b, v));
        if written(a) || written(bv) {
            b.op("nvptx.fence_proxy_async").build();
            self.barrier(b);
        }
        let mut w = b
            .op("nvptx.wgmma")
            .operands(&[a, bv, acc])
            .attr("instr", Attr::ints(instr));
        if transpose_b {
            w = w.flag("transpose_b");
        }
        if lagged {
            w = w.attr("pending", Attr::Int(1));
        }
        w.result(result).build_value()
    }

    /// A product operand in registers: a tile as it is; a shared buffer
    /// loaded whole (`ldmatrix`, transposed for B, for 16-bit elements on
    /// NVIDIA; `tile.load_tile` otherwise).
    fn to_registers(&self, b: &mut Builder, v: ValueId, is_b: bool) -> ValueId {
        let ty = b.value_type(v).clone();
        let Type::MemRef { dims, elem, .. } = &ty else { return v };
        let tile = Type::tensor(dims.clone(), *elem);
        let zero = konst(b, Attr::Int(0), Type::INDEX);
        let offsets = vec![zero; dims.len()];
        if self.family == Family::Nvptx && elem.bits() == 16 {
            let mut ob = b
                .op("nvptx.ldmatrix")
                .operand(v)
                .operands(&offsets)
                .attr("count", Attr::Int(4));
            if is_b {
                ob = ob.flag("trans");
            }
            return ob.result(tile).build_value();
        }
        b.op("tile.load_tile")
            .operand(v)
            .operands(&offsets)
            .result(tile)
            .build_value()
    }

    /// The grid of warps over `tiles_m x tiles_n` instruction tiles: the
    /// most balanced split of the block's warps that divides both, with
    /// fewer warps when none does.
    fn warps(&self, tiles_m: i64, tiles_n: i64) -> [i64; 2] {
        let total = (self.threads.unwrap_or(128) / 32).max(1);
        let mut count = total;
        while count >= 1 {
            let mut best: Option<[i64; 2]> = None;
            for wm in 1..=count {
                if count % wm != 0 {
                    continue;
                }
                let wn = count / wm;
                if tiles_m % wm == 0 && tiles_n % wn == 0 {
                    let better = best.is_none_or(|[bm, bn]| (wm - wn).abs() < (bm - bn).abs());
                    if better {
                        best = Some([wm, wn]);
                    }
                }
            }
            if let Some(best) = best {
                return best;
            }
            count /= 2;
        }
        [1, 1]
    }

    fn shuffle(
        &self,
        b: &mut Builder,
        operands: &[ValueId],
        attrs: &std::collections::BTreeMap<String, Attr>,
        result: Type,
    ) -> ValueId {
        let mode = attrs.get("mode").and_then(Attr::as_str).unwrap_or("down").to_string();
        let width = attrs.get("width").and_then(Attr::as_int);
        match self.family {
            Family::Nvptx => {
                let ptx_mode = if mode == "xor" { "bfly" } else { mode.as_str() };
                let mut ob = b
                    .op("nvptx.shfl_sync")
                    .operands(operands)
                    .attr("mode", ptx_mode)
                    .attr("mask", Attr::Int(FULL_MASK));
                if let Some(w) = width {
                    ob = ob.attr("width", Attr::Int(w));
                }
                ob.result(result).build_value()
            }
            Family::Cpu => {
                let mut ob = b.op("cpu.shuffle").operands(operands).attr("mode", mode.as_str());
                if let Some(w) = width {
                    ob = ob.attr("width", Attr::Int(w));
                }
                ob.result(result).build_value()
            }
            Family::Amdgpu => {
                let src = self.source_lane(b, &mode, width.unwrap_or(self.target.warp_size()), operands[1]);
                b.op("amdgpu.ds_bpermute")
                    .operands(&[operands[0], src])
                    .result(result)
                    .build_value()
            }
        }
    }

    /// The lane an AMD shuffle reads, with CUDA's semantics: within
    /// segments of `width` lanes; a lane whose source falls outside its
    /// segment reads its own value.
    fn source_lane(&self, b: &mut Builder, mode: &str, width: i64, delta: ValueId) -> ValueId {
        let delta = if *b.value_type(delta) == Type::INDEX {
            delta
        } else {
            b.op("tile.cast").operand(delta).result(Type::INDEX).build_value()
        };
        let lane = b.op("amdgpu.lane_id").result(Type::INDEX).build_value();
        let w = konst(b, Attr::Int(width), Type::INDEX);
        let segment = binary(b, "floordiv", lane, w);
        let start = binary(b, "mul", segment, w);
        let (src, inside) = match mode {
            "up" => {
                let src = binary(b, "sub", lane, delta);
                (src, cmp(b, "ge", src, start))
            }
            "xor" => {
                let src = binary(b, "xor", lane, delta);
                let src_segment = binary(b, "floordiv", src, w);
                (src, cmp(b, "eq", src_segment, segment))
            }
            "idx" => {
                let within = binary(b, "rem", delta, w);
                return binary(b, "add", start, within);
            }
            _ => {
                let src = binary(b, "add", lane, delta);
                let end = binary(b, "add", start, w);
                (src, cmp(b, "lt", src, end))
            }
        };
        b.op("tile.select")
            .operands(&[inside, src, lane])
            .result(Type::INDEX)
            .build_value()
    }

    fn vote(
        &self,
        b: &mut Builder,
        operands: &[ValueId],
        attrs: &std::collections::BTreeMap<String, Attr>,
        result: Type,
    ) -> ValueId {
        let mode = attrs.get("mode").and_then(Attr::as_str).unwrap_or("any").to_string();
        match self.family {
            Family::Nvptx => b
                .op("nvptx.vote_sync")
                .operands(operands)
                .attr("mode", mode.as_str())
                .attr("mask", Attr::Int(FULL_MASK))
                .result(result)
                .build_value(),
            Family::Cpu => b
                .op("cpu.vote")
                .operands(operands)
                .attr("mode", mode.as_str())
                .result(result)
                .build_value(),
            Family::Amdgpu => {
                let ballot = b.op("amdgpu.ballot").operands(operands).result(Type::I64).build_value();
                match mode.as_str() {
                    "any" => {
                        let zero = konst(b, Attr::Int(0), Type::I64);
                        cmp(b, "ne", ballot, zero)
                    }
                    "all" => {
                        let yes = konst(b, Attr::Int(1), Type::I1);
                        let active = b.op("amdgpu.ballot").operand(yes).result(Type::I64).build_value();
                        cmp(b, "eq", ballot, active)
                    }
                    _ if result == Type::I64 => ballot,
                    _ => b.op("tile.cast").operand(ballot).result(result).build_value(),
                }
            }
        }
    }
}

fn sreg(b: &mut Builder, reg: &str) -> ValueId {
    b.op("nvptx.sreg").attr("reg", reg).result(Type::INDEX).build_value()
}

fn id_op(b: &mut Builder, name: &str, dim: usize) -> ValueId {
    b.op(name)
        .attr("dim", Attr::Int(dim as i64))
        .result(Type::INDEX)
        .build_value()
}
