//! The `nvptx` dialect: Target IR for NVIDIA GPUs (sm_80, sm_90a).
//! Operations stay block-level where their `tile` counterparts are: a
//! `cp_async` or `tma_load` moves a whole tile (codegen spreads the chunks
//! over the threads, or lets one elected thread issue the TMA and the
//! mbarrier arrival); an `mma_sync` is the block's product, split over the
//! `warps` grid.

use tessera_base::gcd;
use tessera_ir::{
    Arity, Attr, AttrDef, AttrKind, Dialect, MemSpace, Module, OpDef, OpId, ScalarType, Type, VerifyErrors,
};

use crate::check::{self, Check};
use crate::gate::{self, is_16bit_float};
use crate::multiple::Multiples;
use crate::rules;
use crate::shape::{self, buffer_bytes, pad_of, pitch_bytes, row_bytes};
use crate::target::Target;

/// The `nvptx` dialect.
pub struct NvptxDialect;

/// The type of an mbarrier object in shared memory.
pub fn mbarrier_type() -> Type {
    Type::opaque("nvptx", "mbarrier")
}

/// The special registers `nvptx.sreg` reads.
pub const SREGS: &[&str] = &[
    "tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y", "ntid.z", "nctaid.x", "nctaid.y",
    "nctaid.z", "laneid", "warpid",
];

/// The ops only sm_90a has.
pub const SM90A_ONLY: &[&str] = &[
    "nvptx.wgmma",
    "nvptx.wgmma_wait",
    "nvptx.tma_load",
    "nvptx.mbarrier_init",
    "nvptx.mbarrier_slot",
    "nvptx.mbarrier_arrive_expect_tx",
    "nvptx.mbarrier_arrive",
    "nvptx.mbarrier_try_wait",
    "nvptx.fence_proxy_async",
    "nvptx.warp_specialize",
];

const OPS: &[OpDef] = &[
    OpDef {
        name: "nvptx.sreg",
        doc: "reads a special register (`tid.x`, `ctaid.y`, `ntid.x`, `nctaid.z`, `laneid`, `warpid`)",
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("reg", AttrKind::Str)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.bar_sync",
        doc: "`bar.sync id`: waits for the threads of the block (or `count` of them)",
        attrs: &[AttrDef::optional("id", AttrKind::Int), AttrDef::optional("count", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.shfl_sync",
        doc: "`shfl.sync` (`mode` up, down, bfly or idx) over the lanes in `mask`, in segments of `width`",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("mode", AttrKind::Str),
            AttrDef::required("mask", AttrKind::Int),
            AttrDef::optional("width", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.vote_sync",
        doc: "`vote.sync` (`mode` any, all, uni or ballot) over the lanes in `mask`",
        operands: Arity::Exact(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("mode", AttrKind::Str), AttrDef::optional("mask", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.atom",
        doc: "`atom.space.kind` on one element of a global or shared memref; gives the old value",
        operands: Arity::AtLeast(2),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("kind", AttrKind::Str),
            AttrDef::required("space", AttrKind::Str),
            AttrDef::optional("nondeterministic", AttrKind::Str),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.alloc_shared",
        doc: "a static buffer in shared memory, `align` bytes aligned",
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::optional("swizzle", AttrKind::Any),
            AttrDef::optional("bank_pad", AttrKind::Int),
            AttrDef::optional("align", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.cp_async",
        doc: "`cp.async` of the tile at the offsets of global `%src` into shared `%dst`, in chunks of `bytes` (sm_80+)",
        operands: Arity::AtLeast(2),
        attrs: &[AttrDef::required("bytes", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.cp_async_commit",
        doc: "`cp.async.commit_group`: the copies issued since the last commit form a group",
        attrs: &[AttrDef::optional("group", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.cp_async_wait",
        doc: "`cp.async.wait_group pending`: waits until at most `pending` of the newest groups are in flight",
        attrs: &[AttrDef::required("pending", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.ldmatrix",
        doc: "`ldmatrix.x{count}` (`.trans` with `trans`): loads a tile of 16-bit elements from shared memory into mma fragments",
        operands: Arity::AtLeast(1),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("count", AttrKind::Int), AttrDef::optional("trans", AttrKind::Unit)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mma_sync",
        doc: "the block's `%a · %b + %c` in `mma.sync` instructions of shape `instr`, the tile split over a `warps` grid",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[AttrDef::required("instr", AttrKind::Array), AttrDef::optional("warps", AttrKind::Array)],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mma_fma",
        doc: "`%a · %b + %c` with scalar fused multiply-adds in the accumulator's type, k in increasing order (no tensor cores)",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.wgmma",
        doc: "`wgmma.mma_async` of shape `instr = [64, N, K]` per warpgroup, B (and A unless in registers) in shared memory, B given as `NxK` (`%a · %bᵀ + %c`) with `transpose_b`; it returns with at most `pending` (default 0) of its warpgroup's wgmma groups still running, its own among them (sm_90a)",
        operands: Arity::Exact(3),
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("instr", AttrKind::Array),
            AttrDef::optional("pending", AttrKind::Int),
            AttrDef::optional("transpose_b", AttrKind::Unit),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.wgmma_wait",
        doc: "`wgmma.wait_group pending`: waits until at most `pending` of the warpgroup's wgmma groups are still running (sm_90a)",
        attrs: &[AttrDef::required("pending", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.tma_load",
        doc: "`cp.async.bulk.tensor` of the tile at the offsets of `%src` into `%dst`, completing on the mbarrier `%mbar` (sm_90a)",
        operands: Arity::AtLeast(3),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mbarrier_init",
        doc: "an mbarrier in shared memory expecting `count` arrivals per phase, or a ring of `slots` of them (sm_90a)",
        results: Arity::Exact(1),
        attrs: &[
            AttrDef::required("count", AttrKind::Int),
            AttrDef::optional("stage", AttrKind::Int),
            AttrDef::optional("slots", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mbarrier_slot",
        doc: "the mbarrier of slot `%i` of a ring made by `nvptx.mbarrier_init {slots}` (sm_90a)",
        operands: Arity::Exact(2),
        results: Arity::Exact(1),
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mbarrier_arrive_expect_tx",
        doc: "arrives on `%mbar` and expects `bytes` of transactions to complete its phase (sm_90a)",
        operands: Arity::Exact(1),
        attrs: &[AttrDef::required("bytes", AttrKind::Int)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mbarrier_arrive",
        doc: "every thread that runs it arrives once on `%mbar` (sm_90a)",
        operands: Arity::Exact(1),
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.mbarrier_try_wait",
        doc: "spins on `mbarrier.try_wait.parity` until the phase of parity `%phase` of `%mbar` completes; with `elected`, only the thread that issues TMA loads (thread 0) waits (sm_90a)",
        operands: Arity::Exact(2),
        attrs: &[AttrDef::optional("elected", AttrKind::Bool)],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.fence_proxy_async",
        doc: "`fence.proxy.async.shared::cta`: generic-proxy writes to shared memory become visible to the async proxy (sm_90a)",
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "nvptx.warp_specialize",
        doc: "splits the kernel's block: warpgroup 0 lowers its registers to `producer_registers` (`setmaxnreg.dec`) and one of its threads runs the producer region; the other warpgroups raise theirs to `consumer_registers` (`setmaxnreg.inc`) and run the consumer region, numbered from 0 (sm_90a)",
        regions: 2,
        attrs: &[
            AttrDef::required("producer_registers", AttrKind::Int),
            AttrDef::required("consumer_registers", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
];

/// The threads of the producer of an `nvptx.warp_specialize`: warpgroup 0
/// (`setmaxnreg` acts on whole warpgroups); the rest of the block consumes.
pub const PRODUCER_THREADS: i64 = 128;

/// The most dims a TMA tensor map describes (`cuTensorMapEncodeTiled`).
pub const TENSOR_MAP_RANK: usize = 5;

/// The ops the producer of an `nvptx.warp_specialize` may hold: scalar
/// arithmetic, control flow, views, mbarriers and TMA loads, nothing that
/// needs the block's threads (it runs on one).
const PRODUCER_OPS: &[&str] = &[
    "tile.const",
    "tile.binary",
    "tile.cmp",
    "tile.cast",
    "tile.select",
    "tile.for",
    "tile.if",
    "tile.yield",
    "tile.view",
    "nvptx.sreg",
    "nvptx.mbarrier_slot",
    "nvptx.mbarrier_try_wait",
    "nvptx.mbarrier_arrive_expect_tx",
    "nvptx.mbarrier_arrive",
    "nvptx.tma_load",
];

impl Dialect for NvptxDialect {
    fn name(&self) -> &str {
        "nvptx"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        rules::at_anchor(m, op, errors);
        let mut c = Check::new(m, op, errors);
        let target = gate::family(&mut c);
        let name = c.name;
        if let Some(t) = target {
            if SM90A_ONLY.contains(&name) && !gate::needs(&mut c, t, &[Target::Sm90a], None) {
                return;
            }
        }
        verify(&mut c, name, target);
    }
}

fn verify(c: &mut Check, name: &str, target: Option<Target>) {
    match name {
        "nvptx.sreg" => {
            c.one_of("reg", SREGS);
            c.result_is(0, &Type::INDEX);
        }
        "nvptx.bar_sync" => {
            if let Some(id) = c.int("id") {
                if !(0..=15).contains(&id) {
                    c.fail(format!("`bar.sync` barrier ids are 0 to 15, not {id}"));
                }
            }
            c.int_at_least("count", 1);
        }
        "nvptx.shfl_sync" => {
            c.one_of("mode", &["up", "down", "bfly", "idx"]);
            check::shuffle(c);
        }
        "nvptx.vote_sync" => {
            c.one_of("mode", &["any", "all", "uni", "ballot"]);
            check::vote(c);
        }
        "nvptx.atom" => {
            check::atomic(c, &[MemSpace::Global, MemSpace::Shared]);
            let space = c.attr("space").and_then(Attr::as_str).unwrap_or_default().to_string();
            let actual = c.operand_type(0).space();
            if actual.map(MemSpace::name) != Some(space.as_str()) {
                c.fail(format!(
                    "`space` of `nvptx.atom` says \"{space}\" but the memref is in {} memory",
                    actual.map_or("no", MemSpace::name)
                ));
            }
        }
        "nvptx.alloc_shared" => {
            check::alloc_shared(c);
            if let Some(align) = c.int("align") {
                if align <= 0 || align & (align - 1) != 0 {
                    c.fail(format!(
                        "`align` of `nvptx.alloc_shared` must be a power of two, not {align}"
                    ));
                }
            }
        }
        "nvptx.cp_async" => cp_async(c),
        "nvptx.cp_async_commit" => c.int_at_least("group", 0),
        "nvptx.cp_async_wait" => c.int_at_least("pending", 0),
        "nvptx.ldmatrix" => ldmatrix(c),
        "nvptx.mma_sync" => mma_sync(c, target),
        "nvptx.mma_fma" => {
            check::matrix_product(c);
        }
        "nvptx.wgmma" => {
            c.int_in("pending", &[0, 1]);
            wgmma(c);
        }
        "nvptx.wgmma_wait" => c.int_in("pending", &[0, 1, 2, 3, 4, 5, 6, 7]),
        "nvptx.tma_load" => tma_load(c),
        "nvptx.mbarrier_init" => {
            c.int_at_least("count", 1);
            c.int_at_least("slots", 1);
            c.result_is(0, &mbarrier_type());
        }
        "nvptx.mbarrier_slot" => {
            c.operand_is(0, &mbarrier_type());
            c.operand_is(1, &Type::INDEX);
            c.result_is(0, &mbarrier_type());
            let ring = c.m.operands(c.op)[0];
            let slots =
                c.m.defining_op(ring)
                    .filter(|&d| c.m.op(d).name == "nvptx.mbarrier_init")
                    .and_then(|d| c.m.attr(d, "slots"));
            if slots.is_none() {
                c.fail("`nvptx.mbarrier_slot` picks a slot of a ring made by `nvptx.mbarrier_init {slots = N}`");
            }
        }
        "nvptx.mbarrier_arrive_expect_tx" => {
            c.operand_is(0, &mbarrier_type());
            c.int_at_least("bytes", 1);
        }
        "nvptx.mbarrier_arrive" => c.operand_is(0, &mbarrier_type()),
        "nvptx.mbarrier_try_wait" => {
            c.operand_is(0, &mbarrier_type());
            let phase = c.operand_type(1);
            if !matches!(phase, Type::Scalar(ScalarType::I32 | ScalarType::Index)) {
                c.fail(format!(
                    "the phase of `nvptx.mbarrier_try_wait` is `i32` or `index`, not `{phase}`"
                ));
            }
        }
        "nvptx.warp_specialize" => warp_specialize(c),
        _ => {}
    }
}

/// Warpgroup 0 produces and the others consume (`spec/ir-target.md`,
/// "Warp specialization"): the op is the kernel body's last before its
/// return; the registers are `setmaxnreg` counts the warpgroups fit in the
/// register file with; the producer holds [`PRODUCER_OPS`] only; no region
/// reads raw thread indices; and the consumers' barriers count them alone.
fn warp_specialize(c: &mut Check) {
    let m = c.m;
    let func = m.parent_op(c.op).filter(|&f| rules::func_kind(m, f) == Some("kernel"));
    let next = m.parent_block(c.op).and_then(|b| {
        let ops = m.block_ops(b);
        ops.iter()
            .position(|&o| o == c.op)
            .and_then(|i| ops.get(i + 1))
            .copied()
    });
    let returns = |n: OpId| matches!(m.op(n).name.as_str(), "func.return" | "tile.return");
    if func.is_none() || !next.is_some_and(returns) {
        c.fail("`nvptx.warp_specialize` is a kernel body's last op, just before its return");
    }
    let mut registers = [0; 2];
    for (slot, key) in registers.iter_mut().zip(["producer_registers", "consumer_registers"]) {
        if let Some(regs) = c.int(key) {
            if !(24..=256).contains(&regs) || regs % 8 != 0 {
                c.fail(format!(
                    "`{key}` is a `setmaxnreg` count, a multiple of 8 from 24 to 256, not {regs}"
                ));
            }
            *slot = regs;
        }
    }
    let config = |key: &str| func.and_then(|f| m.attr(f, key)).and_then(Attr::as_int);
    let consumers = config("threads").map(|t| t - PRODUCER_THREADS);
    if let Some(consumers) = consumers {
        let [producer, consumer] = registers;
        // `setmaxnreg.inc` waits for registers the block's pool has.
        let pool = (consumers + PRODUCER_THREADS) * config("max_registers").unwrap_or(255);
        if consumers < PRODUCER_THREADS || consumers % PRODUCER_THREADS != 0 {
            c.fail(format!(
                "a specialized kernel has one producer warpgroup and whole consumer warpgroups: {} threads are not 128 + a multiple of 128",
                consumers + PRODUCER_THREADS
            ));
        } else if PRODUCER_THREADS * producer + consumers * consumer > pool {
            c.fail(format!(
                "128 producer threads of {producer} registers and {consumers} consumers of {consumer} need more than the {pool} registers the block starts with (`threads` × `max_registers`)"
            ));
        }
    }
    for (r, role) in ["producer", "consumer"].into_iter().enumerate() {
        c.region_ends_with(r, &["tile.yield"], "`tile.yield`");
        let Some(&region) = m.regions(c.op).get(r) else {
            continue;
        };
        for inner in m.walk_block(m.region_block(region)) {
            let name = m.op(inner).name.as_str();
            let reg = m.attr(inner, "reg").and_then(Attr::as_str).unwrap_or_default();
            if name == "nvptx.sreg" && (reg.starts_with("tid.") || reg.starts_with("ntid.")) {
                c.fail(format!(
                    "the {role} reads `%{reg}`: in a specialized kernel the block's thread indices are not the region's"
                ));
            } else if r == 0 && !PRODUCER_OPS.contains(&name) && !scalar_local_access(m, inner) {
                c.fail(format!(
                    "`{name}` in the producer of `nvptx.warp_specialize`, which runs on one thread: it holds scalar arithmetic, control flow, views, loads and stores of scalar locals, mbarriers and TMA loads"
                ));
            } else if r == 1 && name == "nvptx.bar_sync" {
                let id = m.attr(inner, "id").and_then(Attr::as_int).unwrap_or(0);
                let count = m.attr(inner, "count").and_then(Attr::as_int);
                if id == 0 || count != consumers {
                    c.fail(format!(
                        "a barrier of the consumers waits for them alone: `bar.sync` with an id from 1 and `count = {}`",
                        consumers.map_or("the consumer threads".to_string(), |n| n.to_string())
                    ));
                }
            }
        }
    }
}

/// Whether `op` is a `tile.load` or `tile.store` of a scalar `tile.local`
/// (a count the producer keeps across its loops; a local is each thread's
/// own).
fn scalar_local_access(m: &Module, op: OpId) -> bool {
    let memref = match m.op(op).name.as_str() {
        "tile.load" => m.operands(op).first(),
        "tile.store" => m.operands(op).get(1),
        _ => None,
    };
    memref.is_some_and(
        |&v| matches!(m.value_type(v), Type::MemRef { dims, space: MemSpace::Local, .. } if dims.is_empty()),
    )
}

fn cp_async(c: &mut Check) {
    c.int_in("bytes", &[4, 8, 16]);
    let Some(dst) = check::tile_copy(c, 0) else { return };
    let Some(bytes) = c.int("bytes").filter(|b| [4, 8, 16].contains(b)) else {
        return;
    };
    if let Some(row) = row_bytes(&dst) {
        if row % bytes as u64 != 0 {
            c.fail(format!(
                "`cp.async` moves {bytes}-byte chunks: a row of `{dst}` is {row} B, not a multiple of {bytes}"
            ));
            return;
        }
    }
    // Each chunk lands at its row's start plus whole chunks, so the padded
    // pitch must keep every row's start on a chunk boundary.
    let root = crate::pipeline::root_memref(c.m, c.m.operands(c.op)[0]);
    let pad = pad_of(c.m.value_type(root), c.m.defining_op(root).map(|op| (c.m, op)));
    if let (Some(row), Some(pitch)) = (row_bytes(&dst), pitch_bytes(&dst, pad)) {
        if pitch % bytes as u64 != 0 {
            c.fail(format!(
                "`cp.async` moves {bytes}-byte chunks: a row of `{dst}` is {row} B, but padded by {pad} elements it takes {pitch} B, so some rows start off a {bytes}-byte boundary"
            ));
        }
    }
}

fn ldmatrix(c: &mut Check) {
    c.int_in("count", &[1, 2, 4]);
    if !check::in_shared(c, 0, "source") {
        return;
    }
    let src = c.operand_type(0);
    if !c.indices(1, src.dims().map_or(0, <[_]>::len), "offsets") {
        return;
    }
    let result = c.result_type(0);
    if !matches!(result, Type::Tensor { .. }) || result.elem() != src.elem() {
        c.fail(format!(
            "`nvptx.ldmatrix` from `{src}` gives a tile of its element type, not `{result}`"
        ));
        return;
    }
    if src.elem().is_some_and(|e| e.bits() != 16) {
        c.fail(format!(
            "`nvptx.ldmatrix` loads 16-bit elements, not `{}`",
            src.elem().map_or("?", ScalarType::name)
        ));
    }
}

fn mma_sync(c: &mut Check, target: Option<Target>) {
    for (i, role) in [(0, "operand `a`"), (1, "operand `b`"), (2, "accumulator")] {
        if !gate::in_registers(c, i, role, "load it with `nvptx.ldmatrix`") {
            return;
        }
    }
    let Some(dims) = check::matrix_product(c) else { return };
    let Some((elem, acc)) = gate::product_types(c) else {
        return;
    };
    let Some(instr) = gate::instr(c) else { return };
    let allowed: &[[i64; 3]] = match elem {
        e if is_16bit_float(e) => &[[16, 8, 16], [16, 8, 8]],
        ScalarType::I8 | ScalarType::U8 => &[[16, 8, 32], [16, 8, 16]],
        e if e.is_fp8() => &[[16, 8, 32]],
        other => {
            c.fail(format!(
                "`mma.sync` has no form for `{}` operands; use `nvptx.mma_fma`",
                other.name()
            ));
            return;
        }
    };
    if !allowed.contains(&instr) {
        let list: Vec<String> = allowed.iter().map(|s| format!("{s:?}")).collect();
        c.fail(format!(
            "`mma.sync` on `{}` has the shapes {}, not {instr:?}",
            elem.name(),
            list.join(", ")
        ));
        return;
    }
    let acc_ok = match elem {
        ScalarType::I8 | ScalarType::U8 => acc == ScalarType::I32,
        ScalarType::F16 => matches!(acc, ScalarType::F32 | ScalarType::F16),
        _ => acc == ScalarType::F32 || elem.is_fp8() && acc == ScalarType::F16,
    };
    if !acc_ok {
        c.fail(format!(
            "`mma.sync` on `{}` cannot accumulate in `{}`",
            elem.name(),
            acc.name()
        ));
        return;
    }
    if elem.is_fp8() {
        if let Some(t) = target {
            if !gate::needs(c, t, &[Target::Sm90a], Some("fp8 `mma.sync`")) {
                return;
            }
        }
    }
    if !gate::tiles_evenly(c, &dims, instr) {
        return;
    }
    if let Some(warps) = c.attr("warps") {
        let w = warps.as_ints().unwrap_or_default();
        let (Some(m), Some(n)) = (dims.0.as_const(), dims.1.as_const()) else {
            return;
        };
        let fits = w.len() == 2 && w[0] > 0 && w[1] > 0 && (m / instr[0]) % w[0] == 0 && (n / instr[1]) % w[1] == 0;
        if !fits {
            c.fail(format!(
                "`warps = {warps}` does not split the {m}x{n} tile: the {}x{} instruction tiles must divide evenly",
                m / instr[0],
                n / instr[1]
            ));
        }
    }
}

fn wgmma(c: &mut Check) {
    if !check::in_shared(c, 1, "operand `b`") {
        return;
    }
    let a = c.operand_type(0);
    if !matches!(a, Type::Tensor { .. }) && !shape::is_memref_in(&a, MemSpace::Shared) {
        c.fail(format!(
            "operand `a` of `nvptx.wgmma` must be in shared memory or registers, not `{a}`"
        ));
        return;
    }
    if !gate::in_registers(c, 2, "accumulator", "wgmma accumulates in registers") {
        return;
    }
    let Some(dims) = check::matrix_product(c) else { return };
    let Some((elem, acc)) = gate::product_types(c) else {
        return;
    };
    let Some(instr) = gate::instr(c) else { return };
    let k = if is_16bit_float(elem) {
        16
    } else if elem.is_fp8() {
        32
    } else {
        c.fail(format!("`wgmma` has no form for `{}` operands here", elem.name()));
        return;
    };
    if instr[0] != 64 || instr[2] != k || instr[1] % 8 != 0 || instr[1] > 256 {
        c.fail(format!(
            "`wgmma` on `{}` has the shape [64, N, {k}] with N a multiple of 8 up to 256, not {instr:?}",
            elem.name()
        ));
        return;
    }
    if acc != ScalarType::F32 && acc != ScalarType::F16 {
        c.fail(format!("`wgmma` accumulates in `f32` or `f16`, not `{}`", acc.name()));
        return;
    }
    gate::tiles_evenly(c, &dims, instr);
}

/// A tensor map describes a global tensor whose row strides are multiples
/// of 16 bytes: the function's constraints must prove it of the source.
fn source_strides_aligned(c: &mut Check) {
    let Some(func) = c.m.enclosing_function(c.op) else {
        return;
    };
    let src = c.m.value_type(c.m.operands(c.op)[1]);
    if Multiples::of_function(c.m, func).strides_aligned(src, 16) {
        return;
    }
    let (Some(row), Some(elem)) = (src.dims().and_then(<[_]>::last), src.elem()) else {
        return;
    };
    let bits = i64::from(elem.bits());
    let why = match row.as_const() {
        Some(n) => format!("the rows of `{src}` are {} B", n * bits / 8),
        None => format!(
            "no constraint of the function makes `{row}` a multiple of {} (the rows of `{src}`)",
            128 / gcd(128, bits)
        ),
    };
    c.fail(format!(
        "a tensor map needs row strides that are multiples of 16 B: {why}"
    ));
}

fn tma_load(c: &mut Check) {
    let last = c.operand_count() - 1;
    c.operand_is(last, &mbarrier_type());
    let Some(dst) = check::tile_copy_of(c, 1, true) else {
        return;
    };
    let src = c.operand_type(1);
    if check::rank(&dst) != 2 || check::rank(&src) > TENSOR_MAP_RANK {
        c.fail(format!(
            "a TMA load moves a 2-D tile out of a tensor of 2 to {TENSOR_MAP_RANK} dims, not `{dst}` out of `{src}`"
        ));
        return;
    }
    let Some(func) = c.m.enclosing_function(c.op) else {
        return;
    };
    let src_value = c.m.operands(c.op)[1];
    if !c
        .m
        .entry_block(func)
        .is_some_and(|entry| c.m.block_args(entry).contains(&src_value))
    {
        c.fail(format!(
            "a tensor map describes a kernel parameter: the source `{src}` of `{}` is not one",
            c.name
        ));
        return;
    }
    source_strides_aligned(c);
    // The destination is an allocation, or a slot of one (a view fixing
    // its leading dims), which starts a whole number of slots into it.
    let dst_value = c.m.operands(c.op)[0];
    let root = crate::pipeline::root_memref(c.m, dst_value);
    let alloc = c.m.defining_op(root);
    if pad_of(c.m.value_type(root), alloc.map(|op| (c.m, op))) > 0 {
        c.fail(format!(
            "TMA writes a dense box: the destination `{dst}` has padded rows"
        ));
        return;
    }
    if root != dst_value && !buffer_bytes(&dst, 0).is_ok_and(|b| b % 128 == 0) {
        c.fail(format!(
            "TMA destination must be 128-byte aligned: a slot `{dst}` of its allocation is not a multiple of 128 B"
        ));
    }
    let align = alloc
        .filter(|&op| c.m.op(op).name == "nvptx.alloc_shared")
        .and_then(|op| c.m.attr(op, "align"))
        .and_then(Attr::as_int);
    match align {
        Some(a) if a % 128 == 0 => {}
        Some(a) => c.fail(format!(
            "TMA destination must be 128-byte aligned: its allocation has align = {a}"
        )),
        None => {
            c.fail("TMA destination must be 128-byte aligned: it is not an `nvptx.alloc_shared` with `align = 128`")
        }
    }
    if let Some(row) = row_bytes(&dst) {
        if row % 16 != 0 {
            c.fail(format!(
                "a TMA box row must be a multiple of 16 B; a row of `{dst}` is {row} B"
            ));
        }
    }
}
